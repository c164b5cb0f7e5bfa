//! linux-cp's worker side: packets for the router that vecflow does not answer, and LLDP, go
//! up the TAP of their input interface (a sub-interface's untagged), counted as the router's
//! own; LACP, STP and frames for other MACs never do; an exhausted supply of frame buffers
//! drops them by name; frames from a TAP leave their interface (tagged on a sub-interface) and
//! hand their buffer back; ARP is answered by vecflow and copied up, and Linux's own answer is
//! dropped.

mod common;

use common::{dropped, stats};
use dataplane::datapath::Graph;
use dataplane::lcp::worker::{Frame, inject};
use dataplane::lcp::{LcpWorker, PuntRate};
use std::net::Ipv4Addr;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

const YAML: &str = "
linux-cp: {}
interfaces:
  port0:
    index: 1
    mac: '02:fe:00:00:00:01'
    addresses: [192.0.2.1/24, '2001:db8::1/64']
    sub-interfaces:
      100: {encapsulation: {dot1q: 100}, addresses: [10.100.0.1/24]}
neighbors:
  - {interface: port0, address: 192.0.2.2, mac: '02:00:00:00:00:09'}
  - {interface: port0, address: '2001:db8::2', mac: '02:00:00:00:00:09'}
";

/// The control thread's ends of the worker's channels.
struct Thread {
    /// Punted frames: the control class's, then the other class's.
    punted: [Receiver<Frame>; 2],
    spare: SyncSender<Vec<u8>>,
    inject: SyncSender<Frame>,
    used: Receiver<Vec<u8>>,
}

impl Thread {
    /// Every frame punted since the last call: the control class's, then the rest.
    fn up(&self) -> Vec<Frame> {
        self.punted[0].try_iter().chain(self.punted[1].try_iter()).collect()
    }
}

/// A graph with linux-cp on and `spares` frame buffers to punt with.
fn setup(spares: usize) -> (Graph, Thread) {
    setup_with(spares, PuntRate::default())
}

/// [`setup`], policing at `rates`.
fn setup_with(spares: usize, rates: PuntRate) -> (Graph, Thread) {
    let (mut g, _) = common::graph(YAML);
    let ((control, control_rx), (other, other_rx)) = (sync_channel(spares.max(16)), sync_channel(spares.max(16)));
    let (spare, spare_rx) = sync_channel(spares.max(16));
    let (inject_tx, inject_rx) = sync_channel(16);
    let (used, used_rx) = sync_channel(16);
    for _ in 0..spares {
        spare.send(Vec::new()).unwrap();
    }
    let hz = dataplane::runtime::tsc::hz();
    let wake = std::sync::Arc::new(dataplane::lcp::worker::eventfd().unwrap());
    g.features.lcp = Some(LcpWorker::new([control, other], spare_rx, inject_rx, used, rates, hz, wake));
    (g, Thread { punted: [control_rx, other_rx], spare, inject: inject_tx, used: used_rx })
}

/// A UDP frame from 192.0.2.2 (or 10.100.0.2 on VLAN 100) to `dst`, port 179.
fn udp(vlan: Option<u16>, dst: Ipv4Addr) -> Vec<u8> {
    let mut f = vec![2, 0xfe, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9];
    if let Some(v) = vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&v.to_be_bytes());
    }
    f.extend_from_slice(&[0x08, 0x00]);
    let src = if vlan.is_some() { Ipv4Addr::new(10, 100, 0, 2) } else { Ipv4Addr::new(192, 0, 2, 2) };
    let mut ip = [0u8; 28];
    wire::ipv4::write_header(&mut ip[..20], 28, 64, 17, src, dst);
    wire::udp::write_header(&mut ip[20..], src, dst, 40000, 179);
    f.extend_from_slice(&ip);
    f
}

#[test]
fn packets_for_the_router_go_up_the_tap_of_their_interface_untagged() {
    let (mut g, t) = setup(4);
    let plain = udp(None, Ipv4Addr::new(192, 0, 2, 1));
    let tagged = udp(Some(100), Ipv4Addr::new(10, 100, 0, 1));
    common::receive(&mut g, 1, &[&plain, &tagged]);
    let up: Vec<Frame> = t.up();
    assert_eq!(up.len(), 2);
    assert_eq!((up[0].interface, &up[0].bytes), (1, &plain));
    let sub = 2; // port0.100
    assert_eq!(up[1].interface, sub);
    assert_eq!(up[1].bytes, [&tagged[..12], &tagged[16..]].concat(), "the tag is taken off");
    assert_eq!(stats(&g, 1).rx_local, 1);
    assert_eq!(stats(&g, sub).rx_local, 1);
    assert_eq!(dropped(&g, 1) + dropped(&g, sub), 0);
    // Transit traffic is forwarded as ever (here: no route), never punted.
    common::receive(&mut g, 1, &[&udp(None, Ipv4Addr::new(198, 18, 0, 1))]);
    assert!(t.up().is_empty());
    drop(t.spare);
}

#[test]
fn without_a_free_frame_buffer_a_punt_is_dropped_by_name() {
    let (mut g, t) = setup(1);
    let f = udp(None, Ipv4Addr::new(192, 0, 2, 1));
    common::receive(&mut g, 1, &[&f, &f, &f]);
    assert_eq!(t.up().len(), 1);
    let n = dataplane::datapath::registry::N_REASONS;
    let reason = g.counters.errors[n + dataplane::lcp::drops::PUNT_QUEUE_FULL.index()].get();
    assert_eq!((reason, stats(&g, 1).rx_local), (2, 1));
}

#[test]
fn frames_from_a_tap_leave_their_interface_and_hand_their_buffer_back() {
    let (mut g, t) = setup(0);
    let reply = udp(None, Ipv4Addr::new(192, 0, 2, 2));
    t.inject.send(Frame { interface: 1, bytes: reply.clone() }).unwrap();
    t.inject.send(Frame { interface: 2, bytes: reply.clone() }).unwrap();
    assert!(inject(&mut g));
    // interface-output, then what reaches the generator's tx node.
    let (node, v) = g.take_pending().unwrap();
    assert_eq!(node, dataplane::interface::nodes::INTERFACE_OUTPUT);
    g.dispatch(node, v);
    let (node, v) = g.take_pending().unwrap();
    assert_eq!(node, dataplane::drivers::nodes::GENERATOR_TX);
    let sent: Vec<Vec<u8>> = g.vectors[v].indices().iter().map(|&i| g.pool.frame(i).to_vec()).collect();
    assert_eq!(sent[0], reply, "as Linux wrote it");
    assert_eq!(sent[1], [&reply[..12], &[0x81, 0, 0, 100], &reply[12..]].concat(), "tagged for port0.100");
    g.dispatch(node, v);
    assert_eq!((stats(&g, 1).tx_packets, stats(&g, 2).tx_packets), (1, 1));
    assert_eq!(t.used.try_iter().count(), 2, "both buffers back");
    assert!(!inject(&mut g), "nothing left");
}

/// An ARP frame on port0 (untagged): `op` from `spa` to `tpa`.
fn arp(op: u16, spa: [u8; 4], tpa: [u8; 4]) -> Vec<u8> {
    let mut f = vec![0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 9, 0x08, 0x06];
    let mut a = [0u8; wire::arp::LEN];
    let sha = wire::MacAddr([2, 0, 0, 0, 0, 9]);
    wire::arp::Arp { op, sha, spa: spa.into(), tha: wire::MacAddr([0; 6]), tpa: tpa.into() }.write(&mut a);
    f.extend_from_slice(&a);
    f.resize(60, 0);
    f
}

#[test]
fn arp_is_answered_by_vecflow_and_copied_up_and_linux_s_answer_is_dropped() {
    let (mut g, t) = setup(4);
    // A request for our address: answered (one reply on the wire) and copied up.
    let request = arp(wire::arp::REQUEST, [192, 0, 2, 2], [192, 0, 2, 1]);
    common::receive(&mut g, 1, &[&request]);
    assert_eq!(g.counters.punt.arp_replies.get(), 1);
    let up: Vec<Frame> = t.up();
    assert_eq!(up.len(), 1);
    assert_eq!((up[0].interface, &up[0].bytes), (1, &request));
    assert_eq!(stats(&g, 1).tx_packets, 1, "vecflow's reply");
    // Linux answers the copy too: its reply is dropped; a gratuitous ARP passes.
    let linux_reply = {
        let mut f = arp(wire::arp::REPLY, [192, 0, 2, 1], [192, 0, 2, 2]);
        f[6..12].copy_from_slice(&[2, 0xfe, 0, 0, 0, 1]);
        f
    };
    let gratuitous = arp(wire::arp::REPLY, [192, 0, 2, 1], [192, 0, 2, 1]);
    t.inject.send(Frame { interface: 1, bytes: linux_reply }).unwrap();
    t.inject.send(Frame { interface: 1, bytes: gratuitous }).unwrap();
    assert!(inject(&mut g));
    g.run(0);
    assert_eq!(stats(&g, 1).tx_packets, 2, "only the gratuitous ARP left");
    assert_eq!(
        g.counters.errors[dataplane::lcp::drops::LCP_DUPLICATE_ANSWER.index()].get(),
        1,
        "on interface 0 (local)"
    );
}

#[test]
fn link_local_multicast_goes_up_the_tap() {
    let (mut g, t) = setup(4);
    // OSPF hello (protocol 89) to 224.0.0.5, and RIPng (UDP 521) to ff02::9.
    let mut ospf = vec![0x01, 0x00, 0x5e, 0, 0, 5, 2, 0, 0, 0, 0, 9, 0x08, 0x00];
    let mut ip = [0u8; 48];
    wire::ipv4::write_header(&mut ip[..20], 48, 1, 89, Ipv4Addr::new(192, 0, 2, 2), Ipv4Addr::new(224, 0, 0, 5));
    ospf.extend_from_slice(&ip);
    let mut ripng = vec![0x33, 0x33, 0, 0, 0, 9, 2, 0, 0, 0, 0, 9, 0x86, 0xdd];
    let (src, dst): (std::net::Ipv6Addr, std::net::Ipv6Addr) = ("fe80::9".parse().unwrap(), "ff02::9".parse().unwrap());
    let mut ip6 = [0u8; 48];
    wire::ipv6::write_header(&mut ip6[..40], 8, 17, 255, src, dst);
    wire::udp::write_header(&mut ip6[40..], src, dst, 521, 521);
    ripng.extend_from_slice(&ip6);
    common::receive(&mut g, 1, &[&ospf]);
    common::receive(&mut g, 1, &[&ripng]);
    let up: Vec<Vec<u8>> = t.up().into_iter().map(|f| f.bytes).collect();
    assert_eq!(up, [ospf, ripng]);
    assert_eq!((stats(&g, 1).rx_local, dropped(&g, 1)), (2, 0));
}

/// A frame from 02:00:00:00:00:09 to `dst` (tagged with `vlan`), of `ethertype` (or an 802.3
/// length) and `payload`, padded to 60 bytes.
fn l2(dst: [u8; 6], vlan: Option<u16>, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = [&dst[..], &[2, 0, 0, 0, 0, 9]].concat();
    if let Some(v) = vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&v.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f.resize(f.len().max(60), 0);
    f
}

/// An LLDPDU (chassis and port id, TTL 120, end) to the nearest-bridge group.
fn lldp(vlan: Option<u16>) -> Vec<u8> {
    let tlvs = [2, 7, 4, 2, 0, 0, 0, 0, 9, 4, 4, 5, b'e', b't', b'h', 0, 6, 2, 0, 120, 0, 0];
    l2([0x01, 0x80, 0xc2, 0, 0, 0x0e], vlan, wire::EtherType::LLDP, &tlvs)
}

#[test]
fn lldp_goes_up_the_tap_of_its_interface_untagged() {
    let (mut g, t) = setup(4);
    let (plain, tagged) = (lldp(None), lldp(Some(100)));
    common::receive(&mut g, 1, &[&plain, &tagged]);
    let up: Vec<Frame> = t.punted[0].try_iter().collect(); // the control class
    let sub = 2; // port0.100
    assert_eq!(up.len(), 2);
    assert_eq!((up[0].interface, &up[0].bytes), (1, &plain), "unchanged");
    assert_eq!((up[1].interface, &up[1].bytes[..]), (sub, &[&tagged[..12], &tagged[16..]].concat()[..]));
    assert_eq!((stats(&g, 1).rx_local, stats(&g, sub).rx_local), (1, 1), "taken by the router");
    assert_eq!(dropped(&g, 1) + dropped(&g, sub), 0);
    // Without linux-cp, LLDP is an ethertype like any other vecflow does not handle.
    let (mut g, _) = common::graph(&YAML.replace("linux-cp: {}\n", ""));
    common::receive(&mut g, 1, &[&plain]);
    assert_eq!(g.counters.error(1, dataplane::ethernet::drops::UNKNOWN_ETHERTYPE).get(), 1);
    assert_eq!(stats(&g, 1).rx_local, 0);
}

#[test]
fn lacp_and_stp_are_never_punted() {
    let (mut g, t) = setup(4);
    // LACP: a slow protocol (0x8809, subtype 1) to the slow-protocols group; an STP
    // configuration BPDU: 802.3 length and LLC (42 42 03) to the bridge group.
    let lacp = l2([0x01, 0x80, 0xc2, 0, 0, 0x02], None, 0x8809, &[1, 1, 1, 20]);
    let stp = l2([0x01, 0x80, 0xc2, 0, 0, 0], None, 38, &[0x42, 0x42, 0x03, 0, 0, 0, 0]);
    common::receive(&mut g, 1, &[&lacp, &stp]);
    common::receive(&mut g, 1, &[&l2([0x01, 0x80, 0xc2, 0, 0, 0], Some(100), 38, &[0x42, 0x42, 0x03])]);
    assert!(t.up().is_empty(), "nothing went up");
    assert_eq!(g.counters.error(1, dataplane::ethernet::drops::UNKNOWN_ETHERTYPE).get(), 2);
    assert_eq!(g.counters.error(2, dataplane::ethernet::drops::UNKNOWN_ETHERTYPE).get(), 1, "on port0.100");
    assert_eq!(stats(&g, 1).rx_local + stats(&g, 2).rx_local, 0);
}

/// A frame to the router's address but for another host's MAC (a promiscuous port sees it)
/// is dropped as `not-for-us`, never punted.
#[test]
fn frames_for_other_macs_are_never_punted() {
    let (mut g, t) = setup(4);
    let mut f = udp(None, Ipv4Addr::new(192, 0, 2, 1));
    f[..6].copy_from_slice(&[2, 0xfe, 0, 0, 0, 7]);
    common::receive(&mut g, 1, &[&f, &f]);
    assert!(t.up().is_empty());
    assert_eq!((g.counters.error(1, dataplane::ethernet::drops::NOT_FOR_US).get(), stats(&g, 1).rx_local), (2, 0));
}

/// A fragment from 192.0.2.2 to `dst` on port0: `flags_offset` (MF is 0x2000, the offset in
/// 8-byte units below it; 0 for a whole packet) of a packet of `protocol`, carrying `payload`.
fn fragment4(dst: [u8; 4], flags_offset: u16, protocol: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0xfe, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x08, 0x00];
    let len = 20 + payload.len();
    let mut ip = vec![0u8; len];
    wire::ipv4::write_header(&mut ip, len as u16, 64, protocol, Ipv4Addr::new(192, 0, 2, 2), dst.into());
    ip[6..8].copy_from_slice(&flags_offset.to_be_bytes());
    let mut h = wire::Ipv4Packet::new_checked(&mut ip[..]).unwrap();
    h.fill_checksum();
    ip[20..].copy_from_slice(payload);
    f.extend_from_slice(&ip);
    f
}

/// The first fragment (more to come) of a UDP datagram from 2001:db8::2 to `dst` on port0,
/// behind an IPv6 fragment header.
fn fragment6(dst: &str) -> Vec<u8> {
    let (src, dst): (std::net::Ipv6Addr, std::net::Ipv6Addr) = ("2001:db8::2".parse().unwrap(), dst.parse().unwrap());
    let mut f = vec![2, 0xfe, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x86, 0xdd];
    let mut ip = [0u8; 40 + 8 + 16];
    wire::ipv6::write_header(&mut ip, 24, 44, 64, src, dst);
    ip[40..48].copy_from_slice(&[17, 0, 0, 1, 0, 0, 0x12, 0x34]); // UDP, offset 0, M, id 0x1234
    ip[48..52].copy_from_slice(&[0x9c, 0x40, 0x00, 0xb3]); // ports 40000 -> 179
    f.extend_from_slice(&ip);
    f
}

#[test]
fn fragments_for_the_router_go_up_unchanged_and_transit_ones_are_forwarded() {
    let (mut g, t) = setup(8);
    let us = [192, 0, 2, 1];
    // A fragmented echo request (vecflow answers only whole ones) and a later UDP fragment.
    let echo = fragment4(us, 0x2000, 1, &[8, 0, 0xf7, 0xff, 0, 0, 0, 0]);
    let later = fragment4(us, 0x0003, 17, &[0xab; 16]);
    let six = fragment6("2001:db8::1");
    common::receive(&mut g, 1, &[&echo, &later]);
    common::receive(&mut g, 1, &[&six]);
    let up: Vec<Vec<u8>> = t.up().into_iter().map(|f| f.bytes).collect();
    assert_eq!(up, [echo, later, six], "unchanged, for the kernel to reassemble");
    assert_eq!(g.counters.punt.icmp_sent.get(), 0, "no echo reply");
    assert_eq!((stats(&g, 1).rx_local, dropped(&g, 1)), (3, 0));
    // The same echo request whole is vecflow's to answer.
    common::receive(&mut g, 1, &[&fragment4(us, 0, 1, &[8, 0, 0xf7, 0xff, 0, 0, 0, 0])]);
    assert_eq!((g.counters.punt.icmp_sent.get(), t.up().len()), (1, 0));
    assert_eq!(stats(&g, 1).rx_local, 4);
    // Through the router: forwarded (here back out of port0) as ever, never punted.
    let transit = [fragment4([192, 0, 2, 2], 0x2000, 17, &[0xcd; 16]), fragment6("2001:db8::2")];
    common::receive(&mut g, 1, &[&transit[0], &transit[1]]);
    assert!(t.up().is_empty());
    assert_eq!((stats(&g, 1).tx_packets, stats(&g, 1).rx_local, dropped(&g, 1)), (1 + 2, 4, 0));
}

/// A TCP segment from 192.0.2.2 to the router, ports `sport` → `dport`.
fn tcp(sport: u16, dport: u16) -> Vec<u8> {
    let (src, dst) = (Ipv4Addr::new(192, 0, 2, 2), Ipv4Addr::new(192, 0, 2, 1));
    let mut f = vec![2, 0xfe, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 0x08, 0x00];
    let mut ip = [0u8; 40];
    wire::ipv4::write_header(&mut ip[..20], 40, 64, 6, src, dst);
    ip[20..22].copy_from_slice(&sport.to_be_bytes());
    ip[22..24].copy_from_slice(&dport.to_be_bytes());
    ip[32] = 0x50;
    f.extend_from_slice(&ip);
    f
}

#[test]
fn a_flood_to_the_router_is_policed_and_bgp_still_goes_up() {
    // The other class at 100 packets a second (a burst of 10 at once), control at the default.
    let (mut g, t) = setup_with(256, PuntRate { control: 10_000, other: 100 });
    let ssh = tcp(40000, 22);
    let bgp = tcp(179, 40001);
    for _ in 0..4 {
        let burst: Vec<&[u8]> = std::iter::repeat_n(&ssh[..], 50).chain(std::iter::repeat_n(&bgp[..], 5)).collect();
        common::receive(&mut g, 1, &burst);
    }
    // Each class in its own channel.
    let (control, other): (Vec<Frame>, Vec<Frame>) =
        (t.punted[0].try_iter().collect(), t.punted[1].try_iter().collect());
    assert!(control.iter().all(|f| f.bytes == bgp) && other.iter().all(|f| f.bytes == ssh));
    let up: Vec<Frame> = control.into_iter().chain(other).collect();
    let bgp_up = up.iter().filter(|f| f.bytes == bgp).count();
    let ssh_up = up.iter().filter(|f| f.bytes == ssh).count();
    assert_eq!(bgp_up, 20, "BGP, in its own class, is not starved by the flood");
    assert!((10..=12).contains(&ssh_up), "the flood: its burst (and what a few microseconds refill): {ssh_up}");
    let n = dataplane::datapath::registry::N_REASONS;
    let policed = g.counters.errors[n + dataplane::lcp::drops::PUNT_POLICED.index()].get();
    assert_eq!(policed as usize, 220 - up.len());
    assert_eq!(stats(&g, 1).rx_local as usize, up.len());
}
