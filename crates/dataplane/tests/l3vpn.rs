//! MPLS L3VPN on a provider edge, node by node: VRF routes push a VPN label under a
//! transport label toward the core; a VPN label pops into its VRF (after the transport
//! label when the penultimate hop did not pop it); the router's own address answers in the
//! VRF back over the VPN; a P router's implicit-null label pops and sends on (penultimate-hop
//! popping); and the configuration's L3VPN errors name their field.

mod common;

use common::drive;
use dataplane::config::Config;
use dataplane::datapath::Graph;
use std::net::{Ipv4Addr, Ipv6Addr};
use wire::MplsLabel;

/// A provider edge: `core` toward the P router (192.0.2.2), customers red and blue behind
/// `red` and `blue` with the same 10.0.0.0/24. Toward the remote edge's 10.1.0.0/24: the P's
/// transport label 100 over VPN label 2010 (red) or 2020 (blue). This edge's VPN labels:
/// 1010 (red), 1020 (blue), 1016 (red's IPv6); its transport label 500 (when the P does not
/// pop it). Label 300 is a P router's, toward 192.0.2.2, with implicit null.
const YAML: &str = "
vrfs: {red: {table: 10}, blue: {table: 20}}
interfaces:
  core: {index: 1, mac: '02:fe:00:00:00:01', addresses: [192.0.2.1/30, '2001:db8:ffff::1/64'], mpls: true}
  red: {index: 2, mac: '02:fe:00:00:00:02', vrf: red, addresses: [10.0.0.1/24, '2001:db8::1/64']}
  blue: {index: 3, mac: '02:fe:00:00:00:03', vrf: blue, addresses: [10.0.0.1/24]}
routes:
  - {prefix: 10.1.0.0/24, vrf: red, via: 192.0.2.2, out-labels: [100, 2010]}
  - {prefix: 10.1.0.0/24, vrf: blue, via: 192.0.2.2, out-labels: [100, 2020]}
  - {prefix: '2001:db8:1::/64', vrf: red, via: '2001:db8:ffff::2', out-labels: [100, 2016]}
neighbors:
  - {interface: core, address: 192.0.2.2, mac: '00:00:00:00:00:c2'}
  - {interface: core, address: '2001:db8:ffff::2', mac: '00:00:00:00:00:c6'}
  - {interface: red, address: 10.0.0.2, mac: '00:00:00:00:0a:02'}
  - {interface: red, address: '2001:db8::2', mac: '00:00:00:00:0a:62'}
  - {interface: blue, address: 10.0.0.2, mac: '00:00:00:00:14:02'}
mpls:
  local-labels:
    - {label: 500}
    - {label: 1010, vrf: red}
    - {label: 1020, vrf: blue}
    - {label: 1016, vrf: red, payload: ip6}
    - {label: 300, via: 192.0.2.2, interface: core, out-labels: [3]}
";

const RED: u16 = 2;
const BLUE: u16 = 3;
const CORE: u16 = 1;

/// Ethernet to interface `to` (its MAC ends in `to`) carrying `ethertype` then `l3`.
fn ethernet(to: u16, ethertype: u16, l3: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0xfe, 0, 0, 0, to as u8, 0, 0, 0, 0, 0xee, 0];
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(l3);
    f
}

/// IPv4 from `src` to `dst` with `ttl`: UDP, or an ICMP echo request (`echo`).
fn ip4(src: [u8; 4], dst: [u8; 4], ttl: u8, echo: bool) -> Vec<u8> {
    let mut ip = vec![0u8; 48];
    let proto = if echo { 1 } else { 17 };
    wire::ipv4::write_header(&mut ip[..20], 48, ttl, proto, Ipv4Addr::from(src), Ipv4Addr::from(dst));
    if echo {
        ip[20..28].copy_from_slice(&[8, 0, 0, 0, 0x12, 0x34, 0, 1]);
        let c = wire::checksum::checksum(&ip[20..]);
        ip[22..24].copy_from_slice(&c.to_be_bytes());
    }
    ip
}

/// IPv6/UDP from 2001:db8:1::2 to `dst`, hop limit 64.
fn ip6(dst: &str) -> Vec<u8> {
    let (src, dst): (Ipv6Addr, Ipv6Addr) = ("2001:db8:1::2".parse().unwrap(), dst.parse().unwrap());
    let mut ip = vec![0u8; 48];
    wire::ipv6::write_header(&mut ip[..40], 8, 17, 64, src, dst);
    wire::udp::write_header(&mut ip[40..], src, dst, 1024, 2048);
    ip
}

/// An MPLS frame to `core` with `labels` (label, TTL; the last at the bottom) over `payload`.
fn labelled(labels: &[(u32, u8)], payload: &[u8]) -> Vec<u8> {
    let mut l3 = Vec::new();
    for (k, &(label, ttl)) in labels.iter().enumerate() {
        let e = MplsLabel { label, tc: 0, bos: k + 1 == labels.len(), ttl };
        l3.extend_from_slice(&e.to_u32().to_be_bytes());
    }
    l3.extend_from_slice(payload);
    ethernet(CORE, 0x8847, &l3)
}

/// What leaves for `frames` received on interface `port`: (output interface, frame).
fn forward(g: &mut Graph, port: u16, frames: &[Vec<u8>]) -> Vec<(u16, Vec<u8>)> {
    drive(g, port, frames, dataplane::drivers::nodes::GENERATOR_TX).into_iter().map(|(tx, _, f)| (tx, f)).collect()
}

/// The label stack at the start of `l3` (label, TTL, bottom of stack) and what follows it.
fn stack(l3: &[u8]) -> (Vec<(u32, u8, bool)>, &[u8]) {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let e = MplsLabel::parse(&l3[at..]).unwrap();
        out.push((e.label, e.ttl, e.bos));
        at += 4;
        if e.bos {
            return (out, &l3[at..]);
        }
    }
}

#[test]
fn vpn_labels_pop_into_their_vrf_after_the_transport_label_or_alone() {
    let (mut g, _) = common::graph(YAML);
    let to_host = ip4([10, 1, 0, 2], [10, 0, 0, 2], 64, false);
    let frames = [
        labelled(&[(500, 64), (1010, 64)], &to_host), // the P swapped: the transport label is ours
        labelled(&[(500, 64), (1020, 64)], &to_host),
        labelled(&[(1010, 64)], &to_host), // the P popped it (penultimate-hop popping)
        labelled(&[(1020, 20)], &to_host),
        labelled(&[(500, 64), (1016, 64)], &ip6("2001:db8::2")),
    ];
    let out = forward(&mut g, CORE, &frames);
    let seen: Vec<(u16, [u8; 6], u16, u8)> = out
        .iter()
        .map(|(tx, f)| {
            let ttl = if f[12..14] == [0x08, 0x00] { f[14 + 8] } else { f[14 + 7] };
            (*tx, f[..6].try_into().unwrap(), u16::from_be_bytes([f[12], f[13]]), ttl)
        })
        .collect();
    let red = [0, 0, 0, 0, 0x0a, 2];
    let blue = [0, 0, 0, 0, 0x14, 2];
    let red6 = [0, 0, 0, 0, 0x0a, 0x62];
    // Popped (uniform TTL: the label's TTL − 1 when smaller), then routed in the VRF: − 1.
    let mut want = vec![
        (RED, red, 0x0800, 62),
        (BLUE, blue, 0x0800, 62),
        (RED, red, 0x0800, 62),
        (BLUE, blue, 0x0800, 18),
        (RED, red6, 0x86dd, 62),
    ];
    let mut seen = seen;
    seen.sort();
    want.sort();
    assert_eq!(seen, want);
    // The IPv4 checksums still hold after both TTL changes.
    for (_, f) in out.iter().filter(|(_, f)| f[12..14] == [0x08, 0x00]) {
        assert_eq!(wire::checksum::checksum(&f[14..34]), 0, "{f:02x?}");
    }
}

#[test]
fn vrf_routes_push_the_vpn_label_under_the_transport_label() {
    let (mut g, _) = common::graph(YAML);
    for (port, vpn) in [(RED, 2010), (BLUE, 2020)] {
        let out = forward(&mut g, port, &[ethernet(port, 0x0800, &ip4([10, 0, 0, 2], [10, 1, 0, 9], 64, false))]);
        let [(tx, f)] = &out[..] else { panic!("{out:?}") };
        assert_eq!((*tx, &f[..6], &f[12..14]), (CORE, &[0, 0, 0, 0, 0, 0xc2][..], &[0x88, 0x47][..]));
        let (labels, ip) = stack(&f[14..]);
        assert_eq!(labels, [(100, 63, false), (vpn, 63, true)], "port {port}");
        assert_eq!(
            (ip[8], Ipv4Addr::from(<[u8; 4]>::try_from(&ip[16..20]).unwrap())),
            (63, Ipv4Addr::new(10, 1, 0, 9))
        );
    }
    let out = forward(&mut g, RED, &[ethernet(RED, 0x86dd, &ip6("2001:db8:1::7"))]);
    let [(tx, f)] = &out[..] else { panic!("{out:?}") };
    assert_eq!((*tx, &f[..6]), (CORE, &[0, 0, 0, 0, 0, 0xc6][..]));
    assert_eq!(stack(&f[14..]).0, [(100, 63, false), (2016, 63, true)]);
}

#[test]
fn a_packet_takes_at_most_eight_pops_with_labels_under_them() {
    let (mut g, _) = common::graph(YAML);
    let to_host = ip4([10, 1, 0, 2], [10, 0, 0, 2], 64, false);
    let stack = |pops: usize| -> Vec<(u32, u8)> { vec![(500, 64); pops].into_iter().chain([(1010, 64)]).collect() };
    let out = forward(&mut g, CORE, &[labelled(&stack(8), &to_host), labelled(&stack(9), &to_host)]);
    assert_eq!(out.iter().map(|(tx, f)| (*tx, f.len())).collect::<Vec<_>>(), [(RED, 14 + 48)], "8 go on, 9 do not");
    let dropped = g.counters.error(CORE, dataplane::mpls::drops::TOO_MANY_POPS).get();
    assert_eq!(dropped, 1);
}

#[test]
fn the_edges_own_address_answers_in_the_vrf_back_over_the_vpn() {
    let (mut g, _) = common::graph(YAML);
    let echo = ip4([10, 1, 0, 2], [10, 0, 0, 1], 64, true);
    for (vpn, back) in [(1010, 2010), (1020, 2020)] {
        let out = forward(&mut g, CORE, &[labelled(&[(500, 64), (vpn, 64)], &echo)]);
        let [(tx, f)] = &out[..] else { panic!("{out:?}") };
        assert_eq!(*tx, CORE);
        let (labels, reply) = stack(&f[14..]);
        assert_eq!(labels.iter().map(|l| l.0).collect::<Vec<_>>(), [100, back], "the reply is routed in its VRF");
        assert_eq!((reply[9], reply[20]), (1, 0), "an ICMP echo reply");
        assert_eq!(&reply[16..20], &[10, 1, 0, 2]);
    }
}

#[test]
fn an_implicit_null_label_pops_and_sends_on() {
    let (mut g, _) = common::graph(YAML);
    let frames = [
        labelled(&[(300, 64), (1010, 64)], &ip4([1, 1, 1, 1], [10, 0, 0, 2], 64, false)),
        labelled(&[(300, 9)], &ip4([1, 1, 1, 1], [10, 0, 0, 2], 64, false)),
        labelled(&[(300, 64)], &ip6("2001:db8::2")),
    ];
    let out = forward(&mut g, CORE, &frames);
    assert_eq!(out.len(), 3, "{out:?}");
    for (tx, f) in &out {
        assert_eq!((*tx, &f[..6], &f[6..12]), (CORE, &[0, 0, 0, 0, 0, 0xc2][..], &[2, 0xfe, 0, 0, 0, 1][..]));
    }
    // The VPN label goes on with the transport label's TTL − 1.
    assert_eq!(&out[0].1[12..14], &[0x88, 0x47]);
    assert_eq!(stack(&out[0].1[14..]).0, [(1010, 63, true)]);
    // At the end of the stack: the IP version says what follows; the TTL comes down to 8.
    assert_eq!((&out[1].1[12..14], out[1].1[14 + 8]), (&[0x08, 0x00][..], 8));
    assert_eq!(wire::checksum::checksum(&out[1].1[14..34]), 0);
    assert_eq!((&out[2].1[12..14], out[2].1[14 + 7]), (&[0x86, 0xdd][..], 63));
}

#[test]
fn l3vpn_configuration_errors_name_the_field() {
    let cases = [
        (
            YAML.replace(
                "{label: 300, via: 192.0.2.2, interface: core, out-labels: [3]}",
                "{label: 300, via: 192.0.2.2, interface: core, out-labels: [3, 40]}",
            ),
            "mpls.local-labels[4].out-labels",
        ),
        (YAML.replace("{label: 1010, vrf: red}", "{label: 1010, vrf: green}"), "mpls.local-labels[1].vrf: green"),
        (
            YAML.replace(
                "{label: 300, via: 192.0.2.2, interface: core, out-labels: [3]}",
                "{label: 300, via: 192.0.2.2, interface: core, out-labels: [3], vrf: red}",
            ),
            "mpls.local-labels[4].vrf: red",
        ),
        // A labelled route in a VRF reaches its next hop through the default table.
        (YAML.replace("vrf: blue, via: 192.0.2.2", "vrf: blue, via: 10.0.0.2"), "routes[1].via: 10.0.0.2"),
    ];
    for (yaml, want) in cases {
        let e = Config::load(&yaml).expect_err(want).to_string();
        assert!(e.contains(want), "{want}: {e}");
    }
    assert!(Config::load(YAML).is_ok());
}
