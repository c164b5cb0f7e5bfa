//! Multipath on real links: host B reaches vecflow over two links, and a two-path route to a
//! prefix behind B spreads A's flows over both, each flow on one link only; when one link
//! goes down, only its flows move.
//!
//! ```text
//!  ns A: vfa0 10.0.1.2/24 ──veth── vfa1 ┐                    ┌ vfb1 ──veth── vfb0 10.0.2.2/24 ┐
//!                                       └ ns R: vecflow run ─┤                                 ├ ns B (10.9.0.1 on lo)
//!                                  wa 10.0.1.1/24            └ vfc1 ──veth── vfc0 10.0.3.2/24 ┘
//!                                        route 10.9.0.0/24 via 10.0.2.2 and 10.0.3.2
//! ```
//!
//! A sends UDP from 48 source ports to 10.9.0.1; a packet socket on each of B's links records
//! which flows arrive where (B's rp_filter is off, or it would drop what arrives on the link
//! its route back does not use), and the veths' counters add up to what was sent. No static
//! neighbor: vecflow resolves both next hops by ARP. Needs root, `ip`, `ethtool` and `python3`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::time::Duration;

#[path = "netns/lab.rs"]
#[allow(dead_code)] // the routed labs' helpers this lab does not use
mod lab;

use lab::*;

/// Flows (UDP source ports) A sends.
const FLOWS: std::ops::Range<u16> = 40000..40048;
/// Packets per flow per round.
const PER_FLOW: usize = 5;

/// Records for `seconds` the UDP source ports of packets to 10.9.0.1:9 arriving on each of
/// `devs` (in the namespace the script runs in) and prints {dev: {port: packets}}.
const CAPTURE: &str = r#"
import json, select, socket, sys, time
secs, devs = float(sys.argv[1]), sys.argv[2:]
socks = {}
for d in devs:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    s.bind((d, 0))
    socks[s] = d
seen = {d: {} for d in devs}
print("ready", flush=True)
end = time.time() + secs
while time.time() < end:
    for s in select.select(list(socks), [], [], 0.05)[0]:
        f, addr = s.recvfrom(2048)
        if addr[2] == socket.PACKET_OUTGOING or len(f) < 42 or f[23] != 17 or f[30:34] != bytes([10, 9, 0, 1]):
            continue
        port = str(int.from_bytes(f[34:36], "big"))
        seen[socks[s]][port] = seen[socks[s]].get(port, 0) + 1
print(json.dumps(seen), flush=True)
"#;

/// Sends `per` UDP packets from each source port of `first..last` to 10.9.0.1:9, flow after
/// flow in turns.
const SEND: &str = r#"
import socket, sys, time
first, last, per = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
socks = []
for p in range(first, last):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("10.0.1.2", p))
    socks.append(s)
for _ in range(per):
    for s in socks:
        s.sendto(b"vecflow multipath", ("10.9.0.1", 9))
        time.sleep(0.0005)
"#;

/// One round: A sends every flow, B's links record them. Returns, per link, the flows seen
/// and their packets.
fn round(lab: &Lab, links: &[String]) -> BTreeMap<String, BTreeMap<u16, u64>> {
    let mut capture = Command::new("ip")
        .args(["netns", "exec", &lab.b, "python3", "-c", CAPTURE, "3"])
        .args(links)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(capture.stdout.take().unwrap());
    let mut line = String::new();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let (first, last, per) = (FLOWS.start.to_string(), FLOWS.end.to_string(), PER_FLOW.to_string());
    let sent = lab.exec(&lab.a, &["python3", "-c", SEND, &first, &last, &per]);
    assert!(sent.status.success(), "{}", String::from_utf8_lossy(&sent.stderr));
    line.clear();
    std::io::BufRead::read_line(&mut out, &mut line).unwrap();
    assert!(capture.wait().unwrap().success());
    let seen: BTreeMap<String, BTreeMap<String, u64>> = serde_json::from_str(&line).unwrap();
    seen.into_iter().map(|(d, m)| (d, m.into_iter().map(|(p, n)| (p.parse().unwrap(), n)).collect())).collect()
}

#[test]
fn a_two_path_route_spreads_flows_over_two_links_and_a_link_down_moves_only_its_flows() {
    if !can_run() {
        return;
    }
    let lab = Lab::new("1500");
    lab.address("a", "10.0.1.2/24", Some("10.0.1.1"));
    lab.address("b", "10.0.2.2/24", Some("10.0.2.1"));
    // The second link, B to R, named as the lab's (removed with the namespaces).
    let (c0, c1) = lab.extra_link("b", "c", false);
    must("ip", &["-n", &lab.b, "addr", "add", "10.0.3.2/24", "dev", &c0]);
    must("ip", &["-n", &lab.b, "addr", "add", "10.9.0.1/32", "dev", "lo"]);
    for key in ["all", "default", &c0, &lab.veth("b", 0)] {
        must("ip", &["netns", "exec", &lab.b, "sysctl", "-qw", &format!("net.ipv4.conf.{key}.rp_filter=0")]);
    }
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "workers: {{count: 1}}
metrics: {{enabled: false}}
interfaces:
  wa: {{index: 1, driver: af-packet, host-interface: {}, mac: '02:fe:00:00:00:01', addresses: [10.0.1.1/24]}}
  wb: {{index: 2, driver: af-packet, host-interface: {}, mac: '02:fe:00:00:00:02', addresses: [10.0.2.1/24]}}
  wc: {{index: 3, driver: af-packet, host-interface: {c1}, mac: '02:fe:00:00:00:03', addresses: [10.0.3.1/24]}}
routes:
  - {{prefix: 10.9.0.0/24, paths: [{{via: 10.0.2.2}}, {{via: 10.0.3.2}}]}}
",
        lab.veth("a", 1),
        lab.veth("b", 1),
    );
    let (vecflow, _) = lab.start_vecflow(dir.path(), &config);
    let links = vec![lab.veth("b", 0), c0.clone()];
    // Rounds until both next hops are resolved (a packet toward an unresolved one is dropped
    // while vecflow ARPs, as VPP does, and a request is repeated at most once a second).
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        round(&lab, &links);
        let neighbors = ctl(dir.path(), &["show", "ip", "neighbors"]);
        let resolved = |a: &str| neighbors.lines().any(|l| l.contains(a) && l.contains("reachable"));
        if resolved("10.0.2.2 ") && resolved("10.0.3.2 ") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "next hops never resolved:\n{neighbors}");
        std::thread::sleep(Duration::from_millis(1000));
    }
    let before: Vec<u64> = links.iter().map(|d| lab.link_packets(&lab.b, d).0).collect();
    let seen = round(&lab, &links);
    let after: Vec<u64> = links.iter().map(|d| lab.link_packets(&lab.b, d).0).collect();
    let (one, two) = (&seen[&links[0]], &seen[&links[1]]);
    let flows_on = |m: &BTreeMap<u16, u64>| m.keys().copied().collect::<BTreeSet<u16>>();
    let state = || {
        ["show ip fib 10.9.0.0/24", "show ip neighbors", "show errors", "show interface"]
            .map(|c| ctl(dir.path(), &c.split(' ').collect::<Vec<_>>()))
            .join("\n")
    };
    assert!(one.len() >= 8 && two.len() >= 8, "both links carry flows: {seen:?}\n{}", state());
    assert!(flows_on(one).is_disjoint(&flows_on(two)), "each flow on one link only: {seen:?}");
    assert_eq!(one.len() + two.len(), FLOWS.len(), "every flow arrived: {seen:?}");
    assert!(one.values().chain(two.values()).all(|&n| n == PER_FLOW as u64), "no packet lost: {seen:?}");
    // The veths' counters agree (B's links carry nothing else from vecflow but ARP).
    for (k, m) in [one, two].iter().enumerate() {
        let sent: u64 = m.values().sum();
        let counted = after[k] - before[k];
        assert!((sent..=sent + 4).contains(&counted), "{}: {counted} frames counted, {sent} captured", links[k]);
    }
    let show = ctl(dir.path(), &["show", "ip", "fib", "10.9.0.0/24"]);
    assert!(show.contains("weight   1 buckets 256") && show.contains("up"), "{show}");

    // B's second link goes down: vecflow sees its port's carrier drop, and only the flows of
    // that path move.
    must("ip", &["-n", &lab.b, "link", "set", &c0, "down"]);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !ctl(dir.path(), &["show", "ip", "fib", "10.9.0.0/24"]).contains("buckets   0") {
        assert!(std::time::Instant::now() < deadline, "the path never went down");
        std::thread::sleep(Duration::from_millis(200));
    }
    let moved = round(&lab, &links[..1]);
    let now = &moved[&links[0]];
    assert_eq!(flows_on(now), flows_on(one).union(&flows_on(two)).copied().collect(), "all on link 1: {moved:?}");
    assert!(now.values().all(|&n| n == PER_FLOW as u64), "no packet lost: {moved:?}");
    lab.stop_vecflow(vecflow, dir.path());
}
