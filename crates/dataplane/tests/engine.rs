//! The running dataplane: workers forward generated traffic and the counters add up.

use dataplane::control::cli::Registry;
use dataplane::{Config, Dataplane};
use std::time::Duration;

const LAB: &str = include_str!("../../../examples/lab.yaml");

#[test]
fn lab_forwards_on_two_workers_and_every_packet_is_accounted_for() {
    let cfg = Config::load(LAB).unwrap();
    let mut dp = Dataplane::start(&cfg).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    dp.stop().unwrap();
    let by_name = |n: &str| dp.interfaces().iter().find(|i| i.name == n).unwrap().index;
    for i in dp.interfaces() {
        let s = dp.interface_stats(i.index);
        let dropped: u64 = dp.drops_of(i.index).iter().sum();
        assert_eq!(s.rx_packets, s.rx_forwarded + dropped, "{}: {s:?}", i.name);
    }
    // Cross-connected and routed pairs: what one receives and forwards the other sends; port5
    // also sends the ICMP time exceeded errors about its TTL-1 trickle back to their source
    // (but for the trickle's one source without a route back, 48.0.3.0: those are dropped).
    let made = dp.punt_stats().icmp_sent;
    let unroutable = dp.drops_of(0)[dataplane::ip4::drops::NO_ROUTE.index()];
    assert!(made > unroutable, "time exceeded sent about the trickle");
    let icmp = made - unroutable;
    for (a, b) in [("port0", "port1"), ("port4", "port5"), ("port2", "port3"), ("port6", "port7")] {
        let (sa, sb) = (dp.interface_stats(by_name(a)), dp.interface_stats(by_name(b)));
        assert!(sa.rx_packets > 10_000, "{a} generated {}", sa.rx_packets);
        assert_eq!(sa.rx_forwarded + if b == "port5" { icmp } else { 0 }, sb.tx_packets, "{a} -> {b}");
        assert_eq!(sb.rx_forwarded, sa.tx_packets, "{b} -> {a}");
    }
    assert_eq!(dp.interface_stats(0).rx_forwarded, icmp, "packets this router made count on interface 0");
    // The only drops are port5's TTL-1 trickle, there for drop monitoring to report, and
    // (shown as "(local)") the time exceeded errors toward the source without a route back.
    let rows = dp.errors();
    let (local, others): (Vec<_>, Vec<_>) =
        rows.iter().partition(|r| r.interface == dataplane::control::counters::LOCAL);
    assert!(others.len() == 1 && others[0].reason == "ttl-expired" && others[0].interface == "port5", "{rows:?}");
    assert!(local.iter().all(|r| r.reason == "no-route"), "{rows:?}");
    assert_eq!(local.iter().map(|r| r.count).sum::<u64>(), unroutable, "{rows:?}");
    let g = dp.generator_stats();
    let tx: u64 = dp.interfaces().iter().map(|i| dp.interface_stats(i.index).tx_packets).sum();
    assert_eq!(g.sink_packets, tx);
}

#[test]
fn show_commands_answer_in_text_and_json() {
    let cfg = Config::load(LAB).unwrap();
    let mut dp = Dataplane::start(&cfg).unwrap();
    let r = Registry::with_builtins();
    // Until every node has run, both workers have forwarded (port2 is on worker 0) and the
    // TTL-1 trickle has dropped: events waited for, however long a busy machine takes (the
    // deadline only keeps a broken dataplane from hanging the test).
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    loop {
        let runtime = r.execute(&mut dp, "show runtime").unwrap().text;
        let port2_forwarded =
            dp.interfaces().iter().any(|i| i.name == "port2" && dp.interface_stats(i.index).rx_packets > 0);
        let trickle_dropped = dp.errors().iter().any(|e| e.reason == "ttl-expired");
        if runtime.contains("ip4-rewrite") && runtime.contains("generator-tx") && port2_forwarded && trickle_dropped {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the lab did not get going in 300 s:\n{runtime}");
        std::thread::sleep(Duration::from_millis(50));
    }
    dp.stop().unwrap();
    let rt = r.execute(&mut dp, "show runtime").unwrap();
    assert_eq!(rt.json["workers"].as_array().unwrap().len(), 2);
    for node in [
        "generator-input",
        "ethernet-input",
        "l2-xconnect",
        "ip4-input",
        "ip4-lookup",
        "ip4-rewrite",
        "interface-output",
        "generator-tx",
    ] {
        assert!(rt.text.contains(node), "{node} missing from\n{}", rt.text);
    }
    // port5's TTL-1 trickle, and perhaps (as input "(local)") time exceeded errors toward its
    // source without a route back, depending on how long the lab ran.
    let errs = r.execute(&mut dp, "show errors").unwrap();
    let rows = errs.json["errors"].as_array().unwrap();
    let (local, others): (Vec<_>, Vec<_>) =
        rows.iter().partition(|e| e["interface"] == dataplane::control::counters::LOCAL);
    assert!(
        others.len() == 1 && others[0]["reason"] == "ttl-expired" && others[0]["interface"] == "port5",
        "{}",
        errs.text
    );
    assert!(local.iter().all(|e| e["reason"] == "no-route"), "{}", errs.text);
    let fib = r.execute(&mut dp, "show ip fib").unwrap();
    assert_eq!(
        fib.json["total_routes"], 16,
        "4 routes + 4 connected /31s + 4 local /32s + host routes of the 4 neighbors:\n{}",
        fib.text
    );
    let one = r.execute(&mut dp, "show ip fib 48.0.0.77").unwrap();
    assert_eq!(one.json["routes"][0]["prefix"], "48.0.0.0/24");
    assert!(one.text.contains("via 100.64.1.0 out port1 (00:1b:21:06:00:01)"), "{}", one.text);
    let exact = r.execute(&mut dp, "show ip fib 100.64.0.1/32").unwrap();
    assert_eq!(exact.json["routes"][0]["adjacency"]["kind"], "local");
    assert!(r.execute(&mut dp, "show ip fib nonsense").unwrap_err().contains("neither a prefix"));
    let n = r.execute(&mut dp, "show neighbors").unwrap();
    assert_eq!(n.json["neighbors"].as_array().unwrap().len(), 4);
    assert_eq!(n.json["neighbors"][0]["interface"], "port0");
    let one = r.execute(&mut dp, "show interface port2").unwrap();
    assert_eq!(one.json["interfaces"].as_array().unwrap().len(), 1);
    assert!(one.json["interfaces"][0]["counters"]["rx_packets"].as_u64().unwrap() > 0, "{}", one.json);
    assert!(r.execute(&mut dp, "show interface nope").unwrap_err().contains("no interface named 'nope'"));
    assert!(r.execute(&mut dp, "show bogus").unwrap_err().contains("unknown command"));
    let memory = r.execute(&mut dp, "show memory").unwrap();
    let tables = memory.json["structures"].as_array().unwrap();
    let names: Vec<&str> = tables.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["ip4-fib", "ip6-fib", "rib", "adjacencies"], "no linux-cp here:\n{}", memory.text);
    let rib = &tables[2];
    assert_eq!(rib["entries"], 16, "the FIB's 16 prefixes:\n{}", memory.text);
    assert!(tables[0]["bytes"].as_u64().unwrap() >= 64 << 20, "tbl24 alone is 64 MiB:\n{}", memory.text);
    let counted = tables.iter().map(|t| t["bytes"].as_u64().unwrap()).sum::<u64>();
    assert_eq!(memory.json["counted_bytes"], counted);
    assert!(memory.json["rss_bytes"].as_u64().unwrap() > 0 && memory.text.contains("resident (VmRSS)"));
}

/// A stream with `count` sends exactly that many packets, then stops; with fewer buffers
/// than AF_XDP ports would need, since there are none (the fuzz target `api` found that start
/// refused `workers.buffers` below 4096 for AF_XDP sockets that did not exist).
#[test]
fn a_stream_with_a_count_sends_exactly_that_many() {
    let cfg = Config::load(
        "workers: {buffers: 2048}\ninterfaces:\n  p0: {l2xc: p1, generator: {streams: [{template: l2, count: 1000}, {template: l2, count: 77}]}}\n  p1: {l2xc: p0}\n",
    )
    .unwrap();
    let mut dp = Dataplane::start(&cfg).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let p1 = dp.interfaces().iter().find(|i| i.name == "p1").unwrap().index;
    while dp.interface_stats(p1).tx_packets < 1077 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    dp.stop().unwrap();
    assert_eq!(dp.interface_stats(p1).tx_packets, 1077);
}

/// Drops of packets vecflow made itself are shown too, as input "(local)": here the ICMP
/// time-exceeded messages about TTL-1 packets from a source nothing routes back to.
#[test]
fn drops_of_packets_vecflow_made_are_shown_as_local() {
    let cfg = Config::load(
        "interfaces:
  p0:
    addresses: [10.1.0.1/24]
    generator: {streams: [{src-ip: 9.9.9.9, src-range: {count: 1}, dst-ip: 48.0.0.1, ttl: 1, count: 100, rate-pps: 10000}]}
  p1: {addresses: [10.2.0.1/24]}
routes: [{prefix: 48.0.0.0/8, via: 10.2.0.2}]
neighbors: [{interface: p1, address: 10.2.0.2, mac: '02:00:00:00:00:22'}]
",
    )
    .unwrap();
    let mut dp = Dataplane::start(&cfg).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let dropped = |dp: &Dataplane, interface: &str, reason: &str| {
        dp.errors().iter().filter(|e| e.interface == interface && e.reason == reason).map(|e| e.count).sum::<u64>()
    };
    while dropped(&dp, "p0", "ttl-expired") < 100 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    dp.stop().unwrap();
    assert_eq!(dropped(&dp, "p0", "ttl-expired"), 100);
    let local = dropped(&dp, dataplane::control::counters::LOCAL, "no-route");
    assert!(local > 0, "ICMP errors toward 9.9.9.9 (no route) dropped as (local): {:?}", dp.errors());
    let text = Registry::with_builtins().execute(&mut dp, "show errors").unwrap().text;
    assert!(text.contains("(local)"), "{text}");
}

/// The IPv6 example: dual-stack routing, a route with out-labels and a pop to IPv6 forward
/// every packet, with no drop, and `show ip6 fib` shows the routes.
#[test]
fn ip6_example_forwards_every_packet() {
    let cfg = Config::load(include_str!("../../../examples/ip6.yaml")).unwrap();
    let mut dp = Dataplane::start(&cfg).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let fib = Registry::with_builtins().execute(&mut dp, "show ip6 fib 2001:db8:60::7").unwrap();
    let neighbors = Registry::with_builtins().execute(&mut dp, "show ip6 neighbors").unwrap();
    dp.stop().unwrap();
    assert!(dp.errors().is_empty(), "{:?}", dp.errors());
    let by_name = |n: &str| dp.interfaces().iter().find(|i| i.name == n).unwrap().index;
    for (a, b) in [("port0", "port1"), ("port1", "port0"), ("port2", "port3"), ("port3", "port2")] {
        let (sa, sb) = (dp.interface_stats(by_name(a)), dp.interface_stats(by_name(b)));
        assert!(sa.rx_packets > 1000, "{a} generated {}", sa.rx_packets);
        assert_eq!(sa.rx_packets, sa.rx_forwarded, "{a}");
        assert_eq!(sa.rx_forwarded, sb.tx_packets, "{a} -> {b}");
    }
    let routes = fib.json["routes"].as_array().unwrap();
    assert_eq!(routes.len(), 1, "{}", fib.text);
    assert_eq!(routes[0]["prefix"], "2001:db8:60::/48");
    assert!(fib.text.contains("600"), "the out-label: {}", fib.text);
    let rows: Vec<(&str, &str, &str)> = neighbors.json["neighbors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["interface"].as_str().unwrap(), n["address"].as_str().unwrap(), n["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rows,
        [
            ("port0", "2001:db8:100::2", "static"),
            ("port1", "2001:db8:101::2", "static"),
            ("port2", "fe80::2", "static"),
            ("port3", "2001:db8:103::2", "static")
        ],
        "{}",
        neighbors.text
    );
    assert!(neighbors.text.contains("00:1b:21:06:00:02"), "{}", neighbors.text);
}
