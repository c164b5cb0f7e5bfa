//! The Linux control plane's TAPs: made in their namespace with each interface's MAC and MTU,
//! up exactly when the interface is admin up, following admin state and MTU changes, quiet
//! (no router advertisements, autoconfiguration or redirects), adopted by name on a restart,
//! and a device of the same name that vecflow does not own refused by name. Needs root and
//! `ip`.

mod common;

use dataplane::{Config, Dataplane};
use serde_json::Value;
use std::process::Command;

/// Removes the test's namespace (and the TAPs in it) however the test ends.
struct Namespace(String);

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// `ip -d -j link show dev NAME` in namespace `ns`, or None when there is no such device.
fn link(ns: &str, name: &str) -> Option<Value> {
    let out = Command::new("ip").args(["-n", ns, "-d", "-j", "link", "show", "dev", name]).output().unwrap();
    if !out.status.success() {
        return None;
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array().and_then(|a| a.first()).cloned()
}

/// True when the device's flags hold `flag`.
fn has_flag(l: &Value, flag: &str) -> bool {
    l["flags"].as_array().unwrap().iter().any(|f| f == flag)
}

/// A sysctl of the device, read inside the namespace.
fn sysctl(ns: &str, path: &str) -> String {
    let out = Command::new("ip").args(["netns", "exec", ns, "cat", path]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn config(ns: &str, a: &str, b: &str, a_mtu: u16, a_state: &str) -> Config {
    Config::load(&format!(
        "
linux-cp: {{netns: {ns}}}
metrics: {{enabled: false}}
interfaces:
  'port/0':
    linux-name: {a}
    mac: 02:00:5e:10:00:01
    mtu: {a_mtu}
    state: {a_state}
    addresses: [192.0.2.1/24]
  port1:
    linux-name: {b}
    mac: 02:00:5e:10:00:02
    state: down
"
    ))
    .unwrap()
}

#[test]
fn taps_follow_their_interfaces_and_survive_a_restart() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return common::skip("needs root (network namespaces and TAP devices)");
    }
    if common::require("ip", &[], "apt-get install iproute2").is_none() {
        return;
    }
    let tag = format!("{:05x}", std::process::id() ^ (std::time::UNIX_EPOCH.elapsed().unwrap().subsec_nanos() >> 8));
    let tag = &tag[tag.len() - 5..];
    let ns = Namespace(format!("vflcp{tag}"));
    let (a, b) = (format!("lcpa{tag}"), format!("lcpb{tag}"));

    // The namespace is made, each interface has its TAP with its MAC and MTU, up as the
    // interface is, quiet.
    let mut dp = Dataplane::start(&config(&ns.0, &a, &b, 1400, "up")).unwrap();
    assert!(std::path::Path::new(&format!("/run/netns/{}", ns.0)).exists());
    let la = link(&ns.0, &a).expect("the TAP of port/0");
    assert_eq!(la["address"], "02:00:5e:10:00:01");
    assert_eq!(la["mtu"], 1400);
    assert_eq!(la["linkinfo"]["info_kind"], "tun", "{la}");
    assert!(has_flag(&la, "UP") && !has_flag(&la, "NO-CARRIER"), "{la}");
    let lb = link(&ns.0, &b).expect("the TAP of port1");
    assert_eq!(lb["address"], "02:00:5e:10:00:02");
    assert!(!has_flag(&lb, "UP"), "port1 is admin down: {lb}");
    for knob in ["accept_ra", "autoconf", "accept_redirects"] {
        assert_eq!(sysctl(&ns.0, &format!("/proc/sys/net/ipv6/conf/{a}/{knob}")), "0", "{knob}");
    }
    assert_eq!(sysctl(&ns.0, &format!("/proc/sys/net/ipv4/conf/{a}/accept_redirects")), "0");

    // An applied change of MTU and state reaches the TAP.
    dp.apply(&config(&ns.0, &a, &b, 1300, "down")).unwrap();
    dp.refresh_links();
    let la2 = link(&ns.0, &a).unwrap();
    assert_eq!(la2["mtu"], 1300);
    assert!(!has_flag(&la2, "UP"), "{la2}");

    // Stopped, the TAPs stay (no carrier); started again, the same devices are adopted.
    dp.stop().unwrap();
    drop(dp);
    let left = link(&ns.0, &a).expect("the TAP persists");
    assert_eq!(left["ifindex"], la["ifindex"]);
    let mut dp = Dataplane::start(&config(&ns.0, &a, &b, 1400, "up")).unwrap();
    let again = link(&ns.0, &a).unwrap();
    assert_eq!(again["ifindex"], la["ifindex"], "adopted, not made anew");
    assert!(has_flag(&again, "UP") && !has_flag(&again, "NO-CARRIER"), "{again}");
    assert_eq!(again["mtu"], 1400);
    dp.stop().unwrap();
    drop(dp);

    // A device of the TAP's name that is not a TAP: start-up fails, naming it.
    let clash = format!("lcpc{tag}");
    let made = Command::new("ip")
        .args(["-n", &ns.0, "link", "add", &clash, "type", "veth", "peer", "name", &format!("lcpd{tag}")])
        .status()
        .unwrap();
    assert!(made.success());
    let err = Dataplane::start(&config(&ns.0, &clash, &b, 1400, "up")).err().expect("a clash is refused").to_string();
    assert!(err.contains(&clash) && err.contains("not a TAP"), "{err}");
}
