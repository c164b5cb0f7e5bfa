//! The packet tracer on the example lab: IPv4, MPLS and L2 cross-connected packets are traced
//! node by node with each node's decision, and tracing stops at the count asked for.

use dataplane::control::cli::Registry;
use dataplane::{Config, Dataplane};
use serde_json::Value;
use std::time::{Duration, Instant};

fn lab() -> Dataplane {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/lab.yaml");
    let mut config = Config::load(&std::fs::read_to_string(path).unwrap()).unwrap();
    config.metrics.enabled = false;
    Dataplane::start(&config).unwrap()
}

/// The node names of a traced packet's path.
fn path(p: &Value) -> Vec<&str> {
    p["entries"].as_array().unwrap().iter().map(|e| e["node"].as_str().unwrap()).collect()
}

/// The detail its `node` entry printed.
fn detail<'a>(p: &'a Value, node: &str) -> &'a str {
    p["entries"].as_array().unwrap().iter().find(|e| e["node"] == node).unwrap()["detail"].as_str().unwrap()
}

#[test]
fn traces_show_each_path_and_decision() {
    let mut dp = lab();
    let r = Registry::with_builtins();
    assert!(r.execute(&mut dp, "trace add generator-input").is_err());
    let e = r.execute(&mut dp, "trace add ethernet-input 5").unwrap_err();
    assert!(e.contains("'ethernet-input' is not an input node"), "{e}");
    let e = r.execute(&mut dp, "trace add generator-input 0").unwrap_err();
    assert!(e.contains("count '0'"), "{e}");
    r.execute(&mut dp, "trace add generator-input 3000").unwrap();
    // Each worker traces 3000 packets: about a dozen vectors, from each of its ports.
    let deadline = Instant::now() + Duration::from_secs(20);
    let packets = loop {
        let t = r.execute(&mut dp, "show trace").unwrap();
        let packets = t.json["packets"].as_array().unwrap().clone();
        if packets.len() == 6000 || Instant::now() > deadline {
            break packets;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(packets.len(), 6000, "3000 per worker, then tracing stops");
    // A path is named by its nodes between ethernet-input and interface-output.
    let find = |middle: &str| {
        let want = format!("generator-input ethernet-input {middle} interface-output generator-tx");
        packets.iter().find(|p| path(p).join(" ") == want).unwrap_or_else(|| panic!("no packet took {want}"))
    };
    let ip4 = find("ip4-input ip4-lookup ip4-rewrite");
    assert!(detail(ip4, "generator-input").contains("IPv4 16.0.0."), "{ip4}");
    assert!(detail(ip4, "ip4-lookup").contains("matched /24") && detail(ip4, "ip4-lookup").contains("via"), "{ip4}");
    assert!(detail(ip4, "ip4-rewrite").contains("ttl 63"), "{ip4}");
    assert!(detail(ip4, "generator-tx").starts_with("sent on port"), "{ip4}");
    let mpls = find("mpls-input mpls-lookup mpls-rewrite");
    assert!(detail(mpls, "generator-input").contains("label 2"), "{mpls}");
    assert!(detail(mpls, "mpls-lookup").contains("local-label entry"), "{mpls}");
    let l2 = find("l2-xconnect");
    assert!(detail(l2, "l2-xconnect").starts_with("out port"), "{l2}");
    // port5's TTL-1 trickle: dropped with its reason (and answered with ICMP).
    if let Some(dropped) = packets.iter().find(|p| path(p).contains(&"error-drop")) {
        assert!(detail(dropped, "error-drop").starts_with("dropped: "), "{dropped}");
    }
    let text = r.execute(&mut dp, "show trace").unwrap().text;
    assert!(text.starts_with("Packet 1 (worker "), "{}", &text[..200.min(text.len())]);
    r.execute(&mut dp, "clear trace").unwrap();
    assert!(r.execute(&mut dp, "show trace").unwrap().text.contains("no packets traced"));
    dp.stop().unwrap();
}
