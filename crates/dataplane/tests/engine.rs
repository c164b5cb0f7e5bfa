//! The running dataplane: workers forward generated traffic and the counters add up.

use dataplane::cli::Registry;
use dataplane::errors::DropReason;
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
    // Cross-connected pairs: what one receives the other sends.
    for (a, b) in [("port2", "port3"), ("port6", "port7")] {
        let (sa, sb) = (dp.interface_stats(by_name(a)), dp.interface_stats(by_name(b)));
        assert!(sa.rx_packets > 10_000, "{a} generated {}", sa.rx_packets);
        assert_eq!(sa.rx_forwarded, sb.tx_packets);
        assert_eq!(sb.rx_forwarded, sa.tx_packets);
    }
    // The routed port drops IPv4 until routing exists.
    let p0 = by_name("port0");
    assert!(dp.drops_of(p0)[DropReason::Ip4NotEnabled as usize] > 0);
    let g = dp.generator_stats();
    let tx: u64 = dp.interfaces().iter().map(|i| dp.interface_stats(i.index).tx_packets).sum();
    assert_eq!(g.sink_packets, tx);
}

#[test]
fn show_commands_answer_in_text_and_json() {
    let cfg = Config::load(LAB).unwrap();
    let mut dp = Dataplane::start(&cfg).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    dp.stop().unwrap();
    let r = Registry::with_builtins();
    let rt = r.execute(&dp, "show runtime").unwrap();
    assert_eq!(rt.json["workers"].as_array().unwrap().len(), 2);
    for node in ["generator-input", "ethernet-input", "l2-xconnect", "interface-output", "generator-tx", "error-drop"] {
        assert!(rt.text.contains(node), "{node} missing from\n{}", rt.text);
    }
    let errs = r.execute(&dp, "show errors").unwrap();
    assert!(errs.text.contains("ip4-not-enabled") && errs.text.contains("port0"), "{}", errs.text);
    assert_eq!(errs.json["errors"][0]["node"], "ethernet-input");
    let one = r.execute(&dp, "show interface port2").unwrap();
    assert_eq!(one.json["interfaces"].as_array().unwrap().len(), 1);
    assert!(one.json["interfaces"][0]["counters"]["rx_packets"].as_u64().unwrap() > 0);
    assert!(r.execute(&dp, "show interface nope").unwrap_err().contains("no interface named 'nope'"));
    assert!(r.execute(&dp, "show bogus").unwrap_err().contains("unknown command"));
}

#[test]
fn unsupported_sections_are_refused_with_the_field_named() {
    let cfg = Config::load("interfaces: {p0: {}}\nroutes: [{prefix: 1.0.0.0/8, via: 1.1.1.1}]").unwrap();
    let e = Dataplane::start(&cfg).err().unwrap().to_string();
    assert!(e.starts_with("routes: not supported by this build yet"), "{e}");
}
