//! IPv4 forwarding node by node: exact output bytes, the malformed corpus with its drop
//! reasons, the per-input accounting rule, and vectors toward many next hops rewritten as
//! their frames one by one.

mod common;

use common::{drive, dropped, stats};
use dataplane::datapath::Graph;
use dataplane::datapath::registry::DropFacts;
use dataplane::runtime::drops::DropReason;
use proptest::prelude::*;
use std::net::Ipv4Addr;
use wire::{Ipv4Packet, checksum};

/// The seed's routed pair plus a LAN with one known and one unknown neighbor.
const YAML: &str = "
interfaces:
  port0: {index: 1, mac: '9c:69:b4:61:a1:dc', addresses: [100.64.0.1/31]}
  port1: {index: 2, mac: '9c:69:b4:61:a1:dd', addresses: [100.64.1.1/31]}
  lan: {index: 3, mac: '02:fe:00:00:00:03', addresses: [192.168.7.1/24]}
  plain: {index: 4}
routes:
  - {prefix: 16.0.0.0/24, via: 100.64.0.0}
  - {prefix: 48.0.0.0/24, via: 100.64.1.0}
  - {prefix: 30.0.0.0/8, via: 192.168.7.99}
neighbors:
  - {interface: port0, address: 100.64.0.0, mac: '00:1b:21:06:00:00'}
  - {interface: port1, address: 100.64.1.0, mac: '00:1b:21:06:00:01'}
  - {interface: lan, address: 192.168.7.8, mac: '02:00:00:00:07:08'}
";

/// A 60-byte Ethernet/IPv4/UDP frame to port0's MAC.
fn frame(src: [u8; 4], dst: [u8; 4], ttl: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdc]);
    f[6..12].copy_from_slice(&[0x00, 0x1b, 0x21, 0x06, 0x00, 0x00]);
    f[12..14].copy_from_slice(&[8, 0]);
    wire::ipv4::write_header(&mut f[14..34], 46, ttl, 17, Ipv4Addr::from(src), Ipv4Addr::from(dst));
    wire::udp::write_header(&mut f[34..], Ipv4Addr::from(src), Ipv4Addr::from(dst), 1024, 2048);
    f
}

fn drops(g: &Graph, index: u16, r: DropReason) -> u64 {
    g.counters.error(index, r).get()
}

fn graph() -> Graph {
    common::graph(YAML).0
}

/// Runs `frames` from port0 through ethernet-input .. ip4-rewrite and returns what reaches
/// interface-output.
fn routed(frames: &[Vec<u8>]) -> (Graph, Vec<(u16, u8, Vec<u8>)>) {
    let mut g = graph();
    let out = drive(&mut g, 1, frames, dataplane::interface::nodes::INTERFACE_OUTPUT);
    (g, out)
}

#[test]
fn routed_frame_has_new_macs_ttl_minus_one_and_a_valid_checksum() {
    let input = frame([16, 0, 0, 1], [48, 0, 0, 5], 64);
    let (_, out) = routed(std::slice::from_ref(&input));
    assert_eq!(out.len(), 1);
    let (tx_if, plen, f) = &out[0];
    assert_eq!((*tx_if, *plen), (2, 24));
    let mut want = input.clone();
    want[..6].copy_from_slice(&[0x00, 0x1b, 0x21, 0x06, 0x00, 0x01]); // neighbor 100.64.1.0
    want[6..12].copy_from_slice(&[0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdd]); // port1's own MAC
    want[14 + 8] = 63;
    want[24..26].copy_from_slice(&[0, 0]);
    let c = checksum::checksum(&want[14..34]);
    want[24..26].copy_from_slice(&c.to_be_bytes());
    assert_eq!(f, &want, "only MACs, TTL and the IPv4 checksum change");
    assert!(Ipv4Packet::new_checked(&f[14..]).unwrap().checksum_ok());
}

#[test]
fn incremental_checksum_matches_a_full_recompute_for_every_ttl_and_address() {
    for x in [0u8, 1, 127, 255] {
        let frames: Vec<Vec<u8>> = (2..=255u8).map(|ttl| frame([16, 0, x, 255 - x], [48, 0, 0, x], ttl)).collect();
        let (_, out) = routed(&frames);
        assert_eq!(out.len(), frames.len());
        for (ttl, (_, _, f)) in (2..=255u8).zip(&out) {
            let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
            assert_eq!(ip.ttl(), ttl - 1);
            assert!(ip.checksum_ok(), "ttl {ttl} x {x}");
        }
    }
}

#[test]
fn glean_resolves_connected_hosts_and_misses_send_arp_requests() {
    let (g, out) = routed(&[
        frame([16, 0, 0, 1], [192, 168, 7, 8], 64),
        frame([16, 0, 0, 1], [192, 168, 7, 9], 64),
        frame([16, 0, 0, 1], [30, 1, 2, 3], 64),
    ]);
    let (arp, ip): (Vec<_>, Vec<_>) = out.iter().partition(|(_, _, f)| f[12..14] == [0x08, 0x06]);
    assert_eq!(ip.len(), 1);
    assert_eq!((ip[0].0, ip[0].1), (3, 24));
    assert_eq!(&ip[0].2[..12], &[2, 0, 0, 0, 7, 8, 2, 0xfe, 0, 0, 0, 3]);
    // .9 has no neighbor; 30/8 goes via .99, which has none either: both dropped, and a
    // broadcast ARP request for each next hop goes out of the LAN from its address.
    assert_eq!(drops(&g, 1, dataplane::ip4::drops::NO_NEIGHBOR), 2);
    assert_eq!(stats(&g, 3).out_discards, 2, "no-neighbor is charged to the output interface");
    let targets: Vec<_> = arp
        .iter()
        .map(|(tx_if, _, f)| {
            assert_eq!((*tx_if, f.len()), (3, 60));
            assert_eq!(&f[..12], &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0xfe, 0, 0, 0, 3]);
            let a = wire::arp::Arp::parse(&f[14..]).unwrap();
            assert_eq!(
                (a.op, a.sha.0, a.spa),
                (wire::arp::REQUEST, [2, 0xfe, 0, 0, 0, 3], Ipv4Addr::new(192, 168, 7, 1))
            );
            a.tpa
        })
        .collect();
    assert_eq!(targets, [Ipv4Addr::new(192, 168, 7, 9), Ipv4Addr::new(192, 168, 7, 99)]);
}

#[test]
fn malformed_and_unroutable_packets_are_dropped_under_their_reason() {
    let ok = frame([16, 0, 0, 1], [48, 0, 0, 5], 64);
    let with = |at: usize, b: u8, fix: bool| {
        let mut f = ok.clone();
        f[at] = b;
        if fix {
            f[24..26].copy_from_slice(&[0, 0]);
            let c = checksum::checksum(&f[14..34]);
            f[24..26].copy_from_slice(&c.to_be_bytes());
        }
        f
    };
    let cases: Vec<(Vec<u8>, DropReason)> = vec![
        (with(14, 0x44, true), dataplane::ip4::drops::BAD_IP_HEADER), // IHL 4
        (with(14, 0x65, true), dataplane::ip4::drops::BAD_IP_HEADER), // version 6 in an IPv4 frame
        (with(17, 10, true), dataplane::ip4::drops::BAD_IP_HEADER),   // total length 10 < 20
        (with(17, 200, true), dataplane::ip4::drops::TRUNCATED),      // total length beyond the frame
        (ok[..30].to_vec(), dataplane::ip4::drops::TRUNCATED),        // header cut short
        (with(20, 0x41, false), dataplane::ip4::drops::BAD_CHECKSUM),
        (with(22, 1, true), dataplane::ip4::drops::TTL_EXPIRED),
        (with(22, 0, true), dataplane::ip4::drops::TTL_EXPIRED),
        (frame([16, 0, 0, 1], [99, 0, 0, 1], 64), dataplane::ip4::drops::NO_ROUTE),
        (frame([16, 0, 0, 1], [100, 64, 0, 1], 64), dataplane::ip4::drops::IP4_LOCAL),
    ];
    let frames: Vec<Vec<u8>> = cases.iter().map(|(f, _)| f.clone()).chain([ok.clone()]).collect();
    let mut g = graph();
    let sent = drive(&mut g, 1, &frames, dataplane::drivers::nodes::GENERATOR_TX);
    // The good packet, and an ICMP error back to the source (out of port0, from port0's
    // address) about each TTL-expired and unroutable one, quoting its header.
    let (icmp, forwarded): (Vec<_>, Vec<_>) = sent.iter().partition(|(_, _, f)| f[14 + 9] == 1);
    assert_eq!(forwarded.len(), 1);
    let errors: Vec<(u8, u8)> = icmp
        .iter()
        .map(|(tx_if, _, f)| {
            let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
            assert!(ip.checksum_ok());
            assert_eq!((*tx_if, ip.src(), ip.dst()), (1, Ipv4Addr::new(100, 64, 0, 1), Ipv4Addr::new(16, 0, 0, 1)));
            let m = &f[34..14 + usize::from(ip.total_len())];
            assert_eq!(checksum::checksum(m), 0, "ICMP checksum");
            let quoted = Ipv4Packet::new_checked(&m[8..]).unwrap();
            assert_eq!((quoted.src(), quoted.protocol()), (Ipv4Addr::new(16, 0, 0, 1), 17), "quotes the header");
            assert_eq!(m.len(), 8 + 46, "the whole 46-byte packet fits in 576 bytes");
            (m[0], m[1])
        })
        .collect();
    assert_eq!(errors, [(11, 0), (11, 0), (3, 0)], "time exceeded twice, net unreachable once");
    for r in [
        dataplane::ip4::drops::BAD_IP_HEADER,
        dataplane::ip4::drops::TRUNCATED,
        dataplane::ip4::drops::BAD_CHECKSUM,
        dataplane::ip4::drops::TTL_EXPIRED,
        dataplane::ip4::drops::NO_ROUTE,
        dataplane::ip4::drops::IP4_LOCAL,
    ] {
        let want = cases.iter().filter(|(_, x)| *x == r).count() as u64;
        assert_eq!(drops(&g, 1, r), want, "{}", r.name());
    }
    let s = stats(&g, 1);
    assert_eq!(s.rx_packets, 11);
    assert_eq!(s.rx_forwarded, 1);
    assert_eq!(s.rx_packets, s.rx_forwarded + dropped(&g, 1));
    assert_eq!(g.pool.free_count(), 1024);
}

/// Reject routes (the kernel's blackhole, unreachable and prohibit): dropped under their
/// reasons, the last two answered with ICMP host unreachable and administratively
/// prohibited, the first silently; a routed packet in the same vector goes on.
#[test]
fn reject_routes_drop_under_their_reasons_and_answer_as_linux_does() {
    use dataplane::l3::Reject;
    let rejects = [
        ("99.1.0.0", 16, Reject::Blackhole),
        ("99.2.0.0", 16, Reject::Unreachable),
        ("99.3.0.0", 16, Reject::Prohibit),
    ];
    let mut g = common::graph_with_rejects(YAML, &rejects);
    let frames: Vec<Vec<u8>> = [[99, 1, 0, 1], [99, 2, 0, 1], [99, 3, 0, 1], [48, 0, 0, 5]]
        .iter()
        .map(|&d| frame([16, 0, 0, 1], d, 64))
        .collect();
    let sent = drive(&mut g, 1, &frames, dataplane::drivers::nodes::GENERATOR_TX);
    let (icmp, forwarded): (Vec<_>, Vec<_>) = sent.iter().partition(|(_, _, f)| f[14 + 9] == 1);
    assert_eq!(forwarded.len(), 1);
    let codes: Vec<(u8, u8)> = icmp.iter().map(|(_, _, f)| (f[34], f[35])).collect();
    assert_eq!(codes, [(3, 1), (3, 13)], "host unreachable, communication administratively prohibited");
    for r in [
        dataplane::ip4::drops::BLACKHOLE,
        dataplane::ip4::drops::ROUTE_UNREACHABLE,
        dataplane::ip4::drops::ROUTE_PROHIBITED,
    ] {
        assert_eq!(drops(&g, 1, r), 1, "{}", r.name());
    }
    assert_eq!(g.pool.free_count(), 1024);
}

/// A promiscuous port sees frames for other hosts: a unicast frame to another MAC is dropped
/// as `not-for-us` (not a discard), whether it rides in a vector of plain frames (which then
/// leaves the fused pass) or alone; the others of its vector are routed, and frames to a
/// group MAC are taken.
#[test]
fn unicast_frames_to_another_mac_are_dropped_as_not_for_us() {
    let good: Vec<Vec<u8>> = (0..64).map(|k| frame([16, 0, 0, 1], [48, 0, 0, k], 64)).collect();
    let (g, out) = routed(&good);
    assert_eq!((out.len(), g.counters.nodes[dataplane::ip4::nodes::IP4_INPUT.index()].fused.get()), (64, 64), "fused");
    let mut frames = good.clone();
    for (k, byte) in [(0, 0), (37, 5), (63, 3)] {
        frames[k][byte] ^= 0x02; // another host's MAC (the group bit left clear)
    }
    let group = |dst: [u8; 6]| {
        let mut f = frame([16, 0, 0, 1], [48, 0, 0, 9], 64);
        f[..6].copy_from_slice(&dst);
        f
    };
    frames.push(group([0xff; 6]));
    frames.push(group([0x01, 0x00, 0x5e, 0, 0, 9]));
    let (g, out) = routed(&frames);
    assert_eq!(out.len(), 61 + 2, "all but the three for other hosts");
    assert!(out.iter().all(|(_, _, f)| f[14 + 19] != 0 && f[14 + 19] != 37 && f[14 + 19] != 63));
    assert_eq!(drops(&g, 1, dataplane::ethernet::drops::NOT_FOR_US), 3);
    let s = stats(&g, 1);
    assert_eq!((s.rx_packets, dropped(&g, 1)), (66, 3));
    assert_eq!((s.in_discards, s.in_errors, s.in_unknown_protos), (0, 0, 0), "not a discard");
    // Alone.
    let (g, out) = routed(&frames[..1]);
    assert_eq!((out.len(), drops(&g, 1, dataplane::ethernet::drops::NOT_FOR_US)), (0, 1));
}

#[test]
fn ipv4_on_an_interface_without_addresses_is_ip4_not_enabled() {
    let mut g = graph();
    let mut f = frame([16, 0, 0, 1], [48, 0, 0, 5], 64);
    f[..6].copy_from_slice(&[2, 0xfe, 0, 0, 0, 4]); // plain's MAC
    drive(&mut g, 4, &[f], dataplane::interface::nodes::INTERFACE_OUTPUT);
    assert_eq!(drops(&g, 4, dataplane::ethernet::drops::IP4_NOT_ENABLED), 1);
}

/// port0 receives; eight next hops on `wide` (more than `ip4-rewrite` keeps resolved at once,
/// so they share its slots), one on `small` (MTU 576), a route with an out-label, one toward
/// a next hop without a neighbor, and `wide`'s connected hosts (glean, one known).
const HOPS_YAML: &str = "
interfaces:
  port0: {index: 1, mac: '9c:69:b4:61:a1:dc', addresses: [100.64.0.1/31]}
  wide: {index: 2, mac: '02:fe:00:00:00:02', addresses: [10.2.0.1/24]}
  small: {index: 3, mac: '02:fe:00:00:00:03', addresses: [10.3.0.1/24], mtu: 576}
routes:
  - {prefix: 40.0.0.0/16, via: 10.2.0.10}
  - {prefix: 41.0.0.0/16, via: 10.2.0.11}
  - {prefix: 42.0.0.0/16, via: 10.2.0.12}
  - {prefix: 43.0.0.0/16, via: 10.2.0.13}
  - {prefix: 44.0.0.0/16, via: 10.2.0.14}
  - {prefix: 45.0.0.0/16, via: 10.2.0.15}
  - {prefix: 46.0.0.0/16, via: 10.2.0.16}
  - {prefix: 47.0.0.0/16, via: 10.2.0.17}
  - {prefix: 50.0.0.0/16, via: 10.3.0.10}
  - {prefix: 51.0.0.0/16, via: 10.2.0.10, out-labels: [100]}
  - {prefix: 52.0.0.0/16, via: 10.2.0.99}
neighbors:
  - {interface: wide, address: 10.2.0.10, mac: '02:00:00:00:02:10'}
  - {interface: wide, address: 10.2.0.11, mac: '02:00:00:00:02:11'}
  - {interface: wide, address: 10.2.0.12, mac: '02:00:00:00:02:12'}
  - {interface: wide, address: 10.2.0.13, mac: '02:00:00:00:02:13'}
  - {interface: wide, address: 10.2.0.14, mac: '02:00:00:00:02:14'}
  - {interface: wide, address: 10.2.0.15, mac: '02:00:00:00:02:15'}
  - {interface: wide, address: 10.2.0.16, mac: '02:00:00:00:02:16'}
  - {interface: wide, address: 10.2.0.17, mac: '02:00:00:00:02:17'}
  - {interface: small, address: 10.3.0.10, mac: '02:00:00:00:03:10'}
";

/// A frame to port0 toward `dst` with `ttl`, `payload` UDP bytes and DF as given; mostly
/// toward the eight `wide` next hops.
fn arb_routed_frame() -> impl Strategy<Value = Vec<u8>> {
    let dst = prop_oneof![
        6 => (40u8..48).prop_map(|a| [a, 0, 0, 1]),
        1 => prop_oneof![Just([50, 0, 0, 1]), Just([51, 0, 0, 1]), Just([52, 0, 0, 1])],
        1 => prop_oneof![Just([10, 2, 0, 10]), Just([10, 2, 0, 200])],
    ];
    let ttl = prop_oneof![8 => Just(64u8), 1 => Just(1u8), 1 => Just(2u8)];
    let size = prop_oneof![8 => 0usize..64, 1 => 500usize..700];
    (dst, ttl, size, any::<bool>()).prop_map(|(dst, ttl, payload, df)| {
        let mut f = frame([16, 0, 0, 1], dst, ttl);
        let ip_len = 28 + payload;
        f.resize(14 + ip_len.max(46), 0);
        wire::ipv4::write_header(&mut f[14..34], ip_len as u16, ttl, 17, Ipv4Addr::new(16, 0, 0, 1), dst.into());
        if !df {
            f[20] = 0;
            f[24..26].copy_from_slice(&[0, 0]);
            let c = checksum::checksum(&f[14..34]);
            f[24..26].copy_from_slice(&c.to_be_bytes());
        }
        f
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// `ip4-rewrite` treats a vector toward many next hops (its plain pass, its resolved
    /// adjacencies shared by runs of packets and evicted by others, and the packets it leaves
    /// to the full treatment) exactly as the same frames one vector each.
    #[test]
    fn a_vector_toward_many_next_hops_is_rewritten_as_its_frames_one_by_one(frames in common::runs_of(arb_routed_frame())) {
        let whole = common::outcome(HOPS_YAML, 1, &frames, frames.len(), 3);
        prop_assert_eq!(&whole, &common::outcome(HOPS_YAML, 1, &frames, 1, 3));
        prop_assert_eq!(whole.2[0].rx_packets, frames.len() as u64);
    }
}
