//! A link going down and coming back, on real links: while host B's end of its veth is down,
//! what vecflow routes toward B is dropped at `interface-output` as `tx-interface-down`
//! (ifOutDiscards), never handed to a kernel that refuses it (`tx-error`, ifOutErrors); once
//! B's end is up again, forwarding resumes within a few of the main loop's 10 ms ticks.
//!
//! ```text
//!  ns A: vfa0 10.0.1.2/24 ──veth── vfa1 ┐                    ┌ vfb1 ──veth── vfb0 10.0.2.2/24 :ns B
//!                                       └ ns R: vecflow run ─┘
//!                                  wa 10.0.1.1/24      wb 10.0.2.1/24 (AF_PACKET, then AF_XDP)
//! ```
//!
//! Needs root, `ip`, `ping` and the lab's tools (`./test.sh` installs them).

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

#[path = "netns/lab.rs"]
#[allow(dead_code)] // the helpers this lab does not use
mod lab;

use lab::*;

#[test]
fn a_link_down_drops_at_output_and_a_link_back_forwards_at_once_on_af_packet() {
    link_down_and_up(Port::AfPacket);
}

#[test]
fn a_link_down_drops_at_output_and_a_link_back_forwards_at_once_on_af_xdp() {
    link_down_and_up(Port::AfXdp);
}

/// The sum of `show errors`' counts with reason `reason`, and its rows as text.
fn drops(dir: &Path, reason: &str) -> (u64, String) {
    let errors: serde_json::Value = serde_json::from_str(&ctl(dir, &["show", "errors", "--json"])).unwrap();
    let rows = errors["errors"].as_array().cloned().unwrap_or_default();
    let count = rows.iter().filter(|r| r["reason"] == reason).map(|r| r["count"].as_u64().unwrap()).sum();
    (count, ctl(dir, &["show", "errors"]))
}

fn link_down_and_up(port_b: Port) {
    if !can_run() {
        return;
    }
    let lab = Lab::new("1500");
    lab.facing("b", port_b);
    lab.address("a", "10.0.1.2/24", Some("10.0.1.1"));
    lab.address("b", "10.0.2.2/24", Some("10.0.2.1"));
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "workers: {{count: 1}}
metrics: {{enabled: false}}
interfaces:
  wa: {{index: 1, driver: af-packet, host-interface: {}, mac: '02:fe:00:00:00:01', addresses: [10.0.1.1/24]}}
  wb: {{index: 2, {}, host-interface: {}, mac: '02:fe:00:00:00:02', addresses: [10.0.2.1/24]}}
",
        lab.veth("a", 1),
        port_b.yaml(1, "adaptive"),
        lab.veth("b", 1),
    );
    let (vecflow, _) = lab.start_vecflow(dir.path(), &config);
    let log = dir.path().join("vecflow.log");
    // The first ping resolves B (its first packet is dropped while vecflow ARPs).
    lab.ping(&lab.a, &["-c", "2", "-i", "0.3", "-W", "1", "10.0.2.2"]);
    let (ok, out) = lab.ping(&lab.a, &["-c", "3", "-i", "0.2", "-W", "2", "10.0.2.2"]);
    assert!(ok && out.contains("3 received"), "{out}");

    let b_end = lab.veth("b", 0);
    must("ip", &["-n", &lab.b, "link", "set", &b_end, "down"]);
    wait_for_log(&log, &format!("host interface {}: link down", lab.veth("b", 1)));
    let (ok, out) = lab.ping(&lab.a, &["-c", "20", "-i", "0.01", "-W", "1", "10.0.2.2"]);
    assert!(!ok && out.contains("0 received"), "nothing reaches B while its link is down:\n{out}");
    let ((down, shown), (refused, _)) = (drops(dir.path(), "tx-interface-down"), drops(dir.path(), "tx-error"));
    assert!(down >= 20 && refused == 0, "20 pings dropped before the driver, none refused by the kernel:\n{shown}");

    // Back up: 100 pings 10 ms apart from the moment the link is up; vecflow follows the
    // carrier every 10 ms (and B asks for vecflow's MAC again: its neighbors went with the
    // link), so all but the first few are answered. (Following it once a second, as before, lost
    // up to a second of them.)
    must("ip", &["-n", &lab.b, "link", "set", &b_end, "up"]);
    let up = Instant::now();
    // (B's default route went with its link.)
    must("ip", &["-n", &lab.b, "route", "replace", "default", "via", "10.0.2.1"]);
    let (_, out) = lab.ping(&lab.a, &["-c", "100", "-i", "0.01", "-W", "1", "10.0.2.2"]);
    let received: u64 = out
        .split(", ")
        .find_map(|part| part.strip_suffix(" received"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of replies in:\n{out}"));
    eprintln!("link back up: {received} of 100 pings answered ({:?} after the link came up)", up.elapsed());
    let (down_after, shown) = drops(dir.path(), "tx-interface-down");
    assert!(received >= 80, "forwarding resumes within a few ticks: {received} of 100 answered\n{shown}");
    assert!(down_after - down <= 20, "at most a few ticks of drops after the link came back:\n{shown}");
    assert_eq!(drops(dir.path(), "tx-error").0, 0, "{shown}");
    std::thread::sleep(Duration::from_millis(100));
    lab.stop_vecflow(vecflow, dir.path());
}
