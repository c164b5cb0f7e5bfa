//! The sample pool and drops of every flow sample against the ground truth: one data source
//! (p0, sampled on receive) fed by two workers, with a share of its packets dropped (TTL 1)
//! and one worker's ring left to overflow. The workers take turns in one thread, so the truth
//! when a worker publishes is known exactly: every forwarded packet of both, and every sample
//! lost to a full ring.

mod common;

use dataplane::config::Config;
use dataplane::control::routes::build_forwarding;
use dataplane::datapath::Graph;
use dataplane::datapath::WorkerCounters;
use dataplane::runtime::qsbr::Qsbr;
use dataplane::sflow::ring::{Consumer, Fate, Ring};
use dataplane::sflow::{DropBudget, RX, SflowWorker, WorkerBudget};
use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::sync::Arc;

const YAML: &str = "
interfaces:
  p0: {index: 1, addresses: [100.64.0.1/31]}
  p1: {index: 2, addresses: [100.64.1.1/31]}
routes:
  - {prefix: 48.0.0.0/24, via: 100.64.1.0}
neighbors:
  - {interface: p1, address: 100.64.1.0, mac: '00:1b:21:06:00:01'}
";

/// An Ethernet + IPv4 frame to p0's MAC and 48.0.0.5 with `ttl` (1 is dropped as
/// ttl-expired).
fn frame(ttl: u8) -> Vec<u8> {
    let mut f = vec![2, 0xfe, 0, 0, 0, 1, 0, 0x1b, 0x21, 0, 0, 9, 8, 0];
    let mut ip = [0u8; 20];
    wire::ipv4::write_header(&mut ip, 46, ttl, 17, Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::new(48, 0, 0, 5));
    f.extend_from_slice(&ip);
    f.resize(60, 0);
    f
}

/// Two workers' graphs over one set of tables, sampling p0 at 1:`rate` on receive into rings
/// of `depth` slots, each knowing both workers' counters.
fn workers(rate: u32, depth: u32) -> Vec<(Graph, Consumer)> {
    let cfg = Config::load(YAML).unwrap();
    let f = build_forwarding(&cfg, Arc::new(Qsbr::new(1))).unwrap();
    let counters = [Arc::new(WorkerCounters::new()), Arc::new(WorkerCounters::new())];
    (0..2)
        .map(|w| {
            let mut g = Graph::new(
                dataplane::runtime::buffer::BufferPool::new(1024).unwrap(),
                f.tables.clone(),
                f.fib.fibs(),
                counters[w].clone(),
            );
            let (producer, consumer) = Ring::new(depth).split();
            let bucket = WorkerBudget::new(DropBudget::new(1), 0);
            let peers = counters.to_vec();
            g.features.sflow = Some(SflowWorker::new(
                &[dataplane::sflow::DataSource { port: 1, rate, stages: RX }],
                &[],
                bucket,
                128,
                77 + w as u64,
                producer,
                peers,
            ));
            (g, consumer)
        })
        .collect()
}

#[test]
fn every_sample_carries_the_pool_and_drops_of_its_moment() {
    let mut ws = workers(3, 256);
    let (ok, expired) = (frame(64), frame(1));
    let (mut forwarded, mut checked, mut rng) = (0u64, 0u64, 0x5eed_u64);
    // Per worker: for each publication not yet read, (samples published, true pool, true drops).
    let mut published: [VecDeque<(u64, u64, u64)>; 2] = Default::default();
    let mut taken = [0u64; 2];
    for round in 0..600u32 {
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let w = (rng >> 33) as usize % 2;
        let len = 1 + (rng >> 40) as usize % 256;
        let dropped_every = 2 + (rng >> 50) as usize % 5; // 20 to 50 % of the packets drop
        let frames: Vec<&[u8]> =
            (0..len).map(|k| if k % dropped_every == 0 { &expired[..] } else { &ok[..] }).collect();
        let g = &mut ws[w].0;
        let v = g.inject(1, &frames).unwrap();
        g.forward(v, dataplane::ethernet::nodes::ETHERNET_INPUT);
        g.run(0);
        g.features.sflow.as_mut().unwrap().publish(&g.pool, &g.features.tables.interfaces, &g.features.tables.l3);
        forwarded += (len - len.div_ceil(dropped_every)) as u64;
        let lost: u64 = ws.iter().map(|(g, _)| g.counters.sflow(1).ring_full.get()).sum();
        let now_taken = ws[w].0.counters.sflow(1).taken.get();
        published[w].push_back((now_taken - taken[w], forwarded, lost));
        taken[w] = now_taken;
        // Worker 1's ring is read only every tenth round, so it overflows: those samples are
        // lost and counted in `drops`.
        for r in 0..2 {
            if r == 1 && round % 10 != 9 {
                continue;
            }
            let queue = &mut published[r];
            ws[r].1.drain(usize::MAX, |s| {
                while queue.front().is_some_and(|p| p.0 == 0) {
                    queue.pop_front();
                }
                let p = queue.front_mut().expect("a sample from a publication");
                p.0 -= 1;
                if s.fate == Fate::Forwarded {
                    // (A sampled packet that was dropped is not a flow sample.)
                    assert_eq!((s.pool, s.drops), (p.1, p.2), "worker {r}: the pool and drops when it was published");
                    checked += 1;
                }
                true
            });
        }
    }
    let lost: u64 = ws.iter().map(|(g, _)| g.counters.sflow(1).ring_full.get()).sum();
    assert!(checked > 10_000 && lost > 500, "{checked} samples checked, {lost} lost to the full ring");
}

/// A packet to a connected destination (a glean adjacency) is sampled with the destination
/// itself as its next hop, not 0.0.0.0.
#[test]
fn a_connected_destination_is_its_own_next_hop() {
    let yaml = "
interfaces:
  p0: {index: 1, addresses: [100.64.0.1/31]}
  p1: {index: 2, addresses: [10.7.0.1/24]}
neighbors:
  - {interface: p1, address: 10.7.0.9, mac: '00:1b:21:06:00:09'}
";
    let (mut g, _) = common::graph(yaml);
    let (producer, mut consumer) = Ring::new(256).split();
    let peers = vec![g.counters.clone()];
    g.features.sflow = Some(SflowWorker::new(
        &[dataplane::sflow::DataSource { port: 1, rate: 1, stages: RX }],
        &[],
        WorkerBudget::new(DropBudget::new(1), 0),
        128,
        5,
        producer,
        peers,
    ));
    let mut f = vec![2, 0xfe, 0, 0, 0, 1, 0, 0x1b, 0x21, 0, 0, 9, 8, 0];
    let mut ip = [0u8; 20];
    wire::ipv4::write_header(&mut ip, 46, 64, 17, Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::new(10, 7, 0, 9));
    f.extend_from_slice(&ip);
    f.resize(60, 0);
    common::receive(&mut g, 1, &[&f]);
    g.features.sflow.as_mut().unwrap().publish(&g.pool, &g.features.tables.interfaces, &g.features.tables.l3);
    let mut got = Vec::new();
    consumer.drain(usize::MAX, |s| {
        got.push((s.fate, s.output, s.routed, s.next_hop, s.dst_prefix_len));
        true
    });
    assert_eq!(got, [(Fate::Forwarded, 2, true, Ipv4Addr::new(10, 7, 0, 9).into(), 24)]);
}
