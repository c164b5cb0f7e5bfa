//! Multipath routes through the graph and the running dataplane, and host routes that follow
//! the neighbor table.

mod common;

use common::drive;
use dataplane::Dataplane;
use dataplane::config::Config;
use dataplane::control::cli::Registry;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::net::{Ipv4Addr, Ipv6Addr};

/// p0 receives; 48.0.0.0/16 and 2001:db8:48::/48 go out over p1 (weight 1) and p2 (weight 3).
const YAML: &str = "
interfaces:
  p0: {mac: '02:00:00:00:00:01', addresses: [10.0.0.1/24, '2001:db8:0::1/64']}
  p1: {mac: '02:00:00:00:00:02', addresses: [10.0.1.1/24, '2001:db8:1::1/64']}
  p2: {mac: '02:00:00:00:00:03', addresses: [10.0.2.1/24, '2001:db8:2::1/64']}
routes:
  - {prefix: 48.0.0.0/16, paths: [{via: 10.0.1.2}, {via: 10.0.2.2, weight: 3}]}
  - {prefix: '2001:db8:48::/48', paths: [{via: '2001:db8:1::2'}, {via: '2001:db8:2::2', weight: 3}]}
neighbors:
  - {interface: p1, address: 10.0.1.2, mac: '02:00:00:00:01:02'}
  - {interface: p2, address: 10.0.2.2, mac: '02:00:00:00:02:02'}
  - {interface: p1, address: '2001:db8:1::2', mac: '02:00:00:00:01:02'}
  - {interface: p2, address: '2001:db8:2::2', mac: '02:00:00:00:02:02'}
";

/// A UDP/IPv4 frame to p0 of flow `f` (its source port and source address vary).
fn udp4(f: u16) -> Vec<u8> {
    let (src, dst) = (Ipv4Addr::new(10, 0, 0, 2 + (f % 7) as u8), Ipv4Addr::new(48, 0, (f >> 8) as u8, f as u8));
    let mut v = vec![0u8; 60];
    v[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    v[6..12].copy_from_slice(&[2, 0, 0, 0, 9, 9]);
    v[12..14].copy_from_slice(&[8, 0]);
    wire::ipv4::write_header(&mut v[14..34], 46, 64, 17, src, dst);
    wire::udp::write_header(&mut v[34..], src, dst, 1024 + f, 53);
    v
}

/// A UDP/IPv6 frame to p0 of flow `f`, with flow label `label`.
fn udp6(f: u16, label: u32) -> Vec<u8> {
    let (src, dst): (Ipv6Addr, Ipv6Addr) = ("2001:db8::2".parse().unwrap(), "2001:db8:48::9".parse().unwrap());
    let mut v = vec![0u8; 62];
    v[..6].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
    v[6..12].copy_from_slice(&[2, 0, 0, 0, 9, 9]);
    v[12..14].copy_from_slice(&[0x86, 0xdd]);
    wire::ipv6::write_header(&mut v[14..54], 8, 17, 64, src, dst);
    v[15] |= (label >> 16) as u8 & 0x0f;
    v[16..18].copy_from_slice(&(label as u16).to_be_bytes());
    wire::udp::write_header(&mut v[54..], src, dst, 1024 + f, 53);
    v
}

/// The output interface of each frame, as routed from p0 (in order).
fn outputs(frames: &[Vec<u8>]) -> Vec<u16> {
    let mut out = Vec::new();
    // A graph per vector: the frames it captures stay in its pool.
    for chunk in frames.chunks(256) {
        let (mut g, ifs) = common::graph(YAML);
        let p0 = ifs.iter().find(|i| i.name == "p0").unwrap().index;
        out.extend(
            drive(&mut g, p0, chunk, dataplane::interface::nodes::INTERFACE_OUTPUT).into_iter().map(|(tx, _, _)| tx),
        );
    }
    assert_eq!(out.len(), frames.len(), "every frame routed");
    out
}

/// Shares of each output among `out`.
fn shares(out: &[u16]) -> BTreeMap<u16, f64> {
    let mut n = BTreeMap::new();
    for &o in out {
        *n.entry(o).or_insert(0.0) += 1.0 / out.len() as f64;
    }
    n
}

#[test]
fn flows_spread_by_weight_and_each_flow_keeps_its_path() {
    let frames: Vec<Vec<u8>> = (0..8192).map(udp4).collect();
    let first = outputs(&frames);
    // Another graph (another worker), the flows in another order.
    let mut reversed = frames.clone();
    reversed.reverse();
    let mut second = outputs(&reversed);
    second.reverse();
    assert_eq!(first, second, "a flow leaves by the same path from every worker");
    let s = shares(&first);
    assert_eq!(s.len(), 2, "{s:?}");
    let (p1, p2) = (s.values().next().unwrap(), s.values().nth(1).unwrap());
    assert!((p1 - 0.25).abs() < 0.0125 && (p2 - 0.75).abs() < 0.0375, "weights 1:3 → {s:?}");
}

#[test]
fn ipv6_flows_spread_by_ports_or_by_flow_label() {
    let by_ports: Vec<Vec<u8>> = (0..4096).map(|f| udp6(f, 0)).collect();
    let s = shares(&outputs(&by_ports));
    assert!(s.len() == 2 && (s.values().next().unwrap() - 0.25).abs() < 0.02, "{s:?}");
    // One port pair, many labels: the label stands in for the ports.
    let by_label: Vec<Vec<u8>> = (0..4096).map(|l| udp6(7, 1 + l)).collect();
    let s = shares(&outputs(&by_label));
    assert!(s.len() == 2 && (s.values().next().unwrap() - 0.25).abs() < 0.02, "{s:?}");
    // One flow: one path.
    let one: Vec<Vec<u8>> = (0..300).map(|_| udp6(7, 0)).collect();
    assert_eq!(shares(&outputs(&one)).len(), 1);
}

/// `show ip fib PREFIX` of a running dataplane, as JSON.
fn fib(dp: &mut Dataplane, what: &str) -> serde_json::Value {
    Registry::with_builtins().execute(dp, &format!("show ip fib {what}")).unwrap().json
}

#[test]
fn a_path_going_down_moves_only_its_buckets_and_show_ip_fib_tells() {
    let mut cfg = Config::load(YAML).unwrap();
    let mut dp = Dataplane::start(&cfg).unwrap();
    let route = fib(&mut dp, "48.0.0.0/16");
    let paths = &route["routes"][0]["paths"];
    assert_eq!(route["routes"][0]["source"], "config");
    assert_eq!((paths[0]["weight"].as_u64(), paths[1]["weight"].as_u64()), (Some(1), Some(3)));
    assert_eq!((paths[0]["buckets"].as_u64(), paths[1]["buckets"].as_u64()), (Some(128), Some(384)));
    cfg.interfaces.get_mut("p2").unwrap().state = dataplane::config::AdminState::Down;
    dp.apply(&cfg).unwrap();
    let route = fib(&mut dp, "48.0.0.0/16");
    let paths = &route["routes"][0]["paths"];
    assert_eq!((paths[0]["buckets"].as_u64(), paths[1]["buckets"].as_u64()), (Some(512), Some(0)), "{route}");
    assert_eq!(paths[1]["up"], false);
    let summary = fib(&mut dp, "summary");
    assert_eq!(summary["by_paths"]["2"], 1, "{summary}");
    assert_eq!(summary["by_source"]["neighbor"], 2, "host routes of p1's and p2's neighbors: {summary}");
    dp.stop().unwrap();
}

/// Candidate static neighbors: six on p1's subnet, one outside every subnet of its interface.
const HOSTS: [&str; 7] = ["10.0.1.10", "10.0.1.11", "10.0.1.12", "10.0.1.13", "10.0.1.14", "10.0.1.15", "10.9.9.9"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, rng_seed: proptest::test_runner::RngSeed::Fixed(3301), ..ProptestConfig::default() })]

    /// Whatever static neighbors come and go, the FIB holds a host route (source neighbor)
    /// for exactly those on a connected subnet of their interface, and none is left behind.
    #[test]
    fn host_routes_follow_the_neighbor_table(steps in proptest::collection::vec(proptest::bits::u8::ANY, 1..6)) {
        let mut cfg = Config::load(YAML).unwrap();
        let mut dp = Dataplane::start(&cfg).unwrap();
        for mask in steps {
            cfg.neighbors.retain(|n| !HOSTS.contains(&n.address.to_string().as_str()));
            for (k, h) in HOSTS.iter().enumerate().filter(|(k, _)| mask >> k & 1 == 1) {
                cfg.neighbors.push(dataplane::config::Neighbor {
                    interface: "p1".into(),
                    address: h.parse().unwrap(),
                    mac: dataplane::config::Mac(format!("02:00:00:00:01:{k:02x}").parse().unwrap()),
                });
            }
            dp.apply(&cfg).unwrap();
            let want: Vec<String> = HOSTS[..6].iter().enumerate().filter(|(k, _)| mask >> k & 1 == 1).map(|(_, h)| format!("{h}/32")).collect();
            let all = fib(&mut dp, "");
            let got: Vec<String> = all["routes"].as_array().unwrap().iter()
                .filter(|r| r["source"] == "neighbor" && r["prefix"].as_str().unwrap().starts_with("10.0.1.1"))
                .map(|r| r["prefix"].as_str().unwrap().to_string())
                .collect();
            prop_assert_eq!(&got, &want);
            prop_assert!(!all.to_string().contains("10.9.9.9"), "off-subnet neighbor has no route");
            for h in &want {
                let r = fib(&mut dp, h);
                prop_assert_eq!(r["routes"][0]["detail"].as_str().unwrap().contains("via"), true, "{}", r);
            }
        }
        dp.stop().unwrap();
    }
}
