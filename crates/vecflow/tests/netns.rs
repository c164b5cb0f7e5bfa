//! End to end on real links: two hosts in network namespaces joined through `vecflow run` on
//! AF_PACKET, on AF_XDP, and on one of each — routed (with no static neighbors anywhere),
//! cross-connected at L2, and routed between 802.1Q sub-interfaces.
//!
//! The routed lab:
//!
//! ```text
//!  ns A: vfa0 10.0.1.2/24 ──veth── vfa1 ┐                    ┌ vfb1 ──veth── vfb0 10.0.2.2/24 :ns B
//!                                       └ ns R: vecflow run ─┘
//!                                  wa 10.0.1.1/24      wb 10.0.2.1/24 (MTU 1400)
//! ```
//!
//! Checks ping both ways and to vecflow's own addresses, a TTL-1 probe answered with time
//! exceeded, a DF packet above the next hop's MTU answered with fragmentation needed (and the
//! same packet without DF fragmented and answered), unroutable and unresolvable destinations
//! answered with net and host unreachable, TCP and UDP iperf3, interface counters equal to
//! the veth peers', and sFlow samples and counters (link speed) at a collector in the
//! router's namespace. The L2 lab puts both hosts in one subnet behind an L2 cross-connect
//! (ping, TCP and UDP iperf3, counters equal to the peers'). The VLAN lab has tagged hosts
//! that are user-space programs on packet sockets (`tests/hosts/vlan_host.py`; the kernels
//! here have no 802.1Q module) on VLANs 10 and 20, routed between vecflow's sub-interfaces.
//! The veths have two queues each; AF_XDP ports receive from both, and the AF_XDP labs also
//! run their workers in `interrupt` and `adaptive` rx modes.
//! The IPv6 lab does the same in IPv6 with every neighbor learned by neighbor discovery: ping
//! both ways and to vecflow's global and link-local addresses, a hop-limit-1 probe answered
//! with time exceeded, packet too big taken by the host's PMTUD, no route and address
//! unreachable, TCP iperf3 across the smaller MTU, `show ip6 neighbors`, and sFlow samples
//! with an IPv6 extended_router.
//! Needs root, `ip`, `ping`, `ethtool`, `iperf3` and `python3` (`./test.sh` installs them);
//! everything it creates has names unique to the run and is removed when it ends.

mod common;

use common::Daemon;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "netns/lab.rs"]
mod lab;

use lab::*;

#[test]
fn ipv4_end_to_end_through_namespaces() {
    ipv4_lab(Port::AfPacket, Port::AfPacket);
}

#[test]
fn ipv4_end_to_end_with_af_xdp() {
    ipv4_lab(Port::AfXdp, Port::AfXdp);
}

#[test]
fn ipv4_end_to_end_with_af_xdp_and_af_packet() {
    ipv4_lab(Port::AfXdp, Port::AfPacket);
}

/// vecflow answers a TTL-1 ping to itself and, to traffic it forwards, sends the ICMP errors:
/// time exceeded, fragmentation needed (and fragments without DF), net and host unreachable.
fn icmp_answers_and_errors(lab: &Lab) {
    // A TTL-1 packet to vecflow itself is answered: TTL is checked only when forwarding.
    let (ok, out) = lab.ping(&lab.a, &["-c", "1", "-t", "1", "-W", "2", "10.0.1.1"]);
    assert!(ok, "TTL 1 to the router:\n{out}");
    let (_, out) = lab.ping(&lab.a, &["-c", "1", "-t", "1", "-W", "2", "10.0.2.2"]);
    assert!(out.contains("From 10.0.1.1") && out.contains("Time to live exceeded"), "{out}");
    let (_, out) = lab.ping(&lab.a, &["-c", "1", "-M", "do", "-s", "1450", "-W", "2", "10.0.2.2"]);
    assert!(out.contains("Frag needed and DF set (mtu = 1400)"), "{out}");
    let (ok, out) = lab.ping(&lab.a, &["-c", "3", "-i", "0.2", "-M", "dont", "-s", "1450", "-W", "2", "10.0.2.2"]);
    assert!(ok && out.contains("3 received"), "fragmented by vecflow (and by B on the way back):\n{out}");
    let (_, out) = lab.ping(&lab.a, &["-c", "1", "-W", "2", "10.9.9.9"]);
    assert!(out.contains("Destination Net Unreachable"), "{out}");
    // Nobody has 10.0.2.77: after the ARP requests go unanswered (3 s), host unreachable.
    let (_, out) = lab.ping(&lab.a, &["-c", "6", "-i", "1", "-W", "1", "10.0.2.77"]);
    assert!(out.contains("From 10.0.1.1") && out.contains("Destination Host Unreachable"), "{out}");
}

/// TCP and UDP through vecflow with the hosts' default offloads; with two AF_PACKET ports,
/// each offload in turn.
fn through_with_offloads(lab: &Lab, pa: Port, pb: Port) {
    // The hosts keep their default offloads: A's TCP goes out as TSO super-frames with the
    // checksum left undone, which vecflow's AF_PACKET port cuts into segments and completes.
    // (AF_XDP hands over no such flag: hosts facing an AF_XDP port turn tx checksums off.)
    for (name, extra) in [("TCP", vec![]), ("UDP", vec!["-u", "-b", "20M"])] {
        let (bytes, lost) = lab.iperf3("10.0.2.2", &extra);
        assert!(bytes > 1_000_000, "iperf3 {name} moved {bytes} bytes");
        if let Some(lost) = lost {
            eprintln!("iperf3 UDP 20 Mbit/s through vecflow: {lost:.2} % lost");
            assert!(lost < 5.0, "UDP loss {lost} %");
        }
    }
    if (pa, pb) == (Port::AfPacket, Port::AfPacket) {
        offloads_in_turn(lab);
    }
}

/// wa is in rx-mode busy-poll: its sockets get their options within a second; veth's XDP
/// queues report no NAPI id, so no NAPI setting is touched.
fn busy_polling_set(lab: &Lab, dir: &std::path::Path) {
    wait_for_log(&dir.join("vecflow.log"), &format!("{}: busy polling on", lab.veth("a", 1)));
    let hardware = ctl(dir, &["show", "hardware"]);
    let wa = hardware.lines().find(|l| l.starts_with("wa ")).unwrap_or_default();
    assert!(wa.contains("rx-mode=busy-poll") && wa.contains("busy-poll-napi=none"), "{hardware}");
}

/// The routed lab with vecflow's ports `wa` and `wb` on drivers `pa` and `pb`.
fn ipv4_lab(pa: Port, pb: Port) {
    if !can_run() {
        return;
    }
    let lab = Lab::new("1400");
    lab.facing("a", pa);
    lab.facing("b", pb);
    lab.address("a", "10.0.1.2/24", Some("10.0.1.1"));
    lab.address("b", "10.0.2.2/24", Some("10.0.2.1"));
    let collector = Collector::start(&lab.r);
    let dir = tempfile::tempdir().unwrap();
    let (vecflow, started) = lab.start_vecflow(
        dir.path(),
        &lab.router_yaml(
            (pa, "addresses: [10.0.1.1/24], sub-interfaces: {100: {encapsulation: {dot1q: 100}, addresses: [10.0.100.1/24]}}"),
            (pb, "addresses: [10.0.2.1/24]"),
            collector.port,
        ),
    );
    if [pa, pb].contains(&Port::AfXdp) {
        assert!(started.contains("af-xdp on") && started.contains("bpf_link"), "{started}");
    }
    assert!(started.contains("MTU 1400"), "wb takes the kernel's MTU:\n{started}");
    assert!(started.contains("2 rx queue(s)"), "wa's queues fan out over both workers:\n{started}");

    // Each first packet toward a host it has not resolved yet is dropped while vecflow ARPs
    // (no-neighbor, as VPP); after that, nothing is lost.
    lab.ping(&lab.a, &["-c", "2", "-i", "0.3", "-W", "1", "10.0.2.2"]);
    for (from, to) in [(&lab.a, "10.0.2.2"), (&lab.b, "10.0.1.2"), (&lab.a, "10.0.1.1"), (&lab.a, "10.0.2.1")] {
        let (ok, out) = lab.ping(from, &["-c", "5", "-i", "0.2", "-W", "2", to]);
        assert!(ok && out.contains("5 received"), "ping {to} from {from}:\n{out}");
    }
    if pa == Port::AfXdp {
        busy_polling_set(&lab, dir.path());
    }
    icmp_answers_and_errors(&lab);
    through_with_offloads(&lab, pa, pb);

    // Counters over a last exchange: the hosts' veth counters before it (in a quiet moment, a
    // second after the load, so that vecflow has polled its counters since) and after it,
    // against vecflow's last counter poll before it and its final one at stop. (During the
    // load the kernel may drop frames vecflow's ring had no room for: rx-miss, which goes
    // into ifInDiscards, not the packet counters.) A packet vecflow sends between that poll
    // and the hosts' snapshot counts on its side only: its neighbors' probes, 35 s after an
    // entry's last confirmation, once fell there. So the exchange starts with every neighbor
    // of vecflow's freshly confirmed: the hosts' (here), the sub-interface's (the tagged
    // requests below).
    confirm_hosts_and_keep_the_routers_mac(&lab);
    // Tagged frames: the kernel strips the tag before a packet socket sees the frame, vecflow
    // puts it back, so wa's VLAN 100 sub-interface answers ARP (its replies go out tagged);
    // its counters are checked with the others below.
    send_tagged_arp(&lab.a, &lab.veth("a", 0), 100, [10, 0, 100, 2], [10, 0, 100, 1], 3);
    std::thread::sleep(Duration::from_millis(1500));
    let quiet = Instant::now();
    let before: Vec<(u64, u64)> =
        [("a", &lab.a), ("b", &lab.b)].iter().map(|(side, ns)| lab.link_packets(ns, &lab.veth(side, 0))).collect();
    let (ok, _) = lab.ping(&lab.a, &["-c", "3", "-i", "0.2", "-W", "2", "10.0.2.2"]);
    assert!(ok);
    std::thread::sleep(Duration::from_millis(300));
    lab.stop_vecflow(vecflow, dir.path());
    let datagrams = collector.finish();

    let mut baseline: std::collections::BTreeMap<u32, sflow::IfCounters> = Default::default();
    let mut last: std::collections::BTreeMap<u32, sflow::IfCounters> = Default::default();
    let mut flows: std::collections::BTreeMap<(u32, u32), u64> = Default::default();
    for (at, d) in &datagrams {
        for s in sflow::decode(d).unwrap().samples {
            match s {
                sflow::Sample::Flow(f) => {
                    if let (sflow::Interface::Index(i), sflow::Interface::Index(o)) = (f.input, f.output) {
                        *flows.entry((i, o)).or_default() += 1;
                    }
                }
                sflow::Sample::Counters(c) => {
                    for r in c.records {
                        if let sflow::CounterRecord::Generic(g) = r {
                            if *at < quiet {
                                baseline.insert(g.if_index, g);
                            }
                            last.insert(g.if_index, g);
                        }
                    }
                }
                _ => {}
            }
        }
    }
    assert!(flows.get(&(1, 2)).is_some_and(|&n| n > 10), "samples A→B in 1 out 2: {flows:?}");
    assert!(flows.get(&(2, 1)).is_some_and(|&n| n > 10), "samples B→A in 2 out 1: {flows:?}");
    let packets = |c: &sflow::IfCounters| {
        let rx = u64::from(c.in_ucast_pkts) + u64::from(c.in_multicast_pkts) + u64::from(c.in_broadcast_pkts);
        let tx = u64::from(c.out_ucast_pkts) + u64::from(c.out_multicast_pkts) + u64::from(c.out_broadcast_pkts);
        (rx, tx)
    };
    let sub = last.get(&3).expect("counters of the sub-interface wa.100 (ifIndex 3: the lowest free)");
    // (vecflow's own refresh probe may follow, 30 s after it learned the sender.)
    let (rx, tx) = packets(sub);
    assert!(rx == 3 && tx >= 3, "wa.100 received the 3 tagged ARP requests and answered them: {rx} in, {tx} out");
    for (k, (index, side)) in [(1u32, "a"), (2, "b")].into_iter().enumerate() {
        let c = last.get(&index).unwrap_or_else(|| panic!("no counters of ifIndex {index}"));
        assert_eq!((c.if_speed, c.if_status), (10_000_000_000, 3), "veth: 10 Gbit/s, admin and oper up");
        let b =
            baseline.get(&index).unwrap_or_else(|| panic!("no counters of ifIndex {index} before the last exchange"));
        let ns = if side == "a" { &lab.a } else { &lab.b };
        let (host_rx, host_tx) = lab.link_packets(ns, &lab.veth(side, 0));
        let ((rx1, tx1), (rx0, tx0)) = (packets(c), packets(b));
        let host = (host_tx - before[k].1, host_rx - before[k].0);
        assert!(host.0 >= 3, "the last exchange went through ifIndex {index}");
        assert_eq!(
            (rx1 - rx0, tx1 - tx0),
            host,
            "ifIndex {index}: vecflow received what the host sent, and sent what it received"
        );
    }
}

/// Each host resolves the router again (an ARP request addressed to vecflow, which confirms
/// its entry for the host: no probe of it for 35 s), then keeps the router's MAC, so that no
/// ARP of theirs lands after vecflow stopped.
fn confirm_hosts_and_keep_the_routers_mac(lab: &Lab) {
    for (ns, dev, gw, mac) in [
        (&lab.a, lab.veth("a", 0), "10.0.1.1", "02:fe:00:00:00:01"),
        (&lab.b, lab.veth("b", 0), "10.0.2.1", "02:fe:00:00:00:02"),
    ] {
        must("ip", &["-n", ns, "neigh", "flush", "dev", &dev]);
        let (ok, out) = lab.ping(ns, &["-c", "1", "-W", "2", gw]);
        assert!(ok, "ping {gw} from {ns}:\n{out}");
        must("ip", &["-n", ns, "neigh", "replace", gw, "lladdr", mac, "dev", &dev, "nud", "permanent"]);
    }
}

/// TCP through the AF_PACKET lab with the hosts' default offloads, with GRO on the router's
/// end of A's veth as well (super-frames the kernel merged on receive), and with every offload
/// off, in turn, twice: each moves data, and what each reached is printed (the note of the
/// offloads issue reports it; a timed assertion would be flaky).
fn offloads_in_turn(lab: &Lab) {
    let (host_a, router_a) = (lab.veth("a", 0), lab.veth("a", 1));
    let settings: [(&str, &[&str], &[&str]); 3] = [
        ("default offloads", &["tx", "on", "tso", "on", "gso", "on"], &["gro", "off"]),
        ("default offloads and GRO on", &["tx", "on", "tso", "on", "gso", "on"], &["gro", "on"]),
        ("offloads off", &["tx", "off", "tso", "off", "gso", "off"], &["gro", "off"]),
    ];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); settings.len()];
    for _ in 0..2 {
        for (k, (name, host, router)) in settings.iter().enumerate() {
            lab.offloads(&lab.a, &host_a, host);
            lab.offloads(&lab.r, &router_a, router);
            let (bytes, _) = lab.iperf3("10.0.2.2", &[]);
            assert!(bytes > 1_000_000, "iperf3 TCP with {name} moved {bytes} bytes");
            rates[k].push(bytes as f64 * 8.0 / 2.0 / 1e9);
        }
    }
    for ((name, _, _), r) in settings.iter().zip(&rates) {
        eprintln!("iperf3 TCP through vecflow (AF_PACKET), {name}: {:.2} and {:.2} Gbit/s", r[0], r[1]);
    }
    lab.offloads(&lab.a, &host_a, settings[0].1);
    lab.offloads(&lab.r, &router_a, settings[0].2);
}

#[test]
fn ipv6_end_to_end_through_namespaces() {
    ipv6_lab(Port::AfPacket, Port::AfPacket);
}

#[test]
fn ipv6_end_to_end_with_af_xdp() {
    ipv6_lab(Port::AfXdp, Port::AfPacket);
}

/// The routed lab in IPv6, with vecflow's ports `wa` and `wb` on drivers `pa` and `pb`:
///
/// ```text
///  ns A: 2001:db8:1::2/64 ── wa 2001:db8:1::1/64, fe80::fe:ff:fe00:1 (EUI-64) ┐
///        default via fe80::fe:ff:fe00:1                                        vecflow
///  ns B: 2001:db8:2::2/64 ── wb 2001:db8:2::1/64 (MTU 1400)                  ┘
///        default via 2001:db8:2::1
/// ```
///
/// No static neighbors anywhere: every MAC is learned by neighbor discovery, both ways.
fn ipv6_lab(pa: Port, pb: Port) {
    if !can_run() {
        return;
    }
    let lab = Lab::with_ipv6("1400", true);
    lab.facing("a", pa);
    lab.facing("b", pb);
    let (dev_a, dev_b) = (lab.veth("a", 0), lab.veth("b", 0));
    let router_ll = "fe80::fe:ff:fe00:1"; // from wa's MAC 02:fe:00:00:00:01
    for (ns, dev, addr, via) in
        [(&lab.a, &dev_a, "2001:db8:1::2/64", router_ll), (&lab.b, &dev_b, "2001:db8:2::2/64", "2001:db8:2::1")]
    {
        must("ip", &["-n", ns, "-6", "addr", "add", addr, "dev", dev, "nodad"]);
        must("ip", &["-n", ns, "-6", "route", "add", "default", "via", via, "dev", dev]);
    }
    let collector = Collector::start(&lab.r);
    let dir = tempfile::tempdir().unwrap();
    let (vecflow, _) = lab.start_vecflow(
        dir.path(),
        &lab.router_yaml(
            (pa, "addresses: ['2001:db8:1::1/64']"),
            (pb, "addresses: ['2001:db8:2::1/64']"),
            collector.port,
        ),
    );
    let ctl = |args: &[&str]| ctl(dir.path(), args);
    // Both drivers keep the host interface promiscuous: the NIC must pass vecflow's MAC and
    // the solicited-node groups it answers for.
    for side in ["a", "b"] {
        let link = must("ip", &["-n", &lab.r, "-d", "link", "show", &lab.veth(side, 1)]);
        assert!(link.contains("promiscuity") && !link.contains("promiscuity 0"), "{link}");
    }
    let interfaces = ctl(&["show", "interface", "address"]);
    assert!(interfaces.contains(router_ll), "wa has its EUI-64 link-local address:\n{interfaces}");

    // The first packet toward a host vecflow has not resolved yet is dropped while it
    // solicits (no-neighbor, as for ARP); after that, nothing is lost.
    lab.ping(&lab.a, &["-6", "-c", "2", "-i", "0.3", "-W", "1", "2001:db8:2::2"]);
    let a_to_ll = format!("{router_ll}%{dev_a}");
    for (from, to) in [
        (&lab.a, "2001:db8:2::2"),
        (&lab.b, "2001:db8:1::2"),
        (&lab.a, "2001:db8:1::1"),
        (&lab.a, "2001:db8:2::1"),
        (&lab.a, a_to_ll.as_str()),
    ] {
        let (ok, out) = lab.ping(from, &["-6", "-c", "5", "-i", "0.2", "-W", "2", to]);
        assert!(ok && out.contains("5 received"), "ping -6 {to} from {from}:\n{out}");
    }
    // Hop limit 1: answered by vecflow itself, time exceeded on the way through.
    let (ok, out) = lab.ping(&lab.a, &["-6", "-c", "1", "-t", "1", "-W", "2", "2001:db8:1::1"]);
    assert!(ok, "hop limit 1 to the router:\n{out}");
    let (_, out) = lab.ping(&lab.a, &["-6", "-c", "1", "-t", "1", "-W", "2", "2001:db8:2::2"]);
    assert!(out.contains("From 2001:db8:1::1") && out.contains("Time exceeded"), "{out}");
    // Too big for wb's MTU: packet too big with the MTU, which A's kernel takes (PMTUD).
    let (_, out) = lab.ping(&lab.a, &["-6", "-c", "1", "-M", "do", "-s", "1450", "-W", "2", "2001:db8:2::2"]);
    assert!(out.contains("From 2001:db8:1::1") && out.contains("Packet too big: mtu=1400"), "{out}");
    let route = must("ip", &["-n", &lab.a, "-6", "route", "get", "2001:db8:2::2"]);
    assert!(route.contains("mtu 1400"), "A learned the path MTU: {route}");
    let (ok, out) = lab.ping(&lab.a, &["-6", "-c", "3", "-i", "0.2", "-s", "1450", "-W", "2", "2001:db8:2::2"]);
    assert!(ok && out.contains("3 received"), "A fragments to the path MTU itself:\n{out}");
    let (_, out) = lab.ping(&lab.a, &["-6", "-c", "1", "-W", "2", "2001:db8:9::9"]);
    assert!(out.contains("Destination unreachable: No route"), "{out}");
    // Nobody has 2001:db8:2::77: after the solicitations go unanswered (3 s), address
    // unreachable.
    let (_, out) = lab.ping(&lab.a, &["-6", "-c", "6", "-i", "1", "-W", "1", "2001:db8:2::77"]);
    assert!(out.contains("From 2001:db8:1::1") && out.contains("Address unreachable"), "{out}");

    // TCP across the smaller MTU: A's 1440-byte segments get packet too big until it sends
    // at the path MTU.
    must("ip", &["-n", &lab.a, "-6", "route", "flush", "cache"]);
    let (bytes, _) = lab.iperf3("2001:db8:2::2", &[]);
    assert!(bytes > 1_000_000, "iperf3 -6 TCP moved {bytes} bytes");

    // Every neighbor was learned by ND: B from its advertisements answering our
    // solicitations, A from its solicitations (sent from the address of the packet that
    // needed them); the address nobody has failed.
    let neighbors = ctl(&["show", "ip6", "neighbors"]);
    let row = |addr: &str| -> Vec<String> {
        let line = neighbors.lines().find(|l| l.split_whitespace().nth(1) == Some(addr)).unwrap_or_default();
        line.split_whitespace().map(String::from).collect()
    };
    let learned = ["reachable", "stale", "delay", "probe"];
    for (addr, port) in [("2001:db8:2::2", "wb"), ("2001:db8:1::2", "wa")] {
        let r = row(addr);
        assert!(r.len() == 5 && r[0] == port && learned.contains(&r[3].as_str()), "{addr}:\n{neighbors}");
    }
    assert_eq!(row("2001:db8:2::77").get(3).map(String::as_str), Some("failed"), "{neighbors}");
    assert!(!neighbors.contains("static"), "{neighbors}");
    let stats = ctl(&["show", "errors"]);
    std::thread::sleep(Duration::from_millis(1500));
    lab.stop_vecflow(vecflow, dir.path());
    let datagrams = collector.finish();

    // Samples of the IPv6 traffic both ways, with extended_router naming the IPv6 next hop
    // (the connected destination) and its /64.
    let mut routers: std::collections::BTreeMap<(u32, u32), Vec<sflow::ExtendedRouter>> = Default::default();
    for (_, d) in &datagrams {
        for s in sflow::decode(d).unwrap().samples {
            if let sflow::Sample::Flow(f) = s
                && let (sflow::Interface::Index(i), sflow::Interface::Index(o)) = (f.input, f.output)
            {
                for r in f.records {
                    if let sflow::FlowRecord::Router(x) = r {
                        routers.entry((i, o)).or_default().push(x);
                    }
                }
            }
        }
    }
    let hops = |k: (u32, u32)| -> Vec<String> {
        let mut v: Vec<_> = routers.get(&k).into_iter().flatten().map(|r| r.next_hop.to_string()).collect();
        v.dedup();
        v
    };
    assert!(routers.get(&(1, 2)).is_some_and(|v| v.len() > 10), "samples A→B: {routers:?}\n{stats}");
    assert!(routers.get(&(2, 1)).is_some_and(|v| v.len() > 10), "samples B→A: {routers:?}");
    assert!(hops((1, 2)).contains(&"2001:db8:2::2".to_string()), "{:?}", hops((1, 2)));
    assert!(hops((2, 1)).contains(&"2001:db8:1::2".to_string()), "{:?}", hops((2, 1)));
    assert!(routers[&(1, 2)].iter().all(|r| r.dst_mask_len == 64 && r.next_hop.is_ipv6()));
}

/// The counters `show interface` printed for interface `name` (e.g. "rx packets" → 12).
fn show_counters(show: &str, name: &str) -> std::collections::BTreeMap<String, u64> {
    let mut out = std::collections::BTreeMap::new();
    let mut inside = false;
    for line in show.lines().skip_while(|l| !l.starts_with("vecflow# show interface")).skip(2) {
        if line.is_empty() || line.starts_with("vecflow#") {
            break;
        }
        if !line.starts_with(' ') {
            inside = line.split_whitespace().next() == Some(name);
        }
        if inside {
            // "... Counter words ... Count": the last field is the count, the two before it the name.
            let fields: Vec<&str> = line.split_whitespace().collect();
            if let [.., a, b, n] = fields[..]
                && let Ok(n) = n.parse()
            {
                out.insert(format!("{a} {b}"), n);
            }
        }
    }
    out
}

#[test]
fn l2_cross_connect_between_two_hosts_of_one_subnet() {
    l2_lab(Port::AfPacket);
}

#[test]
fn l2_cross_connect_with_af_xdp_in_interrupt_mode() {
    l2_lab(Port::AfXdp);
}

/// The L2 lab with vecflow's ports on driver `port`.
fn l2_lab(port: Port) {
    if !can_run() {
        return;
    }
    let lab = Lab::new("1500");
    lab.facing("a", port);
    lab.facing("b", port);
    lab.address("a", "10.0.5.1/24", None);
    lab.address("b", "10.0.5.2/24", None);
    let dir = tempfile::tempdir().unwrap();
    let (vecflow, _) = lab.start_vecflow(
        dir.path(),
        &format!(
            "workers: {{count: 2}}
metrics: {{enabled: false}}
interfaces:
  xa: {{index: 1, {}, host-interface: {}, l2xc: xb}}
  xb: {{index: 2, {}, host-interface: {}, l2xc: xa}}
",
            port.yaml(1, "interrupt"),
            lab.veth("a", 1),
            port.yaml(1, "interrupt"),
            lab.veth("b", 1)
        ),
    );
    let before: Vec<(u64, u64)> = ["a", "b"].iter().map(|s| lab.link_packets(lab.host(s), &lab.veth(s, 0))).collect();
    // Nothing is lost at L2: ARP goes through the cross-connect like everything else.
    for (from, to) in [(&lab.a, "10.0.5.2"), (&lab.b, "10.0.5.1")] {
        let (ok, out) = lab.ping(from, &["-c", "5", "-i", "0.2", "-W", "2", to]);
        assert!(ok && out.contains("5 received"), "ping {to} from {from}:\n{out}");
    }
    // The rx mode changes while it runs; traffic goes on.
    let ctl = |args: &[&str]| ctl(dir.path(), args);
    ctl(&["set", "interface", "rx-mode", "xa", "adaptive"]);
    let hardware = ctl(&["show", "hardware"]);
    let xa = hardware.lines().find(|l| l.starts_with("xa ")).unwrap_or_default();
    assert!(xa.contains("rx-mode=adaptive"), "{hardware}");
    if port == Port::AfXdp {
        assert!(xa.contains("xdp=native") && xa.contains("copy=copy"), "veth: native XDP, copy mode\n{hardware}");
    }
    let (bytes, _) = lab.iperf3("10.0.5.2", &[]);
    assert!(bytes > 1_000_000, "iperf3 TCP moved {bytes} bytes");
    if port == Port::AfXdp {
        // The NAPI id that last delivered to each rx queue (what busy polling would drive):
        // on veth (native XDP, copy mode) the kernel reports none, 0.
        let hardware = ctl(&["show", "hardware"]);
        let xa = hardware.lines().find(|l| l.starts_with("xa ")).unwrap_or_default();
        let napi = xa.split_whitespace().find_map(|w| w.strip_prefix("napi=")).unwrap_or_default();
        let ids: Vec<Option<u32>> = napi.trim_end_matches(',').split(',').map(|id| id.parse().ok()).collect();
        assert!(ids.len() == 2 && ids.iter().all(Option::is_some), "one NAPI id per rx queue:\n{hardware}");
        eprintln!("AF_XDP on veth, XDP native, copy mode: NAPI ids of xa's rx queues: {napi}");
        // Busy polling: the sockets get their options within a second. veth's XDP queues
        // report no NAPI, so no NAPI setting is touched; the UDP run below goes through it.
        ctl(&["set", "interface", "rx-mode", "xa", "busy-poll"]);
        wait_for_log(&dir.path().join("vecflow.log"), &format!("{}: busy polling on", lab.veth("a", 1)));
        let hardware = ctl(&["show", "hardware"]);
        let xa = hardware.lines().find(|l| l.starts_with("xa ")).unwrap_or_default();
        assert!(xa.contains("rx-mode=busy-poll") && xa.contains("busy-poll-napi=none"), "{hardware}");
    } else {
        let refused = Command::new(env!("CARGO_BIN_EXE_vecflow"))
            .args(["ctl", "--socket"])
            .arg(dir.path().join("api.sock"))
            .args(["set", "interface", "rx-mode", "xa", "busy-poll"])
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success() && said.contains("busy-poll only with driver: af-xdp"), "{said}");
    }
    let (bytes, lost) = lab.iperf3("10.0.5.2", &["-u", "-b", "20M"]);
    let lost = lost.unwrap_or(100.0);
    eprintln!("iperf3 UDP 20 Mbit/s through vecflow's L2XC: {bytes} bytes, {lost:.2} % lost");
    assert!(bytes > 1_000_000 && lost < 5.0, "UDP: {bytes} bytes, {lost} % lost");
    // A host with TSO counts a super-frame as one packet sent, vecflow the segments it cuts
    // from it: what the hosts sent is compared over a last exchange of pings.
    std::thread::sleep(Duration::from_millis(300));
    let quiet: Vec<(u64, u64)> = ["a", "b"].iter().map(|s| lab.link_packets(lab.host(s), &lab.veth(s, 0))).collect();
    let quiet_show = format!("vecflow# show interface\n{}", ctl(&["show", "interface"]));
    for (from, to) in [(&lab.a, "10.0.5.2"), (&lab.b, "10.0.5.1")] {
        let (ok, out) = lab.ping(from, &["-c", "3", "-i", "0.2", "-W", "2", to]);
        assert!(ok && out.contains("3 received"), "ping {to} from {from}:\n{out}");
    }
    std::thread::sleep(Duration::from_millis(300));
    let show = lab.stop_vecflow(vecflow, dir.path());
    // Every frame a host sent reached vecflow (or the kernel dropped it for want of ring
    // room: rx miss), and every frame a host received came from vecflow.
    for (k, (side, name, peer)) in [("a", "xa", "xb"), ("b", "xb", "xa")].into_iter().enumerate() {
        let (host_rx, host_tx) = lab.link_packets(lab.host(side), &lab.veth(side, 0));
        let (mine, theirs) = (show_counters(&show, name), show_counters(&show, peer));
        let mine_quiet = show_counters(&quiet_show, name);
        let got = |c: &std::collections::BTreeMap<String, u64>, k: &str| c.get(k).copied().unwrap_or(0);
        let received = |c: &std::collections::BTreeMap<String, u64>| got(c, "rx packets") + got(c, "rx miss");
        assert_eq!(
            host_tx - quiet[k].1,
            received(&mine) - received(&mine_quiet),
            "{name} received what host {side} sent in the last exchange\n{show}"
        );
        assert_eq!(host_rx - before[k].0, got(&mine, "tx packets"), "host {side} received what {name} sent\n{show}");
        assert_eq!(got(&mine, "tx packets"), got(&theirs, "rx packets"), "{peer}'s frames all left through {name}");
    }
}

/// Runs `tests/hosts/vlan_host.py` in namespace `ns` with `args`.
fn vlan_host(ns: &str, args: &[&str]) -> Command {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/hosts/vlan_host.py");
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", ns, "python3", script]).args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// The JSON a `vlan_host.py` printed.
fn host_report(out: Output) -> serde_json::Value {
    assert!(out.status.success(), "vlan_host.py: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn routed_between_802_1q_sub_interfaces_with_tagged_hosts() {
    vlan_lab(Port::AfPacket);
}

#[test]
fn routed_between_802_1q_sub_interfaces_with_af_xdp() {
    vlan_lab(Port::AfXdp);
}

/// The VLAN lab with vecflow's ports on driver `port`.
fn vlan_lab(port: Port) {
    if !can_run() {
        return;
    }
    let lab = Lab::new("1500");
    let dir = tempfile::tempdir().unwrap();
    let (vecflow, _) = lab.start_vecflow(
        dir.path(),
        &format!(
            "metrics: {{enabled: false}}
interfaces:
  va:
    index: 1
    {}
    host-interface: {}
    mac: '02:fe:00:00:00:0a'
    sub-interfaces: {{10: {{encapsulation: {{dot1q: 10}}, addresses: [10.0.10.1/24]}}}}
  vb:
    index: 2
    {}
    host-interface: {}
    mac: '02:fe:00:00:00:0b'
    sub-interfaces: {{20: {{encapsulation: {{dot1q: 20}}, addresses: [10.0.20.1/24]}}}}
",
            port.yaml(1, "adaptive").replace(", ", "\n    "),
            lab.veth("a", 1),
            port.yaml(1, "adaptive").replace(", ", "\n    "),
            lab.veth("b", 1)
        ),
    );
    let (dev_a, dev_b) = (lab.veth("a", 0), lab.veth("b", 0));
    let server =
        Daemon::spawn(&mut vlan_host(&lab.b, &["server", &dev_b, "20", "02:00:00:00:20:02", "10.0.20.2", "6"]));
    std::thread::sleep(Duration::from_millis(300));
    let count = 20;
    let client = vlan_host(
        &lab.a,
        &["client", &dev_a, "10", "02:00:00:00:10:02", "10.0.10.2", "5", "10.0.10.1", "10.0.20.2", &count.to_string()],
    )
    .output()
    .unwrap();
    let (a, b) = (host_report(client), host_report(server.wait_with_output()));
    let show = lab.stop_vecflow(vecflow, dir.path());
    assert_eq!(a["gateway_mac"], "02:fe:00:00:00:0a", "va.10 answered A's tagged ARP: {a}");
    // The first datagram may be lost while vecflow resolves B; after that none.
    let (to_b, to_a) = (b["udp"].as_array().unwrap(), a["udp"].as_array().unwrap());
    assert!(
        to_b.len() >= count - 1 && to_a.len() == to_b.len(),
        "datagrams: A→B {}, B→A {}\n{show}",
        to_b.len(),
        to_a.len()
    );
    for (d, vlan, from) in to_b.iter().map(|d| (d, 20, "10.0.10.2")).chain(to_a.iter().map(|d| (d, 10, "10.0.20.2"))) {
        assert_eq!(
            (d["vlan"].as_u64(), d["ttl"].as_u64(), d["from"].as_str()),
            (Some(vlan), Some(63), Some(from)),
            "{d}"
        );
    }
    // The hosts saw only their own VLAN, and the sub-interfaces' counters are the hosts'.
    for (host, vlan, sub) in [(&a, "10", "va.10"), (&b, "20", "vb.20")] {
        let received = host["received"].as_object().unwrap();
        assert_eq!(received.keys().collect::<Vec<_>>(), [vlan], "{host}");
        let c = show_counters(&show, sub);
        assert_eq!(c.get("rx packets").copied(), host["sent"].as_u64(), "{sub} received what its host sent\n{show}");
        assert_eq!(c.get("tx packets").copied(), received[vlan].as_u64(), "{sub} sent what its host received\n{show}");
    }
}
