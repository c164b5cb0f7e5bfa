//! linux-cp with VRFs on real links: each VRF's interfaces have their TAPs in a namespace of
//! the VRF's own (`NETNS-VRF`), whose routes go into that VRF's tables.
//!
//! ```text
//!  ns A  10.0.0.2 ──── wa 10.0.0.1 (default table) ┐
//!  ns B  10.0.0.2 ──── wb 10.0.0.1 (VRF red)       ├ vecflow, linux-cp: TAP wa in vfl<tag>,
//!        + 10.0.0.3                                 │   TAPs wb and wc in vfl<tag>-red
//!  ns C  10.2.0.2 ──── wc 10.2.0.1 (VRF red)       ┘
//!        + 172.16.0.1 on lo
//! ```
//!
//! Checks: the TAPs are in their VRF's namespace with their addresses; Linux in the red
//! namespace reaches B (the same 10.0.0.2 as A, in the other table) through wb's TAP; a route
//! added with `ip route` in the red namespace reaches VRF red's FIB (B reaches 172.16.0.1,
//! A does not), and goes when deleted; `show lcp` names both namespaces. Needs root, `ip`,
//! `ping`, `ss`, `ethtool`, `iperf3` and `python3`.

mod common;

use std::time::Duration;

#[path = "netns/lab.rs"]
#[allow(dead_code)] // the routed labs' helpers this lab does not use
mod lab;
#[path = "netns/lcp_lab.rs"]
#[allow(dead_code)] // the linux-cp labs' helpers this lab does not use
mod lcp_lab;

use lab::*;
use lcp_lab::Namespace;

/// Polls `ctl show ip fib vrf red` (up to 5 s) until `present` says what it should of it.
fn wait_for_fib(dir: &std::path::Path, what: &str, present: impl Fn(&str) -> bool) -> String {
    let read = || ctl(dir, &["show", "ip", "fib", "vrf", "red"]);
    match poll(5, Duration::from_millis(50), read, |fib| present(fib)) {
        Ok((fib, _)) => fib,
        Err(fib) => panic!("{what} within 5 s:\n{fib}"),
    }
}

#[test]
fn each_vrfs_taps_and_routes_are_in_a_namespace_of_its_own() {
    if !can_run() {
        return;
    }
    let lab = Lab::new("1500");
    let lcp = lcp_lab::lcp_namespace(&lab);
    // Made first, as an operator would: vecflow runs under `ip netns exec`, whose mounts
    // (a namespace vecflow made) the rest of the machine would not see.
    let red = Namespace(format!("{}-red", lcp.0));
    must("ip", &["netns", "add", &red.0]);
    must("ip", &["-n", &red.0, "link", "set", "lo", "up"]);
    let c = Namespace(format!("vfc{}", lab.tag));
    must("ip", &["netns", "add", &c.0]);
    must("ip", &["-n", &c.0, "link", "set", "lo", "up"]);
    let (c_host, c_router) = (lab.veth("c", 0), lab.veth("c", 1));
    veth_between((&c.0, &c_host), (&lab.r, &c_router), "1500", false);
    lab.address("a", "10.0.0.2/24", Some("10.0.0.1"));
    lab.address("b", "10.0.0.2/24", Some("10.0.0.1"));
    must("ip", &["-n", &lab.b, "addr", "add", "10.0.0.3/24", "dev", &lab.veth("b", 0)]);
    must("ip", &["-n", &c.0, "addr", "add", "10.2.0.2/24", "dev", &c_host]);
    must("ip", &["-n", &c.0, "route", "add", "default", "via", "10.2.0.1"]);
    must("ip", &["-n", &c.0, "addr", "add", "172.16.0.1/32", "dev", "lo"]);

    let port = |name: &str, dev: &str, rest: &str| {
        format!("  {name}: {{driver: af-packet, host-interface: {dev}, rx-mode: adaptive, {rest}}}\n")
    };
    let config = format!(
        "workers: {{count: 1}}\nmetrics: {{enabled: false}}\nlinux-cp: {{netns: {}}}\nvrfs: {{red: {{table: 10}}}}\ninterfaces:\n{}{}{}",
        lcp.0,
        port("wa", &lab.veth("a", 1), "index: 1, addresses: [10.0.0.1/24]"),
        port("wb", &lab.veth("b", 1), "index: 2, vrf: red, addresses: [10.0.0.1/24]"),
        port("wc", &c_router, "index: 3, vrf: red, addresses: [10.2.0.1/24]"),
    );
    let dir = tempfile::tempdir().unwrap();
    let (vecflow, _) = lab.start_vecflow(dir.path(), &config);

    // Each TAP in its VRF's namespace, with its interface's address.
    let links = |ns: &str| must("ip", &["-n", ns, "-o", "addr", "show"]);
    let (default_ns, red_ns) = (links(&lcp.0), links(&red.0));
    assert!(default_ns.contains("wa") && !default_ns.contains("wb") && !default_ns.contains("wc"), "{default_ns}");
    assert!(red_ns.contains("wb    inet 10.0.0.1/24") && red_ns.contains("wc    inet 10.2.0.1/24"), "{red_ns}");
    let shown = ctl(dir.path(), &["show", "lcp"]);
    assert!(shown.contains(&format!("namespace {} (VRF red)", red.0)), "{shown}");

    // Linux in red's namespace reaches B, through wb's TAP: 10.0.0.3 is only B's.
    let ping = |ns: &str, target: &str| lab.ping(ns, &["-c", "2", "-i", "0.3", "-W", "2", target]);
    let (ok, out) = ping(&red.0, "10.0.0.3");
    assert!(ok, "red's namespace reaches B:\n{out}");
    let (ok, out) = ping(&lcp.0, "10.0.0.3");
    assert!(!ok, "the default namespace does not (A has no 10.0.0.3):\n{out}");

    // A route of red's namespace goes into VRF red's FIB, and only there.
    must("ip", &["-n", &red.0, "route", "add", "172.16.0.0/24", "via", "10.2.0.2"]);
    let fib = wait_for_fib(dir.path(), "the kernel's route in VRF red", |f| f.contains("172.16.0.0/24"));
    assert!(fib.lines().any(|l| l.starts_with("172.16.0.0/24") && l.contains("kernel")), "{fib}");
    ping(&lab.b, "172.16.0.1"); // the first packets wait for C's MAC
    let (ok, out) = ping(&lab.b, "172.16.0.1");
    assert!(ok, "B reaches 172.16.0.1 by red's kernel route:\n{out}");
    let (ok, out) = ping(&lab.a, "172.16.0.1");
    assert!(!ok, "A's default table has no such route:\n{out}");
    let default_fib = ctl(dir.path(), &["show", "ip", "fib"]);
    assert!(!default_fib.contains("172.16.0.0/24"), "{default_fib}");
    must("ip", &["-n", &red.0, "route", "del", "172.16.0.0/24"]);
    wait_for_fib(dir.path(), "the route withdrawn", |f| !f.contains("172.16.0.0/24"));
    lab.stop_vecflow(vecflow, dir.path());
}
