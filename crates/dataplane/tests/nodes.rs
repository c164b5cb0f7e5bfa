//! Node-by-node tests with exact outputs, the malformed-frame corpus, and the per-input
//! accounting rule (packets in = packets forwarded + packets dropped with that input).

mod common;

use common::{dropped, receive, stats};
use dataplane::datapath::Graph;
use dataplane::runtime::drops::DropReason;
use dataplane::runtime::graph::NodeId;
use dataplane::runtime::vector::VecHandle;
use proptest::prelude::*;

/// gen0 <-> gen1 cross-connected (MTU 1500), l3 an L3 interface, down0 administratively
/// down and cross-connected to gen0, small cross-connected to gen1 with MTU 100.
const YAML: &str = "
interfaces:
  gen0: {index: 1, l2xc: gen1}
  gen1: {index: 2, l2xc: gen0}
  l3: {index: 3}
  down0: {index: 4, l2xc: gen0, state: down}
  small: {index: 5, l2xc: gen1, mtu: 100}
";

fn graph() -> Graph {
    common::graph(YAML).0
}

/// A frame of `len` bytes: dst `dst`, src 02:00:00:00:00:01, ethertype `et`, payload 0,1,2…
fn frame(len: usize, dst: [u8; 6], et: u16) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len).map(|k| k as u8).collect();
    let head = [&dst[..], &[2, 0, 0, 0, 0, 1], &et.to_be_bytes()].concat();
    let n = head.len().min(len);
    f[..n].copy_from_slice(&head[..n]);
    f
}

const UCAST: [u8; 6] = [2, 0, 0, 0, 0, 2];
const MCAST: [u8; 6] = [1, 0, 0x5e, 0, 0, 1];
const BCAST: [u8; 6] = [0xff; 6];
/// The MAC of interface 1, 2, 3 (02:fe:00:00:00:index when none is configured).
const IF1: [u8; 6] = [2, 0xfe, 0, 0, 0, 1];
const IF2: [u8; 6] = [2, 0xfe, 0, 0, 0, 2];
const IF3: [u8; 6] = [2, 0xfe, 0, 0, 0, 3];

fn drops(g: &Graph, index: u16, r: DropReason) -> u64 {
    g.counters.error(index, r).get()
}

/// Pops every pending vector as (node, frames).
fn drain(g: &mut Graph) -> Vec<(NodeId, VecHandle, Vec<Vec<u8>>)> {
    let mut out = Vec::new();
    while let Some((node, v)) = g.take_pending() {
        let frames = g.vectors[v].indices().iter().map(|&i| g.pool.frame(i).to_vec()).collect();
        out.push((node, v, frames));
    }
    out
}

#[test]
fn ethernet_input_hands_a_clean_l2xc_vector_on_unchanged() {
    let mut g = graph();
    let frames =
        [frame(60, UCAST, 0x0800), frame(60, MCAST, 0x0800), frame(64, BCAST, 0x0806), frame(1518, UCAST, 0x8100)];
    let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
    let v = g.inject(1, &refs).unwrap();
    g.dispatch(dataplane::ethernet::nodes::ETHERNET_INPUT, v);
    let out = drain(&mut g);
    assert_eq!(out.len(), 1);
    let (node, handle, got) = &out[0];
    assert_eq!((*node, *handle), (dataplane::ethernet::nodes::L2_XCONNECT, v), "same vector, not a copy");
    assert_eq!(got, &frames.to_vec(), "frames untouched");
    let s = stats(&g, 1);
    assert_eq!((s.rx_packets, s.rx_octets), (4, 60 + 60 + 64 + 1518));
    assert_eq!((s.rx_unicast, s.rx_multicast, s.rx_broadcast), (2, 1, 1));
}

#[test]
fn l2_xconnect_sets_the_peer_and_interface_output_forwards_to_the_sink() {
    let mut g = graph();
    let f = frame(60, UCAST, 0x0800);
    let v = g.inject(2, &[&f, &f]).unwrap();
    g.dispatch(dataplane::ethernet::nodes::L2_XCONNECT, v);
    let (node, v2) = g.take_pending().unwrap();
    assert_eq!((node, v2), (dataplane::interface::nodes::INTERFACE_OUTPUT, v));
    assert!(g.vectors[v].indices().iter().all(|&i| g.pool.meta(i).tx_if == 1 && g.pool.frame(i) == &f[..]));
    g.dispatch(dataplane::interface::nodes::INTERFACE_OUTPUT, v);
    assert_eq!(g.take_pending(), Some((dataplane::drivers::nodes::GENERATOR_TX, v)));
    assert_eq!(stats(&g, 2).rx_forwarded, 2);
    g.dispatch(dataplane::drivers::nodes::GENERATOR_TX, v);
    let s = stats(&g, 1);
    assert_eq!((s.tx_packets, s.tx_octets, s.tx_unicast, s.tx_multicast, s.tx_broadcast), (2, 120, 2, 0, 0));
    assert_eq!(g.counters.generator.sink_packets.get(), 2);
    assert_eq!(g.pool.free_count(), 1024, "sink frees every buffer");
}

#[test]
fn every_truncation_from_0_to_64_bytes_is_handled_without_panic() {
    let mut g = graph();
    let full = frame(64, UCAST, 0x0800);
    let frames: Vec<&[u8]> = (0..=64).map(|n| &full[..n]).collect();
    receive(&mut g, 1, &frames);
    // 0..=13 bytes cannot hold an Ethernet header; 14..=64 are forwarded by the cross-connect.
    assert_eq!(drops(&g, 1, dataplane::ethernet::drops::TRUNCATED_ETHERNET), 14);
    assert_eq!(stats(&g, 1).in_errors, 14);
    assert_eq!(stats(&g, 2).tx_packets, 51);
    assert_eq!(stats(&g, 1).rx_forwarded, 51);
    assert_eq!(g.pool.free_count(), 1024);
}

#[test]
fn l3_interface_drops_by_ethertype_and_truncation() {
    let mut g = graph();
    let frames = [
        frame(60, IF3, 0x0800),
        frame(60, IF3, 0x8847),
        frame(60, IF3, 0x1234),
        frame(60, BCAST, 0x0806),
        frame(13, IF3, 0x0800),
        frame(60, UCAST, 0x0800),
    ];
    let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
    receive(&mut g, 3, &refs);
    assert_eq!(drops(&g, 3, dataplane::ethernet::drops::IP4_NOT_ENABLED), 1);
    assert_eq!(drops(&g, 3, dataplane::ethernet::drops::MPLS_NOT_ENABLED), 1);
    assert_eq!(drops(&g, 3, dataplane::ethernet::drops::UNKNOWN_ETHERTYPE), 2);
    assert_eq!(drops(&g, 3, dataplane::ethernet::drops::TRUNCATED_ETHERNET), 1);
    assert_eq!(drops(&g, 3, dataplane::ethernet::drops::NOT_FOR_US), 1, "for another host");
    let s = stats(&g, 3);
    assert_eq!((s.in_unknown_protos, s.in_errors, s.in_discards, s.rx_forwarded), (4, 1, 0, 0));
    assert_eq!(g.pool.free_count(), 1024);
}

#[test]
fn oversize_down_and_mtu_exceeded_are_named() {
    let mut g = graph();
    // Received: MTU 1500 + 18 at most, 1519 is oversize. Sent: 1500 + 14 untagged (a Linux
    // device takes no more), + 18 tagged; an untagged 1518 is mtu-exceeded on the way out.
    let frames = [frame(1514, UCAST, 0x0800), frame(1518, UCAST, 0x8100), frame(1518, UCAST, 0x0800)];
    receive(&mut g, 1, &[&frames[0], &frames[1], &frames[2], &frame(1519, UCAST, 0x0800)]);
    assert_eq!(drops(&g, 1, dataplane::ethernet::drops::OVERSIZE), 1);
    assert_eq!(drops(&g, 1, dataplane::interface::drops::MTU_EXCEEDED), 1);
    assert_eq!(stats(&g, 2).tx_packets, 2);
    // Admin-down input.
    receive(&mut g, 4, &[&frame(60, UCAST, 0x0800)]);
    assert_eq!(drops(&g, 4, dataplane::ethernet::drops::INTERFACE_DOWN), 1);
    assert_eq!(stats(&g, 4).in_discards, 1);
    // A 200-byte frame from gen0 (MTU 1500) sent to `small` (MTU 100, so 118 at most).
    let f = frame(200, UCAST, 0x0800);
    let v = g.inject(1, &[&f]).unwrap();
    let i = g.vectors[v].indices()[0];
    g.pool.meta_mut(i).tx_if = 5;
    g.dispatch(dataplane::interface::nodes::INTERFACE_OUTPUT, v);
    g.run(0);
    assert_eq!(drops(&g, 1, dataplane::interface::drops::MTU_EXCEEDED), 2);
    assert_eq!(stats(&g, 5).out_discards, 1);
    assert_eq!(g.pool.free_count(), 1024);
}

#[test]
fn tx_interface_down_is_an_out_discard() {
    let mut g = graph();
    let v = g.inject(1, &[&frame(60, UCAST, 0x0800)]).unwrap();
    let i = g.vectors[v].indices()[0];
    g.pool.meta_mut(i).tx_if = 4;
    g.dispatch(dataplane::interface::nodes::INTERFACE_OUTPUT, v);
    g.run(0);
    assert_eq!(drops(&g, 1, dataplane::interface::drops::TX_INTERFACE_DOWN), 1);
    assert_eq!(stats(&g, 4).out_discards, 1);
}

#[test]
fn a_port_whose_link_is_down_drops_at_output_as_an_admin_down_one_does() {
    let mut g = graph();
    // gen0's frames cross to gen1; gen1's link goes down (the main thread marks it so in
    // the tables it publishes): they are dropped before the driver, not refused by the kernel.
    let mut tables = (*g.features.tables).clone();
    tables.interfaces.link_down(2);
    g.features.tables = std::sync::Arc::new(tables);
    receive(&mut g, 1, &[&frame(60, UCAST, 0x0800), &frame(60, UCAST, 0x0800)]);
    assert_eq!(drops(&g, 1, dataplane::interface::drops::TX_INTERFACE_DOWN), 2);
    assert_eq!((stats(&g, 2).out_discards, stats(&g, 2).tx_packets), (2, 0));
    assert_eq!(stats(&g, 1).rx_forwarded, 0, "a frame dropped at output was not forwarded");
    assert_eq!(g.pool.free_count(), 1024);
}

#[test]
fn mixed_vector_is_split_per_next_node_in_order() {
    let mut g = graph();
    let frames =
        [frame(60, UCAST, 1), frame(5, UCAST, 1), frame(61, UCAST, 1), frame(3, UCAST, 1), frame(62, UCAST, 1)];
    let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
    let v = g.inject(1, &refs).unwrap();
    g.dispatch(dataplane::ethernet::nodes::ETHERNET_INPUT, v);
    let mut out = drain(&mut g);
    out.sort_by_key(|(n, _, _)| n.index() as u8);
    let lens: Vec<(NodeId, Vec<usize>)> =
        out.iter().map(|(n, _, f)| (*n, f.iter().map(|x| x.len()).collect())).collect();
    assert_eq!(
        lens,
        vec![
            (dataplane::ethernet::nodes::L2_XCONNECT, vec![60, 61, 62]),
            (dataplane::interface::nodes::ERROR_DROP, vec![5, 3])
        ]
    );
    assert_eq!(
        g.vectors.free_count(),
        dataplane::runtime::vector::VectorPool::CAPACITY - 2,
        "the source vector was freed"
    );
}

fn arb_frame() -> impl Strategy<Value = (u16, Vec<u8>)> {
    let dst = prop_oneof![Just(UCAST), Just(IF3), Just(MCAST), Just(BCAST)];
    let et = prop_oneof![Just(0x0800u16), Just(0x8847), Just(0x0806), any::<u16>()];
    (1u16..=5, dst, et, prop_oneof![0usize..80, 1400usize..1600]).prop_map(|(port, d, e, len)| (port, frame(len, d, e)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, rng_seed: proptest::test_runner::RngSeed::Fixed(7), ..ProptestConfig::default() })]

    /// For every input interface: packets in = forwarded + dropped with that input, and no
    /// buffer or vector leaks, whatever the mix of frames.
    #[test]
    fn packets_in_equal_forwarded_plus_dropped(batch in proptest::collection::vec(arb_frame(), 1..400)) {
        let mut g = graph();
        for chunk in batch.chunks(64) {
            for port in 1..=5u16 {
                let frames: Vec<&[u8]> = chunk.iter().filter(|(p, _)| *p == port).map(|(_, f)| &f[..]).collect();
                if !frames.is_empty() {
                    receive(&mut g, port, &frames);
                }
            }
        }
        let mut tx_total = 0;
        let mut forwarded_total = 0;
        for port in 1..=5u16 {
            let s = stats(&g, port);
            let dropped = dropped(&g, port);
            let sent_in = batch.iter().filter(|(p, _)| *p == port).count() as u64;
            prop_assert_eq!(s.rx_packets, sent_in);
            prop_assert_eq!(s.rx_packets, s.rx_forwarded + dropped, "port {}", port);
            tx_total += s.tx_packets;
            forwarded_total += s.rx_forwarded;
        }
        prop_assert_eq!(tx_total, forwarded_total);
        prop_assert_eq!(g.pool.free_count(), 1024);
        prop_assert_eq!(g.vectors.free_count(), dataplane::runtime::vector::VectorPool::CAPACITY);
    }
}

/// Every kind of receiving interface: L3 with IPv4, IPv6 and MPLS, with sub-interfaces (one
/// L3, one cross-connected), plain cross-connect, down.
const MIXED_YAML: &str = "
interfaces:
  l3: {index: 1, addresses: [100.64.0.1/24, '2001:db8::1/64'], mpls: true, mtu: 1400}
  trunk:
    index: 2
    sub-interfaces:
      10: {encapsulation: {dot1q: 10}, addresses: [10.10.0.1/24]}
      20: {encapsulation: {dot1q: 20}, l2xc: xc}
  xc: {index: 3, l2xc: trunk.20}
  down0: {index: 4, l2xc: xc, state: down}
";

/// A frame for [`MIXED_YAML`]'s interfaces: any destination kind (another host, `l3`'s or
/// `trunk`'s MAC, a group), an ethertype each node cares about (or a VLAN tag of a known or
/// unknown sub-interface), sizes around every limit.
fn arb_mixed_frame() -> impl Strategy<Value = Vec<u8>> {
    let dst = prop_oneof![Just(UCAST), Just(IF1), Just(IF2), Just(MCAST), Just(BCAST)];
    let et = prop_oneof![
        Just(0x0800u16),
        Just(0x86dd),
        Just(0x8847),
        Just(0x0806),
        Just(0x8100),
        Just(0x88a8),
        any::<u16>()
    ];
    let len = prop_oneof![0usize..40, 60usize..70, 1410usize..1430];
    (dst, et, len, prop_oneof![Just(10u16), Just(20), Just(30)]).prop_map(|(d, e, len, vid)| {
        let mut f = frame(len, d, e);
        if e == 0x8100 && len >= 18 {
            f[14..16].copy_from_slice(&vid.to_be_bytes());
            f[16..18].copy_from_slice(&0x0800u16.to_be_bytes());
        }
        f
    })
}

/// One frame as a node got it: bytes, input (sub-)interface, drop reason.
type Got = (Vec<u8>, u16, u16);

/// Runs `frames` through `ethernet-input` alone, received on `port` as the given vectors;
/// returns every interface's counters and the frames each next node got, in order. The fused
/// passes, which skip an input node for a vector of plain frames, are off (as while tracing):
/// the tests of each fused pass hold it to the nodes it fuses.
fn ethernet_input_outcome(port: u16, vectors: &[&[Vec<u8>]]) -> (Vec<String>, Vec<(NodeId, Vec<Got>)>) {
    let (mut g, ifs) = common::graph(MIXED_YAML);
    g.trace.active = true;
    let mut out: Vec<(NodeId, Vec<Got>)> = Vec::new();
    for frames in vectors {
        let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        let v = g.inject(port, &refs).unwrap();
        g.dispatch(dataplane::ethernet::nodes::ETHERNET_INPUT, v);
        while let Some((node, v)) = g.take_pending() {
            let indices = g.vectors[v].indices().to_vec();
            let got = indices.iter().map(|&i| {
                let m = g.pool.meta(i);
                (g.pool.frame(i).to_vec(), m.rx_if, m.error)
            });
            match out.iter_mut().find(|(n, _)| *n == node) {
                Some((_, all)) => all.extend(got),
                None => out.push((node, got.collect())),
            }
            g.pool.free(&indices);
            g.vectors.free(v);
        }
    }
    out.sort_by_key(|(node, _)| node.index());
    let counters = ifs.iter().map(|i| format!("{} {:?}", i.name, stats(&g, i.index))).collect();
    (counters, out)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, rng_seed: proptest::test_runner::RngSeed::Fixed(18), ..ProptestConfig::default() })]

    /// `ethernet-input`'s whole-vector tally (a uniform vector counted once and handed on) and
    /// its per-packet path agree: a mixed vector, which takes the per-packet path, gives the
    /// same counters, drops and next nodes as its frames one vector each, which take the tally
    /// whenever the frame is clean.
    #[test]
    fn ethernet_input_counts_and_dispatches_a_vector_as_its_frames_one_by_one(
        port in 1u16..=4,
        frames in proptest::collection::vec(arb_mixed_frame(), 1..=64),
    ) {
        let whole = ethernet_input_outcome(port, &[&frames[..]]);
        let single: Vec<&[Vec<u8>]> = frames.chunks(1).collect();
        prop_assert_eq!(whole, ethernet_input_outcome(port, &single));
    }
}

/// Every node a feature declares, but the drivers' rx inputs (polled, never queued), has its
/// arm in the dispatch `match` of `datapath` (whose last arm refuses an undeclared one): each
/// runs a vector of one frame without that refusal.
#[test]
fn every_declared_node_but_the_inputs_is_dispatched() {
    use dataplane::datapath::registry::NODES;
    let f = frame(64, BCAST, 0x0800);
    for node in NODES.iter().filter(|n| !dataplane::drivers::nodes::INPUTS.contains(&n.id)) {
        let run = std::panic::catch_unwind(|| {
            let mut g = graph();
            let v = g.inject(3, &[&f]).unwrap();
            g.dispatch(node.id, v);
        });
        if let Err(e) = run {
            let message = e.downcast_ref::<String>().cloned().unwrap_or_default();
            assert!(!message.contains("is not queued"), "{} has no arm in the dispatch: {message}", node.name);
        }
    }
}
