//! The sFlow agent end to end: a running two-worker dataplane samples a routed port and a
//! cross-connected port and exports to a UDP socket on 127.0.0.1; every datagram is decoded.

use dataplane::control::cli::Registry;
use dataplane::{Config, Dataplane};
use sflow::{CounterRecord, FlowRecord, Interface, Sample};
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::time::Duration;

/// A port on 127.0.0.1 with nobody listening (bound, then closed).
fn closed_port() -> u16 {
    UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn config(collector_port: u16) -> Config {
    // The second collector refuses (no listener): that must not disturb the first.
    let refusing = closed_port();
    Config::load(&format!(
        "
workers: {{count: 2}}
sflow:
  sampling-rate: 1000
  polling-interval: 1
  collectors: [{{address: 127.0.0.1, port: {collector_port}}}, {{address: 127.0.0.1, port: {refusing}}}]
  agent-address: 192.0.2.1
interfaces:
  port0:
    mac: 9c:69:b4:61:a1:dc
    addresses: [100.64.0.1/31]
    rx-placement: {{worker: 0}}
    sflow: {{sampling-rate: 100}}
    generator: {{streams: [{{src-mac: 00:1b:21:06:00:00, src-ip: 16.0.0.1, dst-ip: 48.0.0.1, src-range: {{count: 200}}, dst-range: {{count: 200}}, rate-pps: 200000}}]}}
  port1:
    mac: 9c:69:b4:61:a1:dd
    addresses: [100.64.1.1/31]
    rx-placement: {{worker: 1}}
  port2:
    l2xc: port3
    rx-placement: {{worker: 1}}
    sflow: {{}}
    generator: {{streams: [{{template: l2, rate-pps: 300000}}]}}
  port3: {{l2xc: port2, rx-placement: {{worker: 0}}}}
routes:
  - {{prefix: 16.0.0.0/24, via: 100.64.0.0}}
  - {{prefix: 48.0.0.0/24, via: 100.64.1.0}}
neighbors:
  - {{interface: port0, address: 100.64.0.0, mac: 00:1b:21:06:00:00}}
  - {{interface: port1, address: 100.64.1.0, mac: 00:1b:21:06:00:01}}
"
    ))
    .unwrap()
}

/// [`config`] with port0 and port1 in VRF red, whose routes are not the default table's: 16.0.0.0/20
/// (the default table has no route to the samples' sources at all).
fn vrf_config(collector_port: u16) -> Config {
    let mut c = config(collector_port);
    c.vrfs.insert("red".into(), dataplane::config::VrfConfig { table: 10 });
    for port in ["port0", "port1"] {
        c.interfaces.get_mut(port).unwrap().vrf = Some("red".into());
    }
    c.routes[0].prefix = "16.0.0.0/20".parse().unwrap();
    c.routes.iter_mut().for_each(|r| r.vrf = Some("red".into()));
    c.validate().unwrap();
    c
}

/// Flow samples by data source.
type BySource = BTreeMap<u32, Vec<sflow::FlowSample<'static>>>;
/// Counter samples by data source.
type Polls = BTreeMap<u32, Vec<sflow::CountersSample<'static>>>;

/// Everything a collector received.
struct Collected {
    dp: Dataplane,
    flows: BySource,
    polls: Polls,
    discards: Vec<sflow::DiscardSample<'static>>,
    datagram_seqs: Vec<u32>,
    agents: std::collections::BTreeSet<IpAddr>,
    /// Datagrams that mixed discard samples with other samples.
    mixed: usize,
}

/// Runs the config `make` gives for a collector on a port (700 ms) and returns the stopped
/// dataplane, the flow samples by data source, the datagram sequence numbers and agents.
fn run(make: impl Fn(u16) -> Config) -> Collected {
    run_until(make, |_| true)
}

/// [`run`], but on for as long as it takes `enough` to hold (at least 700 ms): what a test
/// counts on is waited for, so a busy machine makes the run longer, never the test fail.
fn run_until(make: impl Fn(u16) -> Config, enough: impl Fn(&Dataplane) -> bool) -> Collected {
    let listener = UdpSocket::bind("127.0.0.1:0").unwrap();
    listener.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let port = listener.local_addr().unwrap().port();
    // Read while the dataplane runs, so the socket buffer never overflows, and until nothing
    // more comes once it has stopped (a slow start must not end the reading before the first
    // datagram).
    let running = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let still = running.clone();
    let reader = std::thread::spawn(move || {
        let mut got = vec![];
        let mut buf = [0u8; 65536];
        loop {
            match listener.recv(&mut buf) {
                Ok(n) => got.push(buf[..n].to_vec()),
                Err(_) if still.load(std::sync::atomic::Ordering::Acquire) => {}
                Err(_) => break,
            }
        }
        got
    });
    let mut dp = Dataplane::start(&make(port)).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // The deadline only keeps a broken dataplane from hanging the test.
    let deadline = std::time::Instant::now() + Duration::from_secs(300);
    while !enough(&dp) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    dp.stop().unwrap();
    running.store(false, std::sync::atomic::Ordering::Release);
    let datagrams = reader.join().unwrap();
    let mut by_source: BySource = BTreeMap::new();
    let mut polls: Polls = BTreeMap::new();
    let mut discards = vec![];
    let mut mixed = 0;
    let mut datagram_seqs = vec![];
    let mut agents = std::collections::BTreeSet::new();
    for bytes in &datagrams {
        assert!(bytes.len() <= 1400, "datagram of {} bytes", bytes.len());
        let d = sflow::decode(bytes).unwrap().into_owned();
        datagram_seqs.push(d.sequence);
        agents.insert(d.agent);
        let n_discards = d.samples.iter().filter(|s| matches!(s, Sample::Discard(_))).count();
        mixed += usize::from(n_discards > 0 && n_discards < d.samples.len());
        for s in d.samples {
            match s {
                Sample::Flow(f) => by_source.entry(f.source.index).or_default().push(f),
                Sample::Counters(c) => polls.entry(c.source.index).or_default().push(c),
                Sample::Discard(x) => discards.push(x),
                other => panic!("unexpected sample {other:?}"),
            }
        }
    }
    Collected { dp, flows: by_source, polls, discards, datagram_seqs, agents, mixed }
}

/// The generic counters of a counter sample.
fn generic(c: &sflow::CountersSample<'_>) -> sflow::IfCounters {
    c.records
        .iter()
        .find_map(|r| if let CounterRecord::Generic(g) = r { Some(*g) } else { None })
        .expect("generic counters")
}

#[test]
fn a_samples_source_prefix_comes_from_its_vrfs_table() {
    let Collected { dp, flows, .. } = run(vrf_config);
    let p0 = u32::from(dp.interfaces().iter().find(|i| i.name == "port0").unwrap().index);
    assert!(!flows[&p0].is_empty(), "samples of port0");
    for f in &flows[&p0] {
        let FlowRecord::Router(r) = f.records[1] else { panic!("router record on routed samples: {:?}", f.records) };
        assert_eq!((r.src_mask_len, r.dst_mask_len), (20, 24), "red's 16.0.0.0/20 and 48.0.0.0/24");
    }
}

#[test]
fn samples_carry_counted_pools_gapless_sequences_and_forwarding_decisions() {
    let Collected { mut dp, flows: by_source, datagram_seqs, agents, polls, .. } = run(config);
    assert!(datagram_seqs.windows(2).all(|w| w[1] == w[0] + 1), "datagram sequence without gaps");
    assert_eq!(agents.into_iter().collect::<Vec<_>>(), [IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))]);
    let index = |n: &str| u32::from(dp.interfaces().iter().find(|i| i.name == n).unwrap().index);
    let (p0, p1, p2, p3) = (index("port0"), index("port1"), index("port2"), index("port3"));
    let (_, totals, rows) = dp.sflow().unwrap();
    let routed = &by_source[&p0];
    let switched = &by_source[&p2];
    // Up to 200 kpps for 0.7 s at 1:100 and 300 kpps at 1:1000 (a debug build sends less).
    assert!(routed.len() > 100 && switched.len() > 20, "{} {}", routed.len(), switched.len());
    for (samples, rate, input, output) in [(routed, 100, p0, p1), (switched, 1000, p2, p3)] {
        for (k, f) in samples.iter().enumerate() {
            assert_eq!(f.sequence as usize, k + 1, "per-source sequence without gaps");
            assert_eq!(f.sampling_rate, rate);
            assert_eq!((f.input, f.output), (Interface::Index(input), Interface::Index(output)));
            let FlowRecord::RawHeader(h) = &f.records[0] else { panic!("raw header first") };
            assert_eq!((h.protocol, h.stripped, h.frame_length), (1, 4, 64));
            assert_eq!(h.header.len(), 60, "whole 60-byte frame (header-bytes 128)");
        }
        assert!(samples.windows(2).all(|w| w[0].sample_pool <= w[1].sample_pool));
    }
    for f in routed {
        let FlowRecord::Router(r) = f.records[1] else { panic!("router record on routed samples: {:?}", f.records) };
        assert_eq!((r.next_hop, r.src_mask_len, r.dst_mask_len), (IpAddr::V4(Ipv4Addr::new(100, 64, 1, 0)), 24, 24));
    }
    assert!(switched.iter().all(|f| f.records.len() == 1), "no router record on switched samples");
    // The pool counts packets forwarded up to when the agent encoded the sample: never more
    // than were forwarded in all, and close to it at the last sample (packets forwarded after
    // it are in no sample). No sample was lost.
    for (samples, ifx) in [(routed, p0), (switched, p2)] {
        let stats = dp.interface_stats(ifx as u16);
        let pool = u64::from(samples.last().unwrap().sample_pool);
        assert!(
            pool <= stats.rx_forwarded && pool * 20 >= stats.rx_forwarded * 19,
            "pool {pool} forwarded {}",
            stats.rx_forwarded
        );
        assert_eq!(samples.last().unwrap().drops, 0);
        let row = rows.iter().find(|r| u32::from(r.if_index) == ifx).unwrap();
        assert_eq!(row.samples_sent, samples.len() as u64);
        assert_eq!(row.sampler.taken, row.samples_sent);
        assert_eq!(row.sampler.seen, stats.rx_packets);
    }
    assert_eq!(totals.send_failures, 0);
    assert!(totals.refused > 0, "the refusing collector's ICMP errors are counted: {totals:?}");
    // Counter polls every second, and a last one at stop: the final counters, exactly.
    for (ifx, name) in [(p0, "port0"), (p2, "port2")] {
        let c = &polls[&ifx];
        assert!(c.iter().enumerate().all(|(k, s)| s.sequence as usize == k + 1), "counter sequence without gaps");
        let last = c.last().unwrap();
        let (g, s) = (generic(last), dp.interface_stats(ifx as u16));
        assert_eq!((g.if_index, g.if_type, g.if_speed, g.if_status), (ifx, 6, 0, 3));
        assert_eq!(
            (g.in_octets, u64::from(g.in_ucast_pkts), u64::from(g.in_multicast_pkts)),
            (s.rx_octets, s.rx_unicast, s.rx_multicast)
        );
        assert_eq!(
            (g.out_octets, u64::from(g.out_ucast_pkts), u64::from(g.in_discards)),
            (s.tx_octets, s.tx_unicast, s.in_discards)
        );
        assert!(last.records.contains(&CounterRecord::Ethernet(sflow::EthernetCounters::UNKNOWN)));
        assert!(last.records.contains(&CounterRecord::PortName(std::borrow::Cow::Borrowed(name.as_bytes()))));
    }
    assert_eq!(generic(polls[&p2].last().unwrap()).promiscuous_mode, 1, "cross-connected: promiscuous");
    let show = Registry::with_builtins().execute(&mut dp, "show sflow").unwrap();
    assert!(show.text.contains("collector 127.0.0.1:") && show.text.contains("port0"), "{}", show.text);
    assert!(show.text.contains("counter polling every 1 s"), "{}", show.text);
    assert_eq!(show.json["totals"]["counter_samples"].as_u64(), Some(polls.values().map(|p| p.len() as u64).sum()));
}

/// A tagged port routed to an untagged one: sampled on receive at the port (input = the
/// sub-interface, extended_switch with its VLAN) and on transmit at the output port (the
/// header as sent, rewritten).
#[test]
fn sub_interfaces_are_sampled_at_their_port_and_tx_sees_the_rewritten_frame() {
    // A second collector on the IPv6 loopback, when there is one.
    let v6 = UdpSocket::bind("[::1]:0").ok();
    if v6.is_none() {
        eprintln!("SKIP the IPv6 collector: no IPv6 loopback here");
    }
    let v6_collector = v6
        .as_ref()
        .map_or(String::new(), |s| format!(", {{address: '::1', port: {}}}", s.local_addr().unwrap().port()));
    if let Some(s) = &v6 {
        s.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    }
    let make = |port: u16| {
        Config::load(&format!(
            "
sflow:
  sampling-rate: 50
  collectors: [{{address: 127.0.0.1, port: {port}}}{v6_collector}]
interfaces:
  port0:
    mac: 02:fe:00:00:00:01
    sflow: {{}}
    sub-interfaces: {{100: {{encapsulation: {{dot1q: 100}}, addresses: [10.100.0.1/24]}}}}
    generator: {{streams: [{{vlan: 100, src-ip: 10.100.0.9, src-range: {{count: 1}}, dst-ip: 48.0.0.1, rate-pps: 100000}}]}}
  port1:
    addresses: [100.64.1.1/31]
    sflow: {{direction: tx, sampling-rate: 20}}
routes: [{{prefix: 48.0.0.0/24, via: 100.64.1.0}}]
neighbors: [{{interface: port1, address: 100.64.1.0, mac: 00:1b:21:06:00:01}}]
"
        ))
        .unwrap()
    };
    let Collected { dp, flows: by_source, agents, polls, .. } = run(make);
    assert_eq!(
        agents.into_iter().collect::<Vec<_>>(),
        [IpAddr::V4(Ipv4Addr::new(100, 64, 1, 1))],
        "the first IPv4 address"
    );
    let index = |n: &str| u32::from(dp.interfaces().iter().find(|i| i.name == n).unwrap().index);
    let (port0, sub, port1) = (index("port0"), index("port0.100"), index("port1"));
    let rx = &by_source[&port0];
    let tx = &by_source[&port1];
    assert!(rx.len() > 20 && tx.len() > 20, "{} {}", rx.len(), tx.len());
    for f in rx {
        assert_eq!((f.sampling_rate, f.input, f.output), (50, Interface::Index(sub), Interface::Index(port1)));
        let FlowRecord::RawHeader(h) = &f.records[0] else { panic!() };
        assert_eq!(&h.header[12..16], &[0x81, 0x00, 0x00, 100], "the header as received, tagged");
        assert!(f.records.iter().any(|r| matches!(r, FlowRecord::Switch(s) if s.src_vlan == 100 && s.dst_vlan == 0)));
        assert!(
            f.records
                .iter()
                .any(|r| matches!(r, FlowRecord::Router(r) if r.src_mask_len == 24 && r.dst_mask_len == 24))
        );
    }
    for f in tx {
        assert_eq!((f.sampling_rate, f.input, f.output), (20, Interface::Index(sub), Interface::Index(port1)));
        let FlowRecord::RawHeader(h) = &f.records[0] else { panic!() };
        assert_eq!(&h.header[..6], &[0x00, 0x1b, 0x21, 0x06, 0x00, 0x01], "the header as sent, to the next hop");
        assert_eq!(&h.header[12..14], &[0x08, 0x00], "untagged");
    }
    if let Some(s) = v6 {
        let mut buf = [0u8; 9000];
        let n = s.recv(&mut buf).expect("a datagram on the IPv6 collector");
        assert!(sflow::decode(&buf[..n]).is_ok());
    }
    // The sub-interface is polled with its port: a VLAN record, and the port's counters
    // include the sub-interface's traffic.
    let sub_poll = polls[&sub].last().unwrap();
    let (sub_stats, port_stats) = (dp.interface_stats(sub as u16), dp.interface_stats(port0 as u16));
    assert!(
        sub_poll
            .records
            .iter()
            .any(|r| matches!(r, CounterRecord::Vlan(v) if v.vlan_id == 100 && v.octets == sub_stats.rx_octets))
    );
    assert_eq!(generic(polls[&port0].last().unwrap()).in_octets, port_stats.rx_octets + sub_stats.rx_octets);
    // The transmit pool counts packets sent: all of them reached port1.
    let sent = dp.interface_stats(port1 as u16).tx_packets;
    let pool = u64::from(tx.last().unwrap().sample_pool);
    assert!(pool <= sent && pool * 20 >= sent * 19, "pool {pool} sent {sent}");
}

/// A flow rule's drops are discard samples with the `acl` reason code (258).
#[test]
fn acl_drops_become_discard_samples_with_code_258() {
    let make = |port: u16| {
        Config::load(&format!(
            "
sflow:
  polling-interval: 0
  collectors: [{{address: 127.0.0.1, port: {port}}}]
interfaces:
  port0:
    mac: 02:fe:00:00:00:01
    addresses: [100.64.0.1/31]
    sflow: {{enable: false, drop-monitoring: true}}
    generator: {{streams: [{{dst-ip: 48.0.0.1, rate-pps: 20000}}]}}
  port1: {{addresses: [100.64.1.1/31]}}
routes: [{{prefix: 48.0.0.0/24, via: 100.64.1.0}}]
flows: ['priority=10,in_port=port0,udp,nw_dst=48.0.0.0/24,actions=drop']
"
        ))
        .unwrap()
    };
    let sent_ten = |dp: &Dataplane| dp.sflow().is_some_and(|(_, totals, _)| totals.discard_samples >= 10);
    let Collected { dp, discards, .. } = run_until(make, sent_ten);
    let port0 = u32::from(dp.interfaces().iter().find(|i| i.name == "port0").unwrap().index);
    assert!(discards.len() >= 10, "{} discards", discards.len());
    assert!(discards.iter().all(|d| (d.input, d.reason) == (port0, 258)), "every one acl, from port0");
    assert!(dp.flow_hits()[0] >= discards.len() as u64, "the rule counted them");
}

/// Drop monitoring: drops of a monitored port become discard samples with the standard
/// reason codes, in datagrams of their own, within the configured rate over two workers.
#[test]
fn drops_become_rate_limited_discard_samples_with_reason_codes() {
    let make = |port: u16| {
        Config::load(&format!(
            "
workers: {{count: 2}}
sflow:
  drop-limit: 100
  polling-interval: 0
  collectors: [{{address: 127.0.0.1, port: {port}}}]
interfaces:
  port0:
    mac: 02:fe:00:00:00:01
    addresses: [100.64.0.1/31]
    sflow: {{enable: false, drop-monitoring: true}}
    rx-placement: {{worker: 0}}
    generator: {{streams: [{{dst-ip: 99.0.0.1, rate-pps: 20000}}]}}
  port1: {{addresses: [100.64.1.1/31], rx-placement: {{worker: 1}}}}
  port2:
    mac: 02:fe:00:00:00:03
    addresses: [100.64.2.1/31]
    sflow: {{enable: false, drop-monitoring: true}}
    rx-placement: {{worker: 1}}
    generator: {{streams: [{{dst-ip: 48.0.0.1, ttl: 1, rate-pps: 20000}}]}}
routes: [{{prefix: 48.0.0.0/24, via: 100.64.1.0}}]
"
        ))
        .unwrap()
    };
    let started = std::time::Instant::now();
    let Collected { dp, discards, mixed, flows, polls, .. } = run(make);
    let secs = started.elapsed().as_secs_f64();
    let index = |n: &str| u32::from(dp.interfaces().iter().find(|i| i.name == n).unwrap().index);
    let (port0, port2) = (index("port0"), index("port2"));
    assert!(flows.is_empty() && polls.is_empty(), "sampling and polling are off");
    assert_eq!(mixed, 0, "discard samples travel alone");
    assert!(discards.len() >= 20, "{} discards", discards.len());
    // The agent's budget: at most 100/s plus the second's worth it starts with, shared by
    // the two workers (one per port).
    assert!(discards.len() as f64 <= 100.0 * secs + 100.0, "{} discards in {secs:.2} s", discards.len());
    // Per data source: sequences without gaps, the input port, the reason of its drops.
    let mut reasons = std::collections::BTreeSet::new();
    for (port, reason) in [(port0, 0), (port2, 257)] {
        let mine: Vec<_> = discards.iter().filter(|d| d.source.index == port).collect();
        assert!(!mine.is_empty(), "discards of port {port}");
        for (k, d) in mine.iter().enumerate() {
            assert_eq!(d.sequence as usize, k + 1);
            assert_eq!((d.input, d.output, d.reason), (port, 0, reason));
        }
    }
    for d in &discards {
        reasons.insert(d.reason);
        let FlowRecord::RawHeader(h) = &d.records[0] else { panic!() };
        assert_eq!((h.protocol, h.frame_length, h.header.len()), (1, 64, 60));
    }
    assert_eq!(reasons.into_iter().collect::<Vec<_>>(), [0, 257], "no route → 0, TTL → 257");
    let (_, totals, _) = dp.sflow().unwrap();
    assert_eq!(totals.discard_samples, discards.len() as u64);
    assert!(discards.last().unwrap().drops > 0, "drops held back by the limit are counted");
}

/// At the smallest `max-datagram-size` the configuration accepts, the longest samples (full
/// 256-byte headers of routed, tagged frames; discards; counters) still go out, one per
/// datagram, and the agent stops cleanly.
#[test]
fn the_smallest_accepted_datagram_holds_the_longest_samples() {
    let Collected { flows, polls, discards, dp, .. } = run(|port| {
        Config::load(&format!(
            "
workers: {{count: 1}}
sflow:
  sampling-rate: 100
  header-bytes: 256
  max-datagram-size: 508
  polling-interval: 1
  collectors: [{{address: 127.0.0.1, port: {port}}}]
interfaces:
  port0:
    mac: 02:fe:00:00:00:01
    sflow: {{drop-monitoring: true}}
    sub-interfaces: {{7: {{encapsulation: {{dot1q: 7}}, addresses: [100.64.0.1/31]}}}}
    generator:
      streams:
        - {{vlan: 7, frame-size: 1500, dst-ip: 48.0.0.1, rate-pps: 20000}}
        - {{vlan: 7, frame-size: 1500, dst-ip: 48.0.0.1, ttl: 1, rate-pps: 100}}
  port1: {{mac: 02:fe:00:00:00:02, addresses: [100.64.1.1/31]}}
routes: [{{prefix: 48.0.0.0/24, via: 100.64.1.0}}]
neighbors: [{{interface: port1, address: 100.64.1.0, mac: 02:fe:00:00:00:03}}]
"
        ))
        .unwrap()
    });
    let index = |n: &str| u32::from(dp.interfaces().iter().find(|i| i.name == n).unwrap().index);
    let routed = &flows[&index("port0")];
    assert!(routed.len() > 20, "{} flow samples", routed.len());
    for f in routed {
        let FlowRecord::RawHeader(h) = &f.records[0] else { panic!("raw header first") };
        assert_eq!(h.header.len(), 256);
        assert_eq!(f.records.len(), 3, "raw header, switch and router records: {:?}", f.records);
    }
    assert!(!discards.is_empty() && polls.contains_key(&index("port0")));
    let (_, totals, _) = dp.sflow().unwrap();
    assert_eq!(totals.samples_encoded, flows.values().map(Vec::len).sum::<usize>() as u64);
}

/// A port whose drops all land on one worker of two gets the whole `drop-limit`: counted over
/// the second from 1 s to 2 s after start (after the budget's initial second's worth is spent),
/// at least 95 % of it and no more than the limit plus one refill period's grant.
#[test]
fn drops_on_one_worker_get_the_whole_limit() {
    let listener = UdpSocket::bind("127.0.0.1:0").unwrap();
    listener.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let port = listener.local_addr().unwrap().port();
    let cfg = Config::load(&format!(
        "
workers: {{count: 2}}
sflow: {{drop-limit: 200, polling-interval: 0, collectors: [{{address: 127.0.0.1, port: {port}}}]}}
interfaces:
  port0:
    addresses: [100.64.0.1/31]
    sflow: {{enable: false, drop-monitoring: true}}
    rx-placement: {{worker: 0}}
    generator: {{streams: [{{dst-ip: 99.0.0.1, rate-pps: 20000}}]}}
  port1: {{addresses: [100.64.1.1/31], rx-placement: {{worker: 1}}}}
"
    ))
    .unwrap();
    let started = std::time::Instant::now();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d2 = done.clone();
    // Reads until told to stop: a slow start on a busy machine is a quiet socket, not an end.
    let reader = std::thread::spawn(move || {
        let mut at = vec![];
        let mut buf = [0u8; 65536];
        while !d2.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok(n) = listener.recv(&mut buf) else { continue };
            let d = sflow::decode(&buf[..n]).unwrap();
            let discards = d.samples.iter().filter(|s| matches!(s, Sample::Discard(_))).count();
            at.extend(std::iter::repeat_n(started.elapsed().as_secs_f64(), discards));
        }
        at
    });
    let mut dp = Dataplane::start(&cfg).unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    dp.stop().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let at = reader.join().unwrap();
    let in_second = at.iter().filter(|&&t| (1.0..2.0).contains(&t)).count();
    assert!((190..=210).contains(&in_second), "{in_second} discard samples from 1 s to 2 s (limit 200/s)");
}

#[test]
fn jumbo_frames_are_sampled_with_their_whole_length() {
    let Collected { dp, flows, .. } = run_until(
        |port| {
            Config::load(&format!(
                "
buffers: {{data-size: 9216}}
sflow: {{sampling-rate: 10, collectors: [{{address: 127.0.0.1, port: {port}}}]}}
interfaces:
  port0:
    mac: 9c:69:b4:61:a1:dc
    addresses: [100.64.0.1/31]
    mtu: 9000
    sflow: {{}}
    generator: {{streams: [{{src-mac: 00:1b:21:06:00:00, dst-ip: 48.0.0.1, frame-size: 9004, rate-pps: 20000}}]}}
  port1: {{mac: 9c:69:b4:61:a1:dd, addresses: [100.64.1.1/31], mtu: 9000}}
routes:
  - {{prefix: 48.0.0.0/24, via: 100.64.1.0}}
neighbors:
  - {{interface: port1, address: 100.64.1.0, mac: 00:1b:21:06:00:01}}
"
            ))
            .unwrap()
        },
        |dp| dp.sflow().is_some_and(|(_, t, _)| t.samples_encoded >= 20),
    );
    let samples = &flows[&1];
    assert!(samples.len() >= 20, "{}", samples.len());
    for f in samples {
        let FlowRecord::RawHeader(h) = &f.records[0] else { panic!("raw header first") };
        assert_eq!((h.frame_length, h.stripped), (9004, 4), "the whole frame on the wire, FCS included");
        assert_eq!(h.header.len(), 128, "header-bytes, not the frame");
    }
    let stats = dp.interface_stats(2);
    assert!(stats.tx_packets > 0 && stats.tx_octets == stats.tx_packets * 9000, "routed whole: {stats:?}");
}
