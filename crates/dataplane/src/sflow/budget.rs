//! The discard budget (`drop-limit`), shared by the whole agent.
//!
//! The agent owns the budget: `drop-limit` tokens a second, at most one second's worth held.
//! Every [`REFILL`] it hands them out by max-min fairness over the demand of each (worker,
//! drop reason) in the last period (each gets its demand or an equal share of what is left,
//! whichever is smaller): a port whose drops all land on one worker gets the whole budget, two
//! busy workers get half each, and a trickle of one reason is not starved by a flood of
//! another on the same worker. A worker counts its demand and spends its grants in its own
//! lines, and reads a grant (written by the agent) only when that reason's tokens run out: the
//! common drop path touches no line another thread writes.

use crate::counter::CacheAligned;
use crate::errors::N_REASONS;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// How often the agent hands out discard tokens.
pub const REFILL: Duration = Duration::from_millis(10);

/// One counter per drop reason.
type PerReason = CacheAligned<[AtomicU64; N_REASONS]>;

fn per_reason() -> PerReason {
    CacheAligned(std::array::from_fn(|_| AtomicU64::new(0)))
}

/// Per worker and drop reason: tokens granted so far (written by the agent) and drops on
/// monitored ports so far, reported or not (written by the worker).
pub struct DropBudget {
    granted: Box<[PerReason]>,
    wanted: Box<[PerReason]>,
}

impl DropBudget {
    /// Nothing granted yet to any of `workers`.
    pub fn new(workers: usize) -> Arc<Self> {
        Arc::new(DropBudget {
            granted: (0..workers).map(|_| per_reason()).collect(),
            wanted: (0..workers).map(|_| per_reason()).collect(),
        })
    }

    /// Grants `tokens` more to `worker` for drops of `reason` (one writer: the agent).
    pub fn grant(&self, worker: usize, reason: usize, tokens: u64) {
        let g = &self.granted[worker][reason];
        g.store(g.load(Relaxed).saturating_add(tokens), Relaxed);
    }

    /// Each worker's demand so far, per reason.
    fn demand(&self) -> Vec<[u64; N_REASONS]> {
        self.wanted.iter().map(|w| std::array::from_fn(|r| w[r].load(Relaxed))).collect()
    }
}

/// One worker's side of the budget.
pub struct WorkerBudget {
    shared: Arc<DropBudget>,
    worker: usize,
    used: [u64; N_REASONS],
    granted: [u64; N_REASONS],
}

impl WorkerBudget {
    /// Worker `worker`'s share of `shared`.
    pub fn new(shared: Arc<DropBudget>, worker: usize) -> Self {
        assert!(worker < shared.granted.len(), "worker {worker} of {}", shared.granted.len());
        WorkerBudget { shared, worker, used: [0; N_REASONS], granted: [0; N_REASONS] }
    }

    /// Counts a drop of `reason` (an index below [`N_REASONS`]) and takes a token for it, if
    /// the agent has granted one not yet used.
    #[inline]
    pub fn take(&mut self, reason: usize) -> bool {
        let wanted = &self.shared.wanted[self.worker][reason];
        wanted.store(wanted.load(Relaxed) + 1, Relaxed);
        if self.used[reason] == self.granted[reason] {
            self.granted[reason] = self.shared.granted[self.worker][reason].load(Relaxed);
        }
        let ok = self.used[reason] < self.granted[reason];
        self.used[reason] += u64::from(ok);
        ok
    }
}

/// The agent's side: the tokens not yet handed out and the demand seen at the last refill.
pub struct Refill {
    rate: f64,
    pool: f64,
    last_demand: Vec<[u64; N_REASONS]>,
}

impl Refill {
    /// `rate` tokens a second for `workers`.
    pub fn new(rate: u32, workers: usize) -> Self {
        Refill { rate: f64::from(rate), pool: f64::from(rate), last_demand: vec![[0; N_REASONS]; workers] }
    }

    /// One refill after `elapsed` since the last: adds `rate × elapsed` to the pool (holding
    /// at most one second's worth), then grants each (worker, reason) its fair share of it by
    /// its demand since the last refill.
    pub fn step(&mut self, elapsed: Duration, budget: &DropBudget) {
        self.pool = (self.pool + self.rate * elapsed.as_secs_f64()).min(self.rate);
        let demand = budget.demand();
        let wants: Vec<u64> = demand
            .iter()
            .zip(&self.last_demand)
            .flat_map(|(now, before)| now.iter().zip(before).map(|(n, b)| n.saturating_sub(*b)))
            .collect();
        self.last_demand = demand;
        let shares = fair_shares(self.pool as u64, &wants);
        for (k, &tokens) in shares.iter().enumerate().filter(|(_, t)| **t > 0) {
            budget.grant(k / N_REASONS, k % N_REASONS, tokens);
            self.pool -= tokens as f64;
        }
    }
}

/// Max-min fair shares of `tokens` over `wants`: each gets what it wants or an equal share of
/// what is left, whichever is smaller; the sum never exceeds `tokens`.
pub fn fair_shares(tokens: u64, wants: &[u64]) -> Vec<u64> {
    let mut shares = vec![0; wants.len()];
    let mut left = tokens;
    let mut open: Vec<usize> = (0..wants.len()).filter(|&w| wants[w] > 0).collect();
    open.sort_by_key(|&w| wants[w]);
    while let Some(&w) = open.first() {
        let each = left / open.len() as u64;
        if each == 0 {
            break;
        }
        let give = each.min(wants[w] - shares[w]);
        if give == wants[w] - shares[w] {
            // The smallest demand is met: give it, and split the rest among the others.
            shares[w] += give;
            left -= give;
            open.remove(0);
        } else {
            // Every open demand exceeds an equal share: each gets one.
            for &o in &open {
                shares[o] += each;
            }
            break;
        }
    }
    shares
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_max_min_fair_and_never_exceed_the_tokens() {
        assert_eq!(fair_shares(100, &[1000, 0]), [100, 0]);
        assert_eq!(fair_shares(100, &[1000, 1000]), [50, 50]);
        assert_eq!(fair_shares(100, &[10, 1000, 1000]), [10, 45, 45]);
        assert_eq!(fair_shares(100, &[10, 20]), [10, 20]);
        assert_eq!(fair_shares(0, &[10, 20]), [0, 0]);
        assert_eq!(fair_shares(3, &[10, 10, 10, 10]), [0, 0, 0, 0], "less than one each: kept for later");
    }

    /// `seconds` of refills every 10 ms with the workers dropping, per (worker, reason),
    /// `rates` packets a second; returns the discards each pair reported per second.
    fn simulate(limit: u32, workers: usize, rates: &[(usize, usize, u64)], seconds: u64) -> Vec<f64> {
        let budget = DropBudget::new(workers);
        let mut wb: Vec<WorkerBudget> = (0..workers).map(|w| WorkerBudget::new(budget.clone(), w)).collect();
        let mut refill = Refill::new(limit, workers);
        let mut reported = vec![0u64; rates.len()];
        for _ in 0..seconds * 100 {
            refill.step(REFILL, &budget);
            for (k, &(w, reason, r)) in rates.iter().enumerate() {
                for _ in 0..r / 100 {
                    reported[k] += u64::from(wb[w].take(reason));
                }
            }
        }
        reported.iter().map(|&r| r as f64 / seconds as f64).collect()
    }

    #[test]
    fn one_busy_worker_gets_the_whole_limit() {
        let got = simulate(1000, 2, &[(0, 3, 50_000)], 10);
        // At most the limit a second, plus the second's worth the pool starts with.
        assert!(got[0] >= 950.0 && got[0] <= 1000.0 + 1000.0 / 10.0, "{got:?}");
    }

    #[test]
    fn busy_workers_share_and_a_light_one_gets_all_it_needs() {
        let got = simulate(1000, 2, &[(0, 3, 50_000), (1, 3, 50_000)], 10);
        assert!(got.iter().all(|&g| (450.0..=560.0).contains(&g)) && got.iter().sum::<f64>() <= 1100.0, "{got:?}");
        let got = simulate(1000, 2, &[(0, 3, 50_000), (1, 3, 100)], 10);
        assert!(got[1] >= 95.0 && got[0] >= 850.0 && got.iter().sum::<f64>() <= 1100.0, "{got:?}");
    }

    #[test]
    fn reasons_on_one_worker_share_fairly() {
        // A flood of one reason and a trickle of another on the same worker: the trickle is
        // reported in full, the flood gets the rest; two floods get half each.
        let got = simulate(1000, 1, &[(0, 3, 50_000), (0, 5, 200)], 10);
        assert!(got[1] >= 190.0 && got[0] >= 750.0 && got.iter().sum::<f64>() <= 1100.0, "{got:?}");
        let got = simulate(1000, 1, &[(0, 3, 50_000), (0, 5, 50_000)], 10);
        assert!(got.iter().all(|&g| (450.0..=560.0).contains(&g)), "{got:?}");
    }

    #[test]
    fn a_worker_reads_its_grant_only_when_its_tokens_run_out() {
        let budget = DropBudget::new(1);
        let mut w = WorkerBudget::new(budget.clone(), 0);
        assert!(!w.take(3));
        budget.grant(0, 3, 2);
        assert!(w.take(3) && w.take(3) && !w.take(3) && !w.take(4));
        assert_eq!(budget.demand()[0][3], 4, "every drop is demand, reported or not");
    }
}
