//! The discard budget (`drop-limit`), shared by the whole agent.
//!
//! The agent owns the budget: `drop-limit` tokens a second, and never more than one second's
//! worth held, counting tokens granted but not yet spent. Every [`REFILL`] it hands them out by
//! max-min fairness over the demand of each (worker, drop reason) in the last period (each
//! gets its demand or an equal share of what is left, whichever is smaller): a port whose drops
//! all land on one worker gets the whole budget, two busy workers get half each, and a trickle
//! of one reason is not starved by a flood of another on the same worker. What is left tops up
//! each worker's one-token reserve (at most once a second), so that an isolated drop is
//! reported although no grant was waiting for it. A worker counts its
//! demand and spending in its own lines, and reads a grant (written by the agent) only when
//! its tokens run out: the common drop path touches no line another thread writes.

use crate::interface::MAX_REASONS;
use crate::runtime::counter::CacheAligned;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// How often the agent hands out discard tokens.
pub const REFILL: Duration = Duration::from_millis(10);

/// Token slots per worker: one per drop reason, and a reserve any reason may use.
const SLOTS: usize = MAX_REASONS + 1;
/// The reserve slot: one token each worker holds in advance, so that an isolated drop (one
/// TTL-expired packet of a traceroute) is reported although no grant was waiting for it.
const RESERVE: usize = MAX_REASONS;
/// The reserve is topped up at most this often, so that a flood draining it gains at most one
/// token a second over the fair shares.
const RESERVE_EVERY: Duration = Duration::from_secs(1);

/// One counter per token slot.
type PerSlot = CacheAligned<[AtomicU64; SLOTS]>;

fn per_slot() -> PerSlot {
    CacheAligned(std::array::from_fn(|_| AtomicU64::new(0)))
}

fn read(line: &PerSlot) -> [u64; SLOTS] {
    std::array::from_fn(|k| line[k].load(Relaxed))
}

/// Per worker and token slot: tokens granted so far (written by the agent), and drops on
/// monitored ports so far, reported or not, and tokens spent so far (written by the worker).
pub struct DropBudget {
    granted: Box<[PerSlot]>,
    wanted: Box<[PerSlot]>,
    spent: Box<[PerSlot]>,
}

impl DropBudget {
    /// Nothing granted yet to any of `workers`.
    pub fn new(workers: usize) -> Arc<Self> {
        let lines = || (0..workers).map(|_| per_slot()).collect();
        Arc::new(DropBudget { granted: lines(), wanted: lines(), spent: lines() })
    }

    /// Grants `tokens` more to `worker` for drops of `reason` (an index below [`MAX_REASONS`];
    /// one writer: the agent).
    pub fn grant(&self, worker: usize, reason: usize, tokens: u64) {
        let g = &self.granted[worker][reason];
        g.store(g.load(Relaxed).saturating_add(tokens), Relaxed);
    }
}

/// One worker's side of the budget.
pub struct WorkerBudget {
    shared: Arc<DropBudget>,
    worker: usize,
    used: [u64; SLOTS],
    granted: [u64; SLOTS],
}

impl WorkerBudget {
    /// Worker `worker`'s share of `shared`.
    pub fn new(shared: Arc<DropBudget>, worker: usize) -> Self {
        assert!(worker < shared.granted.len(), "worker {worker} of {}", shared.granted.len());
        WorkerBudget { shared, worker, used: [0; SLOTS], granted: [0; SLOTS] }
    }

    /// Counts a drop of `reason` (an index below [`MAX_REASONS`]) and takes a token for it, if
    /// the agent has granted one not yet used: the reason's own, else the reserve.
    #[inline]
    pub fn take(&mut self, reason: usize) -> bool {
        let wanted = &self.shared.wanted[self.worker][reason];
        wanted.store(wanted.load(Relaxed) + 1, Relaxed);
        self.spend(reason) || self.spend(RESERVE)
    }

    /// Spends a token of `slot`, reading the agent's grant only when the ones known are used.
    fn spend(&mut self, slot: usize) -> bool {
        if self.used[slot] == self.granted[slot] {
            self.granted[slot] = self.shared.granted[self.worker][slot].load(Relaxed);
            if self.used[slot] == self.granted[slot] {
                return false;
            }
        }
        self.used[slot] += 1;
        // Tells the agent, which counts unspent grants against the budget.
        self.shared.spent[self.worker][slot].store(self.used[slot], Relaxed);
        true
    }
}

/// The agent's side: the tokens not yet handed out and the demand seen at the last refill.
pub struct Refill {
    rate: f64,
    pool: f64,
    last_wanted: Vec<[u64; SLOTS]>,
    /// Per worker: time since its reserve was last topped up.
    since_reserve: Vec<Duration>,
    /// Where ties in demand start this time (turns, so that no pair is always first).
    turn: usize,
}

impl Refill {
    /// `rate` tokens a second for `workers`.
    pub fn new(rate: u32, workers: usize) -> Self {
        Refill {
            rate: f64::from(rate),
            pool: f64::from(rate),
            last_wanted: vec![[0; SLOTS]; workers],
            since_reserve: vec![RESERVE_EVERY; workers],
            turn: 0,
        }
    }

    /// One refill after `elapsed` since the last. Tokens granted but not yet spent count
    /// against the budget: the pool plus them never exceed one second's worth. From the pool,
    /// each (worker, reason) gets its max-min fair share by its demand since the last refill,
    /// less what it still holds; what is left tops up each worker's reserve to one token (at
    /// most once a second).
    pub fn step(&mut self, elapsed: Duration, budget: &DropBudget) {
        let workers = budget.granted.len();
        let granted: Vec<[u64; SLOTS]> = budget.granted.iter().map(read).collect();
        let spent: Vec<[u64; SLOTS]> = budget.spent.iter().map(read).collect();
        let wanted: Vec<[u64; SLOTS]> = budget.wanted.iter().map(read).collect();
        let held = |w: usize, k: usize| granted[w][k].saturating_sub(spent[w][k]);
        let outstanding: u64 =
            (0..workers).flat_map(|w| (0..SLOTS).map(move |k| (w, k))).map(|(w, k)| held(w, k)).sum();
        self.pool = (self.pool + self.rate * elapsed.as_secs_f64()).min(self.rate - outstanding as f64).max(0.0);
        let needs: Vec<u64> = (0..workers)
            .flat_map(|w| (0..MAX_REASONS).map(move |r| (w, r)))
            .map(|(w, r)| wanted[w][r].saturating_sub(self.last_wanted[w][r]).saturating_sub(held(w, r)))
            .collect();
        self.last_wanted = wanted;
        self.turn = (self.turn + 1) % needs.len().max(1);
        let shares = fair_shares(self.pool as u64, &needs, self.turn);
        for (k, &tokens) in shares.iter().enumerate().filter(|(_, t)| **t > 0) {
            budget.grant(k / MAX_REASONS, k % MAX_REASONS, tokens);
            self.pool -= tokens as f64;
        }
        for w in 0..workers {
            self.since_reserve[w] += elapsed;
            if held(w, RESERVE) == 0 && self.since_reserve[w] >= RESERVE_EVERY && self.pool >= 1.0 {
                budget.grant(w, RESERVE, 1);
                self.pool -= 1.0;
                self.since_reserve[w] = Duration::ZERO;
            }
        }
    }
}

/// Max-min fair shares of `tokens` over `wants`: each gets what it wants or an equal share of
/// what is left, whichever is smaller; tokens that do not divide evenly go one each to the
/// smallest demands first, equal demands from index `first` on. The sum never exceeds
/// `tokens`.
pub fn fair_shares(tokens: u64, wants: &[u64], first: usize) -> Vec<u64> {
    let n = wants.len();
    let mut shares = vec![0; n];
    let mut left = tokens;
    let mut open: Vec<usize> = (0..n).filter(|&w| wants[w] > 0).collect();
    open.sort_by_key(|&w| (wants[w], (w + n - first % n.max(1)) % n));
    while let Some(&w) = open.first() {
        let each = left / open.len() as u64;
        let need = wants[w] - shares[w];
        if each > 0 && need <= each {
            // The smallest demand is met: give it, and split the rest among the others.
            shares[w] += need;
            left -= need;
            open.remove(0);
            continue;
        }
        // Every open demand exceeds an equal share: each gets one, and the remainder goes
        // one token each to the smallest.
        for &o in &open {
            shares[o] += each;
        }
        left -= each * open.len() as u64;
        for &o in open.iter().take(left as usize) {
            shares[o] += 1;
        }
        break;
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_max_min_fair_and_never_exceed_the_tokens() {
        assert_eq!(fair_shares(100, &[1000, 0], 0), [100, 0]);
        assert_eq!(fair_shares(100, &[1000, 1000], 0), [50, 50]);
        assert_eq!(fair_shares(100, &[10, 1000, 1000], 0), [10, 45, 45]);
        assert_eq!(fair_shares(100, &[10, 20], 0), [10, 20]);
        assert_eq!(fair_shares(0, &[10, 20], 0), [0, 0]);
        assert_eq!(fair_shares(3, &[10, 10, 10, 10], 0), [1, 1, 1, 0], "fewer than one each: the smallest first");
        assert_eq!(fair_shares(1, &[1000, 1], 0), [0, 1]);
        assert_eq!(fair_shares(7, &[1000, 1000], 0), [4, 3]);
    }

    /// `seconds` of refills every 10 ms with the workers dropping, per (worker, reason),
    /// `rates` packets a second (evenly spread); returns the discards each pair reported per
    /// second, and the most reported in any one second (over whole 10 ms periods).
    fn simulate(limit: u32, workers: usize, rates: &[(usize, usize, u64)], seconds: u64) -> (Vec<f64>, u64) {
        let budget = DropBudget::new(workers);
        let mut wb: Vec<WorkerBudget> = (0..workers).map(|w| WorkerBudget::new(budget.clone(), w)).collect();
        let mut refill = Refill::new(limit, workers);
        let mut reported = vec![0u64; rates.len()];
        let mut acc = vec![0u64; rates.len()];
        let mut per_period = Vec::new();
        for _ in 0..seconds * 100 {
            refill.step(REFILL, &budget);
            let mut now = 0;
            for (k, &(w, reason, r)) in rates.iter().enumerate() {
                acc[k] += r;
                for _ in 0..acc[k] / 100 {
                    let ok = u64::from(wb[w].take(reason));
                    reported[k] += ok;
                    now += ok;
                }
                acc[k] %= 100;
            }
            per_period.push(now);
        }
        let most = per_period.windows(100).map(|w| w.iter().sum()).max().unwrap_or(0);
        (reported.iter().map(|&r| r as f64 / seconds as f64).collect(), most)
    }

    #[test]
    fn one_busy_worker_gets_the_whole_limit() {
        let (got, most) = simulate(1000, 2, &[(0, 3, 50_000)], 10);
        // At most the limit a second, plus the second's worth the pool starts with.
        assert!(got[0] >= 950.0 && got[0] <= 1000.0 + 1000.0 / 10.0, "{got:?}");
        assert!(most <= 2000, "{most} in one second");
    }

    #[test]
    fn busy_workers_share_and_a_light_one_gets_all_it_needs() {
        let (got, _) = simulate(1000, 2, &[(0, 3, 50_000), (1, 3, 50_000)], 10);
        assert!(got.iter().all(|&g| (450.0..=560.0).contains(&g)) && got.iter().sum::<f64>() <= 1100.0, "{got:?}");
        let (got, _) = simulate(1000, 2, &[(0, 3, 50_000), (1, 3, 100)], 10);
        assert!(got[1] >= 95.0 && got[0] >= 850.0 && got.iter().sum::<f64>() <= 1100.0, "{got:?}");
    }

    #[test]
    fn reasons_on_one_worker_share_fairly() {
        // A flood of one reason and a trickle of another on the same worker: the trickle is
        // reported in full, the flood gets the rest; two floods get half each.
        let (got, _) = simulate(1000, 1, &[(0, 3, 50_000), (0, 5, 200)], 10);
        assert!(got[1] >= 190.0 && got[0] >= 750.0 && got.iter().sum::<f64>() <= 1100.0, "{got:?}");
        let (got, _) = simulate(1000, 1, &[(0, 3, 50_000), (0, 5, 50_000)], 10);
        assert!(got.iter().all(|&g| (450.0..=560.0).contains(&g)), "{got:?}");
        // At the default limit (about one token a refill), a trickle beside floods on two
        // workers is still reported in full.
        let (got, _) = simulate(100, 2, &[(0, 3, 50_000), (1, 3, 50_000), (0, 5, 2)], 20);
        assert!(got[2] >= 1.9, "{got:?}");
    }

    #[test]
    fn an_isolated_drop_is_reported_from_the_reserve() {
        let budget = DropBudget::new(2);
        let mut refill = Refill::new(100, 2);
        refill.step(REFILL, &budget);
        let mut w = WorkerBudget::new(budget.clone(), 1);
        assert!(w.take(7), "the first drop of a reason, with nothing granted for it");
        assert!(!w.take(7), "the reserve holds one");
        refill.step(REFILL, &budget);
        assert!(!w.take(9), "not topped up within the second");
        refill.step(RESERVE_EVERY, &budget);
        assert!(w.take(9), "topped up a second later");
    }

    #[test]
    fn grants_held_unspent_count_against_the_budget() {
        // Twenty reasons burst one after another, a second apart, each left holding what it
        // was granted; then all burst at once: no second reports more than twice the limit
        // (one second's worth held plus one second's refill).
        let budget = DropBudget::new(1);
        let mut w = WorkerBudget::new(budget.clone(), 0);
        let mut refill = Refill::new(100, 1);
        let mut per_period: Vec<u64> = Vec::new();
        for second in 0..21 {
            for period in 0..100 {
                refill.step(REFILL, &budget);
                let reasons: Vec<usize> = if second < 20 { vec![second] } else { (0..20).collect() };
                // Each burst: 500 drops in each of the first two periods of its second.
                let drops = if period < 2 { 500 } else { 0 };
                let n: usize = reasons.iter().map(|&r| (0..drops).filter(|_| w.take(r)).count()).sum();
                per_period.push(n as u64);
            }
        }
        let most: u64 = per_period.windows(100).map(|w| w.iter().sum()).max().unwrap();
        assert!(most <= 200, "{most} discards in one second at a limit of 100");
    }

    #[test]
    fn a_worker_reads_its_grant_only_when_its_tokens_run_out() {
        let budget = DropBudget::new(1);
        let mut w = WorkerBudget::new(budget.clone(), 0);
        assert!(!w.take(3));
        budget.grant(0, 3, 2);
        assert!(w.take(3) && w.take(3) && !w.take(3) && !w.take(4));
        assert_eq!(read(&budget.wanted[0])[3], 4, "every drop is demand, reported or not");
    }
}
