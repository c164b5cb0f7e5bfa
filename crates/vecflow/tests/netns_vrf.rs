//! VRFs on real links: two customers with the same addresses routed apart through one
//! `vecflow run` on AF_PACKET.
//!
//! ```text
//!  red:  ns A  vfa0 10.0.0.2/24 ──veth── wa ┐                 ┌ wb ──veth── vfb0 10.1.0.2/24  ns B
//!                                           ├ ns R: vecflow ──┤
//!  blue: ns C  vfc0 10.0.0.2/24 ──veth── wc ┘  (VRFs red and  └ wd ──veth── vfd0 10.1.0.2/24  ns D
//!                                               blue)                        + 10.1.0.3, 172.16.0.1
//! ```
//!
//! wa and wb are in VRF red, wc and wd in VRF blue, each side with the same 10.0.0.1/24 and
//! 10.1.0.1/24. Checks: ping and TCP across each customer; the router's own 10.0.0.1 answers
//! in both; what only blue has (10.1.0.3 on D) is unreachable from red; a route added with
//! `vecflow ctl ip route add … vrf blue` reaches D from C and not from A; `show vrf`. No static
//! neighbor: vecflow resolves every host by ARP, per VRF. Needs root, `ip`, `ping`, `ss`,
//! `ethtool`, `iperf3` and `python3`.

mod common;

#[path = "netns/lab.rs"]
#[allow(dead_code)] // the routed labs' helpers this lab does not use
mod lab;

use lab::*;

/// Blue's two namespaces, beside the lab's; deleted on drop (their veths go with them).
struct Blue {
    c: String,
    d: String,
}

impl Drop for Blue {
    fn drop(&mut self) {
        for ns in [&self.c, &self.d] {
            let _ = run("ip", &["netns", "del", ns]);
        }
    }
}

/// The router's configuration: red on wa and wb, blue on wc and wd, with the same addresses.
fn config(lab: &Lab) -> String {
    format!(
        "metrics: {{enabled: false}}
vrfs: {{red: {{table: 10}}, blue: {{table: 20}}}}
interfaces:
  wa: {{driver: af-packet, host-interface: {}, vrf: red, addresses: [10.0.0.1/24]}}
  wb: {{driver: af-packet, host-interface: {}, vrf: red, addresses: [10.1.0.1/24]}}
  wc: {{driver: af-packet, host-interface: {}, vrf: blue, addresses: [10.0.0.1/24]}}
  wd: {{driver: af-packet, host-interface: {}, vrf: blue, addresses: [10.1.0.1/24]}}
",
        lab.veth("a", 1),
        lab.veth("b", 1),
        lab.veth("c", 1),
        lab.veth("d", 1)
    )
}

#[test]
fn two_customers_with_the_same_addresses_are_routed_apart() {
    if !can_run() {
        return;
    }
    let lab = Lab::new("1500");
    let blue = Blue { c: format!("vfc{}", lab.tag), d: format!("vfd{}", lab.tag) };
    for (ns, side) in [(&blue.c, "c"), (&blue.d, "d")] {
        must("ip", &["netns", "add", ns]);
        must("ip", &["-n", ns, "link", "set", "lo", "up"]);
        lab.veth_pair(ns, &lab.veth(side, 0), &lab.veth(side, 1), "1500", false);
    }
    let host = |ns: &str, side: &str, addr: &str, gw: &str| {
        must("ip", &["-n", ns, "addr", "add", addr, "dev", &lab.veth(side, 0)]);
        must("ip", &["-n", ns, "route", "add", "default", "via", gw]);
    };
    host(&lab.a, "a", "10.0.0.2/24", "10.0.0.1");
    host(&lab.b, "b", "10.1.0.2/24", "10.1.0.1");
    host(&blue.c, "c", "10.0.0.2/24", "10.0.0.1");
    host(&blue.d, "d", "10.1.0.2/24", "10.1.0.1");
    must("ip", &["-n", &blue.d, "addr", "add", "10.1.0.3/24", "dev", &lab.veth("d", 0)]);
    must("ip", &["-n", &blue.d, "addr", "add", "172.16.0.1/32", "dev", "lo"]);
    let dir = tempfile::tempdir().unwrap();
    let (vecflow, _) = lab.start_vecflow(dir.path(), &config(&lab));

    for (customer, from, to) in [("red", &lab.a, &lab.b), ("blue", &blue.c, &blue.d)] {
        for target in ["10.0.0.1", "10.1.0.1", "10.1.0.2"] {
            let (ok, out) = lab.ping(from, &["-c", "2", "-i", "0.2", "-W", "2", target]);
            assert!(ok, "{customer}: ping {target}:\n{out}");
        }
        assert!(tcp_bytes(from, to, "10.1.0.2") > 100_000, "{customer}: TCP across");
        assert!(tcp_bytes(to, from, "10.0.0.2") > 100_000, "{customer}: TCP back");
    }
    // 10.1.0.3 is only blue's (the first packet toward it waits for ARP: it is dropped).
    let (ok, out) = lab.ping(&blue.c, &["-c", "3", "-i", "0.3", "-W", "2", "10.1.0.3"]);
    assert!(ok, "blue reaches its own 10.1.0.3:\n{out}");
    let (ok, out) = lab.ping(&lab.a, &["-c", "5", "-i", "1", "-W", "1", "10.1.0.3"]);
    assert!(!ok && out.contains("Destination Host Unreachable"), "red has no 10.1.0.3:\n{out}");

    // A route from ctl, in blue only.
    ctl(dir.path(), &["ip", "route", "add", "172.16.0.0/24", "via", "10.1.0.2", "vrf", "blue"]);
    let (ok, out) = lab.ping(&blue.c, &["-c", "2", "-i", "0.2", "-W", "2", "172.16.0.1"]);
    assert!(ok, "blue's route from ctl:\n{out}");
    let (_, out) = lab.ping(&lab.a, &["-c", "1", "-W", "2", "172.16.0.1"]);
    assert!(out.contains("Destination Net Unreachable"), "not in red:\n{out}");
    let vrfs = ctl(dir.path(), &["show", "vrf"]);
    assert!(vrfs.contains("wa, wb") && vrfs.contains("wc, wd"), "{vrfs}");
    lab.stop_vecflow(vecflow, dir.path());
}
