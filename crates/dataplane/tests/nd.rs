//! Neighbor discovery and ICMPv6 node by node: exact advertisements and replies, what is
//! learned, what is dropped under which reason, and when an error may (not) be sent
//! (RFC 4443 §2.4(e)).

mod common;

use common::{drive, stats};
use dataplane::datapath::Graph;
use dataplane::datapath::registry::DropFacts;
use dataplane::neighbor::punt::{Event, Learn, Punt};
use dataplane::runtime::drops::DropReason;
use std::net::Ipv6Addr;
use std::sync::Arc;
use wire::icmpv6::{self, NeighborMessage};
use wire::{Ipv6Packet, MacAddr};

const YAML: &str = "
interfaces:
  port0: {index: 1, mac: '9c:69:b4:61:a1:dc', addresses: ['2001:db8:100::1/64']}
  lan: {index: 3, mac: '02:fe:00:00:00:03', addresses: ['2001:db8:7::1/64']}
  small: {index: 5, mac: '02:fe:00:00:00:05', addresses: ['2001:db8:5::1/64'], mtu: 1280}
routes:
  - {prefix: '2001:db8:16::/48', via: '2001:db8:100::2'}
  - {prefix: '2001:db8:48::/48', via: '2001:db8:5::2'}
neighbors:
  - {interface: port0, address: '2001:db8:100::2', mac: '00:1b:21:06:00:00'}
  - {interface: small, address: '2001:db8:5::2', mac: '02:00:00:00:05:02'}
";

const HOST: MacAddr = MacAddr([2, 0, 0, 0, 7, 8]);
const LAN: MacAddr = MacAddr([2, 0xfe, 0, 0, 0, 3]);
const PORT0: MacAddr = MacAddr([0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdc]);
/// lan's link-local address, from its MAC.
const LAN_LL: &str = "fe80::fe:ff:fe00:3";

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// A graph whose worker reports to a channel, and the channel's receiving end.
fn graph() -> (Graph, std::sync::mpsc::Receiver<Event>) {
    let (mut g, _) = common::graph(YAML);
    let (tx, rx) = std::sync::mpsc::sync_channel(64);
    g.features.punt = Punt::new(Some(tx), None, dataplane::runtime::tsc::hz());
    (g, rx)
}

/// An Ethernet/IPv6 frame from `src_mac` to `dst_mac` carrying `next_header` `payload`; an
/// ICMPv6 payload gets its checksum.
fn ip6_frame(dst_mac: MacAddr, src_mac: MacAddr, src: &str, dst: &str, hop: u8, next: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 54 + payload.len()];
    f[..6].copy_from_slice(&dst_mac.0);
    f[6..12].copy_from_slice(&src_mac.0);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    wire::ipv6::write_header(&mut f[14..54], payload.len() as u16, next, hop, a(src), a(dst));
    f[54..].copy_from_slice(payload);
    if next == icmpv6::PROTOCOL {
        icmpv6::fill_checksum(a(src), a(dst), &mut f[54..]);
    }
    f
}

/// An ICMPv6 frame from the LAN host.
fn icmp6(dst_mac: MacAddr, src: &str, dst: &str, hop: u8, message: &[u8]) -> Vec<u8> {
    ip6_frame(dst_mac, HOST, src, dst, hop, icmpv6::PROTOCOL, message)
}

/// A neighbor solicitation or advertisement message.
fn nd(kind: u8, flags: u8, target: &str, link_addr: Option<MacAddr>) -> Vec<u8> {
    let mut m = [0u8; 32];
    let n = NeighborMessage { kind, flags, target: a(target), link_addr }.write(&mut m);
    m[..n].to_vec()
}

/// A neighbor solicitation from the LAN host for `target`, to its solicited-node group.
fn solicitation(src: &str, target: &str, hop: u8, slla: Option<MacAddr>) -> Vec<u8> {
    let group = icmpv6::solicited_node(a(target));
    icmp6(icmpv6::multicast_mac(group), src, &group.to_string(), hop, &nd(135, 0, target, slla))
}

/// An echo request with 8 bytes of data.
fn echo_request() -> Vec<u8> {
    vec![128, 0, 0, 0, 0x12, 0x34, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8]
}

fn drops(g: &Graph, index: u16, r: DropReason) -> u64 {
    g.counters.error(index, r).get()
}

#[test]
fn solicitations_for_our_addresses_are_answered_and_the_sender_learned() {
    let (mut g, events) = graph();
    let frames = [
        solicitation("2001:db8:7::8", "2001:db8:7::1", 255, Some(HOST)),
        solicitation("fe80::7:8", LAN_LL, 255, Some(HOST)),
        solicitation("::", "2001:db8:7::1", 255, None), // duplicate address detection
    ];
    let out = drive(&mut g, 3, &frames, dataplane::interface::nodes::INTERFACE_OUTPUT);
    assert_eq!(out.len(), 3, "every solicitation answered");
    let want = [
        ("2001:db8:7::1", "2001:db8:7::8", HOST, icmpv6::FLAG_SOLICITED),
        (LAN_LL, "fe80::7:8", HOST, icmpv6::FLAG_SOLICITED),
        ("2001:db8:7::1", "ff02::1", MacAddr([0x33, 0x33, 0, 0, 0, 1]), 0),
    ];
    for ((tx_if, _, f), (from, to, mac, solicited)) in out.iter().zip(want) {
        assert_eq!(*tx_if, 3, "back out of lan");
        assert_eq!((&f[..6], &f[6..12], &f[12..14]), (&mac.0[..], &LAN.0[..], &[0x86, 0xdd][..]));
        let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
        assert_eq!((ip.src(), ip.dst(), ip.hop_limit(), ip.next_header()), (a(from), a(to), 255, 58));
        assert_eq!(icmpv6::checksum(ip.src(), ip.dst(), &f[54..]), 0);
        let na = NeighborMessage::parse(&f[54..54 + usize::from(ip.payload_len())]).unwrap();
        let flags = icmpv6::FLAG_ROUTER | icmpv6::FLAG_OVERRIDE | solicited;
        assert_eq!(
            na,
            NeighborMessage { kind: 136, flags, target: a(from), link_addr: Some(LAN) },
            "router, override, solicited unless DAD; our MAC as target link-layer address"
        );
    }
    let learned: Vec<Event> = events.try_iter().collect();
    let host = |addr: &str| Event::Learned { interface: 3, address: a(addr).into(), mac: HOST, how: Learn::Claimed };
    assert_eq!(learned, [host("2001:db8:7::8"), host("fe80::7:8")], "the DAD probe teaches nothing");
    assert_eq!(g.counters.punt.nd_advertisements.get(), 3);
    let s = stats(&g, 3);
    assert_eq!((s.in_discards, s.rx_local, s.rx_forwarded), (0, 3, 0), "taken and answered: local");
}

#[test]
fn malformed_foreign_and_unanswered_messages_are_dropped_under_their_reason() {
    let (mut g, events) = graph();
    let mut bad_checksum = solicitation("2001:db8:7::8", "2001:db8:7::1", 255, Some(HOST));
    bad_checksum[57] ^= 1;
    let mut zero_option = solicitation("2001:db8:7::8", "2001:db8:7::1", 255, Some(HOST));
    zero_option[54 + 25] = 0;
    icmpv6::fill_checksum(a("2001:db8:7::8"), icmpv6::solicited_node(a("2001:db8:7::1")), &mut zero_option[54..]);
    let cases: Vec<(Vec<u8>, DropReason)> = vec![
        (solicitation("2001:db8:7::8", "2001:db8:7::1", 64, Some(HOST)), dataplane::ip6::drops::ND_MALFORMED), // routed here
        (zero_option, dataplane::ip6::drops::ND_MALFORMED),
        (solicitation("::", "2001:db8:7::1", 255, Some(HOST)), dataplane::ip6::drops::ND_MALFORMED), // DAD with a source option
        (bad_checksum, dataplane::ip6::drops::ICMP6_MALFORMED),
        (solicitation("2001:db8:7::8", "2001:db8:7::99", 255, Some(HOST)), dataplane::ip6::drops::ND_NOT_FOR_US),
        (solicitation("2001:db8:7::8", "2001:db8:100::1", 255, Some(HOST)), dataplane::ip6::drops::ND_NOT_FOR_US), // port0's
        (
            icmp6(LAN, "2001:db8:7::8", "ff02::1", 255, &nd(136, 0x60, "2001:db8:7::8", None)),
            dataplane::ip6::drops::ND_MALFORMED,
        ), // solicited, to a group
        (icmp6(LAN, "fe80::7:8", "ff02::2", 255, &[133, 0, 0, 0, 0, 0, 0, 0]), dataplane::ip6::drops::ND_IGNORED),
        (icmp6(LAN, "fe80::7:8", "ff02::1", 1, &[143, 0, 0, 0, 0, 0, 0, 0]), dataplane::ip6::drops::IP6_MULTICAST), // MLD report
        (icmp6(LAN, "2001:db8:7::8", "ff02::1", 64, &echo_request()), dataplane::ip6::drops::IP6_MULTICAST),
        (ip6_frame(LAN, HOST, "2001:db8:7::8", "2001:db8:7::1", 64, 17, &[0; 8]), dataplane::ip6::drops::IP6_LOCAL),
        (icmp6(LAN, "2001:db8:7::", "2001:db8:7::1", 64, &echo_request()), dataplane::ip6::drops::IP6_LOCAL), // anycast source
        (icmp6(LAN, "fe80::7:8", "fe80::fe:ff:fe00:1", 64, &echo_request()), dataplane::ip6::drops::IP6_LINK_LOCAL), // not lan's
    ];
    let frames: Vec<Vec<u8>> = cases.iter().map(|(f, _)| f.clone()).collect();
    let out = drive(&mut g, 3, &frames, dataplane::interface::nodes::INTERFACE_OUTPUT);
    assert!(out.is_empty(), "nothing answered: {out:?}");
    for (_, r) in &cases {
        let want = cases.iter().filter(|(_, x)| x == r).count() as u64;
        assert_eq!(drops(&g, 3, *r), want, "{}", r.name());
    }
    assert!(events.try_iter().next().is_none(), "nothing learned");
    let s = stats(&g, 3);
    assert_eq!(s.in_errors, 5, "malformed ND and the bad checksum");
    assert_eq!(s.in_discards, 5, "ip6-local, multicast and link-local; the punts are no discards");
}

#[test]
fn advertisements_confirm_or_update_neighbors_on_the_link() {
    let (mut g, events) = graph();
    let other = MacAddr([2, 0, 0, 0, 7, 9]);
    let na =
        |flags, target: &str, tlla| icmp6(LAN, "2001:db8:7::8", "2001:db8:7::1", 255, &nd(136, flags, target, tlla));
    let frames = [
        na(icmpv6::FLAG_SOLICITED | icmpv6::FLAG_OVERRIDE, "2001:db8:7::8", Some(HOST)),
        na(icmpv6::FLAG_OVERRIDE, "2001:db8:7::9", Some(other)),
        na(0, "2001:db8:7::10", Some(other)), // unsolicited without override: nothing to take
        na(icmpv6::FLAG_SOLICITED, "2001:db8:7::11", None), // no option: the frame's source
        na(icmpv6::FLAG_SOLICITED, "2001:db8:99::1", Some(HOST)), // not on lan's link
        na(icmpv6::FLAG_SOLICITED, "2001:db8:7::1", Some(HOST)), // our own address
    ];
    drive(&mut g, 3, &frames, dataplane::interface::nodes::INTERFACE_OUTPUT);
    let learned: Vec<Event> = events.try_iter().collect();
    let ev = |addr: &str, mac, how| Event::Learned { interface: 3, address: a(addr).into(), mac, how };
    assert_eq!(
        learned,
        [
            ev("2001:db8:7::8", HOST, Learn::Confirmed),
            ev("2001:db8:7::9", other, Learn::Overheard),
            ev("2001:db8:7::11", HOST, Learn::Confirmed)
        ]
    );
    assert_eq!(drops(&g, 3, dataplane::ip6::drops::ND_ADVERTISEMENT), frames.len() as u64);
}

#[test]
fn echo_requests_are_answered_routed_or_straight_back_on_the_link() {
    let (mut g, _) = graph();
    let request = ip6_frame(
        PORT0,
        MacAddr([0, 0x1b, 0x21, 6, 0, 0]),
        "2001:db8:16::1",
        "2001:db8:100::1",
        1,
        58,
        &echo_request(),
    );
    let out = drive(&mut g, 1, std::slice::from_ref(&request), dataplane::interface::nodes::INTERFACE_OUTPUT);
    assert_eq!(out.len(), 1, "hop limit 1 to us: answered all the same");
    let (tx_if, _, f) = &out[0];
    assert_eq!(
        (*tx_if, &f[..6], &f[6..12]),
        (1, &[0, 0x1b, 0x21, 6, 0, 0][..], &PORT0.0[..]),
        "routed to the neighbor"
    );
    let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
    assert_eq!((ip.src(), ip.dst(), ip.hop_limit()), (a("2001:db8:100::1"), a("2001:db8:16::1"), 63));
    assert_eq!((f[54], f[55], &f[58..]), (129, 0, &request[58..]), "type echo reply; id, sequence and data as asked");
    assert_eq!(icmpv6::checksum(ip.src(), ip.dst(), &f[54..]), 0);

    let request = icmp6(LAN, "fe80::7:8", LAN_LL, 64, &echo_request());
    let out = drive(&mut g, 3, &[request], dataplane::interface::nodes::INTERFACE_OUTPUT);
    let (tx_if, _, f) = &out[0];
    assert_eq!((*tx_if, &f[..6], &f[6..12]), (3, &HOST.0[..], &LAN.0[..]), "to the MAC it came from");
    let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
    assert_eq!((ip.src(), ip.dst(), ip.hop_limit()), (a(LAN_LL), a("fe80::7:8"), 64));
    assert_eq!(icmpv6::checksum(ip.src(), ip.dst(), &f[54..]), 0);
    assert_eq!(g.counters.punt.icmp_sent.get(), 2);
}

/// A UDP packet from 2001:db8:16::1 (behind port0) to `dst` with `hop` and `len` bytes of IPv6,
/// in a frame to `dst_mac`.
fn transit(dst_mac: MacAddr, src: &str, dst: &str, hop: u8, next: u8, payload: &[u8]) -> Vec<u8> {
    ip6_frame(dst_mac, MacAddr([0, 0x1b, 0x21, 6, 0, 0]), src, dst, hop, next, payload)
}

/// The ICMPv6 errors among `out`: (type, code, parameter, source, length of the IPv6 packet).
fn errors(out: &[(u16, u8, Vec<u8>)]) -> Vec<(u8, u8, u32, Ipv6Addr, usize)> {
    out.iter()
        .filter(|(_, _, f)| f[14 + 6] == 58 && icmpv6::is_error(f[54]))
        .map(|(tx_if, _, f)| {
            assert_eq!(*tx_if, 1, "back toward the source");
            let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
            assert_eq!(icmpv6::checksum(ip.src(), ip.dst(), &f[54..]), 0);
            let param = u32::from_be_bytes(f[58..62].try_into().unwrap());
            (f[54], f[55], param, ip.src(), 40 + usize::from(ip.payload_len()))
        })
        .collect()
}

#[test]
fn errors_follow_rfc_4443_section_2_4_e() {
    let (mut g, _) = graph();
    let src = "2001:db8:16::1";
    let group = MacAddr([0x33, 0x33, 0, 0, 0, 1]);
    let mut fragment = vec![17, 0, 0, 8, 0, 0, 0, 1]; // offset 1 (×8): no UDP header in it
    fragment.extend_from_slice(&[0; 16]);
    let mut first_fragment_of_error = vec![58, 0, 0, 1, 0, 0, 0, 1]; // offset 0, more fragments
    first_fragment_of_error.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0]);
    // Each packet and the error (type, code, parameter) it gets, if any.
    type Case = (Vec<u8>, Option<(u8, u8, u32)>);
    let cases: Vec<Case> = vec![
        (transit(PORT0, src, "2001:db8:48::1", 1, 17, &[0; 8]), Some((3, 0, 0))),
        (transit(PORT0, src, "2001:db8:48::1", 1, 58, &echo_request()), Some((3, 0, 0))),
        (transit(PORT0, src, "2001:db8:48::1", 1, 58, &[1, 0, 0, 0, 0, 0, 0, 0]), None), // an error
        (transit(PORT0, src, "2001:db8:48::1", 1, 58, &[137, 0, 0, 0, 0, 0, 0, 0]), None), // a redirect
        (transit(PORT0, src, "2001:db8:48::1", 1, 44, &fragment), Some((3, 0, 0))),      // a later fragment
        (transit(PORT0, src, "2001:db8:48::1", 1, 44, &first_fragment_of_error), None),
        (transit(group, src, "2001:db8:48::1", 1, 17, &[0; 8]), None), // link-layer multicast
        (transit(group, src, "2001:db8:48::1", 64, 17, &[0; 1300]), Some((2, 0, 1280))), // but too big
        (transit(PORT0, "2001:db8:100::", "2001:db8:48::1", 1, 17, &[0; 8]), None), // anycast source
        (transit(PORT0, src, "2001:db8:99::1", 64, 17, &[0; 8]), Some((1, 0, 0))), // no route
        (transit(PORT0, src, "2001:db8:48::1", 64, 17, &[0; 1452]), Some((2, 0, 1280))),
    ];
    let frames: Vec<Vec<u8>> = cases.iter().map(|(f, _)| f.clone()).collect();
    let out = drive(&mut g, 1, &frames, dataplane::interface::nodes::INTERFACE_OUTPUT);
    let mut got = errors(&out);
    got.sort();
    let mut want: Vec<_> = cases
        .iter()
        .filter_map(|(f, e)| {
            let (kind, code, param) = (*e)?;
            // The quote: as much of the packet as keeps the error within 1280 bytes.
            Some((kind, code, param, a("2001:db8:100::1"), (48 + f.len() - 14).min(1280)))
        })
        .collect();
    want.sort();
    assert_eq!(got, want, "from port0's address, the allowed ones only");
}

#[test]
fn a_failed_next_hop_gets_address_unreachable_and_misses_solicit_once_a_second() {
    let (mut g, events) = graph();
    let mut tables = (*g.features.tables).clone();
    tables.l3.unreachable.insert((3, a("2001:db8:7::9").into()));
    g.features.tables = Arc::new(tables);
    let to = |dst: &str| transit(PORT0, "2001:db8:16::1", dst, 64, 17, &[0; 8]);
    let frames = [to("2001:db8:7::9"), to("2001:db8:7::20"), to("2001:db8:7::20")];
    let out = drive(&mut g, 1, &frames, dataplane::interface::nodes::INTERFACE_OUTPUT);
    assert_eq!(errors(&out), [(1, 3, 0, a("2001:db8:100::1"), 96)], "address unreachable about the failed one");
    let solicitations: Vec<_> = out.iter().filter(|(_, _, f)| f[54] == 135).collect();
    assert_eq!(solicitations.len(), 1, "one solicitation for ::20, however many packets miss");
    assert_eq!(drops(&g, 1, dataplane::ip6::drops::IP6_NO_NEIGHBOR), 3);
    let resolving = Event::Resolving { interface: 3, address: a("2001:db8:7::20").into() };
    assert_eq!(events.try_iter().collect::<Vec<_>>(), [resolving]);
}

#[test]
fn errors_are_rate_limited_per_worker() {
    let (mut g, _) = graph();
    let frames: Vec<Vec<u8>> =
        (0..150).map(|_| transit(PORT0, "2001:db8:16::1", "2001:db8:48::1", 1, 17, &[0; 8])).collect();
    let out = drive(&mut g, 1, &frames, dataplane::interface::nodes::INTERFACE_OUTPUT);
    assert_eq!(errors(&out).len(), 100, "a burst of 100");
    assert_eq!(g.counters.punt.icmp_limited.get(), 50);
    assert_eq!(drops(&g, 1, dataplane::ip6::drops::HOP_LIMIT_EXPIRED), 150);
}

#[test]
fn probes_are_unicast_solicitations_and_resolutions_multicast_ones() {
    let (mut g, _) = graph();
    g.pool.settle(); // as a worker does between runs: its free buffers may be taken
    let probe = dataplane::ip6::nd::solicit(&mut g, 3, a("fe80::7:8").into(), Some(HOST)).unwrap();
    let multicast = dataplane::ip6::nd::solicit(&mut g, 3, a("2001:db8:7::8").into(), None).unwrap();
    let want = [
        (probe, HOST, "fe80::7:8", LAN_LL),
        (multicast, MacAddr([0x33, 0x33, 0xff, 0, 0, 8]), "ff02::1:ff00:8", "2001:db8:7::1"),
    ];
    for (i, mac, dst, src) in want {
        let f = g.pool.frame(i).to_vec();
        assert_eq!((g.pool.meta(i).tx_if, &f[..6], &f[6..12]), (3, &mac.0[..], &LAN.0[..]));
        let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
        assert_eq!((ip.src(), ip.dst(), ip.hop_limit()), (a(src), a(dst), 255), "from the address toward the target");
        let ns = NeighborMessage::parse(&f[54..54 + usize::from(ip.payload_len())]).unwrap();
        assert_eq!((ns.kind, ns.link_addr), (135, Some(LAN)));
        assert_eq!(icmpv6::checksum(ip.src(), ip.dst(), &f[54..54 + usize::from(ip.payload_len())]), 0);
    }
    assert!(dataplane::ip6::nd::solicit(&mut g, 3, "10.0.0.1".parse().unwrap(), None).is_none(), "IPv6 only");
    assert_eq!(g.counters.punt.nd_solicitations.get(), 2);
}
