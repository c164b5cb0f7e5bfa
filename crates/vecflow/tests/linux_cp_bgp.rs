//! vecflow as a BGP router: BIRD in the linux-cp namespace (AS 65000) peers over the TAPs
//! with BIRD on hosts A (AS 65001) and B (AS 65002), which announce their loopbacks (IPv4
//! and IPv6); the kernel routes BIRD installs are mirrored into vecflow's FIB (source
//! `kernel`), and vecflow, not Linux, forwards between the loopbacks. A withdrawal leaves
//! the FIB within a second (then A, with a default route via vecflow, is told "net
//! unreachable" by vecflow), a new announcement brings traffic back. A second lab: two
//! links to B, two BGP sessions announcing the same prefix, BIRD's kernel protocol with
//! `merge paths on` exports one ECMP route, vecflow spreads flows over both links, and one
//! link set down moves its flows to the other. A third: the first lab with FRR (zebra and
//! bgpd) as the router's daemons and `nexthop_compat_mode=0`, so that its routes name
//! next-hop objects. Ports in `rx-mode: adaptive`. Needs root, `ip`, `ethtool`, `iperf3`,
//! `python3`, BIRD 2 (`bird2`) and FRR (`frr`).
//!
//! ```text
//!  ns A: 10.255.0.1/32 on lo, BIRD           ns B: 10.255.0.2/32 on lo, BIRD
//!   vfa0 10.66.1.2/24 ─veth─┐                 ┌─veth─ vfb0 10.66.2.2/24
//!                     ns R: vecflow run: wa 10.66.1.1/24, wb 10.66.2.1/24 (+ wc 10.66.3.1/24
//!                           └─ TAPs wa, wb (wc) in ns L: BIRD AS 65000       ─veth─ vfc0 10.66.3.2/24 on B)
//! ```

mod common;

#[path = "netns/bird.rs"]
#[allow(dead_code)] // the BIRD helpers this lab does not use
mod bird;
#[path = "netns/frr.rs"]
#[allow(dead_code)] // the FRR helpers this lab does not use
mod frr;
#[path = "netns/lab.rs"]
#[allow(dead_code)] // the routed labs' helpers this lab does not use
mod lab;
#[path = "netns/lcp_lab.rs"]
#[allow(dead_code)] // the linux-cp helpers this lab does not use
mod lcp_lab;

use lab::{Lab, ctl, must};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A's and B's loopbacks, IPv4 and IPv6.
const A4: &str = "10.255.0.1";
const B4: &str = "10.255.0.2";
const A6: &str = "fd00:255::1";
const B6: &str = "fd00:255::2";

/// Gives host namespace `ns` loopback addresses `v4`/32 and `v6`/128 on `lo` (this kernel
/// has no dummy devices).
fn loopback(ns: &str, v4: &str, v6: &str) {
    must("ip", &["-n", ns, "addr", "add", &format!("{v4}/32"), "dev", "lo"]);
    must("ip", &["-n", ns, "addr", "add", &format!("{v6}/128"), "dev", "lo"]);
}

/// vecflow's configuration: linux-cp in `lcp`, one worker, each port of `ports` (name, veth
/// in the router namespace, addresses) on AF_PACKET in `rx-mode: adaptive`.
fn router_yaml(lcp: &str, ports: &[(&str, String, &str)]) -> String {
    let mut yaml =
        format!("workers: {{count: 1}}\nmetrics: {{enabled: false}}\nlinux-cp: {{netns: {lcp}}}\ninterfaces:\n");
    for (k, (name, veth, addresses)) in ports.iter().enumerate() {
        yaml += &format!(
            "  {name}: {{index: {}, driver: af-packet, host-interface: {veth}, rx-mode: adaptive, mac: '02:fe:00:00:00:{:02x}', addresses: [{addresses}]}}\n",
            k + 1,
            k + 1
        );
    }
    yaml
}

/// `show ip fib PREFIX` (or `show ip6 fib`) of the vecflow whose socket is in `dir`.
fn fib(dir: &Path, prefix: &str) -> String {
    let family = if prefix.contains(':') { "ip6" } else { "ip" };
    ctl(dir, &["show", family, "fib", prefix])
}

/// The FIB's row(s) for `prefix`: its line and, for a multipath route, its paths' lines.
fn fib_rows(dir: &Path, prefix: &str) -> Vec<String> {
    let text = fib(dir, prefix);
    let mut rows = Vec::new();
    for line in text.lines() {
        if line.starts_with(prefix) || (!rows.is_empty() && line.starts_with(' ')) {
            rows.push(line.to_string());
        }
    }
    rows
}

/// Polls `show ip fib PREFIX` every 5 ms for up to `secs` until `done` holds of its rows;
/// how long that took, or the last rows.
fn wait_fib(dir: &Path, prefix: &str, secs: u64, done: impl Fn(&[String]) -> bool) -> Result<Duration, Vec<String>> {
    lab::poll(secs, Duration::from_millis(5), || fib_rows(dir, prefix), |rows| done(rows)).map(|(_, took)| took)
}

/// Whether `rows` hold a kernel route whose forwarding contains each of `via`.
fn kernel_route(rows: &[String], via: &[&str]) -> bool {
    rows.first().is_some_and(|r| r.split_whitespace().nth(1) == Some("kernel"))
        && via.iter().all(|v| rows.iter().any(|r| r.contains(v)))
}

/// vecflow's packet counters per interface: name → (rx packets, tx packets).
fn counters(dir: &Path) -> BTreeMap<String, (u64, u64)> {
    let v: serde_json::Value = serde_json::from_str(&ctl(dir, &["show", "interface", "--json"])).unwrap();
    let n = |c: &serde_json::Value, k: &str| c[k].as_u64().unwrap_or(0);
    let list = v["interfaces"].as_array().cloned().unwrap_or_default();
    let row = |i: &serde_json::Value| {
        let name = i["interface"]["name"].as_str().unwrap_or("?").to_string();
        (name, (n(&i["counters"], "rx_packets"), n(&i["counters"], "tx_packets")))
    };
    list.iter().map(row).collect()
}

/// The packets that crossed the TAPs `taps` in namespace `lcp`, both ways, in all.
fn tap_packets(lab: &Lab, lcp: &str, taps: &[&str]) -> u64 {
    taps.iter().map(|t| lab.link_packets(lcp, t)).map(|(rx, tx)| rx + tx).sum()
}

/// Pings from `ns` (`args`: source and destination) once a second until one answer comes
/// back, for up to `secs`; whether one did, and the last output.
fn ping_until(lab: &Lab, ns: &str, args: &[&str], secs: u64) -> (bool, String) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let mut all = vec!["-c", "1", "-W", "1"];
        all.extend_from_slice(args);
        let (ok, out) = lab.ping(ns, &all);
        if ok || Instant::now() > deadline {
            return (ok, out);
        }
    }
}

/// What a failure shows: the router's BGP routes, vecflow's FIBs, interfaces and drops, the
/// kernel's routes in the linux-cp namespace, and the logs.
fn state(lcp: &str, dir: &Path, router: Option<&Path>) -> String {
    let mut s = router.map_or(String::new(), |r| format!("--- birdc show route\n{}", bird::birdc(r, "show route")));
    for c in ["show ip fib", "show ip6 fib", "show interface", "show errors", "show lcp"] {
        s += &format!("--- vecflow ctl {c}\n{}", ctl(dir, &c.split(' ').collect::<Vec<_>>()));
    }
    s += &format!("--- ip route (linux-cp)\n{}", must("ip", &["-n", lcp, "route"]));
    s += &format!("--- ip -6 route (linux-cp)\n{}", must("ip", &["-n", lcp, "-6", "route"]));
    if dir.join("frr").exists() {
        for c in ["show bgp summary", "show bgp ipv6 unicast"] {
            s += &format!("--- vtysh -c '{c}'\n{}", frr::vtysh(dir, &[c]));
        }
    }
    s + &bird::logs(dir, &["router.log", "a.log", "b.log", "frr/zebra.log", "frr/bgpd.log", "vecflow.log"])
}

#[test]
fn bird_bgp_routes_are_forwarded_by_vecflow_and_a_withdrawal_leaves_the_fib_within_a_second() {
    if !bird::can_run() {
        return;
    }
    let lab = Lab::with_ipv6("1500", true);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (lcp, vecflow, b, _hosts) = hosts_lab(&lab, dir);
    let sessions = [
        bird::session("a4", "10.66.1.2", 65001, "all"),
        bird::session("a6", "fd00:66:1::2", 65001, "all"),
        bird::session("b4", "10.66.2.2", 65002, "all"),
        bird::session("b6", "fd00:66:2::2", 65002, "all"),
    ];
    let (_router_bird, router) =
        bird::start(&lcp.0, dir, "router", &bird::bird_conf("10.66.1.1", 65000, "all", "", &sessions));
    let shown = || state(&lcp.0, dir, Some(&router));
    let fail = |what: &str, seen: &str| -> ! { panic!("{what}:\n{seen}\n{}", shown()) };

    if let Err(out) = bird::established(&router, &["a4", "a6", "b4", "b6"]) {
        fail("four BGP sessions Established over the TAPs", &out);
    }
    loopbacks_in_the_fib(dir, &shown);
    // Pings and iperf3 between the loopbacks: through vecflow's ports, not up the TAPs.
    let (ok, out) = ping_until(&lab, &lab.a, &["-I", A4, B4], 10);
    if !ok {
        fail("ping A's loopback → B's", &out);
    }
    let (ok, out) = ping_until(&lab, &lab.a, &["-6", "-I", A6, B6], 10);
    if !ok {
        fail("ping -6 A's loopback → B's", &out);
    }
    let (before, taps_before) = (counters(dir), tap_packets(&lab, &lcp.0, &["wa", "wb"]));
    let (ok, out) = lab.ping(&lab.a, &["-c", "20", "-i", "0.01", "-I", A4, B4]);
    if !ok || !out.contains("20 received") {
        fail("20 pings A → B", &out);
    }
    let (bytes, _) = lab.iperf3(B4, &["-B", A4]);
    let (after, taps_after) = (counters(dir), tap_packets(&lab, &lcp.0, &["wa", "wb"]));
    let moved = |name: &str| (after[name].0 - before[name].0, after[name].1 - before[name].1);
    let (wa, wb) = (moved("wa"), moved("wb"));
    let through_taps = taps_after - taps_before;
    assert!(taps_before > 20, "BGP crossed the TAPs: {taps_before} packets counted on them");
    eprintln!("iperf3 A → B: {bytes} bytes in 2 s; wa rx/tx {wa:?}, wb rx/tx {wb:?}; TAPs {through_taps} packets");
    let min = bytes / 1500;
    if bytes < 1_000_000 || wa.0 < min || wb.1 < min || through_taps > 40 {
        fail(
            &format!(
                "iperf3 moved {bytes} bytes; vecflow's wa rx/tx {wa:?}, wb rx/tx {wb:?} (≥ {min} each way wanted); {through_taps} packets through the TAPs (≤ 40)"
            ),
            "",
        );
    }

    withdrawal_and_announcement(&lab, dir, &b, &shown);
    lab.stop_vecflow(vecflow, dir);
}

/// The first lab: hosts A and B on ports wa and wb (IPv4 and IPv6), with their loopbacks
/// and BIRDs announcing them to the router (AS 65000 at 10.66.1.1 / 10.66.2.1), and
/// vecflow with linux-cp; the routing daemon in the linux-cp namespace is the caller's. The
/// namespace, vecflow, B's BIRD socket and the hosts' BIRDs.
fn hosts_lab(lab: &Lab, dir: &Path) -> (lcp_lab::Namespace, common::Daemon, PathBuf, [common::Daemon; 2]) {
    let (va, vb) = (lab.veth("a", 0), lab.veth("b", 0));
    must("ip", &["-n", &lab.a, "addr", "add", "10.66.1.2/24", "dev", &va]);
    must("ip", &["-n", &lab.a, "addr", "add", "fd00:66:1::2/64", "dev", &va]);
    must("ip", &["-n", &lab.b, "addr", "add", "10.66.2.2/24", "dev", &vb]);
    must("ip", &["-n", &lab.b, "addr", "add", "fd00:66:2::2/64", "dev", &vb]);
    loopback(&lab.a, A4, A6);
    loopback(&lab.b, B4, B6);
    let lcp = lcp_lab::lcp_namespace(lab);
    let ports = [
        ("wa", lab.veth("a", 1), "10.66.1.1/24, 'fd00:66:1::1/64'"),
        ("wb", lab.veth("b", 1), "10.66.2.1/24, 'fd00:66:2::1/64'"),
    ];
    let (vecflow, _) = lab.start_vecflow(dir, &router_yaml(&lcp.0, &ports));
    let a_conf = bird::host_conf(A4, 65001, &[("r4", "10.66.1.1"), ("r6", "fd00:66:1::1")]);
    let (a_bird, _) = bird::start(&lab.a, dir, "a", &a_conf);
    let b_conf = bird::host_conf(B4, 65002, &[("r4", "10.66.2.1"), ("r6", "fd00:66:2::1")]);
    let (b_bird, b) = bird::start(&lab.b, dir, "b", &b_conf);
    (lcp, vecflow, b, [a_bird, b_bird])
}

/// Waits until A's and B's loopbacks, learned by BGP and installed in the kernel by the
/// router's daemon, are in vecflow's FIB (source kernel) through the right port.
fn loopbacks_in_the_fib(dir: &Path, state: &dyn Fn() -> String) {
    let fail = |what: &str, seen: &str| -> ! { panic!("{what}:\n{seen}\n{}", state()) };
    for (prefix, via) in [
        (format!("{A4}/32"), "via 10.66.1.2 out wa"),
        (format!("{B4}/32"), "via 10.66.2.2 out wb"),
        (format!("{A6}/128"), "out wa"),
        (format!("{B6}/128"), "out wb"),
    ] {
        if let Err(rows) = wait_fib(dir, &prefix, 20, |r| kernel_route(r, &[via])) {
            fail(&format!("{prefix} {via}, source kernel, in the FIB"), &rows.join("\n"));
        }
    }
}

/// A default route via vecflow on A; B withdraws its loopbacks (`birdc disable loop`): gone
/// from the FIB within a second, and vecflow answers A with ICMP net unreachable; B
/// announces them again: back in the FIB, and traffic flows again.
fn withdrawal_and_announcement(lab: &Lab, dir: &Path, b: &Path, state: &dyn Fn() -> String) {
    let fail = |what: &str, seen: &str| -> ! { panic!("{what}:\n{seen}\n{}", state()) };
    must("ip", &["-n", &lab.a, "route", "add", "default", "via", "10.66.1.1"]);
    let start = Instant::now();
    let out = bird::birdc(b, "disable loop");
    assert!(out.contains("disabled"), "birdc disable loop: {out}");
    let b4 = format!("{B4}/32");
    let gone = match wait_fib(dir, &b4, 10, |r| r.is_empty()) {
        Ok(_) => start.elapsed(),
        Err(rows) => fail("B's withdrawn loopback leaves the FIB", &rows.join("\n")),
    };
    if let Err(rows) = wait_fib(dir, &format!("{B6}/128"), 10, |r| r.is_empty()) {
        fail("B's withdrawn IPv6 loopback leaves the FIB", &rows.join("\n"));
    }
    eprintln!("withdrawal (birdc disable) → gone from vecflow's FIB: {gone:?}");
    assert!(gone < Duration::from_secs(1), "the withdrawal took {gone:?} to leave the FIB");
    // A's BIRD hears of it too; then A's packets for B's loopback take the default route.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !must("ip", &["-n", &lab.a, "route", "show", &b4]).trim().is_empty() {
        assert!(Instant::now() < deadline, "A kept its BGP route to {b4}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (ok, out) = lab.ping(&lab.a, &["-c", "1", "-W", "2", "-I", A4, B4]);
    if ok || !out.contains("From 10.66.1.1") || !out.contains("Destination Net Unreachable") {
        fail("ping after the withdrawal: net unreachable from vecflow (10.66.1.1)", &out);
    }

    // B announces it again: back in the FIB, and traffic flows again.
    let start = Instant::now();
    let out = bird::birdc(b, "enable loop");
    assert!(out.contains("enabled"), "birdc enable loop: {out}");
    let back = match wait_fib(dir, &b4, 20, |r| kernel_route(r, &["via 10.66.2.2 out wb"])) {
        Ok(_) => start.elapsed(),
        Err(rows) => fail("B's announced loopback back in the FIB", &rows.join("\n")),
    };
    eprintln!("announcement (birdc enable) → in vecflow's FIB: {back:?}");
    let (ok, out) = ping_until(lab, &lab.a, &["-I", A4, B4], 10);
    if !ok {
        fail("ping A → B after B announced again", &out);
    }
}

/// FRR's configuration for the router (AS 65000) of [`hosts_lab`]: eBGP to A and B over
/// IPv4 and IPv6, everything imported and exported (`no bgp ebgp-requires-policy`).
const FRR_BGPD: &str = "
frr defaults traditional
hostname vecflow-router
router bgp 65000
 bgp router-id 10.66.1.1
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 neighbor 10.66.1.2 remote-as 65001
 neighbor fd00:66:1::2 remote-as 65001
 neighbor 10.66.2.2 remote-as 65002
 neighbor fd00:66:2::2 remote-as 65002
 neighbor 10.66.1.2 timers connect 1
 neighbor fd00:66:1::2 timers connect 1
 neighbor 10.66.2.2 timers connect 1
 neighbor fd00:66:2::2 timers connect 1
 address-family ipv4 unicast
  neighbor 10.66.1.2 activate
  neighbor 10.66.2.2 activate
 exit-address-family
 address-family ipv6 unicast
  neighbor fd00:66:1::2 activate
  neighbor fd00:66:2::2 activate
 exit-address-family
";

/// FRR's zebra and bgpd as vecflow's routing daemons, with the linux-cp namespace's
/// `net.ipv4.nexthop_compat_mode=0`: zebra installs next-hop objects and routes that name
/// them (`nhid`), which vecflow follows. The loopbacks reach the FIB, traffic flows, a
/// withdrawal leaves the FIB within a second and an announcement brings it back.
#[test]
fn frr_bgp_routes_through_next_hop_objects_are_forwarded_by_vecflow() {
    if !bird::can_run() || common::require("zebra", &[PathBuf::from("/usr/lib/frr")], "apt-get install frr").is_none() {
        return;
    }
    let lab = Lab::with_ipv6("1500", true);
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (lcp, vecflow, b, _hosts) = hosts_lab(&lab, dir);
    must("ip", &["netns", "exec", &lcp.0, "sysctl", "-qw", "net.ipv4.nexthop_compat_mode=0"]);
    let _frr = frr::start(&lcp.0, dir, &[], FRR_BGPD);
    let shown = || state(&lcp.0, dir, None);
    let fail = |what: &str, seen: &str| -> ! { panic!("{what}:\n{seen}\n{}", shown()) };
    loopbacks_in_the_fib(dir, &shown);
    // zebra installed them through next-hop objects: what vecflow followed.
    for (family, prefix) in [("-4", format!("{B4}/32")), ("-6", format!("{B6}/128"))] {
        let kernel = must("ip", &["-n", &lcp.0, family, "route", "show", &prefix]);
        if !kernel.contains("nhid") {
            fail(&format!("zebra's route to {prefix} through a next-hop object"), &kernel);
        }
    }
    // vecflow asked for the MAC of the route's link-local next hop when the route came: it is
    // resolved before any packet needs it.
    let resolved =
        |r: &[String]| kernel_route(r, &["via fe80:", "out wb ("]) && !r.iter().any(|l| l.contains("unresolved"));
    if let Err(rows) = wait_fib(dir, &format!("{B6}/128"), 3, resolved) {
        fail("B's IPv6 loopback's next hop resolved before any traffic", &rows.join("\n"));
    }
    for args in [&["-I", A4, B4][..], &["-6", "-I", A6, B6]] {
        let (ok, out) = ping_until(&lab, &lab.a, args, 10);
        if !ok {
            fail(&format!("ping {args:?}"), &out);
        }
    }
    withdrawal_and_announcement(&lab, dir, &b, &shown);
    lab.stop_vecflow(vecflow, dir);
}

/// iperf3 from A's loopback to B's with 16 TCP streams for 2 s; vecflow's tx packets on
/// `wb` and `wc` meanwhile, and the bytes B received.
fn iperf3_over(lab: &Lab, dir: &Path) -> (u64, u64, u64) {
    let before = counters(dir);
    let (bytes, _) = lab.iperf3(B4, &["-B", A4, "-P", "16"]);
    let after = counters(dir);
    (after["wb"].1 - before["wb"].1, after["wc"].1 - before["wc"].1, bytes)
}

#[test]
fn two_bgp_sessions_over_two_links_make_an_ecmp_route_and_a_link_down_moves_its_flows() {
    if !bird::can_run() {
        return;
    }
    let lab = Lab::new("1500");
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (c0, c1) = lab.extra_link("b", "c", false);
    lab.address("a", "10.66.1.2/24", None);
    lab.address("b", "10.66.2.2/24", None);
    must("ip", &["-n", &lab.b, "addr", "add", "10.66.3.2/24", "dev", &c0]);
    loopback(&lab.a, A4, A6);
    loopback(&lab.b, B4, B6);
    // B answers over the link its own route back takes, whichever link a flow came in on.
    for key in ["all", "default", &c0, &lab.veth("b", 0)] {
        must("ip", &["netns", "exec", &lab.b, "sysctl", "-qw", &format!("net.ipv4.conf.{key}.rp_filter=0")]);
    }
    let lcp = lcp_lab::lcp_namespace(&lab);
    let ports = [
        ("wa", lab.veth("a", 1), "10.66.1.1/24"),
        ("wb", lab.veth("b", 1), "10.66.2.1/24"),
        ("wc", c1, "10.66.3.1/24"),
    ];
    let (vecflow, _) = lab.start_vecflow(dir, &router_yaml(&lcp.0, &ports));
    let sessions = [
        bird::session("a4", "10.66.1.2", 65001, "all"),
        bird::session("b1", "10.66.2.2", 65002, "all"),
        bird::session("b2", "10.66.3.2", 65002, "all"),
    ];
    let (_router_bird, router) =
        bird::start(&lcp.0, dir, "router", &bird::bird_conf("10.66.1.1", 65000, "all", "", &sessions));
    let (_a_bird, _) = bird::start(&lab.a, dir, "a", &bird::host_conf(A4, 65001, &[("r4", "10.66.1.1")]));
    let b_conf = bird::host_conf(B4, 65002, &[("r1", "10.66.2.1"), ("r2", "10.66.3.1")]);
    let (_b_bird, _) = bird::start(&lab.b, dir, "b", &b_conf);
    let fail = |what: &str, seen: &str| -> ! { panic!("{what}:\n{seen}\n{}", state(&lcp.0, dir, Some(&router))) };

    if let Err(out) = bird::established(&router, &["a4", "b1", "b2"]) {
        fail("three BGP sessions Established over the TAPs", &out);
    }
    // Two equal BGP routes to B's loopback, merged by the kernel protocol into one ECMP
    // route: two paths in vecflow's FIB.
    let b4 = format!("{B4}/32");
    let both = ["multipath: 2 paths", "via 10.66.2.2 out wb", "via 10.66.3.2 out wc"];
    if let Err(rows) = wait_fib(dir, &b4, 20, |r| kernel_route(r, &both)) {
        fail(&format!("{b4} through both links in the FIB"), &rows.join("\n"));
    }
    if let Err(rows) = wait_fib(dir, &format!("{A4}/32"), 20, |r| kernel_route(r, &["via 10.66.1.2 out wa"])) {
        fail("A's loopback in the FIB", &rows.join("\n"));
    }
    eprintln!("{}", fib(dir, &b4));
    let (ok, out) = ping_until(&lab, &lab.a, &["-I", A4, B4], 10);
    if !ok {
        fail("ping A's loopback → B's", &out);
    }
    // 16 TCP flows: spread over both links (each flow on one, by its hash).
    let (on_b, on_c, bytes) = iperf3_over(&lab, dir);
    eprintln!("iperf3 -P 16 over two paths: {bytes} bytes; vecflow tx wb {on_b}, wc {on_c} packets");
    if bytes < 1_000_000 || on_b < 300 || on_c < 300 {
        fail(&format!("16 flows ({bytes} bytes) over both links: tx wb {on_b}, wc {on_c} packets"), &fib(dir, &b4));
    }

    // wc set down: its TAP goes down, the kernel drops wc's IPv4 routes without a word,
    // BIRD's session b2 over it ends, and the route is left with the path over wb.
    let start = Instant::now();
    ctl(dir, &["set", "interface", "state", "wc", "down"]);
    let one = |r: &[String]| kernel_route(r, &["via 10.66.2.2 out wb"]) && !r.iter().any(|l| l.contains("out wc"));
    let moved = match wait_fib(dir, &b4, 10, one) {
        Ok(_) => start.elapsed(),
        Err(rows) => fail("only the path over wb left once wc is down", &rows.join("\n")),
    };
    eprintln!("wc down → one path in vecflow's FIB: {moved:?}");
    let (on_b, on_c, bytes) = iperf3_over(&lab, dir);
    eprintln!("iperf3 -P 16 with wc down: {bytes} bytes; vecflow tx wb {on_b}, wc {on_c} packets");
    if bytes < 1_000_000 || on_b < 600 || on_c > 0 {
        fail(&format!("16 flows ({bytes} bytes) all over wb: tx wb {on_b}, wc {on_c} packets"), &fib(dir, &b4));
    }
    // Up again: the session comes back and so does the second path.
    ctl(dir, &["set", "interface", "state", "wc", "up"]);
    if let Err(rows) = wait_fib(dir, &b4, 40, |r| kernel_route(r, &both)) {
        fail("both paths back once wc is up", &rows.join("\n"));
    }
    lab.stop_vecflow(vecflow, dir);
}
