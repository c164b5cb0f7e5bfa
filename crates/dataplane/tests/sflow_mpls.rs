//! Label-switched, popped and pushed packets sampled on receive and on transmit carry the
//! label stacks they came with and left with, the swap's next hop, and a router record only
//! when IPv4 routing really chose the next hop. The label entries' indices (1 to 4) collide
//! with real adjacencies (1 local, 2–3 glean, 4 a route's next hop), so reading an entry
//! index as an adjacency would show up as a wrong router record.

mod common;

use dataplane::sflow::ring::{Fate, Ring};
use dataplane::sflow::{DropBudget, RX, SflowWorker, TX, WorkerBudget};
use std::net::{IpAddr, Ipv4Addr};

const YAML: &str = "
interfaces:
  p0: {index: 1, addresses: [100.64.0.1/31], mpls: true}
  p1: {index: 2, addresses: [100.64.1.1/31], mpls: true}
routes:
  - {prefix: 48.0.0.0/24, via: 100.64.1.0}
  - {prefix: 60.0.0.0/8, via: 100.64.1.0, out-labels: [100, 101]}
neighbors:
  - {interface: p0, address: 100.64.0.0, mac: '00:1b:21:06:00:00'}
  - {interface: p1, address: 100.64.1.0, mac: '00:1b:21:06:00:01'}
mpls:
  local-labels:
    - {label: 16}
    - {label: 17, via: 100.64.0.0, interface: p0, out-labels: [40]}
    - {label: 18, via: 100.64.0.0, interface: p0, out-labels: [30, 31]}
    - {label: 19, via: 100.64.0.0, interface: p0, out-labels: [50]}
";

/// An Ethernet frame to p0's MAC with `labels` (each TTL 64, the last at the bottom) over
/// IPv4 to `dst`.
fn frame(labels: &[u32], dst: [u8; 4]) -> Vec<u8> {
    let mut f = vec![2, 0xfe, 0, 0, 0, 1, 0, 0x1b, 0x21, 0, 0, 9];
    if labels.is_empty() {
        f.extend_from_slice(&[8, 0]);
    } else {
        f.extend_from_slice(&[0x88, 0x47]);
    }
    for (k, &l) in labels.iter().enumerate() {
        let bos = if k + 1 == labels.len() { 0x100 } else { 0 };
        f.extend_from_slice(&((l << 12) | bos | 64).to_be_bytes());
    }
    let mut ip = [0u8; 20];
    wire::ipv4::write_header(&mut ip, 46, 64, 17, Ipv4Addr::new(16, 0, 0, 1), dst.into());
    f.extend_from_slice(&ip);
    f.resize(f.len() + 26, 0);
    f
}

/// What a sample says: (stage, input, output, in labels, out labels, next hop, routed).
type Seen = (u8, u16, u16, Vec<u32>, Vec<u32>, IpAddr, bool);

/// Receives `f` on `port` (to its MAC, 02:fe:00:00:00:port) with both ports sampled 1:1 on
/// receive and transmit; the samples.
fn sampled(port: u16, f: &[u8]) -> Vec<Seen> {
    let mut f = f.to_vec();
    f[5] = port as u8;
    let (mut g, _) = common::graph(YAML);
    let (producer, mut consumer) = Ring::new(256).split();
    let peers = vec![g.counters.clone()];
    let sources = [1, 2].map(|port| dataplane::sflow::DataSource { port, rate: 1, stages: RX | TX });
    g.features.sflow =
        Some(SflowWorker::new(&sources, &[], WorkerBudget::new(DropBudget::new(1), 0), 128, 3, producer, peers));
    common::receive(&mut g, port, &[&f]);
    g.features.sflow.as_mut().unwrap().publish(&g.pool, &g.features.tables.interfaces, &g.features.tables.l3);
    let mut out = Vec::new();
    consumer.drain(usize::MAX, |s| {
        assert_eq!(s.fate, Fate::Forwarded);
        let (i, o) = (s.in_labels.labels().to_vec(), s.out_labels.labels().to_vec());
        out.push((s.stage, s.input, s.output, i, o, s.next_hop, s.routed));
        true
    });
    out
}

#[test]
fn a_swap_carries_both_stacks_and_its_next_hop_and_no_router_record() {
    let hop0 = IpAddr::V4(Ipv4Addr::new(100, 64, 0, 0));
    // Label 19 is entry 4, and adjacency 4 is the route to 48.0.0.0/24 via 100.64.1.0.
    let want = vec![(RX, 2, 1, vec![19], vec![50], hop0, false), (TX, 2, 1, vec![19], vec![50], hop0, false)];
    assert_eq!(sampled(2, &frame(&[19], [48, 0, 0, 5])), want);
    // One label replaced by two, over a label that stays.
    let want = vec![
        (RX, 2, 1, vec![18, 77], vec![30, 31, 77], hop0, false),
        (TX, 2, 1, vec![18, 77], vec![30, 31, 77], hop0, false),
    ];
    assert_eq!(sampled(2, &frame(&[18, 77], [48, 0, 0, 5])), want);
}

#[test]
fn a_pop_is_routed_and_a_push_carries_the_pushed_labels() {
    let hop1 = IpAddr::V4(Ipv4Addr::new(100, 64, 1, 0));
    let want = vec![(RX, 1, 2, vec![16], vec![], hop1, true), (TX, 1, 2, vec![16], vec![], hop1, true)];
    assert_eq!(sampled(1, &frame(&[16], [48, 0, 0, 5])), want);
    let want = vec![(RX, 1, 2, vec![], vec![100, 101], hop1, true), (TX, 1, 2, vec![], vec![100, 101], hop1, true)];
    assert_eq!(sampled(1, &frame(&[], [60, 1, 2, 3])), want);
    let want = vec![(RX, 1, 2, vec![], vec![], hop1, true), (TX, 1, 2, vec![], vec![], hop1, true)];
    assert_eq!(sampled(1, &frame(&[], [48, 0, 0, 5])), want);
}
