//! BIRD runs on a vecflow router: in the linux-cp namespace, on the TAP of port `wa`, it holds
//! an OSPF adjacency (point-to-point, 1 s hellos) and a BGP session with BIRD on host A across
//! vecflow, and the BGP session stays Established across a vecflow restart (SIGTERM, start
//! again: the TAP is adopted, the session lives in Linux). A second lab: a BGP session over
//! IPv6 link-local addresses (the port has no IPv6 address of its own: the kernel's
//! link-local one on the TAP gives it IPv6), iperf3 to the router's address through the TAP,
//! OSPF staying Full through a UDP flood to the router, and `kill -9` and a start leaving one
//! TAP. Needs root, `ip`, `python3`, `iperf3` and BIRD 2 (`bird2`).
//!
//! ```text
//!  ns A: vfa0 10.77.0.2/24, BIRD ──veth── vfa1 ─ ns R: vecflow run, wa 10.77.0.1/24
//!                                                   └─ TAP wa in ns L: 10.77.0.1/24, BIRD
//! ```

mod common;

#[path = "netns/bird.rs"]
#[allow(dead_code)] // the BIRD helpers this lab does not use
mod bird;
#[path = "netns/lab.rs"]
#[allow(dead_code)] // the routed labs' helpers this lab does not use
mod lab;
#[path = "netns/lcp_lab.rs"]
mod lcp_lab;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A BIRD configuration: router `me` in AS `asn` speaking OSPF on `dev` and BGP to `peer`
/// in AS `peer_as`.
fn bird_conf(me: &str, asn: u32, dev: &str, peer: &str, peer_as: u32) -> String {
    format!(
        r#"
router id {me};
protocol device {{ scan time 1; }}
protocol ospf v2 o {{
  ipv4 {{ import none; export none; }};
  area 0 {{ interface "{dev}" {{ type ptp; hello 1; dead 4; }}; }};
}}
protocol bgp b {{
  local {me} as {asn};
  neighbor {peer} as {peer_as};
  hold time 30;
  connect retry time 1;
  # While vecflow restarts no process holds the TAP and the kernel reports no carrier:
  # with BIRD's default (check link on) the session would close (docs/linux-cp.md).
  check link no;
  ipv4 {{ import all; export none; }};
}}
"#
    )
}

/// A BGP session over IPv6 link-local addresses, to `peer` on `dev`, for [`bird_conf`]'s
/// routers.
fn bgp6(asn: u32, dev: &str, peer: &str, peer_as: u32) -> String {
    format!(
        r#"
protocol bgp b6 {{
  local as {asn};
  neighbor {peer} as {peer_as};
  interface "{dev}";
  hold time 30;
  connect retry time 1;
  ipv6 {{ import all; export none; }};
}}
"#
    )
}

/// The IPv6 link-local address of `dev` in namespace `ns`, once it has one (up to 5 s).
fn link_local(ns: &str, dev: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let out = lab::must("ip", &["-n", ns, "-6", "-o", "addr", "show", "dev", dev, "scope", "link"]);
        if let Some(a) = out.split_whitespace().skip_while(|w| *w != "inet6").nth(1) {
            return a.split('/').next().unwrap().to_string();
        }
        assert!(Instant::now() < deadline, "no link-local address on {dev} in {ns}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The time of day (seconds) in a `show protocols` line: when the protocol entered its state.
fn since(line: &str) -> Option<f64> {
    let t = line.split_whitespace().find(|w| w.matches(':').count() == 2)?;
    let mut parts = t.split(':').map(|p| p.parse::<f64>().ok());
    Some(parts.next()?? * 3600.0 + parts.next()?? * 60.0 + parts.next()??)
}

/// The BGP session's line of `show protocols`.
fn bgp_line(sock: &Path) -> String {
    bird::birdc(sock, "show protocols").lines().find(|l| l.starts_with("b ")).unwrap_or_default().to_string()
}

#[test]
fn bird_holds_ospf_and_bgp_across_vecflow_and_bgp_survives_a_restart() {
    if !bird::can_run() {
        return;
    }
    let lab = lab::Lab::new("1500");
    let dir = tempfile::tempdir().unwrap();
    let (lcp, vecflow, config) = lcp_lab::linux_cp_router(&lab, dir.path());
    let (_router_bird, router) =
        bird::start(&lcp.0, dir.path(), "router", &bird_conf("10.77.0.1", 65001, "wa", "10.77.0.2", 65002));
    let (_host_bird, host) =
        bird::start(&lab.a, dir.path(), "host", &bird_conf("10.77.0.2", 65002, &lab.veth("a", 0), "10.77.0.1", 65001));
    let failed = |what: &str, out: String| {
        panic!("{what}:\n{out}\n{}", bird::logs(dir.path(), &["router.log", "host.log", "vecflow.log"]));
    };
    if let Err(out) = bird::wait_for(&router, "show protocols", "Established", 30) {
        failed("BGP Established over the TAP", out);
    }
    if let Err(out) = bird::wait_for(&router, "show ospf neighbors o", "Full", 30) {
        failed("OSPF Full over the TAP", out);
    }
    let before = bgp_line(&router);

    // A restart within the hold time (30 s): the session lives on.
    let show = lab.stop_vecflow(vecflow, dir.path());
    assert!(show.contains("vecflow# show lcp"), "{show}");
    let (vecflow, _) = lab.start_vecflow(dir.path(), &config);
    // Keepalives cross again (BIRD sends one every 10 s): still Established, same since.
    std::thread::sleep(Duration::from_secs(12));
    let after = bgp_line(&router);
    // The same session: Established since the same moment (BIRD prints it to the millisecond,
    // and its conversion may move it by one), not re-established after the restart.
    let same_since = since(&after).zip(since(&before)).is_some_and(|(a, b)| (a - b).abs() < 1.0);
    assert!(after.contains("Established") && same_since, "BGP across the restart:\nbefore {before}\nafter  {after}");
    assert!(bgp_line(&host).contains("Established"), "{}", bgp_line(&host));
    lab.stop_vecflow(vecflow, dir.path());
}

/// From a host: UDP datagrams of 64 bytes to `addr` port 9, as fast as Python sends them,
/// for `secs` seconds; prints how many.
const FLOOD: &str = r#"
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end, n = time.time() + float(sys.argv[2]), 0
while time.time() < end:
    for _ in range(100):
        try:
            s.sendto(b"x" * 64, (sys.argv[1], 9))
            n += 1
        except OSError:
            pass
print(n)
"#;

/// On a host's device: sends one neighbor solicitation for `target` (to its solicited-node
/// group) and prints how many advertisements for it arrive within a second.
const NA_REPLIES: &str = r#"
import socket, sys, time
dev, target = sys.argv[1], socket.inet_pton(socket.AF_INET6, sys.argv[2])
idx = socket.if_nametoindex(dev)
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, idx)
mac = bytes.fromhex(open(f"/sys/class/net/{dev}/address").read().strip().replace(":", ""))
group = socket.inet_ntop(socket.AF_INET6, bytes.fromhex("ff02" + "00" * 9 + "01ff") + target[13:])
s.sendto(bytes([135, 0, 0, 0, 0, 0, 0, 0]) + target + bytes([1, 1]) + mac, (group, 0, 0, idx))
s.settimeout(0.1)
n, end = 0, time.time() + 1
while time.time() < end:
    try:
        m = s.recv(200)
    except socket.timeout:
        continue
    if m[0] == 136 and m[8:24] == target:
        n += 1
print(n)
"#;

#[test]
fn bgp_over_ipv6_link_local_iperf3_to_the_router_and_ospf_through_a_flood() {
    if !bird::can_run() {
        return;
    }
    let lab = lab::Lab::with_ipv6("1500", true);
    let dir = tempfile::tempdir().unwrap();
    let (lcp, vecflow, config) = lcp_lab::linux_cp_router(&lab, dir.path());
    let host_dev = lab.veth("a", 0);
    let (router_ll, host_ll) = (link_local(&lcp.0, "wa"), link_local(&lab.a, &host_dev));
    let router_conf = bird_conf("10.77.0.1", 65001, "wa", "10.77.0.2", 65002) + &bgp6(65001, "wa", &host_ll, 65002);
    let host_conf =
        bird_conf("10.77.0.2", 65002, &host_dev, "10.77.0.1", 65001) + &bgp6(65002, &host_dev, &router_ll, 65001);
    let (_router_bird, router) = bird::start(&lcp.0, dir.path(), "router", &router_conf);
    let (_host_bird, _host) = bird::start(&lab.a, dir.path(), "host", &host_conf);
    let failed = |what: &str, out: String| -> ! {
        panic!("{what}:\n{out}\n{}", bird::logs(dir.path(), &["router.log", "host.log", "vecflow.log"]));
    };
    let b6_up = |out: &str| out.lines().any(|l| l.starts_with("b6 ") && l.contains("Established"));
    let deadline = Instant::now() + Duration::from_secs(40);
    while !b6_up(&bird::birdc(&router, "show protocols")) {
        if Instant::now() > deadline {
            failed("BGP over IPv6 link-local Established", bird::birdc(&router, "show protocols"));
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    if let Err(out) = bird::wait_for(&router, "show ospf neighbors o", "Full", 30) {
        failed("OSPF Full over the TAP", out);
    }
    // One answer on the wire per neighbor solicitation: vecflow's (Linux's, to the copy, is
    // dropped).
    let na = lab.exec(&lab.a, &["python3", "-c", NA_REPLIES, &host_dev, &router_ll]);
    assert_eq!(String::from_utf8_lossy(&na.stdout).trim(), "1", "{}", String::from_utf8_lossy(&na.stderr));
    // The port has IPv6 now: the TAP's link-local address, the kernel's.
    let addresses = lab::ctl(dir.path(), &["show", "interface", "address"]);
    assert!(addresses.lines().any(|l| l.contains(&router_ll) && l.contains("kernel")), "{addresses}");

    // iperf3 to the router's own address: the server is in the linux-cp namespace.
    let port = (20000 + (std::process::id() + 7) % 20000).to_string();
    let _server = common::Daemon::spawn(
        Command::new("ip")
            .args(["netns", "exec", &lcp.0, "iperf3", "-s", "-1", "-B", "10.77.0.1", "-p", &port])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    lab.wait_listening(&lcp.0, &port);
    let out = lab.exec(&lab.a, &["iperf3", "-c", "10.77.0.1", "-p", &port, "-t", "2", "-J"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let bytes = report["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0);
    assert!(bytes > 1_000_000, "iperf3 to the router moved {bytes} bytes: {report}");

    // A flood of UDP to the router, far over the other class's policer (5 000/s) for longer
    // than OSPF's dead interval (4 s): OSPF, in the control class, stays Full.
    let flood = lab.exec(&lab.a, &["python3", "-c", FLOOD, "10.77.0.1", "6"]);
    let sent: u64 = String::from_utf8_lossy(&flood.stdout).trim().parse().unwrap_or(0);
    let neighbors = bird::birdc(&router, "show ospf neighbors o");
    assert!(neighbors.contains("Full"), "OSPF through a flood of {sent} datagrams:\n{neighbors}");
    let lcp_show = lab::ctl(dir.path(), &["show", "lcp"]);
    let row: Vec<&str> = lcp_show.lines().find(|l| l.starts_with("wa ")).unwrap().split_whitespace().collect();
    let policed: u64 = row[5].parse().unwrap();
    let (punted, control): (u64, u64) = (row[3].parse().unwrap(), row[9].parse().unwrap());
    assert!(control > 0 && control < punted, "OSPF and BGP in the control class, the flood not:\n{lcp_show}");
    eprintln!("flood: {sent} datagrams in 6 s, {policed} policed; iperf3 to the router: {bytes} bytes in 2 s");
    assert!(sent > 60_000 && policed > 10_000, "sent {sent}, policed {policed}:\n{lcp_show}");

    // kill -9, then a start: the TAP is adopted, not doubled.
    let status = vecflow.stop(libc::SIGKILL, Duration::from_secs(5));
    assert!(!status.success());
    let (vecflow, _) = lab.start_vecflow(dir.path(), &config);
    let taps = lab::must("ip", &["-n", &lcp.0, "-o", "link", "show", "type", "tun"]);
    assert_eq!(taps.lines().count(), 1, "one TAP per interface:\n{taps}");
    assert!(taps.contains(": wa:"), "{taps}");
    lab.stop_vecflow(vecflow, dir.path());
}
