//! Routing daemons drive vecflow's VRFs through linux-cp's namespace per VRF: two customers,
//! red (host A, AS 65001) and blue (host B, AS 65002), with the same link addresses and the
//! same loopback prefix, announce their loopbacks by BGP to the router (AS 65000); each
//! customer's routes reach only its VRF's FIB, and a withdrawal leaves it within a second.
//! Once with BIRD, one instance per VRF namespace; once with FRR, `zebra -n` (namespaces as
//! VRFs, each VRF named after its namespace) and `router bgp 65000 vrf NAMESPACE`, where a
//! third customer's VRF, green (host C), is added while zebra runs: vecflow restarts with it,
//! bgpd is given the VRF's BGP by `vtysh`, and C's loopback reaches VRF green only.
//!
//! zebra adopts every namespace under /run/netns as a VRF, other tests' too: it reads their
//! links and addresses and installs routes only in the VRFs bgpd has.
//!
//! ```text
//!  ns A (red):  10.66.1.2/24, lo 10.255.0.1/32 ── wa 10.66.1.1/24, VRF red  ┐ vecflow; TAPs in
//!  ns B (blue): 10.66.1.2/24, lo 10.255.0.1/32 ── wb 10.66.1.1/24, VRF blue ┤ L-red, L-blue,
//!               + 10.255.0.2/32                                              │ (L-green)
//!  ns C (green, FRR lab): 10.66.1.2/24, lo 10.255.0.1/32 ── wc, VRF green   ┘
//! ```
//! Ports in `rx-mode: adaptive`. Needs root, `ip`, `ethtool`, `iperf3`, `python3`, BIRD 2
//! (`bird2`) and, for the second lab, FRR (`frr`).

mod common;

#[path = "netns/bird.rs"]
#[allow(dead_code)] // the BIRD helpers this lab does not use
mod bird;
#[path = "netns/frr.rs"]
mod frr;
#[path = "netns/lab.rs"]
#[allow(dead_code)] // the routed labs' helpers this lab does not use
mod lab;
#[path = "netns/lcp_lab.rs"]
#[allow(dead_code)] // the linux-cp helpers this lab does not use
mod lcp_lab;

use lab::{Lab, ctl, must, veth_between};
use lcp_lab::Namespace;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The customers' shared loopback prefix, and blue's own.
const SHARED: &str = "10.255.0.1/32";
const BLUE_ONLY: &str = "10.255.0.2/32";

/// Makes namespace `name` with `lo` up, deleted on drop.
fn namespace(name: String) -> Namespace {
    must("ip", &["netns", "add", &name]);
    must("ip", &["-n", &name, "link", "set", "lo", "up"]);
    Namespace(name)
}

/// A customer's host in namespace `ns` on its link `dev`: 10.66.1.2/24 and the shared
/// loopback, BIRD in AS `asn` announcing its loopbacks to the router; the daemon and its
/// control socket.
fn customer(ns: &str, dev: &str, asn: u32, dir: &Path, name: &str) -> (common::Daemon, PathBuf) {
    must("ip", &["-n", ns, "addr", "add", "10.66.1.2/24", "dev", dev]);
    must("ip", &["-n", ns, "addr", "add", SHARED, "dev", "lo"]);
    bird::start(ns, dir, name, &bird::host_conf("10.66.1.2", asn, &[("r4", "10.66.1.1")]))
}

/// vecflow's configuration: linux-cp in `lcp`, and per VRF of `vrfs` (name, table, port, veth)
/// its port with 10.66.1.1/24.
fn router_yaml(lcp: &str, vrfs: &[(&str, u32, &str, String)]) -> String {
    let tables: Vec<String> = vrfs.iter().map(|(v, t, _, _)| format!("{v}: {{table: {t}}}")).collect();
    let mut yaml = format!(
        "workers: {{count: 1}}\nmetrics: {{enabled: false}}\nlinux-cp: {{netns: {lcp}}}\nvrfs: {{{}}}\ninterfaces:\n",
        tables.join(", ")
    );
    for (k, (vrf, _, port, veth)) in vrfs.iter().enumerate() {
        yaml += &format!(
            "  {port}: {{index: {}, driver: af-packet, host-interface: {veth}, rx-mode: adaptive, vrf: {vrf}, addresses: [10.66.1.1/24]}}\n",
            k + 1
        );
    }
    yaml
}

/// The row of `prefix` in VRF `vrf`'s FIB of the vecflow in `dir`, if it has one.
fn route(dir: &Path, vrf: &str, prefix: &str) -> Option<String> {
    let fib = ctl(dir, &["show", "ip", "fib", "vrf", vrf, prefix]);
    fib.lines().find(|l| l.starts_with(prefix)).map(str::to_string)
}

/// Polls `prefix` in VRF `vrf` every 5 ms for up to `secs` until `done` holds of its row: how
/// long that took, or the last row.
fn wait_route(
    dir: &Path,
    vrf: &str,
    prefix: &str,
    secs: u64,
    done: impl Fn(Option<&str>) -> bool,
) -> Result<Duration, Option<String>> {
    let read = || route(dir, vrf, prefix);
    lab::poll(secs, Duration::from_millis(5), read, |row| done(row.as_deref())).map(|(_, took)| took)
}

/// A kernel route through `port`.
fn through(port: &str) -> impl Fn(Option<&str>) -> bool + '_ {
    move |row| row.is_some_and(|r| r.contains("kernel") && r.contains(&format!("via 10.66.1.2 out {port}")))
}

/// What a failure shows: each VRF's FIB, `show lcp`, each namespace's routes, the logs.
fn state(dir: &Path, vrfs: &[&str], namespaces: &[String]) -> String {
    let mut s = format!("--- show lcp\n{}", ctl(dir, &["show", "lcp"]));
    for v in vrfs {
        s += &format!("--- show ip fib vrf {v}\n{}", ctl(dir, &["show", "ip", "fib", "vrf", v]));
    }
    for ns in namespaces {
        s += &format!("--- ip -n {ns} route\n{}", must("ip", &["-n", ns, "route"]));
    }
    if dir.join("frr").exists() {
        s += &format!("--- vtysh\n{}", frr::vtysh(dir, &["show bgp vrf all summary", "show vrf"]));
    }
    let logs = ["a.log", "b.log", "c.log", "red.log", "blue.log", "frr/zebra.log", "frr/bgpd.log", "vecflow.log"];
    s + &bird::logs(dir, &logs)
}

/// The lab's hosts, namespaces and vecflow (VRFs red on `wa`, blue on `wb`); the routing
/// daemons are the caller's.
struct Customers {
    lab: Lab,
    lcp: Namespace,
    red: Namespace,
    blue: Namespace,
    vecflow: Option<common::Daemon>,
    /// B's BIRD socket, and the hosts' BIRDs.
    b: PathBuf,
    _birds: Vec<common::Daemon>,
}

impl Customers {
    fn start(dir: &Path) -> Customers {
        let lab = Lab::new("1500");
        let lcp = lcp_lab::lcp_namespace(&lab);
        // Made first, as an operator would: vecflow runs under `ip netns exec`, whose mounts
        // the rest of the machine would not see.
        let (red, blue) = (namespace(format!("{}-red", lcp.0)), namespace(format!("{}-blue", lcp.0)));
        let (a_bird, _) = customer(&lab.a, &lab.veth("a", 0), 65001, dir, "a");
        let (b_bird, b) = customer(&lab.b, &lab.veth("b", 0), 65002, dir, "b");
        must("ip", &["-n", &lab.b, "addr", "add", BLUE_ONLY, "dev", "lo"]);
        let yaml = router_yaml(&lcp.0, &Customers::vrfs(&lab));
        let (vecflow, _) = lab.start_vecflow(dir, &yaml);
        Customers { lab, lcp, red, blue, vecflow: Some(vecflow), b, _birds: vec![a_bird, b_bird] }
    }

    /// VRFs red (on `wa`, A's link) and blue (on `wb`, B's).
    fn vrfs(lab: &Lab) -> Vec<(&'static str, u32, &'static str, String)> {
        vec![("red", 10, "wa", lab.veth("a", 1)), ("blue", 20, "wb", lab.veth("b", 1))]
    }

    /// Each customer's loopbacks reach its VRF only; B withdraws its own: gone from VRF blue
    /// within a second, A's in red untouched.
    fn routes_apart_and_withdrawn(&self, dir: &Path, state: &dyn Fn() -> String) {
        let fail = |what: &str, seen: Option<String>| -> ! { panic!("{what}: {seen:?}\n{}", state()) };
        for (vrf, port, prefix) in [("red", "wa", SHARED), ("blue", "wb", SHARED), ("blue", "wb", BLUE_ONLY)] {
            if let Err(row) = wait_route(dir, vrf, prefix, 40, through(port)) {
                fail(&format!("{prefix} in VRF {vrf} through {port}, source kernel"), row);
            }
        }
        if let Some(row) = route(dir, "red", BLUE_ONLY) {
            fail("blue's own loopback is not in red", Some(row));
        }
        let default = ctl(dir, &["show", "ip", "fib"]);
        assert!(!default.contains("10.255.0."), "the default table has no customer's route:\n{default}");
        let start = Instant::now();
        let out = bird::birdc(&self.b, "disable loop");
        assert!(out.contains("disabled"), "birdc disable loop: {out}");
        let gone = match wait_route(dir, "blue", BLUE_ONLY, 10, |r| r.is_none()) {
            Ok(_) => start.elapsed(),
            Err(row) => fail("B's withdrawn loopback leaves VRF blue", row),
        };
        eprintln!("withdrawal (birdc disable) → gone from VRF blue's FIB: {gone:?}");
        assert!(gone < Duration::from_secs(1), "the withdrawal took {gone:?} to leave the FIB");
        if let Err(row) = wait_route(dir, "blue", SHARED, 10, |r| r.is_none()) {
            fail("B's shared prefix leaves VRF blue", row);
        }
        if !through("wa")(route(dir, "red", SHARED).as_deref()) {
            fail("A's route in red stays", route(dir, "red", SHARED));
        }
    }

    fn stop(&mut self, dir: &Path) {
        if let Some(v) = self.vecflow.take() {
            self.lab.stop_vecflow(v, dir);
        }
    }
}

#[test]
fn one_bird_per_vrf_namespace_drives_each_vrf() {
    if !bird::can_run() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let mut c = Customers::start(dir);
    let router = |vrf: &Namespace, name: &str, peer_as: u32| {
        let sessions = [bird::session("ce", "10.66.1.2", peer_as, "none")];
        bird::start(&vrf.0, dir, name, &bird::bird_conf("10.66.1.1", 65000, "all", "", &sessions))
    };
    let (_red_bird, red_sock) = router(&c.red, "red", 65001);
    let (_blue_bird, blue_sock) = router(&c.blue, "blue", 65002);
    let namespaces = [c.red.0.clone(), c.blue.0.clone()];
    let shown = || state(dir, &["red", "blue"], &namespaces);
    for sock in [&red_sock, &blue_sock] {
        if let Err(out) = bird::established(sock, &["ce"]) {
            panic!("the router's BGP session: {out}\n{}", shown());
        }
    }
    c.routes_apart_and_withdrawn(dir, &shown);
    c.stop(dir);
}

/// bgpd's BGP in VRF `netns` (a namespace's name) toward a customer in AS `peer_as`.
fn frr_vrf(netns: &str, peer_as: u32) -> String {
    format!(
        "router bgp 65000 vrf {netns}\n bgp router-id 10.66.1.1\n no bgp ebgp-requires-policy\n neighbor 10.66.1.2 remote-as {peer_as}\n neighbor 10.66.1.2 timers connect 1\n"
    )
}

/// Waits up to 40 s until bgpd's session in VRF `netns` is Established.
fn frr_established(dir: &Path, netns: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let out = frr::vtysh(dir, &[&format!("show bgp vrf {netns} neighbors 10.66.1.2")]);
        if out.contains("BGP state = Established") {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(out);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn frr_with_namespaces_as_vrfs_drives_each_vrf_and_takes_a_vrf_added_while_it_runs() {
    if !bird::can_run() || common::require("zebra", &[PathBuf::from("/usr/lib/frr")], "apt-get install frr").is_none() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let mut c = Customers::start(dir);
    let bgpd = format!(
        "frr defaults traditional\nhostname vecflow-router\n{}{}",
        frr_vrf(&c.red.0, 65001),
        frr_vrf(&c.blue.0, 65002)
    );
    let _frr = frr::start(&c.lcp.0, dir, &["-n"], &bgpd);
    let green = namespace(format!("{}-green", c.lcp.0));
    let namespaces = [c.red.0.clone(), c.blue.0.clone(), green.0.clone()];
    let shown = || state(dir, &["red", "blue", "green"], &namespaces);
    for ns in [&c.red, &c.blue] {
        if let Err(out) = frr_established(dir, &ns.0) {
            panic!("bgpd's session in VRF {}: {out}\n{}", ns.0, shown());
        }
    }
    c.routes_apart_and_withdrawn(dir, &shown);

    // VRF green, added while zebra runs: its namespace came after zebra started; vecflow
    // restarts with it (its TAP wc goes there), bgpd is given its BGP.
    let host = namespace(format!("vfg{}", c.lab.tag));
    let (host_end, router_end) = (c.lab.veth("g", 0), c.lab.veth("g", 1));
    veth_between((&host.0, &host_end), (&c.lab.r, &router_end), "1500", false);
    let (_c_bird, _) = customer(&host.0, &host_end, 65003, dir, "c");
    c.stop(dir);
    let mut vrfs = Customers::vrfs(&c.lab);
    vrfs.push(("green", 30, "wc", router_end.clone()));
    let (vecflow, _) = c.lab.start_vecflow(dir, &router_yaml(&c.lcp.0, &vrfs));
    c.vecflow = Some(vecflow);
    let conf: Vec<String> = std::iter::once("configure terminal".to_string())
        .chain(frr_vrf(&green.0, 65003).lines().map(|l| l.trim().to_string()))
        .collect();
    let conf: Vec<&str> = conf.iter().map(String::as_str).collect();
    let out = frr::vtysh(dir, &conf);
    if let Err(e) = frr_established(dir, &green.0) {
        panic!("bgpd's session in VRF {} (vtysh said: {out}): {e}\n{}", green.0, shown());
    }
    if let Err(row) = wait_route(dir, "green", SHARED, 20, through("wc")) {
        panic!("C's loopback in VRF green: {row:?}\n{}", shown());
    }
    // Red's route came back too: vecflow's restart took its TAP wa away, and with it the
    // kernel's route through it, until bgpd's session in red is up again (its own time: it
    // once lagged green's).
    if let Err(row) = wait_route(dir, "red", SHARED, 40, through("wa")) {
        panic!("A's loopback back in VRF red after the restart: {row:?}\n{}", shown());
    }
    c.stop(dir);
}
