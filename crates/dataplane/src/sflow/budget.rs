//! The discard budget (`drop-limit`), shared by the whole agent.
//!
//! The agent owns the budget: `drop-limit` tokens a second, at most one second's worth held.
//! Every [`REFILL`] it hands them out to the workers that reported drops in the last period, by
//! max-min fairness over their demand (each gets its demand or an equal share of what is left,
//! whichever is smaller), so a port whose drops all land on one worker gets the whole budget
//! and two busy workers get half each. A worker spends its grant from a private count and reads
//! its grant line (written by the agent) only when that count runs out: the common drop path
//! touches no shared cache line.

use crate::counter::CacheAligned;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// How often the agent hands out discard tokens.
pub const REFILL: Duration = Duration::from_millis(10);

/// Tokens granted to each worker so far (cumulative; written by the agent only).
pub struct DropBudget {
    granted: Box<[CacheAligned<AtomicU64>]>,
}

impl DropBudget {
    /// Nothing granted yet to any of `workers`.
    pub fn new(workers: usize) -> Arc<Self> {
        Arc::new(DropBudget { granted: (0..workers).map(|_| CacheAligned(AtomicU64::new(0))).collect() })
    }

    /// Grants `tokens` more to `worker` (one writer: the agent).
    pub fn grant(&self, worker: usize, tokens: u64) {
        let g = &self.granted[worker];
        g.store(g.load(Relaxed).saturating_add(tokens), Relaxed);
    }
}

/// One worker's side of the budget.
pub struct WorkerBudget {
    shared: Arc<DropBudget>,
    worker: usize,
    used: u64,
    granted: u64,
}

impl WorkerBudget {
    /// Worker `worker`'s share of `shared`.
    pub fn new(shared: Arc<DropBudget>, worker: usize) -> Self {
        assert!(worker < shared.granted.len(), "worker {worker} of {}", shared.granted.len());
        WorkerBudget { shared, worker, used: 0, granted: 0 }
    }

    /// Takes a token, if the agent has granted one not yet used.
    #[inline]
    pub fn take(&mut self) -> bool {
        if self.used == self.granted {
            self.granted = self.shared.granted[self.worker].load(Relaxed);
        }
        let ok = self.used < self.granted;
        self.used += u64::from(ok);
        ok
    }
}

/// The agent's side: the tokens not yet handed out and the demand seen at the last refill.
pub struct Refill {
    rate: f64,
    pool: f64,
    last_demand: Vec<u64>,
}

impl Refill {
    /// `rate` tokens a second for workers whose cumulative demand (drops on monitored ports,
    /// reported or not) starts at zero.
    pub fn new(rate: u32, workers: usize) -> Self {
        Refill { rate: f64::from(rate), pool: f64::from(rate), last_demand: vec![0; workers] }
    }

    /// One refill after `elapsed` since the last: adds `rate × elapsed` to the pool (holding
    /// at most one second's worth), then grants the workers their fair shares of it by their
    /// demand since the last refill (`demand` is cumulative, one entry per worker).
    pub fn step(&mut self, elapsed: Duration, demand: &[u64], budget: &DropBudget) {
        self.pool = (self.pool + self.rate * elapsed.as_secs_f64()).min(self.rate);
        let wants: Vec<u64> =
            demand.iter().zip(&self.last_demand).map(|(now, before)| now.saturating_sub(*before)).collect();
        self.last_demand.copy_from_slice(demand);
        let shares = fair_shares(self.pool as u64, &wants);
        for (worker, &tokens) in shares.iter().enumerate().filter(|(_, t)| **t > 0) {
            budget.grant(worker, tokens);
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

    /// `seconds` of refills every 10 ms with the workers dropping `rates` packets a second;
    /// returns the discards each reported per second.
    fn simulate(limit: u32, rates: &[u64], seconds: u64) -> Vec<f64> {
        let budget = DropBudget::new(rates.len());
        let mut workers: Vec<WorkerBudget> = (0..rates.len()).map(|w| WorkerBudget::new(budget.clone(), w)).collect();
        let mut refill = Refill::new(limit, rates.len());
        let (mut demand, mut reported) = (vec![0u64; rates.len()], vec![0u64; rates.len()]);
        for _ in 0..seconds * 100 {
            refill.step(REFILL, &demand, &budget);
            for (w, &r) in rates.iter().enumerate() {
                for _ in 0..r / 100 {
                    demand[w] += 1;
                    reported[w] += u64::from(workers[w].take());
                }
            }
        }
        reported.iter().map(|&r| r as f64 / seconds as f64).collect()
    }

    #[test]
    fn one_busy_worker_gets_the_whole_limit() {
        let got = simulate(1000, &[50_000, 0], 10);
        // At most the limit a second, plus the second's worth the pool starts with.
        assert!(got[0] >= 950.0 && got[0] <= 1000.0 + 1000.0 / 10.0, "{got:?}");
        assert_eq!(got[1], 0.0);
    }

    #[test]
    fn busy_workers_share_and_a_light_one_gets_all_it_needs() {
        let got = simulate(1000, &[50_000, 50_000], 10);
        assert!(got.iter().all(|&g| (450.0..=560.0).contains(&g)) && got.iter().sum::<f64>() <= 1100.0, "{got:?}");
        let got = simulate(1000, &[50_000, 100], 10);
        assert!(got[1] >= 95.0 && got[0] >= 850.0 && got.iter().sum::<f64>() <= 1100.0, "{got:?}");
    }

    #[test]
    fn a_worker_reads_its_grant_only_when_its_tokens_run_out() {
        let budget = DropBudget::new(1);
        let mut w = WorkerBudget::new(budget.clone(), 0);
        assert!(!w.take());
        budget.grant(0, 2);
        assert!(w.take() && w.take() && !w.take());
    }
}
