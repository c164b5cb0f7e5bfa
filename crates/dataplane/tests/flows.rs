//! Flow rules node by node: each action, priorities, what `normal` and unmatched frames do,
//! the per-rule counters and the drop reason, rule errors in the configuration.

mod common;

use common::{drive, stats};
use dataplane::config::Config;
use dataplane::datapath::Graph;

/// port0 routes 48/8 to port1; its rules send UDP from 2.0.0.0/9 out of port2, drop TCP port
/// 22 and let the rest through; port1 has no rules.
const YAML: &str = "
interfaces:
  port0: {index: 1, mac: '02:fe:00:00:00:01', addresses: [100.64.0.1/31]}
  port1: {index: 2, mac: '02:fe:00:00:00:02', addresses: [100.64.1.1/31]}
  port2: {index: 3, mac: '02:fe:00:00:00:03'}
routes:
  - {prefix: 48.0.0.0/8, via: 100.64.1.0}
neighbors:
  - {interface: port1, address: 100.64.1.0, mac: '00:1b:21:06:00:01'}
flows:
  - priority=100,in_port=port0,udp,nw_src=2.0.0.0/9,actions=output:port2
  - priority=200,in_port=port0,tcp,tp_dst=22,actions=drop
  - priority=50,in_port=port0,udp,actions=normal
";

/// An Ethernet/IPv4 frame to port0's MAC from `src` to 48.0.0.1, protocol `proto`, ports
/// 1024 → `dport`, fragment offset `offset` (8-byte units).
fn frame(src: [u8; 4], proto: u8, dport: u16, offset: u16) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 28];
    f[..6].copy_from_slice(&[2, 0xfe, 0, 0, 0, 1]);
    f[6..12].copy_from_slice(&[0, 0x1b, 0x21, 6, 0, 0]);
    f[12..14].copy_from_slice(&[8, 0]);
    wire::ipv4::write_header(&mut f[14..34], 28, 64, proto, src.into(), [48, 0, 0, 1].into());
    f[20..22].copy_from_slice(&offset.to_be_bytes());
    let mut ip = wire::Ipv4Packet::new_checked(&mut f[14..34]).unwrap();
    ip.fill_checksum();
    f[34..36].copy_from_slice(&1024u16.to_be_bytes());
    f[36..38].copy_from_slice(&dport.to_be_bytes());
    f
}

fn graph() -> Graph {
    common::graph(YAML).0
}

#[test]
fn each_action_and_the_highest_priority_win() {
    let mut g = graph();
    let frames = [
        frame([2, 1, 1, 1], 17, 53, 0),  // rule 0: out of port2, unchanged
        frame([2, 1, 1, 1], 6, 22, 0),   // rule 1: dropped (acl)
        frame([9, 1, 1, 1], 17, 53, 0),  // rule 2: normal, routed to port1
        frame([9, 1, 1, 1], 6, 80, 0),   // no rule: routed
        frame([9, 1, 1, 1], 6, 22, 100), // a later fragment: no ports, so not rule 1: routed
    ];
    let out = drive(&mut g, 1, &frames, dataplane::interface::nodes::INTERFACE_OUTPUT);
    let mut got: Vec<(u16, u8, u8)> = out.iter().map(|(tx_if, _, f)| (*tx_if, f[14 + 9], f[14 + 8])).collect();
    got.sort();
    assert_eq!(got, [(2, 6, 63), (2, 6, 63), (2, 17, 63), (3, 17, 64)], "normal and no rule: routed (TTL − 1)");
    let output = out.iter().find(|(tx_if, _, _)| *tx_if == 3).unwrap();
    assert_eq!(&output.2, &frames[0], "output: the frame as received");
    assert_eq!(g.counters.error(1, dataplane::flows::drops::ACL).get(), 1);
    assert_eq!(stats(&g, 1).in_discards, 1, "acl is a discard");
    let hits: Vec<u64> = (0..3).map(|r| g.counters.flow_hits[r].get()).collect();
    assert_eq!(hits, [1, 1, 1]);
    let c = &g.counters.flow_cache;
    assert_eq!((c.lookups.get(), c.upcalls.get()), (5, 5), "first packets: all upcalls");
}

/// Rules never see a unicast frame for another MAC on an L3 interface: `ethernet-input` drops
/// it as `not-for-us` first, even where a rule would send it out of another port.
#[test]
fn frames_for_other_macs_never_reach_the_rules() {
    let mut g = graph();
    let mut f = frame([2, 1, 1, 1], 17, 53, 0); // rule 0's
    f[..6].copy_from_slice(&[2, 0xfe, 0, 0, 0, 9]);
    assert!(drive(&mut g, 1, &[f], dataplane::interface::nodes::INTERFACE_OUTPUT).is_empty());
    assert_eq!(g.counters.error(1, dataplane::ethernet::drops::NOT_FOR_US).get(), 1);
    assert_eq!(g.counters.flow_hits[0].get(), 0);
}

#[test]
fn interfaces_without_rules_do_not_classify_and_megaflows_answer_again() {
    let mut g = graph();
    let to_port1 = frame([2, 1, 1, 1], 17, 53, 0);
    let mut on_port1 = to_port1.clone();
    on_port1[..6].copy_from_slice(&[2, 0xfe, 0, 0, 0, 2]);
    drive(&mut g, 2, &[on_port1], dataplane::interface::nodes::INTERFACE_OUTPUT);
    assert_eq!(g.counters.flow_cache.lookups.get(), 0, "port1 has no rules");
    drive(&mut g, 1, std::slice::from_ref(&to_port1), dataplane::interface::nodes::INTERFACE_OUTPUT);
    let same: Vec<Vec<u8>> = (0..3).map(|_| to_port1.clone()).collect();
    let out = drive(&mut g, 1, &same, dataplane::interface::nodes::INTERFACE_OUTPUT);
    assert!(out.len() == 3 && out.iter().all(|(tx_if, _, _)| *tx_if == 3));
    let c = &g.counters.flow_cache;
    assert_eq!((c.lookups.get(), c.upcalls.get()), (4, 1), "one upcall installs the megaflow; the next three hit it");
    assert_eq!(g.counters.flow_hits[0].get(), 4);
}

#[test]
fn bad_rules_are_refused_naming_the_rule_and_the_token() {
    let with = |rule: &str| {
        let yaml = format!("interfaces: {{port0: {{index: 1}}}}\nflows: ['{rule}']\n");
        Config::load(&yaml).map(|_| ()).unwrap_err().to_string()
    };
    let e = with("udp,nw_src=2.0.0.0/40,actions=drop");
    assert!(e.contains("flows[0]") && e.contains("'nw_src=2.0.0.0/40': prefix length is 0 to 32"), "{e}");
    let e = with("tcp,actions=output:port7");
    assert!(e.contains("'actions=output:port7': no interface named 'port7'"), "{e}");
}

#[test]
fn every_cache_layer_setting_gives_the_rule_tables_answers() {
    let frames = [
        frame([2, 1, 1, 1], 17, 53, 0),
        frame([2, 1, 1, 1], 6, 22, 0),
        frame([9, 1, 1, 1], 17, 53, 0),
        frame([9, 1, 1, 1], 6, 80, 0),
    ];
    let mut answers = Vec::new();
    for (emc, cd) in [(false, false), (false, true), (true, false), (true, true)] {
        let mut g = common::graph(&format!("{YAML}flow-cache: {{emc: {emc}, cd: {cd}, cd-entries: 64}}\n")).0;
        // Twice: the first pass installs megaflows, the second is answered by the cache.
        let passes: Vec<_> =
            (0..2).map(|_| drive(&mut g, 1, &frames, dataplane::interface::nodes::INTERFACE_OUTPUT)).collect();
        assert_eq!(passes[0], passes[1], "emc {emc} cd {cd}: the cache answers as the rule table did");
        assert_eq!(g.counters.flow_cache.upcalls.get(), 4, "emc {emc} cd {cd}: one upcall per flow");
        answers.push(passes[0].clone());
    }
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "every setting forwards alike");
}

#[test]
fn bad_flow_cache_sizes_are_refused_naming_the_field() {
    let with = |setting: &str| {
        Config::load(&format!("{YAML}flow-cache: {{{setting}}}\n")).map(|_| ()).unwrap_err().to_string()
    };
    let e = with("cd-entries: 1000");
    assert!(e.contains("flow-cache.cd-entries") && e.contains("a power of two 8–16777216"), "{e}");
    let e = with("max-megaflows: 0");
    assert!(e.contains("flow-cache.max-megaflows") && e.contains("1–1000000"), "{e}");
}
