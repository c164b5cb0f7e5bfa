use super::*;
use crate::datapath::WorkerCounters;
use crate::sflow::ring::Ring;

/// A configured seed gives every worker its own seed, the same every time; without one,
/// every call (every worker of every start) gets a fresh one.
#[test]
fn seeds_are_fixed_only_when_configured() {
    assert_eq!(worker_seed(Some(38), 0), worker_seed(Some(38), 0));
    assert_ne!(worker_seed(Some(38), 0), worker_seed(Some(38), 1));
    assert_ne!(worker_seed(Some(38), 0), worker_seed(Some(39), 0));
    let fresh: std::collections::BTreeSet<u64> = (0..8).map(|_| worker_seed(None, 0)).collect();
    assert_eq!(fresh.len(), 8, "getrandom gave a repeated seed: {fresh:?}");
}

fn worker(rate: u32, seed: u64) -> SflowWorker<WorkerCounters> {
    let peers = vec![Arc::new(WorkerCounters::new())];
    SflowWorker::new(
        &[crate::sflow::DataSource { port: 1, rate, stages: RX }],
        &[],
        WorkerBudget::new(crate::sflow::DropBudget::new(1), 0),
        128,
        seed,
        Ring::new(1 << 16).split().0,
        peers,
    )
}

/// Skips are uniform on [1, 2N−1]: a χ² test over 10 equal bins (fixed seed), and the
/// mean is N.
#[test]
fn skips_are_uniform_with_mean_n() {
    for n in [10u32, 100, 10_000] {
        let mut w = worker(n, 42);
        let draws = 200_000;
        let span = u64::from(2 * n - 1);
        let mut bins = [0u64; 10];
        let mut sum = 0u64;
        for _ in 0..draws {
            let s = w.next_skip(n);
            assert!((1..=span).contains(&s));
            bins[((s - 1) * 10 / span) as usize] += 1;
            sum += s;
        }
        let mean = sum as f64 / f64::from(draws);
        assert!((mean - f64::from(n)).abs() < 0.01 * f64::from(n) + 0.05, "rate {n}: mean {mean}");
        // Bins hold equal numbers of values only approximately when the span is not a
        // multiple of 10; the expected count follows the exact bin widths.
        let chi2: f64 = (0..10u64)
            .map(|b| {
                let lo = (b * span).div_ceil(10);
                let hi = ((b + 1) * span).div_ceil(10);
                let expect = (hi - lo) as f64 / span as f64 * f64::from(draws);
                (bins[b as usize] as f64 - expect).powi(2) / expect
            })
            .sum();
        assert!(chi2 < 21.67, "rate {n}: chi2 {chi2} over 9 degrees of freedom (99 % point 21.67)");
    }
}
