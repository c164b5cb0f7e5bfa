//! 802.1Q sub-interfaces: demultiplexing by VLAN id (own index and counters), the tag pushed
//! on output, `unknown-vlan`, cross-connects between tagged and untagged interfaces.

mod common;

use common::{drive, dropped, stats};
use dataplane::datapath::Graph;
use std::net::Ipv4Addr;
use wire::Ipv4Packet;

const YAML: &str = "
interfaces:
  port0:
    index: 1
    mac: '02:fe:00:00:00:01'
    sub-interfaces:
      100: {encapsulation: {dot1q: 100}, addresses: [10.100.0.1/24]}
      200: {encapsulation: {dot1q: 200}, addresses: [10.200.0.1/24]}
  port1: {index: 2, mac: '02:fe:00:00:00:02', addresses: [100.64.1.1/31]}
  port2:
    index: 3
    sub-interfaces:
      10: {encapsulation: {dot1q: 10}, l2xc: port3}
  port3: {index: 4, l2xc: port2.10}
routes:
  - {prefix: 48.0.0.0/24, via: 100.64.1.0}
neighbors:
  - {interface: port1, address: 100.64.1.0, mac: '00:1b:21:06:00:01'}
  - {interface: port0.200, address: 10.200.0.2, mac: '00:1b:21:00:02:00'}
";

fn setup() -> (Graph, Vec<dataplane::interface::Interface>) {
    common::graph(YAML)
}

fn index(ifs: &[dataplane::interface::Interface], name: &str) -> u16 {
    ifs.iter().find(|i| i.name == name).unwrap_or_else(|| panic!("{name}")).index
}

/// Ethernet (optionally tagged) IPv4/UDP to `dst` with TTL 64.
fn frame(dst_mac: [u8; 6], vlan: Option<u16>, dst: [u8; 4]) -> Vec<u8> {
    let mut f = [&dst_mac[..], &[2, 0, 0, 0, 0, 9]].concat();
    if let Some(v) = vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&v.to_be_bytes());
    }
    f.extend_from_slice(&[0x08, 0x00]);
    let mut ip = [0u8; 28];
    wire::ipv4::write_header(&mut ip, 28, 64, 17, Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::from(dst));
    f.extend_from_slice(&ip);
    f
}

/// Runs frames received on `port` through the graph; returns what the sink transmits.
fn forward(g: &mut Graph, port: u16, frames: &[Vec<u8>]) -> Vec<(u16, Vec<u8>)> {
    drive(g, port, frames, dataplane::drivers::nodes::GENERATOR_TX)
        .into_iter()
        .map(|(tx_if, _, f)| (tx_if, f))
        .collect()
}

#[test]
fn sub_interfaces_get_their_own_index_and_name() {
    let (_, ifs) = setup();
    let sub = ifs.iter().find(|i| i.name == "port0.100").unwrap();
    assert_eq!((sub.parent, sub.vlan), (Some(1), Some(100)));
    assert!(sub.index > 4, "after the physical interfaces");
}

#[test]
fn tagged_frame_is_received_on_its_sub_interface_and_routed_untagged() {
    let (mut g, ifs) = setup();
    let out = forward(&mut g, 1, &[frame([2, 0xfe, 0, 0, 0, 1], Some(100), [48, 0, 0, 5])]);
    assert_eq!(out.len(), 1);
    let (tx_if, f) = &out[0];
    assert_eq!(*tx_if, 2);
    assert_eq!(&f[..14], &[0x00, 0x1b, 0x21, 0x06, 0x00, 0x01, 2, 0xfe, 0, 0, 0, 2, 0x08, 0x00]);
    assert_eq!(f.len(), 14 + 28, "the tag is gone");
    let sub = index(&ifs, "port0.100");
    let s = stats(&g, sub);
    assert_eq!((s.rx_packets, s.rx_octets, s.rx_unicast, s.rx_forwarded), (1, 46, 1, 1));
    assert_eq!(stats(&g, 1).rx_packets, 0, "counted on the sub-interface, not the port");
}

#[test]
fn routed_to_a_sub_interface_the_frame_is_tagged() {
    let (mut g, ifs) = setup();
    let out = forward(&mut g, 2, &[frame([2, 0xfe, 0, 0, 0, 2], None, [10, 200, 0, 2])]);
    let (tx_if, f) = &out[0];
    assert_eq!(*tx_if, index(&ifs, "port0.200"));
    assert_eq!(&f[..18], &[0x00, 0x1b, 0x21, 0x00, 0x02, 0x00, 2, 0xfe, 0, 0, 0, 1, 0x81, 0x00, 0x00, 200, 0x08, 0x00]);
    let ip = Ipv4Packet::new_checked(&f[18..]).unwrap();
    assert_eq!(ip.ttl(), 63);
    assert!(ip.checksum_ok());
    let s = stats(&g, *tx_if);
    assert_eq!((s.tx_packets, s.tx_octets), (1, 46));
}

#[test]
fn unknown_vlan_and_untagged_frames_on_a_port_without_addresses() {
    let (mut g, ifs) = setup();
    let mac = [2, 0xfe, 0, 0, 0, 1];
    let out = forward(
        &mut g,
        1,
        &[frame(mac, Some(300), [48, 0, 0, 5]), frame(mac, None, [48, 0, 0, 5]), frame(mac, Some(100), [48, 0, 0, 5])],
    );
    assert_eq!(out.len(), 1);
    assert_eq!(g.counters.error(1, dataplane::ethernet::drops::UNKNOWN_VLAN).get(), 1);
    assert_eq!(g.counters.error(1, dataplane::ethernet::drops::IP4_NOT_ENABLED).get(), 1);
    // Accounting per input interface, sub-interfaces included.
    for i in &ifs {
        let s = stats(&g, i.index);
        assert_eq!(s.rx_packets, s.rx_forwarded + dropped(&g, i.index), "{}", i.name);
    }
    assert_eq!(stats(&g, 1).rx_packets, 2);
}

/// A tagged frame to another MAC is dropped as `not-for-us` on its L3 sub-interface (which
/// counts it); on a cross-connected sub-interface it passes (below).
#[test]
fn a_tagged_frame_for_another_host_is_not_for_us_on_its_sub_interface() {
    let (mut g, ifs) = setup();
    let sub = index(&ifs, "port0.100");
    let out = forward(&mut g, 1, &[frame([2, 0xfe, 0, 0, 0, 9], Some(100), [48, 0, 0, 5])]);
    assert!(out.is_empty());
    assert_eq!(g.counters.error(sub, dataplane::ethernet::drops::NOT_FOR_US).get(), 1);
    let s = stats(&g, sub);
    assert_eq!((s.rx_packets, s.rx_unicast, s.in_discards, dropped(&g, sub)), (1, 1, 0, 1));
}

#[test]
fn cross_connect_translates_between_tagged_and_untagged() {
    let (mut g, ifs) = setup();
    let sub = index(&ifs, "port2.10");
    let payload = frame([2, 0, 0, 0, 0, 7], None, [1, 2, 3, 4]);
    let tagged = frame([2, 0, 0, 0, 0, 7], Some(10), [1, 2, 3, 4]);
    let out = forward(&mut g, 3, std::slice::from_ref(&tagged));
    assert_eq!(out, vec![(4, payload.clone())], "untagged out of port3");
    let back = forward(&mut g, 4, std::slice::from_ref(&payload));
    assert_eq!(back, vec![(sub, tagged)], "tagged with VLAN 10 out of port2");
}

/// A frame placed by a driver with no headroom cannot take the tag of its output
/// sub-interface: dropped as `no-headroom`, never a panic.
#[test]
fn no_room_for_the_tag_is_a_named_drop() {
    let (mut g, _) = setup();
    let f = frame([2, 0xfe, 0, 0, 0, 2], None, [10, 200, 0, 2]);
    let v = g.inject(2, &[&f]).unwrap();
    let i = g.vectors[v].indices()[0];
    g.pool.write_frame_at(i, 0, &f);
    g.pool.meta_mut(i).rx_if = 2;
    g.forward(v, dataplane::ethernet::nodes::ETHERNET_INPUT);
    g.run(0);
    let n = dataplane::datapath::registry::N_REASONS;
    assert_eq!(g.counters.errors[2 * n + dataplane::interface::drops::TAG_NO_HEADROOM.index()].get(), 1);
    assert_eq!(dropped(&g, 2), 1);
    assert_eq!(g.pool.free_count(), g.pool.capacity() as usize, "no buffer leaked");
}
