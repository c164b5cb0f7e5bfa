//! Sampling statistics with fixed seeds: sample counts within binomial bounds, and per-class
//! totals estimated from the samples within 196·√(1/c) % — at 1:10, 1:100 and 1:10 000.

mod common;

use dataplane::sflow::SflowWorker;
use dataplane::sflow::ring::{Fate, Ring};
use std::collections::BTreeMap;

const YAML: &str = "
interfaces:
  gen0: {index: 1, l2xc: gen1}
  gen1: {index: 2, l2xc: gen0}
";

/// Frames of 20 classes (destination MAC low byte = class), class k carrying weight k + 1,
/// chosen by a fixed-seed splitmix64.
struct Traffic(u64);

impl Traffic {
    fn next(&mut self) -> u8 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let r = (z ^ (z >> 31)) % 210; // 1 + 2 + … + 20
        let (mut k, mut acc) = (0u8, 0u64);
        while acc + u64::from(k) < r {
            acc += u64::from(k) + 1;
            k += 1;
        }
        k
    }
}

/// Sends `packets` frames through gen0 sampled at 1:`rate`; returns (samples, true count per
/// class, samples per class).
fn run(rate: u32, packets: u64, seed: u64) -> (u64, BTreeMap<u8, u64>, BTreeMap<u8, u64>) {
    let (mut g, _) = common::graph(YAML);
    let (producer, mut consumer) = Ring::new(1 << 16).split();
    let bucket = dataplane::sflow::WorkerBudget::new(dataplane::sflow::DropBudget::new(1), 0);
    let peers = vec![g.counters.clone()];
    g.features.sflow = Some(SflowWorker::new(
        &[dataplane::sflow::DataSource { port: 1, rate, stages: dataplane::sflow::RX }],
        &[],
        bucket,
        128,
        seed,
        producer,
        peers,
    ));
    let mut traffic = Traffic(seed);
    let (mut truth, mut seen) = (BTreeMap::new(), BTreeMap::new());
    let mut samples = 0;
    let mut sent = 0;
    let frames: Vec<Vec<u8>> =
        (0..20u8).map(|c| [&[2, 0, 0, 0, 0, c][..], &[2, 0, 0, 0, 0, 1], &[0x88, 0xb5], &[0; 46]].concat()).collect();
    while sent < packets {
        let classes: Vec<u8> = (0..256.min(packets - sent)).map(|_| traffic.next()).collect();
        for &c in &classes {
            *truth.entry(c).or_insert(0u64) += 1;
        }
        let refs: Vec<&[u8]> = classes.iter().map(|&c| &frames[usize::from(c)][..]).collect();
        let v = g.inject(1, &refs).unwrap();
        g.forward(v, dataplane::ethernet::nodes::ETHERNET_INPUT);
        g.run(0);
        g.features.sflow.as_mut().unwrap().publish(&g.pool, &g.features.tables.interfaces, &g.features.tables.l3);
        consumer.drain(usize::MAX, |s| {
            assert_eq!(s.fate, Fate::Forwarded);
            *seen.entry(s.header[5]).or_insert(0u64) += 1;
            samples += 1;
            true
        });
        sent += classes.len() as u64;
    }
    (samples, truth, seen)
}

fn check(rate: u32, packets: u64, seed: u64) {
    let (samples, truth, seen) = run(rate, packets, seed);
    // The sample count: mean M/N, and for skips uniform on [1, 2N−1] a variance of about
    // M·(N²−1)/(3N³) (renewal process), under the binomial's M·p(1−p) for N > 1. Allow
    // 3.3 binomial standard deviations (99.9 %).
    let p = 1.0 / f64::from(rate);
    let mean = packets as f64 * p;
    let sd = (packets as f64 * p * (1.0 - p)).sqrt();
    assert!(
        (samples as f64 - mean).abs() <= 3.3 * sd.max(1.0),
        "1:{rate}: {samples} samples, expected {mean:.0} ± {:.0}",
        3.3 * sd
    );
    // Per-class estimates c·N against the true counts, within 196/√c % (95 %): allow a few
    // of the 20 classes outside, none beyond twice the bound.
    let (mut outside, mut far, mut judged) = (0, 0, 0);
    for (class, &t) in &truth {
        let c = seen.get(class).copied().unwrap_or(0);
        if c < 10 {
            continue; // too few samples for the bound to mean anything
        }
        judged += 1;
        let err = 100.0 * (c as f64 * f64::from(rate) - t as f64).abs() / t as f64;
        let bound = 196.0 / (c as f64).sqrt();
        outside += usize::from(err > bound);
        far += usize::from(err > 2.0 * bound);
    }
    assert!(judged >= 10, "1:{rate}: only {judged} classes with 10+ samples");
    assert!(outside <= 3 && far == 0, "1:{rate}: {outside} of {judged} classes outside 196/√c %, {far} beyond twice");
}

#[test]
fn sample_counts_and_class_estimates_at_1_in_10() {
    check(10, 200_000, 11);
}

#[test]
fn sample_counts_and_class_estimates_at_1_in_100() {
    check(100, 2_000_000, 12);
}

#[test]
fn sample_counts_and_class_estimates_at_1_in_10000() {
    check(10_000, 40_000_000, 13);
}
