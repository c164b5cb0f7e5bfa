//! MPLS L3VPN on real links: two provider edges and a P router, three `vecflow run` on
//! AF_PACKET, carry two customers with the same addresses between their sites.
//!
//! ```text
//!  red  ra 10.0.0.2 ─┐                                                       ┌─ rb 10.1.0.2  red
//!                    ├ PE1 ── 100.64.0.0/30 ── P ── 100.64.0.4/30 ── PE2 ┤
//!  blue ba 10.0.0.2 ─┘  (VRFs red, blue)          (labels only)   (VRFs)   └─ bb 10.1.0.2  blue
//!                                                                              + 10.1.0.3
//! ```
//!
//! PE1 routes each VRF's 10.1.0.0/24 with the P's transport label 200 over PE2's VPN label
//! (2010 red, 2020 blue); PE2 routes 10.0.0.0/24 with 101 over PE1's (1010, 1020). Each VPN
//! label pops into its VRF. First the P swaps the transport labels (200 → 300, 101 → 100), so
//! the egress edge pops two labels; then, changed with `ctl`, it pops them itself
//! (implicit null: penultimate-hop popping). Each time: pings and TCP both ways in each
//! customer, blue's own 10.1.0.3 unreachable from red. sFlow at the edges: PE1's samples of
//! red carry the pushed stack, PE2's samples of the core the stack it received (two labels,
//! then one). Needs root, `ip`, `ping`, `ss`, `ethtool`, `iperf3` and `python3`.

mod common;

use std::collections::BTreeSet;
use std::path::Path;

#[path = "netns/lab.rs"]
#[allow(dead_code)] // the routed labs' helpers this lab does not use
mod lab;

use lab::*;

/// The lab's namespaces, named after a random tag; deleted on drop (their veths go with them).
struct Namespaces {
    tag: String,
}

/// The namespaces: customers' sites, then the routers.
const SITES: [&str; 4] = ["ra", "ba", "rb", "bb"];
const ROUTERS: [&str; 3] = ["pe1", "p", "pe2"];

impl Namespaces {
    fn new() -> Namespaces {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let n = Namespaces { tag: format!("{:04x}", (std::process::id() ^ nanos) as u16) };
        for name in SITES.iter().chain(&ROUTERS) {
            must("ip", &["netns", "add", &n.ns(name)]);
            must("ip", &["-n", &n.ns(name), "link", "set", "lo", "up"]);
        }
        n
    }

    /// The namespace of site or router `name`.
    fn ns(&self, name: &str) -> String {
        format!("vl{name}{}", self.tag)
    }

    /// The veth end of link `link` on side `end` (0 or 1).
    fn dev(&self, link: &str, end: u8) -> String {
        format!("vl{link}{end}{}", self.tag)
    }

    /// Links `a` (end 0) and `b` (end 1) by veth `link`; the kernel keeps IPv6 off on both.
    fn link(&self, link: &str, a: &str, b: &str) {
        veth_between((&self.ns(a), &self.dev(link, 0)), (&self.ns(b), &self.dev(link, 1)), "1500", false);
    }

    /// Gives site `site` (on link `link`) `addr`/24 and a default route via `gw`.
    fn host(&self, site: &str, link: &str, addr: &str, gw: &str) {
        must("ip", &["-n", &self.ns(site), "addr", "add", &format!("{addr}/24"), "dev", &self.dev(link, 0)]);
        must("ip", &["-n", &self.ns(site), "route", "add", "default", "via", gw]);
    }

    /// `ping` from site `site` with `args`: whether it succeeded, and its output.
    fn ping(&self, site: &str, args: &[&str]) -> (bool, String) {
        let ns = self.ns(site);
        let mut cmd = vec!["netns", "exec", ns.as_str(), "ping", "-n"];
        cmd.extend_from_slice(args);
        let out = run("ip", &cmd);
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for name in SITES.iter().chain(&ROUTERS) {
            let _ = run("ip", &["netns", "del", &self.ns(name)]);
        }
    }
}

/// A provider edge: `red` (index 1) and `blue` (2) on host interfaces `red` and `blue` with
/// `site`/24 in VRFs red and blue, `core` (3, on host interface `core`, address
/// `core_addr`/30) toward the P at `p`; the
/// remote sites' `remote`/24 with `transport` over the remote VPN labels (`remote_vpn`: red,
/// blue); its own VPN labels `vpn` (red, blue) and transport label `own`; sFlow of red and the
/// core, 1:1, to `collector`.
struct Edge<'a> {
    red: &'a str,
    blue: &'a str,
    core: &'a str,
    site: &'a str,
    core_addr: &'a str,
    p: &'a str,
    remote: &'a str,
    transport: u32,
    remote_vpn: [u32; 2],
    vpn: [u32; 2],
    own: u32,
    collector: u16,
}

impl Edge<'_> {
    fn yaml(&self) -> String {
        let port =
            |dev: &str, rest: &str| format!("{{driver: af-packet, host-interface: {dev}, rx-mode: interrupt, {rest}}}");
        format!(
            "metrics: {{enabled: false}}
vrfs: {{red: {{table: 10}}, blue: {{table: 20}}}}
interfaces:
  red: {}
  blue: {}
  core: {}
routes:
  - {{prefix: {remote}/24, vrf: red, via: {p}, out-labels: [{t}, {rr}]}}
  - {{prefix: {remote}/24, vrf: blue, via: {p}, out-labels: [{t}, {rb}]}}
mpls:
  local-labels:
    - {{label: {vr}, vrf: red}}
    - {{label: {vb}, vrf: blue}}
    - {{label: {own}}}
sflow: {{sampling-rate: 1, polling-interval: 0, collectors: [{{address: 127.0.0.1, port: {c}}}]}}
",
            port(self.red, &format!("index: 1, vrf: red, addresses: [{}/24], sflow: {{}}", self.site)),
            port(self.blue, &format!("index: 2, vrf: blue, addresses: [{}/24]", self.site)),
            port(self.core, &format!("index: 3, addresses: [{}/30], mpls: true, sflow: {{}}", self.core_addr)),
            remote = self.remote,
            p = self.p,
            t = self.transport,
            rr = self.remote_vpn[0],
            rb = self.remote_vpn[1],
            vr = self.vpn[0],
            vb = self.vpn[1],
            own = self.own,
            c = self.collector,
        )
    }
}

/// The P router: `c1` toward PE1 (100.64.0.2/30), `c2` toward PE2 (100.64.0.5/30); label 200
/// goes to PE2 as 300, 101 to PE1 as 100.
fn p_yaml(c1: &str, c2: &str) -> String {
    let port = |dev: &str, addr: &str| {
        format!("{{driver: af-packet, host-interface: {dev}, rx-mode: interrupt, addresses: [{addr}], mpls: true}}")
    };
    format!(
        "metrics: {{enabled: false}}
interfaces:
  c1: {}
  c2: {}
mpls:
  local-labels:
    - {{label: 200, via: 100.64.0.6, interface: c2, out-labels: [300]}}
    - {{label: 101, via: 100.64.0.1, interface: c1, out-labels: [100]}}
",
        port(c1, "100.64.0.2/30"),
        port(c2, "100.64.0.5/30"),
    )
}

/// Pings and TCP both ways in each customer; blue's own 10.1.0.3 unreachable from red.
fn customers_reach_their_own_sites(n: &Namespaces, when: &str) {
    for (customer, here, there) in [("red", "ra", "rb"), ("blue", "ba", "bb")] {
        // The first packets wait for ARP on the way (dropped while vecflow resolves).
        n.ping(here, &["-c", "3", "-i", "0.3", "-W", "1", "10.1.0.2"]);
        for (from, to) in [(here, "10.1.0.2"), (there, "10.0.0.2"), (here, "10.1.0.1"), (there, "10.0.0.1")] {
            let (ok, out) = n.ping(from, &["-c", "3", "-i", "0.2", "-W", "2", to]);
            assert!(ok && out.contains("3 received"), "{when}: {customer}: ping {to} from {from}:\n{out}");
        }
        assert!(tcp_bytes(&n.ns(here), &n.ns(there), "10.1.0.2") > 100_000, "{when}: {customer}: TCP across");
        assert!(tcp_bytes(&n.ns(there), &n.ns(here), "10.0.0.2") > 100_000, "{when}: {customer}: TCP back");
    }
    let (ok, out) = n.ping("ba", &["-c", "3", "-i", "0.3", "-W", "2", "10.1.0.3"]);
    assert!(ok, "{when}: blue reaches its own 10.1.0.3:\n{out}");
    let (ok, out) = n.ping("ra", &["-c", "2", "-i", "0.3", "-W", "1", "10.1.0.3"]);
    assert!(!ok, "{when}: red has no 10.1.0.3:\n{out}");
}

/// The MPLS label stacks of `datagrams`' flow samples: (input ifIndex, in-stack, out-stack).
fn stacks(datagrams: &[(std::time::Instant, Vec<u8>)]) -> BTreeSet<(u32, Vec<u32>, Vec<u32>)> {
    let mut out = BTreeSet::new();
    for (_, d) in datagrams {
        for s in sflow::decode(d).unwrap().samples {
            let sflow::Sample::Flow(f) = s else { continue };
            let sflow::Interface::Index(input) = f.input else { continue };
            for r in f.records {
                if let sflow::FlowRecord::Mpls(m) = r {
                    out.insert((input, m.in_stack.clone(), m.out_stack.clone()));
                }
            }
        }
    }
    out
}

#[test]
fn two_customers_cross_an_mpls_core_with_and_without_penultimate_hop_popping() {
    if !can_run() {
        return;
    }
    let n = Namespaces::new();
    for (link, a, b) in [("a", "ra", "pe1"), ("b", "ba", "pe1"), ("c", "pe1", "p"), ("d", "p", "pe2")] {
        n.link(link, a, b);
    }
    for (link, a, b) in [("e", "rb", "pe2"), ("f", "bb", "pe2")] {
        n.link(link, a, b);
    }
    n.host("ra", "a", "10.0.0.2", "10.0.0.1");
    n.host("ba", "b", "10.0.0.2", "10.0.0.1");
    n.host("rb", "e", "10.1.0.2", "10.1.0.1");
    n.host("bb", "f", "10.1.0.2", "10.1.0.1");
    must("ip", &["-n", &n.ns("bb"), "addr", "add", "10.1.0.3/24", "dev", &n.dev("f", 0)]);
    // The core links' router ends are vecflow's: PE1 and PE2 hold end 1 of "c" and end 0 of
    // "d" is P's.
    let (c_pe1, c_p) = (n.dev("c", 0), n.dev("c", 1));
    let (d_p, d_pe2) = (n.dev("d", 0), n.dev("d", 1));
    let (pe1_collector, pe2_collector) = (Collector::start(&n.ns("pe1")), Collector::start(&n.ns("pe2")));
    let pe1 = Edge {
        red: &n.dev("a", 1),
        blue: &n.dev("b", 1),
        core: &c_pe1,
        site: "10.0.0.1",
        core_addr: "100.64.0.1",
        p: "100.64.0.2",
        remote: "10.1.0.0",
        transport: 200,
        remote_vpn: [2010, 2020],
        vpn: [1010, 1020],
        own: 100,
        collector: pe1_collector.port,
    };
    let pe2 = Edge {
        red: &n.dev("e", 1),
        blue: &n.dev("f", 1),
        core: &d_pe2,
        site: "10.1.0.1",
        core_addr: "100.64.0.6",
        p: "100.64.0.5",
        remote: "10.0.0.0",
        transport: 101,
        remote_vpn: [1010, 1020],
        vpn: [2010, 2020],
        own: 300,
        collector: pe2_collector.port,
    };
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let (p_dir, pe1_dir, pe2_dir) = (dirs[0].path(), dirs[1].path(), dirs[2].path());
    let (p, _) = start_vecflow_in(&n.ns("p"), p_dir, &p_yaml(&c_p, &d_p));
    let (vf1, _) = start_vecflow_in(&n.ns("pe1"), pe1_dir, &pe1.yaml());
    let (vf2, _) = start_vecflow_in(&n.ns("pe2"), pe2_dir, &pe2.yaml());

    customers_reach_their_own_sites(&n, "P swaps");
    // The P pops the transport labels itself now.
    ctl(p_dir, &["mpls", "local-label", "add", "200", "via", "100.64.0.6", "c2", "out-labels", "3"]);
    ctl(p_dir, &["mpls", "local-label", "add", "101", "via", "100.64.0.1", "c1", "out-labels", "3"]);
    let fib = ctl(p_dir, &["show", "mpls", "fib"]);
    assert_eq!(fib.matches("pop (implicit null)").count(), 2, "{fib}");
    customers_reach_their_own_sites(&n, "P pops");

    let shown: Vec<String> = [(vf1, pe1_dir), (vf2, pe2_dir), (p, p_dir)]
        .into_iter()
        .map(|(vf, dir): (_, &Path)| stop_vecflow_in(vf, dir))
        .collect();
    let (pe1_samples, pe2_samples) = (stacks(&pe1_collector.finish()), stacks(&pe2_collector.finish()));
    // PE1's red (index 1) pushes the transport label over red's VPN label at PE2.
    assert!(pe1_samples.contains(&(1, vec![], vec![200, 2010])), "PE1: {pe1_samples:?}\n{}", shown[0]);
    // PE2's core (index 3) received both labels while the P swapped, the VPN label alone after.
    for stack in [vec![300, 2010], vec![300, 2020], vec![2010], vec![2020]] {
        assert!(pe2_samples.iter().any(|(i, inn, _)| *i == 3 && *inn == stack), "PE2 {stack:?}: {pe2_samples:?}");
    }
}
