//! ARP, ICMP and fragmentation node by node: exact replies, what is learned, what is counted.

mod common;

use common::{drive, stats};
use dataplane::datapath::Graph;
use dataplane::neighbor::punt::{Event, Learn, Punt};
use dataplane::runtime::drops::DropReason;
use std::net::Ipv4Addr;
use wire::arp::{self, Arp};
use wire::{Ipv4Packet, MacAddr, checksum};

const YAML: &str = "
interfaces:
  port0: {index: 1, mac: '9c:69:b4:61:a1:dc', addresses: [100.64.0.1/31]}
  lan: {index: 3, mac: '02:fe:00:00:00:03', addresses: [192.168.7.1/24]}
  small: {index: 5, mac: '02:fe:00:00:00:05', addresses: [10.5.0.1/24], mtu: 576}
routes:
  - {prefix: 16.0.0.0/24, via: 100.64.0.0}
  - {prefix: 48.0.0.0/24, via: 10.5.0.2}
neighbors:
  - {interface: port0, address: 100.64.0.0, mac: '00:1b:21:06:00:00'}
  - {interface: small, address: 10.5.0.2, mac: '02:00:00:00:05:02'}
";

const HOST: MacAddr = MacAddr([2, 0, 0, 0, 7, 8]);

/// A graph whose worker reports to a channel, and the channel's receiving end.
fn graph() -> (Graph, std::sync::mpsc::Receiver<Event>) {
    let (mut g, _) = common::graph(YAML);
    let (tx, rx) = std::sync::mpsc::sync_channel(16);
    g.features.punt = Punt::new(Some(tx), None, dataplane::runtime::tsc::hz());
    (g, rx)
}

/// An ARP packet from the LAN host 192.168.7.8 in a 60-byte frame to `dst`.
fn arp_frame(dst: MacAddr, op: u16, tpa: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&dst.0);
    f[6..12].copy_from_slice(&HOST.0);
    f[12..14].copy_from_slice(&[0x08, 0x06]);
    let a = Arp { op, sha: HOST, spa: Ipv4Addr::new(192, 168, 7, 8), tha: MacAddr([0; 6]), tpa: Ipv4Addr::from(tpa) };
    a.write(&mut f[14..]);
    f
}

#[test]
fn arp_requests_for_our_address_are_answered_and_their_senders_learned() {
    let (mut g, events) = graph();
    let frames = [
        arp_frame(MacAddr::BROADCAST, arp::REQUEST, [192, 168, 7, 1]),
        arp_frame(MacAddr::BROADCAST, arp::REQUEST, [192, 168, 7, 50]),
        arp_frame(MacAddr([2, 0xfe, 0, 0, 0, 3]), arp::REPLY, [192, 168, 7, 1]),
        arp_frame(MacAddr::BROADCAST, 9, [192, 168, 7, 1]),
    ];
    let out = drive(&mut g, 3, &frames, dataplane::drivers::nodes::GENERATOR_TX);
    assert_eq!(out.len(), 1, "one reply");
    let (tx_if, _, f) = &out[0];
    assert_eq!(*tx_if, 3);
    assert_eq!(&f[..12], &[2, 0, 0, 0, 7, 8, 2, 0xfe, 0, 0, 0, 3], "to the asker, from the interface's MAC");
    let reply = Arp::parse(&f[14..]).unwrap();
    let want = Arp {
        op: arp::REPLY,
        sha: MacAddr([2, 0xfe, 0, 0, 0, 3]),
        spa: Ipv4Addr::new(192, 168, 7, 1),
        tha: HOST,
        tpa: Ipv4Addr::new(192, 168, 7, 8),
    };
    assert_eq!(reply, want);
    let learned: Vec<Event> = events.try_iter().collect();
    let host = |how| Event::Learned { interface: 3, address: Ipv4Addr::new(192, 168, 7, 8).into(), mac: HOST, how };
    assert_eq!(
        learned,
        [host(Learn::Confirmed), host(Learn::Overheard), host(Learn::Confirmed)],
        "the request for us and the reply create; the other only updates"
    );
    let e = |r: DropReason| g.counters.error(3, r).get();
    assert_eq!(
        (
            e(dataplane::ip4::drops::ARP_NOT_FOR_US),
            e(dataplane::ip4::drops::ARP_REPLY),
            e(dataplane::ip4::drops::ARP_MALFORMED)
        ),
        (1, 1, 1)
    );
    assert_eq!(stats(&g, 3).in_discards, 0, "consumed ARP is not a discard");
    assert_eq!(stats(&g, 3).in_errors, 1, "the malformed one is an error");
}

/// An Ethernet/IPv4 frame to port0's MAC: ICMP echo request (`icmp`) or UDP, `len` bytes of IP.
fn ip_frame(dst: [u8; 4], ttl: u8, icmp: bool, len: usize, df: bool) -> Vec<u8> {
    let mut f = vec![0u8; 14 + len];
    f[..6].copy_from_slice(&[0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdc]);
    f[6..12].copy_from_slice(&[0x00, 0x1b, 0x21, 0x06, 0x00, 0x00]);
    f[12..14].copy_from_slice(&[8, 0]);
    let proto = if icmp { 1 } else { 17 };
    wire::ipv4::write_header(&mut f[14..34], len as u16, ttl, proto, Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::from(dst));
    if !df {
        f[20] = 0;
    }
    for (k, b) in f[34..].iter_mut().enumerate() {
        *b = k as u8;
    }
    if icmp {
        f[34..38].copy_from_slice(&[8, 0, 0, 0]);
        let c = checksum::checksum(&f[34..]);
        f[36..38].copy_from_slice(&c.to_be_bytes());
    }
    f[24..26].copy_from_slice(&[0, 0]);
    let c = checksum::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    f
}

#[test]
fn echo_requests_to_us_are_answered_whatever_their_ttl() {
    let (mut g, _) = graph();
    let request = ip_frame([100, 64, 0, 1], 1, true, 84, true);
    let out = drive(&mut g, 1, std::slice::from_ref(&request), dataplane::drivers::nodes::GENERATOR_TX);
    assert_eq!(out.len(), 1);
    let f = &out[0].2;
    let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
    assert!(ip.checksum_ok());
    assert_eq!((ip.src(), ip.dst(), ip.ttl()), (Ipv4Addr::new(100, 64, 0, 1), Ipv4Addr::new(16, 0, 0, 1), 63));
    assert_eq!(f[34], 0, "echo reply");
    assert_eq!(checksum::checksum(&f[34..]), 0);
    assert_eq!(&f[38..], &request[38..], "identifier, sequence and data echoed");
    // Anything else to us is dropped: vecflow has no host stack.
    let udp = ip_frame([100, 64, 0, 1], 64, false, 46, true);
    assert!(drive(&mut g, 1, &[udp], dataplane::drivers::nodes::GENERATOR_TX).is_empty());
    assert_eq!(g.counters.error(1, dataplane::ip4::drops::IP4_LOCAL).get(), 1);
}

#[test]
fn big_packets_are_fragmented_or_answered_with_fragmentation_needed() {
    let (mut g, _) = graph();
    let df_clear = ip_frame([48, 0, 0, 9], 64, false, 1400, false);
    let out = drive(&mut g, 1, std::slice::from_ref(&df_clear), dataplane::drivers::nodes::GENERATOR_TX);
    // 1380 bytes of data in pieces of at most 552 (576 − 20, a multiple of 8).
    let mut data = Vec::new();
    let mut offsets = Vec::new();
    for (tx_if, _, f) in &out {
        assert_eq!(*tx_if, 5);
        let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
        assert!(ip.checksum_ok() && usize::from(ip.total_len()) <= 576);
        assert_eq!(ip.ttl(), 63);
        let flags = u16::from_be_bytes([f[20], f[21]]);
        offsets.push((flags & 0x1fff, flags & 0x2000 != 0));
        data.extend_from_slice(&f[34..14 + usize::from(ip.total_len())]);
    }
    assert_eq!(offsets, [(0, true), (69, true), (138, false)]);
    assert_eq!(data, df_clear[34..], "the fragments carry the whole payload in order");

    let df_set = ip_frame([48, 0, 0, 9], 64, false, 1400, true);
    let out = drive(&mut g, 1, &[df_set], dataplane::drivers::nodes::GENERATOR_TX);
    assert_eq!(out.len(), 1);
    let (tx_if, _, f) = &out[0];
    assert_eq!(*tx_if, 1, "back toward the source");
    assert_eq!((f[34], f[35], u16::from_be_bytes([f[40], f[41]])), (3, 4, 576), "fragmentation needed, MTU 576");
    assert_eq!(g.counters.error(1, dataplane::ip4::drops::FRAG_NEEDED).get(), 1);
}

#[test]
fn jumbo_packets_are_fragmented_to_a_smaller_mtu_or_answered_with_it() {
    let (mut g, _) = common::graph(
        "
buffers: {data-size: 9216}
interfaces:
  port0: {index: 1, mac: '9c:69:b4:61:a1:dc', addresses: [100.64.0.1/31], mtu: 9000}
  lan: {index: 5, mac: '02:fe:00:00:00:05', addresses: [10.5.0.1/24], mtu: 1500}
routes:
  - {prefix: 16.0.0.0/24, via: 100.64.0.0}
  - {prefix: 48.0.0.0/24, via: 10.5.0.2}
neighbors:
  - {interface: port0, address: 100.64.0.0, mac: '00:1b:21:06:00:00'}
  - {interface: lan, address: 10.5.0.2, mac: '02:00:00:00:05:02'}
",
    );
    let df_clear = ip_frame([48, 0, 0, 9], 64, false, 9000, false);
    let out = drive(&mut g, 1, std::slice::from_ref(&df_clear), dataplane::drivers::nodes::GENERATOR_TX);
    // 8980 bytes of data in pieces of at most 1480: six full ones and one of 100.
    let mut data = Vec::new();
    for (k, (tx_if, _, f)) in out.iter().enumerate() {
        assert_eq!(*tx_if, 5);
        let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
        assert!(ip.checksum_ok() && usize::from(ip.total_len()) <= 1500);
        let flags = u16::from_be_bytes([f[20], f[21]]);
        assert_eq!((flags & 0x1fff, flags & 0x2000 != 0), (k as u16 * 185, k + 1 < out.len()));
        data.extend_from_slice(&f[34..14 + usize::from(ip.total_len())]);
    }
    assert_eq!(out.len(), 7);
    assert_eq!(data, df_clear[34..], "the fragments carry the whole payload in order");

    let df_set = ip_frame([48, 0, 0, 9], 64, false, 9000, true);
    let out = drive(&mut g, 1, &[df_set], dataplane::drivers::nodes::GENERATOR_TX);
    assert_eq!(out.len(), 1);
    let (tx_if, _, f) = &out[0];
    assert_eq!(*tx_if, 1, "back toward the source");
    assert_eq!((f[34], f[35], u16::from_be_bytes([f[40], f[41]])), (3, 4, 1500), "fragmentation needed, MTU 1500");
    assert!(f.len() <= 14 + 576, "the answer quotes no more than an ICMP error may: {} bytes", f.len());
}
