//! IPv6 forwarding node by node: exact output bytes, the malformed corpus with its drop
//! reasons, what is never forwarded, IPv6 over MPLS, the per-input accounting rule, and the
//! fused `ethernet-input` → `ip6-input` pass against its definition and the two nodes.

mod common;

use common::{drive, dropped, stats};
use dataplane::datapath::Graph;
use dataplane::datapath::registry::DropFacts;
use dataplane::ethernet::fused::RxTally;
use dataplane::ip6;
use dataplane::runtime::drops::DropReason;
use proptest::prelude::*;
use std::net::Ipv6Addr;
use wire::Ipv6Packet;

/// The routed pair in IPv6 plus a LAN with one known and one unknown neighbor, a route with
/// out-labels, a pop to IPv6 and an IPv4-only interface.
const YAML: &str = "
interfaces:
  port0: {index: 1, mac: '9c:69:b4:61:a1:dc', addresses: ['2001:db8:100::1/64'], mpls: true}
  port1: {index: 2, mac: '9c:69:b4:61:a1:dd', addresses: ['2001:db8:101::1/64', 100.64.1.1/31]}
  lan: {index: 3, mac: '02:fe:00:00:00:03', addresses: ['2001:db8:7::1/64']}
  v4only: {index: 4, addresses: [192.0.2.1/24]}
routes:
  - {prefix: '2001:db8:16::/48', via: '2001:db8:100::2'}
  - {prefix: '2001:db8:48::/48', via: '2001:db8:101::2'}
  - {prefix: '2001:db8:48:1::/64', via: 'fe80::2', interface: port1}
  - {prefix: '2001:db8:30::/48', via: '2001:db8:7::99'}
  - {prefix: '2001:db8:60::/48', via: '2001:db8:101::2', out-labels: [1000, 2000]}
  - {prefix: 'ff00::/8', via: '2001:db8:101::2'}
  - {prefix: 'fe80::/10', via: '2001:db8:101::2'}
neighbors:
  - {interface: port0, address: '2001:db8:100::2', mac: '00:1b:21:06:00:00'}
  - {interface: port1, address: '2001:db8:101::2', mac: '00:1b:21:06:00:01'}
  - {interface: port1, address: 'fe80::2', mac: '00:1b:21:06:00:02'}
  - {interface: lan, address: '2001:db8:7::8', mac: '02:00:00:00:07:08'}
mpls:
  local-labels:
    - {label: 600, payload: ip6}
";

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// port0's MAC.
const MAC: [u8; 6] = [0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdc];

/// An Ethernet/IPv6/UDP frame of `len` bytes (at least 62) to port0's MAC.
fn frame_len(src: &str, dst: &str, hop_limit: u8, len: usize) -> Vec<u8> {
    let mut f = vec![0u8; len];
    f[..6].copy_from_slice(&MAC);
    f[6..12].copy_from_slice(&[0x00, 0x1b, 0x21, 0x06, 0x00, 0x00]);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    let payload = (len - 54) as u16;
    wire::ipv6::write_header(&mut f[14..54], payload, 17, hop_limit, a(src), a(dst));
    wire::udp::write_header(&mut f[54..], a(src), a(dst), 1024, 2048);
    f
}

fn frame(src: &str, dst: &str, hop_limit: u8) -> Vec<u8> {
    frame_len(src, dst, hop_limit, 62)
}

fn drops(g: &Graph, index: u16, r: DropReason) -> u64 {
    g.counters.error(index, r).get()
}

fn graph() -> Graph {
    common::graph(YAML).0
}

fn routed(port: u16, frames: &[Vec<u8>]) -> (Graph, Vec<(u16, u8, Vec<u8>)>) {
    let mut g = graph();
    let out = drive(&mut g, port, frames, dataplane::interface::nodes::INTERFACE_OUTPUT);
    (g, out)
}

#[test]
fn routed_frame_has_new_macs_and_hop_limit_minus_one_and_nothing_else_changes() {
    let input = frame("2001:db8:16::1", "2001:db8:48::5", 64);
    let (g, out) = routed(1, std::slice::from_ref(&input));
    assert_eq!(out.len(), 1);
    let (tx_if, plen, f) = &out[0];
    assert_eq!((*tx_if, *plen), (2, 48));
    let mut want = input.clone();
    want[..6].copy_from_slice(&[0x00, 0x1b, 0x21, 0x06, 0x00, 0x01]); // neighbor 2001:db8:101::2
    want[6..12].copy_from_slice(&[0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdd]); // port1's own MAC
    want[14 + 7] = 63;
    assert_eq!(f, &want, "only the MACs and the hop limit change");
    assert_eq!(stats(&g, 1).rx_packets, 1);
}

#[test]
fn longest_match_picks_the_64_through_a_link_local_next_hop_on_its_interface() {
    let (_, out) =
        routed(1, &[frame("2001:db8:16::1", "2001:db8:48:1::9", 64), frame("2001:db8:16::1", "2001:db8:48:2::9", 64)]);
    let got: Vec<_> = out.iter().map(|(tx_if, plen, f)| (*tx_if, *plen, f[5])).collect();
    assert_eq!(got, [(2, 64, 0x02), (2, 48, 0x01)]);
}

#[test]
fn glean_resolves_connected_hosts_from_static_neighbors() {
    let (g, out) = routed(
        1,
        &[
            frame("2001:db8:16::1", "2001:db8:7::8", 64),
            frame("2001:db8:16::1", "2001:db8:7::9", 64),
            frame("2001:db8:16::1", "2001:db8:30::1", 64),
        ],
    );
    let (forwarded, solicitations): (Vec<_>, Vec<_>) = out.iter().partition(|(_, _, f)| f[14 + 6] == 17);
    assert_eq!(forwarded.len(), 1);
    assert_eq!((forwarded[0].0, forwarded[0].1), (3, 64));
    assert_eq!(&forwarded[0].2[..12], &[2, 0, 0, 0, 7, 8, 2, 0xfe, 0, 0, 0, 3]);
    assert_eq!(
        drops(&g, 1, dataplane::ip6::drops::IP6_NO_NEIGHBOR),
        2,
        ":9 has no neighbor, nor has 30::/48's next hop :99"
    );
    // Each miss sends a neighbor solicitation out of lan to the target's solicited-node group.
    let targets: Vec<_> = solicitations
        .iter()
        .map(|(tx_if, _, f)| {
            let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
            assert_eq!((*tx_if, f[54], ip.hop_limit(), ip.src()), (3, 135, 255, a("2001:db8:7::1")));
            let ns = wire::icmpv6::NeighborMessage::parse(&f[54..]).unwrap();
            assert_eq!(
                ns.link_addr,
                Some(wire::MacAddr([2, 0xfe, 0, 0, 0, 3])),
                "lan's MAC as source link-layer address"
            );
            assert_eq!(wire::icmpv6::checksum(ip.src(), ip.dst(), &f[54..]), 0);
            assert_eq!(
                (ip.dst(), &f[..6]),
                (wire::icmpv6::solicited_node(ns.target), &wire::icmpv6::multicast_mac(ip.dst()).0[..])
            );
            ns.target
        })
        .collect();
    assert_eq!(targets, [a("2001:db8:7::9"), a("2001:db8:7::99")]);
    assert_eq!(stats(&g, 3).out_discards, 2, "no-neighbor is charged to the output interface");
}

#[test]
fn routes_with_out_labels_push_them_with_the_new_hop_limit() {
    let (_, out) = routed(1, &[frame("2001:db8:16::1", "2001:db8:60::1", 20)]);
    let f = &out[0].2;
    assert_eq!(out[0].0, 2);
    assert_eq!(&f[12..14], &[0x88, 0x47]);
    let label = |k: usize| u32::from_be_bytes(f[14 + 4 * k..18 + 4 * k].try_into().unwrap());
    assert_eq!((label(0) >> 12, label(0) & 0x1ff), (1000, 19), "outer label, TTL 19, not bottom");
    assert_eq!((label(1) >> 12, label(1) & 0x1ff), (2000, 0x100 | 19), "inner label, bottom of stack");
    let ip = Ipv6Packet::new_checked(&f[22..]).unwrap();
    assert_eq!((ip.hop_limit(), ip.dst()), (19, a("2001:db8:60::1")));
}

#[test]
fn a_popped_ipv6_packet_is_routed_by_the_ipv6_fib_with_the_uniform_ttl() {
    let inner = frame("2001:db8:16::1", "2001:db8:48::5", 64);
    let mut f = inner[..12].to_vec();
    f.extend_from_slice(&[0x88, 0x47]);
    f.extend_from_slice(&((600u32 << 12) | 0x100 | 9).to_be_bytes()); // label 600, BoS, TTL 9
    f.extend_from_slice(&inner[14..]);
    let (_, out) = routed(1, &[f]);
    assert_eq!(out.len(), 1);
    let (tx_if, plen, got) = &out[0];
    assert_eq!((*tx_if, *plen, &got[12..14]), (2, 48, &[0x86, 0xdd][..]));
    assert_eq!(Ipv6Packet::new_checked(&got[14..]).unwrap().hop_limit(), 7, "min(64, 9 − 1) − 1");
}

/// Reject routes: dropped under their reasons, unreachable and prohibit answered with
/// ICMPv6 no route and administratively prohibited, a blackhole silently.
#[test]
fn reject_routes_drop_under_their_reasons_and_answer_as_linux_does() {
    use dataplane::l3::Reject;
    let rejects = [
        ("2001:db9:1::", 48, Reject::Blackhole),
        ("2001:db9:2::", 48, Reject::Unreachable),
        ("2001:db9:3::", 48, Reject::Prohibit),
    ];
    let mut g = common::graph_with_rejects(YAML, &rejects);
    let frames: Vec<Vec<u8>> = ["2001:db9:1::1", "2001:db9:2::1", "2001:db9:3::1", "2001:db8:48::5"]
        .iter()
        .map(|d| frame("2001:db8:16::1", d, 64))
        .collect();
    let sent = drive(&mut g, 1, &frames, dataplane::drivers::nodes::GENERATOR_TX);
    let (forwarded, icmp): (Vec<_>, Vec<_>) = sent.iter().partition(|(_, _, f)| f[14 + 6] == 17);
    assert_eq!(forwarded.len(), 1);
    let codes: Vec<(u8, u8)> = icmp.iter().map(|(_, _, f)| (f[54], f[55])).collect();
    assert_eq!(codes, [(1, 0), (1, 1)], "no route, administratively prohibited");
    for r in [
        dataplane::ip6::drops::IP6_BLACKHOLE,
        dataplane::ip6::drops::IP6_ROUTE_UNREACHABLE,
        dataplane::ip6::drops::IP6_ROUTE_PROHIBITED,
    ] {
        assert_eq!(g.counters.error(1, r).get(), 1, "{}", r.name());
    }
    assert_eq!(g.pool.free_count(), 1024);
}

#[test]
fn malformed_unroutable_and_never_forwarded_packets_are_dropped_under_their_reason() {
    let ok = frame("2001:db8:16::1", "2001:db8:48::5", 64);
    let with = |at: usize, b: u8| {
        let mut f = ok.clone();
        f[at] = b;
        f
    };
    let cases: Vec<(Vec<u8>, DropReason)> = vec![
        (ok[..50].to_vec(), dataplane::ip6::drops::IP6_TRUNCATED), // header cut short
        (with(14, 0x40), dataplane::ip6::drops::IP6_BAD_HEADER),   // version 4
        (with(19, 9), dataplane::ip6::drops::IP6_TRUNCATED),       // payload 9 > 8 in the frame
        (with(22, 0xff), dataplane::ip6::drops::IP6_SOURCE_MULTICAST), // source ff..
        (frame("2001:db8:16::1", "::1", 64), dataplane::ip6::drops::IP6_DESTINATION_LOOPBACK),
        (with(21, 1), dataplane::ip6::drops::HOP_LIMIT_EXPIRED),
        (with(21, 0), dataplane::ip6::drops::HOP_LIMIT_EXPIRED),
        (frame("2001:db8:16::1", "2001:db9::1", 64), dataplane::ip6::drops::IP6_NO_ROUTE),
        (frame("2001:db8:16::1", "2001:db8:100::1", 0), dataplane::ip6::drops::IP6_LOCAL), // ours, whatever its hop limit
        (frame("2001:db8:16::1", "ff0e::1", 64), dataplane::ip6::drops::IP6_MULTICAST),
        (frame("2001:db8:16::1", "fe80::1", 64), dataplane::ip6::drops::IP6_LINK_LOCAL),
        (frame("fe80::7", "2001:db8:48::5", 64), dataplane::ip6::drops::IP6_LINK_LOCAL),
        (frame("::", "2001:db8:48::5", 64), dataplane::ip6::drops::IP6_SOURCE_UNSPECIFIED),
        (frame_len("2001:db8:16::1", "2001:db8:48::5", 64, 14 + 1501), dataplane::ip6::drops::PACKET_TOO_BIG),
    ];
    let frames: Vec<Vec<u8>> = cases
        .iter()
        .map(|(f, _)| f.clone())
        .chain([ok.clone(), frame_len("2001:db8:16::1", "2001:db8:48::5", 64, 14 + 1500)])
        .collect();
    let mut g = graph();
    let sent = drive(&mut g, 1, &frames, dataplane::drivers::nodes::GENERATOR_TX);
    let (forwarded, errors): (Vec<_>, Vec<_>) = sent.iter().partition(|(_, _, f)| f[14 + 6] == 17);
    assert_eq!(forwarded.len(), 2, "the good packet and the one of exactly the MTU");
    // ICMPv6 errors back to the source, out of port0: two time exceeded, a no route, a
    // packet too big with port1's MTU.
    let mut kinds: Vec<_> = errors.iter().map(|(tx_if, _, f)| (*tx_if, f[54], f[55], &f[58..62])).collect();
    kinds.sort();
    let mtu = &1500u32.to_be_bytes()[..];
    assert_eq!(kinds, [(1, 1, 0, &[0; 4][..]), (1, 2, 0, mtu), (1, 3, 0, &[0; 4][..]), (1, 3, 0, &[0; 4][..])]);
    for (_, r) in &cases {
        let want = cases.iter().filter(|(_, x)| x == r).count() as u64;
        assert_eq!(drops(&g, 1, *r), want, "{}", r.name());
    }
    let s = stats(&g, 1);
    assert_eq!(s.rx_packets, frames.len() as u64);
    assert_eq!(s.rx_forwarded, 2);
    assert_eq!(s.rx_packets, s.rx_forwarded + dropped(&g, 1));
    assert_eq!(g.pool.free_count(), 1024);
}

#[test]
fn extension_headers_pass_untouched() {
    // A hop-by-hop options header (8 bytes of PadN) before UDP: forwarded as it is.
    let mut f = frame_len("2001:db8:16::1", "2001:db8:48::5", 64, 70);
    f[14 + 6] = 0; // next header: hop-by-hop
    f[54..62].copy_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]);
    let (_, out) = routed(1, std::slice::from_ref(&f));
    assert_eq!(out.len(), 1);
    assert_eq!(&out[0].2[14 + 8..], &f[14 + 8..], "everything after the hop limit is as received");
}

/// A unicast frame to another MAC is dropped as `not-for-us` (not a discard), in a vector of
/// plain frames (which then leaves the fused pass) or alone; an all-nodes frame is taken.
#[test]
fn unicast_frames_to_another_mac_are_dropped_as_not_for_us() {
    let mut frames: Vec<Vec<u8>> =
        (0..16).map(|k| frame("2001:db8:16::1", &format!("2001:db8:48::{k:x}"), 64)).collect();
    let (g, out) = routed(1, &frames);
    assert_eq!((out.len(), g.counters.nodes[dataplane::ip6::nodes::IP6_INPUT.index()].fused.get()), (16, 16), "fused");
    frames[9][4] ^= 0x10; // another host's MAC
    let mut all_nodes = frame("fe80::2", "ff02::1", 255);
    all_nodes[..6].copy_from_slice(&[0x33, 0x33, 0, 0, 0, 1]);
    frames.push(all_nodes);
    let (g, out) = routed(1, &frames);
    assert_eq!(out.len(), 15);
    // The all-nodes frame (UDP, which vecflow does not take) reached ip6-local.
    assert_eq!(
        (drops(&g, 1, dataplane::ethernet::drops::NOT_FOR_US), drops(&g, 1, dataplane::ip6::drops::IP6_MULTICAST)),
        (1, 1)
    );
    assert_eq!((stats(&g, 1).rx_packets, dropped(&g, 1)), (17, 2));
    let (g, _) = routed(1, &frames[9..10]);
    assert_eq!(drops(&g, 1, dataplane::ethernet::drops::NOT_FOR_US), 1);
}

#[test]
fn ipv6_on_an_interface_without_an_ipv6_address_is_ip6_not_enabled() {
    let mut g = graph();
    let mut f = frame("2001:db8:16::1", "2001:db8:48::5", 64);
    f[..6].copy_from_slice(&[2, 0xfe, 0, 0, 0, 4]); // v4only's MAC
    drive(&mut g, 4, &[f], dataplane::interface::nodes::INTERFACE_OUTPUT);
    assert_eq!(drops(&g, 4, dataplane::ethernet::drops::IP6_NOT_ENABLED), 1);
}

#[test]
fn a_mixed_vector_is_split_by_family_and_both_are_forwarded() {
    let mut v4 = vec![0u8; 60];
    v4[..6].copy_from_slice(&[0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdd]);
    v4[12..14].copy_from_slice(&[8, 0]);
    let (s, d) = ("192.0.2.9".parse().unwrap(), "100.64.1.1".parse().unwrap());
    wire::ipv4::write_header(&mut v4[14..34], 46, 64, 17, s, d);
    let mut v6 = frame("2001:db8:48::5", "2001:db8:16::1", 64);
    v6[..6].copy_from_slice(&[0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdd]);
    let mut g = graph();
    let out = drive(&mut g, 2, &[v6.clone(), v4, v6], dataplane::interface::nodes::INTERFACE_OUTPUT);
    let v6_out: Vec<_> = out.iter().map(|(tx_if, plen, f)| (*tx_if, *plen, &f[12..14])).collect();
    assert_eq!(v6_out, [(1, 48, &[0x86, 0xdd][..]); 2]);
    assert_eq!(drops(&g, 2, dataplane::ip4::drops::IP4_LOCAL), 1, "the IPv4 packet went its own way, to ip4-local");
}

/// A frame to port0 from 2001:db8:16::/48 to 2001:db8:48::/48 (forwarded when intact), 62 to
/// 119 bytes, maybe damaged: one byte of its Ethernet or IPv6 header (group MACs, ethertype,
/// version, payload length, multicast source...), cut short, or sent to `::1`.
fn arb_ip6_frame() -> impl Strategy<Value = Vec<u8>> {
    arb_ip6_frame_or_intact(false)
}

/// [`arb_ip6_frame`], left intact when `intact` (so that whole vectors take the fused pass).
fn arb_ip6_frame_or_intact(intact: bool) -> impl Strategy<Value = Vec<u8>> {
    let damage = prop_oneof![
        6 => Just(None),
        2 => (0usize..54, any::<u8>()).prop_map(|(at, b)| Some((at, b))),
        1 => (0usize..80).prop_map(|len| Some((usize::MAX, len as u8))),
        1 => Just(Some((usize::MAX - 1, 0))),
    ];
    (any::<u8>(), 62usize..120, damage.prop_map(move |d| d.filter(|_| !intact))).prop_map(|(host, len, damage)| {
        let dst =
            if damage == Some((usize::MAX - 1, 0)) { "::1".to_string() } else { format!("2001:db8:48::{host:x}") };
        let mut f = frame_len("2001:db8:16::1", &dst, 64, len);
        match damage {
            Some((usize::MAX, cut)) => f.truncate(usize::from(cut)),
            Some((at, b)) if at < 54 => f[at] = b,
            _ => {}
        }
        f
    })
}

/// What the fused `ethernet-input` → `ip6-input` pass must say of `frames` with `max_frame`,
/// from its definition: every frame sized, to port0's MAC or a group, untagged IPv6, passing
/// `ip6-input`'s checks.
fn plain_frames_oracle(frames: &[Vec<u8>], max_frame: u16) -> Option<RxTally> {
    common::fused_oracle(frames, max_frame, MAC, 0x86dd, |ip| ip6::input::check(ip).is_ok())
}

/// Everything `frames` received on port0 as one vector come to, with the packet tracer on
/// (`ethernet-input` and `ip6-input` then run one after the other) or off: the frames sent
/// (sorted), every drop counter and the interfaces' counters.
fn fused_outcome(frames: &[Vec<u8>], tracing: bool) -> common::Outcome {
    common::traced_outcome(YAML, 1, frames, 3, tracing)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The fused pass gives its definition's answer for the whole vector and every packet
    /// alone, at frame limits around the frames' sizes.
    #[test]
    fn fused_ip6_pass_agrees_with_its_definition(
        frames in proptest::collection::vec(arb_ip6_frame(), 1..=256),
        max_frame in 30u16..150,
    ) {
        let mut g = graph();
        let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        let v = g.inject(1, &refs).unwrap();
        let indices = g.vectors[v].indices().to_vec();
        let fused = |ix: &[u32]| ip6::input::plain_frames(&g.pool, ix, max_frame, wire::MacAddr(MAC));
        prop_assert_eq!(fused(&indices), plain_frames_oracle(&frames, max_frame));
        for k in 0..indices.len() {
            prop_assert_eq!(fused(&indices[k..=k]), plain_frames_oracle(&frames[k..=k], max_frame), "packet {}", k);
        }
    }

    /// A vector through the fused pass (tracer off) and through the two nodes (tracer on)
    /// comes to the same: frames, drops and counters (half the vectors intact, so fused).
    #[test]
    fn fused_ip6_pass_forwards_as_the_two_nodes(
        frames in any::<bool>().prop_flat_map(|intact| proptest::collection::vec(arb_ip6_frame_or_intact(intact), 1..=64))
    ) {
        prop_assert_eq!(fused_outcome(&frames, false), fused_outcome(&frames, true));
    }
}

/// A plain IPv6 vector goes from `ethernet-input` straight to `ip6-lookup`, counted as an
/// `ip6-input` call (its packets as fused); while the packet tracer runs, through `ip6-input`.
#[test]
fn the_fused_pass_counts_ip6_input_and_steps_aside_for_the_tracer() {
    let frames: Vec<Vec<u8>> = (62..162).map(|len| frame_len("2001:db8:16::1", "2001:db8:48::5", 64, len)).collect();
    common::check_fused_pass(YAML, &frames, dataplane::ip6::nodes::IP6_INPUT, dataplane::ip6::nodes::IP6_LOOKUP);
}
