//! MPLS node by node: swap, swap to two labels, pop at the end of the stack, push on IPv4
//! routes with out-labels (exact bytes, TTLs and checksums), the malformed corpus, and vectors
//! over many labels switched as their frames one by one.

mod common;

use common::{drive, dropped, stats};
use dataplane::datapath::Graph;
use dataplane::datapath::registry::DropFacts;
use dataplane::datapath::registry::NodeFacts;
use dataplane::runtime::drops::DropReason;
use proptest::prelude::*;
use std::net::Ipv4Addr;
use wire::{Ipv4Packet, MplsLabel, checksum};

/// The seed's MPLS configuration (labels 16 and 17 across the routed pair) plus a two-label
/// swap, an end-of-stack pop and a labelled IPv4 route.
const YAML: &str = "
interfaces:
  port0: {index: 1, mac: '9c:69:b4:61:a1:dc', addresses: [100.64.0.1/31], mpls: true}
  port1: {index: 2, mac: '9c:69:b4:61:a1:dd', addresses: [100.64.1.1/31], mpls: true}
  nompls: {index: 3, addresses: [100.64.3.1/31]}
routes:
  - {prefix: 48.0.0.0/24, via: 100.64.1.0}
  - {prefix: 60.0.0.0/8, via: 100.64.1.0, out-labels: [100, 101]}
neighbors:
  - {interface: port0, address: 100.64.0.0, mac: '00:1b:21:06:00:00'}
  - {interface: port1, address: 100.64.1.0, mac: '00:1b:21:06:00:01'}
mpls:
  local-labels:
    - {label: 16, via: 100.64.1.0, interface: port1, out-labels: [17]}
    - {label: 17, via: 100.64.0.0, interface: port0, out-labels: [16]}
    - {label: 18, via: 100.64.1.0, interface: port1, out-labels: [30, 31]}
    - {label: 19}
";

const NEXT_HOP_1: [u8; 6] = [0x00, 0x1b, 0x21, 0x06, 0x00, 0x01];
const PORT1_MAC: [u8; 6] = [0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdd];

fn graph() -> Graph {
    common::graph(YAML).0
}

fn ipv4(dst: [u8; 4], ttl: u8) -> Vec<u8> {
    let mut p = vec![0u8; 28];
    wire::ipv4::write_header(&mut p[..20], 28, ttl, 17, Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::from(dst));
    p[20..].copy_from_slice(&[4, 0, 8, 0, 0, 8, 0, 0]);
    p
}

/// Ethernet to port0's MAC carrying `labels` (label, bos, ttl) then `payload`.
fn frame(labels: &[(u32, bool, u8)], payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdc, 0x00, 0x1b, 0x21, 0x06, 0x00, 0x00];
    f.extend_from_slice(&(if labels.is_empty() { 0x0800u16 } else { 0x8847 }).to_be_bytes());
    for &(label, bos, ttl) in labels {
        f.extend_from_slice(&MplsLabel { label, tc: 5, bos, ttl }.to_u32().to_be_bytes());
    }
    f.extend_from_slice(payload);
    f
}

/// Runs frames received on `port` through the graph; returns what reaches interface-output.
fn forward(g: &mut Graph, port: u16, frames: &[Vec<u8>]) -> Vec<(u16, Vec<u8>)> {
    drive(g, port, frames, dataplane::interface::nodes::INTERFACE_OUTPUT)
        .into_iter()
        .map(|(tx_if, _, f)| (tx_if, f))
        .collect()
}

#[test]
fn swap_replaces_the_label_decrements_its_ttl_and_keeps_tc_and_bos() {
    let payload = ipv4([48, 0, 0, 5], 64);
    let out = forward(&mut graph(), 1, &[frame(&[(16, true, 64)], &payload)]);
    assert_eq!(out.len(), 1);
    let (tx_if, f) = &out[0];
    assert_eq!(*tx_if, 2);
    let want = [
        &NEXT_HOP_1[..],
        &PORT1_MAC,
        &[0x88, 0x47],
        &MplsLabel { label: 17, tc: 5, bos: true, ttl: 63 }.to_u32().to_be_bytes(),
        &payload,
    ]
    .concat();
    assert_eq!(f, &want);
}

#[test]
fn swap_to_two_labels_grows_the_frame() {
    let payload = ipv4([48, 0, 0, 5], 64);
    let out = forward(&mut graph(), 1, &[frame(&[(18, false, 9), (500, true, 64)], &payload)]);
    let f = &out[0].1;
    assert_eq!(f.len(), 14 + 12 + payload.len());
    assert_eq!(MplsLabel::parse(&f[14..]).unwrap(), MplsLabel { label: 30, tc: 5, bos: false, ttl: 8 });
    assert_eq!(MplsLabel::parse(&f[18..]).unwrap(), MplsLabel { label: 31, tc: 5, bos: false, ttl: 8 });
    assert_eq!(
        MplsLabel::parse(&f[22..]).unwrap(),
        MplsLabel { label: 500, tc: 5, bos: true, ttl: 64 },
        "labels below are untouched"
    );
    assert_eq!(&f[26..], &payload[..]);
}

#[test]
fn pop_at_end_of_stack_routes_the_ipv4_packet_with_the_uniform_ttl() {
    // Label TTL 10 < IP TTL 64: the IP TTL becomes 9, then routing makes it 8.
    let out = forward(
        &mut graph(),
        1,
        &[frame(&[(19, true, 10)], &ipv4([48, 0, 0, 5], 64)), frame(&[(19, true, 200)], &ipv4([48, 0, 0, 6], 64))],
    );
    assert_eq!(out.len(), 2);
    for ((tx_if, f), ttl) in out.iter().zip([8, 63]) {
        assert_eq!(*tx_if, 2);
        assert_eq!(&f[12..14], &[0x08, 0x00]);
        assert_eq!(&f[..12], &[&NEXT_HOP_1[..], &PORT1_MAC].concat()[..]);
        let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
        assert_eq!(ip.ttl(), ttl);
        assert!(ip.checksum_ok());
        assert_eq!(f.len(), 14 + 28);
    }
}

#[test]
fn ipv4_routes_with_out_labels_push_them_with_the_ip_ttl() {
    let payload = ipv4([60, 1, 2, 3], 64);
    let out = forward(&mut graph(), 1, &[frame(&[], &payload)]);
    let (tx_if, f) = &out[0];
    assert_eq!(*tx_if, 2);
    assert_eq!(&f[..14], &[&NEXT_HOP_1[..], &PORT1_MAC, &[0x88, 0x47]].concat()[..]);
    assert_eq!(MplsLabel::parse(&f[14..]).unwrap(), MplsLabel { label: 100, tc: 0, bos: false, ttl: 63 });
    assert_eq!(MplsLabel::parse(&f[18..]).unwrap(), MplsLabel { label: 101, tc: 0, bos: true, ttl: 63 });
    let ip = Ipv4Packet::new_checked(&f[22..]).unwrap();
    assert_eq!(ip.ttl(), 63);
    assert!(ip.checksum_ok());
    let mut rest = payload.clone();
    rest[8] = 63;
    rest[10..12].copy_from_slice(&[0, 0]);
    let c = checksum::checksum(&rest[..20]);
    rest[10..12].copy_from_slice(&c.to_be_bytes());
    assert_eq!(&f[22..], &rest[..]);
}

#[test]
fn malformed_mpls_is_dropped_under_its_reason_and_accounted_per_input() {
    let p = ipv4([48, 0, 0, 5], 64);
    let cases: Vec<(Vec<u8>, DropReason)> = vec![
        (frame(&[(99, true, 64)], &p), dataplane::mpls::drops::NO_LABEL),
        (frame(&[(16, true, 1)], &p), dataplane::mpls::drops::MPLS_TTL_EXPIRED),
        (frame(&[(16, true, 0)], &p), dataplane::mpls::drops::MPLS_TTL_EXPIRED),
        (
            frame(&[], &[])[..12].iter().copied().chain([0x88, 0x47, 0, 1]).collect(),
            dataplane::mpls::drops::MPLS_TRUNCATED,
        ),
        // 19 pops; 20 under it has no entry.
        (frame(&[(19, false, 64), (20, true, 64)], &p), dataplane::mpls::drops::NO_LABEL),
        (frame(&[(19, true, 64)], &[0x45, 0, 0]), dataplane::ip4::drops::TRUNCATED),
    ];
    let mut g = graph();
    let frames: Vec<Vec<u8>> = cases.iter().map(|(f, _)| f.clone()).collect();
    let out = forward(&mut g, 1, &frames);
    assert!(out.is_empty());
    for r in [
        dataplane::mpls::drops::NO_LABEL,
        dataplane::mpls::drops::MPLS_TTL_EXPIRED,
        dataplane::mpls::drops::MPLS_TRUNCATED,
        dataplane::ip4::drops::TRUNCATED,
    ] {
        let want = cases.iter().filter(|(_, x)| *x == r).count() as u64;
        assert_eq!(g.counters.error(1, r).get(), want, "{} in {}", r.name(), r.info().node.name());
    }
    let s = stats(&g, 1);
    assert_eq!((s.rx_packets, dropped(&g, 1)), (6, 6));
    // MPLS on an interface without it (to its MAC).
    let mut f = frame(&[(16, true, 64)], &p);
    f[..6].copy_from_slice(&[2, 0xfe, 0, 0, 0, 3]);
    let _ = forward(&mut g, 3, &[f]);
    assert_eq!(g.counters.error(3, dataplane::ethernet::drops::MPLS_NOT_ENABLED).get(), 1);
}

/// A driver may leave less headroom than the generator's 64 bytes: frames that need room for
/// pushed labels (an IPv4 route with out-labels, a swap to two labels) are dropped as
/// `no-headroom` on their output interface, never a panic; a one-label swap needs none.
#[test]
fn too_little_headroom_is_a_named_drop() {
    let mut g = graph();
    let frames = [
        frame(&[], &ipv4([60, 0, 0, 1], 64)),               // push 100, 101
        frame(&[(18, true, 64)], &ipv4([1, 2, 3, 4], 64)),  // swap to 30, 31
        frame(&[(16, true, 64)], &ipv4([48, 0, 0, 5], 64)), // swap to 17, in place
    ];
    let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
    let v = g.inject(1, &refs).unwrap();
    for (k, f) in frames.iter().enumerate() {
        let i = g.vectors[v].indices()[k];
        g.pool.write_frame_at(i, 2, f);
        g.pool.meta_mut(i).rx_if = 1;
    }
    g.forward(v, dataplane::ethernet::nodes::ETHERNET_INPUT);
    g.run(0);
    let n = dataplane::datapath::registry::N_REASONS;
    let count = |r: DropReason| g.counters.errors[n + r.index()].get();
    assert_eq!(count(dataplane::ip4::drops::IP4_NO_HEADROOM), 1);
    assert_eq!(count(dataplane::mpls::drops::MPLS_NO_HEADROOM), 1);
    assert_eq!(stats(&g, 2).tx_packets, 1, "the in-place swap went out");
    assert_eq!(dropped(&g, 1), 2);
    assert_eq!(g.pool.free_count(), g.pool.capacity() as usize, "no buffer leaked");
}

/// A label stack of one or two entries (labels with an entry and without, bottom of stack or
/// not, TTLs that expire) over an IPv4 packet.
fn arb_labelled_frame() -> impl Strategy<Value = Vec<u8>> {
    let entry =
        (prop_oneof![16u32..=20, Just(99)], 0u8..3).prop_map(|(label, ttl)| (label, [1, 2, 64][usize::from(ttl)]));
    (entry, prop::option::of((16u32..=19, Just(64u8))), any::<bool>()).prop_map(|((l, ttl), under, eos)| {
        let labels = match under {
            Some((u, uttl)) => vec![(l, false, ttl), (u, true, uttl)],
            None => vec![(l, eos, ttl)],
        };
        frame(&labels, &ipv4([48, 0, 0, 1], 64))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// `mpls-lookup` (the first label looked up once for the packets that share it, then each
    /// packet's) and `mpls-rewrite` treat a vector over several labels exactly as its frames
    /// one vector each.
    #[test]
    fn a_vector_over_many_labels_is_switched_as_its_frames_one_by_one(frames in common::runs_of(arb_labelled_frame())) {
        let whole = common::outcome(YAML, 1, &frames, frames.len(), 2);
        prop_assert_eq!(&whole, &common::outcome(YAML, 1, &frames, 1, 2));
        prop_assert_eq!(whole.2[0].rx_packets, frames.len() as u64);
    }
}

/// The vector starts the proptest above may rarely draw: a run of one label whose bottom-of-
/// stack bit changes (a pop, then the same label over another), a label without an entry
/// first.
#[test]
fn a_vector_starting_with_a_run_of_one_label_is_switched_as_its_frames_one_by_one() {
    let ip = ipv4([48, 0, 0, 1], 64);
    let vectors = [
        vec![frame(&[(19, true, 64)], &ip), frame(&[(19, false, 64), (16, true, 64)], &ip)],
        vec![frame(&[(19, false, 64), (16, true, 64)], &ip), frame(&[(19, true, 64)], &ip)],
        vec![frame(&[(99, true, 64)], &ip), frame(&[(16, true, 64)], &ip), frame(&[(99, true, 64)], &ip)],
        vec![frame(&[(16, true, 64)], &ip), frame(&[(16, true, 1)], &ip), frame(&[(17, true, 64)], &ip)],
    ];
    for frames in vectors {
        assert_eq!(common::outcome(YAML, 1, &frames, frames.len(), 2), common::outcome(YAML, 1, &frames, 1, 2));
    }
}

const PORT0_MAC: [u8; 6] = [0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdc];

/// [`arb_labelled_frame`], maybe damaged: a byte of its Ethernet header or first label stack
/// entry (group MACs, another ethertype, TTLs 0 and 1), or cut short (before or inside it).
fn arb_damaged_labelled_frame() -> impl Strategy<Value = Vec<u8>> {
    let damage = prop_oneof![
        6 => Just(None),
        2 => (0usize..18, any::<u8>()).prop_map(|(at, b)| Some((at, b))),
        1 => (0usize..30).prop_map(|len| Some((usize::MAX, len as u8))),
    ];
    (arb_labelled_frame(), damage).prop_map(|(mut f, damage)| {
        match damage {
            Some((usize::MAX, cut)) => f.truncate(usize::from(cut)),
            Some((at, b)) => f[at] = b,
            None => {}
        }
        f
    })
}

/// What the fused `ethernet-input` → `mpls-input` pass must say of `frames` with `max_frame`,
/// from its definition: every frame sized, to port0's MAC or a group, untagged MPLS, with a
/// label stack entry whose TTL is above 1.
fn plain_frames_oracle(frames: &[Vec<u8>], max_frame: u16) -> Option<dataplane::ethernet::fused::RxTally> {
    common::fused_oracle(frames, max_frame, PORT0_MAC, 0x8847, |mpls| mpls.len() >= 4 && mpls[3] > 1)
}

/// Everything `frames` received on port0 as one vector come to, with the packet tracer on
/// (`ethernet-input` and `mpls-input` then run one after the other) or off.
fn fused_outcome(frames: &[Vec<u8>], tracing: bool) -> common::Outcome {
    common::traced_outcome(YAML, 1, frames, 3, tracing)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The fused pass gives its definition's answer for the whole vector and every packet
    /// alone, at frame limits around the frames' sizes.
    #[test]
    fn fused_mpls_pass_agrees_with_its_definition(
        frames in proptest::collection::vec(arb_damaged_labelled_frame(), 1..=256),
        max_frame in 10u16..80,
    ) {
        let mut g = graph();
        let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        let v = g.inject(1, &refs).unwrap();
        let indices = g.vectors[v].indices().to_vec();
        let fused = |ix: &[u32]| dataplane::mpls::input::plain_frames(&g.pool, ix, max_frame, wire::MacAddr(PORT0_MAC));
        prop_assert_eq!(fused(&indices), plain_frames_oracle(&frames, max_frame));
        for k in 0..indices.len() {
            prop_assert_eq!(fused(&indices[k..=k]), plain_frames_oracle(&frames[k..=k], max_frame), "packet {}", k);
        }
    }

    /// A vector through the fused pass (tracer off) and through the two nodes (tracer on)
    /// comes to the same: frames, drops and counters (half the vectors intact, so fused).
    #[test]
    fn fused_mpls_pass_forwards_as_the_two_nodes(
        frames in any::<bool>().prop_flat_map(|intact| proptest::collection::vec(
            if intact { arb_labelled_frame().boxed() } else { arb_damaged_labelled_frame().boxed() }, 1..=64))
    ) {
        prop_assert_eq!(fused_outcome(&frames, false), fused_outcome(&frames, true));
    }
}

/// A plain MPLS vector goes from `ethernet-input` straight to `mpls-lookup`, counted as an
/// `mpls-input` call (its packets as fused); while the packet tracer runs, through
/// `mpls-input`.
#[test]
fn the_fused_pass_counts_mpls_input_and_steps_aside_for_the_tracer() {
    let frames: Vec<Vec<u8>> = (0..100).map(|k| frame(&[(16, true, 64)], &vec![k as u8; 28 + k])).collect();
    common::check_fused_pass(YAML, &frames, dataplane::mpls::nodes::MPLS_INPUT, dataplane::mpls::nodes::MPLS_LOOKUP);
}
