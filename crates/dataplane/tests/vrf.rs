//! VRFs in the data path: two customers with the same addresses on 802.1Q sub-interfaces of
//! one port, each routed in its own tables (IPv4 and IPv6), in vectors that mix them; the
//! router's own overlapping address answers in both; the default table sees neither.

mod common;

use common::drive;
use dataplane::datapath::Graph;
use dataplane::interface::Interface;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Customers red and blue: each has 10.0.0.0/24 and 2001:db8::/64 on a sub-interface of
/// port0 and a next hop on a sub-interface of port1 toward its other site, 172.16.0.0/16 and
/// 2001:db8:16::/48. The default table has 192.0.2.0/24 on port0 and a route to 198.51.100.0/24.
const YAML: &str = "
vrfs: {red: {table: 10}, blue: {table: 20}}
interfaces:
  port0:
    index: 1
    mac: '02:fe:00:00:00:01'
    addresses: [192.0.2.1/24]
    sub-interfaces:
      10: {encapsulation: {dot1q: 10}, vrf: red, addresses: [10.0.0.1/24, '2001:db8::1/64']}
      20: {encapsulation: {dot1q: 20}, vrf: blue, addresses: [10.0.0.1/24, '2001:db8::1/64']}
  port1:
    index: 2
    mac: '02:fe:00:00:00:02'
    sub-interfaces:
      10: {encapsulation: {dot1q: 10}, vrf: red, addresses: [10.1.0.1/24, '2001:db8:1::1/64']}
      20: {encapsulation: {dot1q: 20}, vrf: blue, addresses: [10.1.0.1/24, '2001:db8:1::1/64']}
routes:
  - {prefix: 172.16.0.0/16, via: 10.1.0.2, vrf: red}
  - {prefix: 172.16.0.0/16, via: 10.1.0.3, vrf: blue}
  - {prefix: '2001:db8:16::/48', via: '2001:db8:1::2', vrf: red}
  - {prefix: '2001:db8:16::/48', via: '2001:db8:1::3', vrf: blue}
  - {prefix: 198.51.100.0/24, via: 192.0.2.2}
neighbors:
  - {interface: port1.10, address: 10.1.0.2, mac: '00:00:00:00:0a:02'}
  - {interface: port1.20, address: 10.1.0.3, mac: '00:00:00:00:14:03'}
  - {interface: port1.10, address: '2001:db8:1::2', mac: '00:00:00:00:0a:62'}
  - {interface: port1.20, address: '2001:db8:1::3', mac: '00:00:00:00:14:63'}
  - {interface: port0.10, address: 10.0.0.2, mac: '00:00:00:00:0a:00'}
  - {interface: port0.20, address: 10.0.0.2, mac: '00:00:00:00:14:00'}
  - {interface: port0, address: 192.0.2.2, mac: '00:00:00:00:00:c2'}
";

const PORT0_MAC: [u8; 6] = [2, 0xfe, 0, 0, 0, 1];

fn index(ifs: &[Interface], name: &str) -> u16 {
    ifs.iter().find(|i| i.name == name).unwrap_or_else(|| panic!("{name}")).index
}

/// Ethernet to port0 (tagged with `vlan` when given), then `l3` of `ethertype`.
fn ethernet(vlan: Option<u16>, ethertype: u16, l3: &[u8]) -> Vec<u8> {
    let mut f = [&PORT0_MAC[..], &[0, 0, 0, 0, 0x0a, 0]].concat();
    if let Some(v) = vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&v.to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(l3);
    f
}

/// IPv4 from 10.0.0.2 to `dst`: UDP, or an ICMP echo request (`echo`).
fn ip4(vlan: Option<u16>, dst: [u8; 4], echo: bool) -> Vec<u8> {
    let mut ip = vec![0u8; 48];
    let proto = if echo { 1 } else { 17 };
    wire::ipv4::write_header(&mut ip[..20], 48, 64, proto, Ipv4Addr::new(10, 0, 0, 2), Ipv4Addr::from(dst));
    if echo {
        ip[20..24].copy_from_slice(&[8, 0, 0, 0]);
        ip[24..28].copy_from_slice(&[0x12, 0x34, 0, 1]);
        let c = wire::checksum::checksum(&ip[20..]);
        ip[22..24].copy_from_slice(&c.to_be_bytes());
    }
    ethernet(vlan, 0x0800, &ip)
}

/// IPv6/UDP from 2001:db8::2 to `dst`.
fn ip6(vlan: Option<u16>, dst: &str) -> Vec<u8> {
    let (src, dst): (Ipv6Addr, Ipv6Addr) = ("2001:db8::2".parse().unwrap(), dst.parse().unwrap());
    let mut ip = vec![0u8; 48];
    wire::ipv6::write_header(&mut ip[..40], 8, 17, 64, src, dst);
    wire::udp::write_header(&mut ip[40..], src, dst, 1024, 2048);
    ethernet(vlan, 0x86dd, &ip)
}

/// What leaves for frames received on port0: (output interface, destination MAC, VLAN).
fn forward(g: &mut Graph, frames: &[Vec<u8>]) -> Vec<(u16, [u8; 6], Option<u16>)> {
    let mut out: Vec<_> = drive(g, 1, frames, dataplane::drivers::nodes::GENERATOR_TX)
        .into_iter()
        .map(|(tx_if, _, f)| {
            let vlan = (f[12..14] == [0x81, 0x00]).then(|| u16::from_be_bytes([f[14], f[15]]) & 0xfff);
            (tx_if, <[u8; 6]>::try_from(&f[..6]).unwrap(), vlan)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn each_customer_is_routed_in_its_own_vrf_in_one_mixed_vector() {
    let (mut g, ifs) = common::graph(YAML);
    let (red_out, blue_out) = (index(&ifs, "port1.10"), index(&ifs, "port1.20"));
    let red = (red_out, [0, 0, 0, 0, 0x0a, 2], Some(10));
    let blue = (blue_out, [0, 0, 0, 0, 0x14, 3], Some(20));
    // Red and blue interleaved, as one port's vector carries them.
    let mixed: Vec<Vec<u8>> =
        (0..8).map(|k| ip4(Some(if k % 2 == 0 { 10 } else { 20 }), [172, 16, 1, k], false)).collect();
    assert_eq!(forward(&mut g, &mixed), [vec![red; 4], vec![blue; 4]].concat());
    // A vector of one VRF only, and one with a default-table packet among them.
    assert_eq!(forward(&mut g, &[ip4(Some(20), [172, 16, 9, 9], false)]), [blue]);
    let with_default = [ip4(Some(10), [172, 16, 0, 1], false), ip4(None, [198, 51, 100, 7], false)];
    assert_eq!(forward(&mut g, &with_default), [(1, [0, 0, 0, 0, 0, 0xc2], None), red]);
    let red6 = (red_out, [0, 0, 0, 0, 0x0a, 0x62], Some(10));
    let blue6 = (blue_out, [0, 0, 0, 0, 0x14, 0x63], Some(20));
    let mixed6 = [ip6(Some(20), "2001:db8:16::1"), ip6(Some(10), "2001:db8:16::2"), ip6(Some(20), "2001:db8:16::3")];
    assert_eq!(forward(&mut g, &mixed6), [red6, blue6, blue6]);
}

#[test]
fn a_vrf_sees_neither_the_default_table_nor_another_vrf() {
    let (mut g, ifs) = common::graph(YAML);
    let no_route = |g: &Graph, port| g.counters.error(port, dataplane::ip4::drops::NO_ROUTE).get();
    let red_in = index(&ifs, "port0.10");
    // The default table's route is not red's: no route, and the ICMP error goes back to the
    // sender in red, out of red's sub-interface to red's host.
    let error = forward(&mut g, &[ip4(Some(10), [198, 51, 100, 7], false)]);
    assert_eq!(error, [(red_in, [0, 0, 0, 0, 0x0a, 0], Some(10))]);
    assert_eq!(no_route(&g, red_in), 1, "no route in red");
    // Red's routes are not the default table's (where 10.0.0.2 has no route either).
    assert!(forward(&mut g, &[ip4(None, [172, 16, 1, 1], false)]).is_empty());
    assert_eq!(no_route(&g, 1), 1, "no route in the default table");
    let v6 = g.counters.error(red_in, dataplane::ip6::drops::IP6_NO_ROUTE).get();
    let error6 = forward(&mut g, &[ip6(Some(10), "2001:db8:99::1")]);
    assert_eq!(g.counters.error(red_in, dataplane::ip6::drops::IP6_NO_ROUTE).get(), v6 + 1);
    assert!(
        error6.iter().all(|&(tx_if, _, vlan)| (tx_if, vlan) == (red_in, Some(10))) && !error6.is_empty(),
        "the ICMPv6 error (or the solicitation for its next hop) leaves in red: {error6:?}"
    );
}

#[test]
fn the_routers_overlapping_address_answers_pings_in_both_vrfs() {
    let (mut g, ifs) = common::graph(YAML);
    let requests = [ip4(Some(10), [10, 0, 0, 1], true), ip4(Some(20), [10, 0, 0, 1], true)];
    let out = drive(&mut g, 1, &requests, dataplane::drivers::nodes::GENERATOR_TX);
    let mut replies: Vec<(u16, [u8; 6], u16, u8)> = out
        .iter()
        .map(|(tx_if, _, f)| (*tx_if, f[..6].try_into().unwrap(), u16::from_be_bytes([f[14], f[15]]), f[18 + 20]))
        .collect();
    replies.sort();
    let (red, blue) = (index(&ifs, "port0.10"), index(&ifs, "port0.20"));
    assert_eq!(
        replies,
        [(red, [0, 0, 0, 0, 0x0a, 0], 10, 0), (blue, [0, 0, 0, 0, 0x14, 0], 20, 0)],
        "each echo reply (type 0) goes back out of its own VRF's sub-interface to its own host"
    );
}

/// [`YAML`] with leaks both ways: red's packets to 198.51.100.0/24 are looked up again in the
/// default table, and the default table's to 10.0.0.0/24 in red.
fn leaking() -> String {
    YAML.replace(
        "routes:\n",
        "routes:\n  - {prefix: 198.51.100.0/24, vrf: red, next-vrf: default}\n  - {prefix: 10.0.0.0/24, next-vrf: red}\n",
    )
}

#[test]
fn a_leak_looks_a_packet_up_once_more_in_the_vrf_it_names() {
    let (mut g, ifs) = common::graph(&leaking());
    let red_in = index(&ifs, "port0.10");
    let to_isp = (1, [0, 0, 0, 0, 0, 0xc2], None);
    // Red to the default table's route; blue has no such leak.
    assert_eq!(forward(&mut g, &[ip4(Some(10), [198, 51, 100, 7], false)]), [to_isp]);
    let blue_error = forward(&mut g, &[ip4(Some(20), [198, 51, 100, 7], false)]);
    assert_eq!(blue_error.iter().map(|o| o.2).collect::<Vec<_>>(), [Some(20)], "blue: no route, its ICMP error");
    // And back: the default table's packets to 10.0.0.0/24 reach red's host on its VLAN.
    assert_eq!(forward(&mut g, &[ip4(None, [10, 0, 0, 2], false)]), [(red_in, [0, 0, 0, 0, 0x0a, 0], Some(10))]);
    // A mixed vector: leaked, plain red, plain default.
    let mixed = [
        ip4(Some(10), [198, 51, 100, 9], false),
        ip4(Some(10), [172, 16, 0, 1], false),
        ip4(None, [198, 51, 100, 1], false),
    ];
    let red_out = (index(&ifs, "port1.10"), [0, 0, 0, 0, 0x0a, 2], Some(10));
    assert_eq!(forward(&mut g, &mixed), [to_isp, to_isp, red_out]);
}

#[test]
fn a_leak_is_shown_as_a_lookup_in_its_vrf() {
    use dataplane::control::cli::Registry;
    use dataplane::control::engine::Dataplane;
    let mut dp = Dataplane::start(&dataplane::config::Config::load(&leaking()).unwrap()).unwrap();
    let r = Registry::with_builtins();
    let red = r.execute(&mut dp, "show ip fib vrf red 198.51.100.0/24").unwrap();
    assert!(red.text.contains("lookup in VRF default"), "{}", red.text);
    let default = r.execute(&mut dp, "show ip fib 10.0.0.0/24").unwrap();
    assert_eq!(default.json["routes"][0]["lookup_in_vrf"], "red", "{}", default.text);
    // From ctl: blue's leak too, and away again.
    r.execute(&mut dp, "ip route add 198.51.100.0/24 next-vrf default vrf blue").unwrap();
    assert!(r.execute(&mut dp, "show ip fib vrf blue").unwrap().text.contains("lookup in VRF default"));
    r.execute(&mut dp, "ip route del 198.51.100.0/24 vrf blue").unwrap();
    let looped = r.execute(&mut dp, "ip route add 0.0.0.0/0 next-vrf blue");
    assert!(looped.is_ok(), "the default table's default route into blue meets no leak of blue's");
    let cycle = r.execute(&mut dp, "ip route add 0.0.0.0/0 next-vrf default vrf blue").unwrap_err();
    assert!(
        cycle.contains("0.0.0.0/0 would go default → blue → default") && cycle.contains("next-vrf: blue"),
        "the circle, named by its VRFs: {cycle}"
    );
    dp.stop().unwrap();
}

/// `vecflow plan` of a change into VRFs is the commands that make it one by one: VRFs made
/// first, interfaces moved, routes in their VRFs, a VRF removed last.
#[test]
fn the_plan_into_vrfs_is_commands_that_make_it() {
    use dataplane::config::Config;
    use dataplane::control::cli::Registry;
    use dataplane::control::engine::Dataplane;
    let a = "metrics: {enabled: false}\nvrfs: {old: {table: 5}}\ninterfaces:\n  p0: {addresses: [10.0.0.1/24]}\n  p1: {addresses: [10.1.0.1/24]}\n  p2: {vrf: old}\nroutes: [{prefix: 172.16.0.0/16, via: 10.1.0.2}]\n";
    let b = "metrics: {enabled: false}\nvrfs: {red: {table: 10}}\ninterfaces:\n  p0: {addresses: [10.0.0.1/24]}\n  p1: {addresses: [10.0.0.1/24], vrf: red}\n  p2: {}\nroutes: [{prefix: 172.16.0.0/16, via: 10.0.0.2, vrf: red}, {prefix: 0.0.0.0/0, vrf: red, next-vrf: default}]\n";
    let (a, b) = (Config::load(a).unwrap(), Config::load(b).unwrap());
    let mut dp = Dataplane::start(&a).unwrap();
    let plan = dp.plan(&b).unwrap();
    assert_eq!(
        plan,
        [
            "ip route del 172.16.0.0/16",
            "vrf add red table 10",
            "set interface ip address del p1 10.1.0.1/24",
            "set interface vrf p1 red",
            "set interface ip address p1 10.0.0.1/24",
            "set interface vrf p2 default",
            "ip route add 0.0.0.0/0 next-vrf default vrf red",
            "ip route add 172.16.0.0/16 via 10.0.0.2 vrf red",
            "vrf del old",
        ]
    );
    let r = Registry::with_builtins();
    for command in &plan {
        r.execute(&mut dp, command).unwrap_or_else(|e| panic!("{command}: {e}"));
    }
    let sorted = |c: &Config| {
        let mut c = c.clone();
        c.routes.sort_by_key(|r| (r.vrf.clone(), r.prefix));
        c
    };
    assert_eq!(sorted(dp.config()), sorted(&b), "the commands made b (routes in another order)");
    assert!(dp.plan(&b).unwrap().is_empty());
    dp.stop().unwrap();
}
