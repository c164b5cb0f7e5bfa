//! The Linux control plane's TAPs: made in their namespace with each interface's MAC and MTU,
//! up exactly when the interface is admin up, following admin state and MTU changes, quiet
//! (no router advertisements, autoconfiguration or redirects), adopted by name on a restart,
//! and a device of the same name that vecflow does not own refused by name; and a TCP
//! connection from a host to the router's address, carried by the TAP to a socket in the
//! linux-cp namespace and back; an address added on the TAP in Linux answered by vecflow;
//! addresses and MTUs both ways; the netlink listener after an overrun. Needs root, `ip`
//! and `python3`.

mod common;

#[path = "netns/lab.rs"]
#[allow(dead_code)] // the routed labs' helpers these tests do not use
mod lab;
#[path = "netns/lcp_lab.rs"]
mod lcp_lab;

use dataplane::{Config, Dataplane};
use serde_json::Value;
use std::process::Command;

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

/// Five hex digits for this test's device names, or None (after a skip) when it cannot make
/// namespaces and TAPs here.
fn tap_test_tag() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        common::skip("needs root (network namespaces and TAP devices)");
        return None;
    }
    common::require("ip", &[], "apt-get install iproute2")?;
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let salt = NEXT.fetch_add(0x9e37, std::sync::atomic::Ordering::Relaxed);
    let tag = std::process::id() ^ salt ^ (std::time::UNIX_EPOCH.elapsed().unwrap().subsec_nanos() >> 8);
    Some(format!("{:05x}", tag & 0xfffff))
}

#[test]
fn taps_follow_their_interfaces_and_survive_a_restart() {
    let Some(tag) = tap_test_tag() else { return };
    let tag = tag.as_str();
    let ns = lcp_lab::Namespace(format!("vflcp{tag}"));
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
    // With a table behind the TAPs, so that the listener's first dump (which starts before
    // the TAPs are opened, and has port/0's TAP as the last run left it: 1300, down) is still
    // being read while the dataplane runs: the interface keeps the configuration's MTU, not
    // the TAP's old one.
    let table: String = (0..100_000u32)
        .map(|i| format!("route add blackhole {}.{}.{}.0/24\n", 10 + (i >> 16), (i >> 8) & 255, i & 255))
        .collect();
    let mut batch =
        Command::new("ip").args(["-n", &ns.0, "-batch", "-"]).stdin(std::process::Stdio::piped()).spawn().unwrap();
    std::io::Write::write_all(&mut batch.stdin.take().unwrap(), table.as_bytes()).unwrap();
    assert!(batch.wait().unwrap().success(), "the table is loaded");
    let mut dp = Dataplane::start(&config(&ns.0, &a, &b, 1400, "up")).unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_millis(600);
    while std::time::Instant::now() < until {
        dp.service();
        let port0 = dp.interfaces().iter().find(|i| i.name == "port/0").unwrap();
        assert_eq!(port0.mtu, 1400, "port/0 followed its TAP's state from before the restart");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
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

/// `ip -j addr show dev NAME` in namespace `ns`: each address as `addr/len`.
fn tap_addresses(ns: &str, name: &str) -> Vec<String> {
    let out = Command::new("ip").args(["-n", ns, "-j", "addr", "show", "dev", name]).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    let infos = v[0]["addr_info"].as_array().cloned().unwrap_or_default();
    infos.iter().map(|a| format!("{}/{}", a["local"].as_str().unwrap_or(""), a["prefixlen"])).collect()
}

/// Runs `dp.service()` (as vecflow's main loop does) until `done` holds, for up to 5 s.
fn serve_until(dp: &mut Dataplane, what: &str, mut done: impl FnMut(&mut Dataplane) -> bool) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !done(dp) {
        assert!(std::time::Instant::now() < end, "after 5 s: {what}");
        dp.service();
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// `ip -n NS ARGS`, which must succeed.
fn ip_in(ns: &str, args: &[&str]) {
    let mut all = vec!["-n", ns];
    all.extend_from_slice(args);
    lab::must("ip", &all);
}

/// A namespace `NS<tag>` and the dataplane of [`config`] with TAPs `A<tag>` and `B<tag>`
/// in it, started and its configured address set on the first TAP; `None` (after a skip)
/// when namespaces and TAPs cannot be made here.
fn tap_lab(ns: &str, a: &str, b: &str) -> Option<(lcp_lab::Namespace, String, String, Dataplane)> {
    let tag = tap_test_tag()?;
    let ns = lcp_lab::Namespace(format!("{ns}{tag}"));
    let (a, b) = (format!("{a}{tag}"), format!("{b}{tag}"));
    let mut dp = Dataplane::start(&config(&ns.0, &a, &b, 1400, "up")).unwrap();
    serve_until(&mut dp, "192.0.2.1/24 on the TAP", |_| tap_addresses(&ns.0, &a).contains(&"192.0.2.1/24".into()));
    Some((ns, a, b, dp))
}

fn addresses_of(dp: &Dataplane, name: &str) -> Vec<String> {
    let i = dp.interfaces().iter().find(|i| i.name == name).unwrap();
    i.addresses.iter().map(|a| a.to_string()).collect()
}

#[test]
fn addresses_and_mtus_go_both_ways_between_interfaces_and_taps() {
    let Some((ns, a, b, mut dp)) = tap_lab("vflad", "lcpe", "lcpf") else { return };
    let ip = |args: &[&str]| ip_in(&ns.0, args);
    let cli = dataplane::control::cli::Registry::with_builtins();

    // An address added in Linux is the interface's too, shown as the kernel's.
    ip(&["addr", "add", "198.51.100.7/24", "dev", &a]);
    serve_until(&mut dp, "198.51.100.7 on port/0", |dp| addresses_of(dp, "port/0").contains(&"198.51.100.7/24".into()));
    let shown = cli.execute(&mut dp, "show interface address").unwrap().text;
    assert!(shown.lines().any(|l| l.contains("198.51.100.7/24") && l.contains("kernel")), "{shown}");
    assert!(shown.lines().any(|l| l.contains("192.0.2.1/24") && l.contains("config")), "{shown}");
    // The same address on the other TAP too: the configuration would refuse it twice, so
    // only one interface takes it.
    ip(&["addr", "add", "198.51.100.7/24", "dev", &b]);
    for _ in 0..30 {
        dp.service();
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let holders =
        ["port/0", "port1"].iter().filter(|n| addresses_of(&dp, n).contains(&"198.51.100.7/24".into())).count();
    assert_eq!(holders, 1, "{:?} {:?}", addresses_of(&dp, "port/0"), addresses_of(&dp, "port1"));
    ip(&["addr", "del", "198.51.100.7/24", "dev", &b]);
    // An apply keeps it (the configuration does not own it), and removed in Linux it goes.
    dp.apply(&config(&ns.0, &a, &b, 1400, "up")).unwrap();
    assert!(addresses_of(&dp, "port/0").contains(&"198.51.100.7/24".into()));
    ip(&["addr", "del", "198.51.100.7/24", "dev", &a]);
    serve_until(&mut dp, "198.51.100.7 gone", |dp| !addresses_of(dp, "port/0").contains(&"198.51.100.7/24".into()));

    // A configured address removed in Linux stays the interface's until the next apply puts
    // it back on the TAP.
    ip(&["addr", "del", "192.0.2.1/24", "dev", &a]);
    for _ in 0..30 {
        dp.service();
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(addresses_of(&dp, "port/0").contains(&"192.0.2.1/24".into()));
    assert!(!tap_addresses(&ns.0, &a).contains(&"192.0.2.1/24".into()));
    dp.apply(&config(&ns.0, &a, &b, 1400, "up")).unwrap();
    assert!(tap_addresses(&ns.0, &a).contains(&"192.0.2.1/24".into()));

    // Taken out of the configuration, it leaves the TAP and the interface, and is not
    // mistaken for the kernel's.
    let mut without = config(&ns.0, &a, &b, 1400, "up");
    without.interfaces.get_mut("port/0").unwrap().addresses.clear();
    dp.apply(&without).unwrap();
    assert!(!tap_addresses(&ns.0, &a).contains(&"192.0.2.1/24".into()));
    for _ in 0..30 {
        dp.service();
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!addresses_of(&dp, "port/0").contains(&"192.0.2.1/24".into()), "{:?}", addresses_of(&dp, "port/0"));
    dp.apply(&config(&ns.0, &a, &b, 1400, "up")).unwrap();

    // An MTU set on the TAP is the interface's; one it cannot take is set back.
    let mtu = |dp: &Dataplane| dp.interfaces().iter().find(|i| i.name == "port/0").unwrap().mtu;
    ip(&["link", "set", &a, "mtu", "1280"]);
    serve_until(&mut dp, "MTU 1280 on port/0", |dp| mtu(dp) == 1280);
    ip(&["link", "set", &a, "mtu", "9000"]);
    serve_until(&mut dp, "the TAP back at 1280", |_| link(&ns.0, &a).unwrap()["mtu"] == 1280);
    assert_eq!(mtu(&dp), 1280);
    // Without link-sync, a TAP set down in Linux leaves the interface up and comes back up.
    ip(&["link", "set", &a, "down"]);
    serve_until(&mut dp, "the TAP up again", |_| has_flag(&link(&ns.0, &a).unwrap(), "UP"));
    assert!(dp.interfaces().iter().find(|i| i.name == "port/0").unwrap().admin_up);
    let shown = cli.execute(&mut dp, "show lcp").unwrap().text;
    assert!(shown.contains("netlink listener:") && shown.contains("1 dumps"), "{shown}");
    dp.stop().unwrap();
}

#[test]
fn the_kernels_routes_through_the_taps_are_mirrored_into_the_fib() {
    let Some((ns, a, b, mut dp)) = tap_lab("vflrt", "lcpk", "lcpl") else { return };
    let ip = |args: &[&str]| ip_in(&ns.0, args);
    let cli = dataplane::control::cli::Registry::with_builtins();
    let fib = |dp: &mut Dataplane, prefix: &str| cli.execute(dp, &format!("show ip fib {prefix}")).unwrap().text;
    let has = |text: &str, needle: &str| text.lines().any(|l| l.contains("kernel") && l.contains(needle));

    // A route through a gateway on the TAP: in the FIB, source kernel, through that gateway.
    ip(&["route", "add", "203.0.113.0/24", "via", "192.0.2.9", "dev", &a, "metric", "20", "proto", "bgp"]);
    serve_until(&mut dp, "203.0.113.0/24 mirrored", |dp| has(&fib(dp, "203.0.113.0/24"), "192.0.2.9"));
    // A second route to the prefix with a lower metric wins; removed, the first is back.
    ip(&["route", "add", "203.0.113.0/24", "via", "192.0.2.10", "dev", &a, "metric", "5", "proto", "bgp"]);
    serve_until(&mut dp, "the lower metric", |dp| has(&fib(dp, "203.0.113.0/24"), "192.0.2.10"));
    ip(&["route", "del", "203.0.113.0/24", "via", "192.0.2.10", "dev", &a, "metric", "5"]);
    serve_until(&mut dp, "the first again", |dp| has(&fib(dp, "203.0.113.0/24"), "192.0.2.9"));
    // A device route: the destinations are on the link.
    ip(&["route", "add", "198.18.0.0/24", "dev", &a, "proto", "ospf"]);
    serve_until(&mut dp, "the device route", |dp| fib(dp, "198.18.0.0/24").contains("kernel"));
    // An apply of the configuration keeps them (they are the kernel's).
    dp.apply(&config(&ns.0, &a, &b, 1400, "up")).unwrap();
    assert!(has(&fib(&mut dp, "203.0.113.0/24"), "192.0.2.9"), "{}", fib(&mut dp, "203.0.113.0/24"));
    // The kernel's own subnet route is not mirrored over the connected one.
    let connected = fib(&mut dp, "192.0.2.0/24");
    assert!(connected.contains("connected") && !connected.contains("kernel"), "{connected}");
    // Removed in the kernel, gone from the FIB.
    ip(&["route", "del", "203.0.113.0/24", "metric", "20"]);
    ip(&["route", "del", "198.18.0.0/24"]);
    serve_until(&mut dp, "both gone", |dp| {
        !fib(dp, "203.0.113.0/24").contains("kernel") && !fib(dp, "198.18.0.0/24").contains("kernel")
    });
    // IPv4: an appended route to a prefix is used once the first one is deleted.
    ip(&["route", "add", "198.18.9.0/24", "via", "192.0.2.20", "dev", &a, "proto", "bgp"]);
    ip(&["route", "append", "198.18.9.0/24", "via", "192.0.2.21", "dev", &a, "proto", "bgp"]);
    serve_until(&mut dp, "the first of two", |dp| has(&fib(dp, "198.18.9.0/24"), "192.0.2.20"));
    ip(&["route", "del", "198.18.9.0/24", "via", "192.0.2.20", "dev", &a]);
    serve_until(&mut dp, "the appended one", |dp| has(&fib(dp, "198.18.9.0/24"), "192.0.2.21"));
    // IPv6: next hops appended one by one, and one of three deleted.
    let fib6 = |dp: &mut Dataplane| cli.execute(dp, "show ip6 fib 2001:db8:99::/48").unwrap().text;
    ip(&["-6", "route", "add", "2001:db8:99::/48", "via", "fe80::20", "dev", &a, "proto", "bgp"]);
    for gw in ["fe80::21", "fe80::22"] {
        ip(&["-6", "route", "append", "2001:db8:99::/48", "via", gw, "dev", &a, "proto", "bgp"]);
    }
    serve_until(&mut dp, "three IPv6 paths", |dp| fib6(dp).contains("multipath: 3 paths"));
    ip(&["-6", "route", "del", "2001:db8:99::/48", "via", "fe80::21", "dev", &a]);
    serve_until(&mut dp, "two IPv6 paths left", |dp| {
        let f = fib6(dp);
        f.contains("multipath: 2 paths") && f.contains("fe80::22 ") && !f.contains("fe80::21 ")
    });
    // Linux removes IPv4 routes without a message when their link's last IPv4 address goes,
    // or the link goes down: vecflow withdraws them itself.
    ip(&["addr", "add", "198.51.100.1/24", "dev", &a]);
    ip(&["route", "add", "203.0.113.0/24", "via", "198.51.100.9", "dev", &a, "proto", "bgp"]);
    serve_until(&mut dp, "through 198.51.100.9", |dp| has(&fib(dp, "203.0.113.0/24"), "198.51.100.9"));
    ip(&["addr", "del", "192.0.2.1/24", "dev", &a]);
    ip(&["addr", "del", "198.51.100.1/24", "dev", &a]);
    let kernel = lab::must("ip", &["-n", &ns.0, "route", "show", "203.0.113.0/24"]);
    assert!(kernel.trim().is_empty(), "the kernel dropped it: {kernel}");
    serve_until(&mut dp, "withdrawn with the address", |dp| !fib(dp, "203.0.113.0/24").contains("kernel"));
    dp.apply(&config(&ns.0, &a, &b, 1400, "up")).unwrap();
    ip(&["route", "add", "203.0.113.0/24", "via", "192.0.2.9", "dev", &a, "proto", "bgp"]);
    serve_until(&mut dp, "through 192.0.2.9", |dp| has(&fib(dp, "203.0.113.0/24"), "192.0.2.9"));
    ip(&["link", "set", &a, "down"]);
    serve_until(&mut dp, "withdrawn with the link", |dp| !fib(dp, "203.0.113.0/24").contains("kernel"));
    dp.stop().unwrap();
}

/// What FRR installs with `nexthop_compat_mode=0` (next-hop objects and groups, routes by
/// `nhid`), reject routes, and kernel neighbors reach vecflow; what it cannot forward is
/// counted in `show lcp`.
#[test]
fn next_hop_objects_reject_routes_and_kernel_neighbors_are_mirrored() {
    let Some((ns, a, _b, mut dp)) = tap_lab("vflnh", "lcpn", "lcpo") else { return };
    let ip = |args: &[&str]| ip_in(&ns.0, args);
    let cli = dataplane::control::cli::Registry::with_builtins();
    let show = |dp: &mut Dataplane, what: &str| cli.execute(dp, what).unwrap().text;
    lab::must("ip", &["netns", "exec", &ns.0, "sysctl", "-qw", "net.ipv4.nexthop_compat_mode=0"]);

    // A group of two objects, weights 3 and 1: a route through it has both paths.
    ip(&["nexthop", "add", "id", "1", "via", "192.0.2.9", "dev", &a]);
    ip(&["nexthop", "add", "id", "2", "via", "192.0.2.10", "dev", &a]);
    ip(&["nexthop", "add", "id", "10", "group", "1,3/2"]);
    ip(&["route", "add", "203.0.113.0/24", "nhid", "10", "proto", "bgp"]);
    ip(&["route", "add", "198.18.1.0/24", "nhid", "1", "proto", "bgp"]);
    let fib = |dp: &mut Dataplane, p: &str| show(dp, &format!("show ip fib {p}"));
    serve_until(&mut dp, "the group's two paths", |dp| {
        let f = fib(dp, "203.0.113.0/24");
        f.contains("kernel") && f.contains("multipath: 2 paths") && f.contains("192.0.2.10")
    });
    let f = fib(&mut dp, "203.0.113.0/24");
    let weight =
        |via: &str| f.lines().find(|l| l.contains(via)).map(|l| l.split_whitespace().nth(1).unwrap().to_string());
    assert_eq!((weight("192.0.2.9 "), weight("192.0.2.10 ")), (Some("3".into()), Some("1".into())), "{f}");
    // The second route may come in a later batch than the first.
    serve_until(&mut dp, "the route through object 1", |dp| fib(dp, "198.18.1.0/24").contains("via 192.0.2.9"));
    // An object replaced: every route through it follows, with no route message.
    ip(&["nexthop", "replace", "id", "2", "via", "192.0.2.11", "dev", &a]);
    serve_until(&mut dp, "the replaced object", |dp| fib(dp, "203.0.113.0/24").contains("192.0.2.11"));
    // An object deleted: the group keeps the other, the route through it goes.
    ip(&["nexthop", "del", "id", "1"]);
    serve_until(&mut dp, "the deleted object's routes", |dp| {
        let (group, single) = (fib(dp, "203.0.113.0/24"), fib(dp, "198.18.1.0/24"));
        !single.contains("kernel") && group.contains("via 192.0.2.11") && !group.contains("multipath")
    });

    // Reject routes, both families.
    ip(&["route", "add", "blackhole", "198.18.2.0/24"]);
    ip(&["route", "add", "unreachable", "198.18.3.0/24"]);
    ip(&["route", "add", "prohibit", "198.18.4.0/24"]);
    ip(&["-6", "route", "add", "blackhole", "2001:db8:bad::/48"]);
    serve_until(&mut dp, "the reject routes", |dp| {
        fib(dp, "198.18.4.0/24").contains("prohibit (reject route)")
            && show(dp, "show ip6 fib 2001:db8:bad::/48").contains("blackhole (reject route)")
    });
    assert!(fib(&mut dp, "198.18.3.0/24").contains("unreachable (reject route)"));
    // A kind vecflow cannot forward: counted, by why.
    ip(&["route", "add", "198.18.5.0/24", "via", "inet6", "fe80::1", "dev", &a]);
    serve_until(&mut dp, "the unmirrored count", |dp| {
        show(dp, "show lcp").contains("kernel routes not mirrored: 1 (a gateway of the other family 1)")
    });
    let lcp = show(&mut dp, "show lcp");
    assert!(lcp.contains("blackhole 2, unreachable 1, prohibit 1"), "{lcp}");

    // Kernel neighbors: a permanent one acts as static; a reachable one is confirmed.
    let neighbors = |dp: &mut Dataplane| show(dp, "show ip neighbors");
    ip(&["neigh", "add", "192.0.2.50", "lladdr", "02:00:00:00:00:50", "dev", &a, "nud", "permanent"]);
    ip(&["neigh", "add", "192.0.2.51", "lladdr", "02:00:00:00:00:51", "dev", &a, "nud", "reachable"]);
    let row = |text: &str, addr: &str| text.lines().find(|l| l.contains(addr)).unwrap_or("").to_string();
    serve_until(&mut dp, "both neighbors", |dp| {
        let n = neighbors(dp);
        row(&n, "192.0.2.50 ").contains("static") && row(&n, "192.0.2.51 ").contains("reachable")
    });
    assert!(row(&neighbors(&mut dp), "192.0.2.50 ").contains("02:00:00:00:00:50"));
    // Deleted in the kernel: the permanent one goes; the one vecflow confirmed stays.
    ip(&["neigh", "del", "192.0.2.50", "dev", &a]);
    ip(&["neigh", "del", "192.0.2.51", "dev", &a]);
    serve_until(&mut dp, "the permanent one gone", |dp| row(&neighbors(dp), "192.0.2.50 ").is_empty());
    assert!(row(&neighbors(&mut dp), "192.0.2.51 ").contains("02:00:00:00:00:51"));
    dp.stop().unwrap();
}

#[test]
fn sflow_reports_the_taps_linux_ifindex_with_if_index_linux() {
    let Some(tag) = tap_test_tag() else { return };
    let ns = lcp_lab::Namespace(format!("vflsf{tag}"));
    let (a, b) = (format!("lcpi{tag}"), format!("lcpj{tag}"));
    let collector = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    collector.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
    let port = collector.local_addr().unwrap().port();
    let mut c = Config::load(&format!(
        "
linux-cp: {{netns: {}}}
metrics: {{enabled: false}}
sflow: {{polling-interval: 1, if-index: linux, collectors: [{{address: 127.0.0.1, port: {port}}}]}}
interfaces:
  'port/0': {{linux-name: {a}, addresses: [192.0.2.1/24], sflow: {{}}}}
  port1: {{linux-name: {b}, state: down}}
",
        ns.0
    ))
    .unwrap();
    assert!(c.validate().is_ok());
    let mut dp = Dataplane::start(&c).unwrap();
    let ifindex = link(&ns.0, &a).unwrap()["ifindex"].as_u64().unwrap() as u32;
    let mut buf = [0u8; 9000];
    let n = collector.recv(&mut buf).expect("a counter sample within 5 s");
    let datagram = sflow::decode(&buf[..n]).unwrap();
    let sources: Vec<u32> = datagram
        .samples
        .iter()
        .filter_map(|s| if let sflow::Sample::Counters(c) = s { Some(c.source.index) } else { None })
        .collect();
    assert_eq!(sources, [ifindex], "port/0's counters under its TAP's ifindex");
    dp.stop().unwrap();
    // Without linux-cp, `linux` is refused by name.
    c.linux_cp = None;
    let e = c.validate().unwrap_err().to_string();
    assert!(e.starts_with("sflow.if-index: linux"), "{e}");
}

#[test]
fn the_netlink_listener_dumps_again_after_an_overrun_and_notes_the_difference() {
    use dataplane::lcp::listener::{KernelView, Listener};
    let Some(tag) = tap_test_tag() else { return };
    let ns = lcp_lab::Namespace(format!("vflnl{tag}"));
    let netns = dataplane::lcp::Netns::open_or_create(&ns.0).unwrap();
    let (va, vb) = (format!("lcpg{tag}"), format!("lcph{tag}"));
    lab::must("ip", &["-n", &ns.0, "link", "add", &va, "type", "veth", "peer", "name", &vb]);
    // The sockets first, with the smallest receive buffer the kernel gives (a few
    // notifications), and nobody reading yet: of what follows, the first notifications are
    // queued and the rest dropped.
    let sockets = netns.run(|| Listener::sockets(4096)).unwrap();
    let mut batch = format!("addr add 10.59.0.1/32 dev {va}\n");
    batch.extend((0..300).map(|k| format!("addr add 10.60.{}.{}/32 dev {va}\n", k / 250, k % 250 + 1)));
    batch.push_str(&format!("addr del 10.59.0.1/32 dev {va}\nlink del {va}\n"));
    let mut ip = std::process::Command::new("ip")
        .args(["-n", &ns.0, "-batch", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(ip.stdin.as_mut().unwrap(), batch.as_bytes()).unwrap();
    drop(ip.stdin.take());
    assert!(ip.wait().unwrap().success());
    // The listener's dump sees the end state (only lo). The kernel reports the overrun; the
    // queued notifications (addresses of a link that is gone, whose removals were dropped) are
    // older than the second dump and must not be replayed after it.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let kernel = dataplane::lcp::pending::SharedKernel::new(dataplane::lcp::routes::MAIN_TABLE);
    let listener = Listener::spawn(sockets, kernel.clone(), stop.clone()).unwrap();
    let c = &listener.counters;
    let load = |n: &std::sync::atomic::AtomicU64| n.load(std::sync::atomic::Ordering::Acquire);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while load(&c.dumps) < 2 {
        assert!(std::time::Instant::now() < end, "no second dump after 10 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let mut view = KernelView::default();
    for change in kernel.lock().take_taps() {
        view.change(change);
    }
    assert!(load(&c.overruns) >= 1, "the overrun is counted");
    // What was noted adds up to what the kernel has: lo, 127.0.0.1 and ::1; and so does the
    // one view.
    assert_eq!(view.links.len(), 1, "{view:?}");
    assert!(view.addresses.iter().all(|(_, a)| a.addr.is_loopback()), "{view:?}");
    let shared = &kernel.lock().view;
    assert_eq!((&shared.links, &shared.addresses), (&view.links, &view.addresses));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    listener.join();
}

/// In the linux-cp namespace: accepts one TCP connection on `addr`:`port`, echoes what it
/// reads back, upper-cased.
const ECHO: &str = r#"
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(1)
print("listening", flush=True)
s.settimeout(20)
c, _ = s.accept()
c.settimeout(10)
c.sendall(c.recv(100).upper())
c.close()
"#;

/// From a host: connects to `addr`:`port`, sends a line, prints the answer.
const CLIENT: &str = r#"
import socket, sys
c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10)
c.sendall(b"hello through the tap")
print(c.recv(100).decode())
"#;

/// On a host's device: sends one ARP request from `src` for `dst` and prints how many replies
/// arrive within a second.
const ARP_REPLIES: &str = r#"
import socket, sys, time
dev, src, dst = sys.argv[1], socket.inet_aton(sys.argv[2]), socket.inet_aton(sys.argv[3])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0806))
s.bind((dev, 0))
mac = s.getsockname()[4]
s.send(b"\xff" * 6 + mac + b"\x08\x06" + b"\x00\x01\x08\x00\x06\x04\x00\x01" + mac + src + b"\x00" * 6 + dst)
s.settimeout(0.1)
n, end = 0, time.time() + 1
while time.time() < end:
    try:
        f = s.recv(100)
    except socket.timeout:
        continue
    if f[20:22] == b"\x00\x02" and f[28:32] == dst and f[38:42] == src:
        n += 1
print(n)
"#;

#[test]
fn tcp_to_the_router_reaches_linux_through_the_tap_and_back() {
    if !lab::can_run() {
        return;
    }
    let lab = lab::Lab::new("1500");
    let dir = tempfile::tempdir().unwrap();
    // Linux learns host A's MAC from the ARP vecflow copies up to it.
    let (lcp, vecflow, _) = lcp_lab::linux_cp_router(&lab, dir.path());
    let port = (20000 + std::process::id() % 20000).to_string();
    let mut server = common::Daemon::spawn(
        Command::new("ip")
            .args(["netns", "exec", &lcp.0, "python3", "-c", ECHO, "10.77.0.1", &port])
            .stdout(std::process::Stdio::piped()),
    );
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(server.child().stdout.as_mut().unwrap()), &mut line)
        .unwrap();
    assert_eq!(line.trim(), "listening");
    let out = lab.exec(&lab.a, &["python3", "-c", CLIENT, "10.77.0.1", &port]);
    // An address added to the TAP in Linux: vecflow answers pings for it.
    lab::must("ip", &["-n", &lcp.0, "addr", "add", "10.77.0.9/24", "dev", "wa"]);
    let (pinged, ping_out) = lab.ping(&lab.a, &["-c", "1", "-w", "5", "10.77.0.9"]);
    let addresses = lab::ctl(dir.path(), &["show", "interface", "address"]);
    let metrics = lcp_lab::metrics(&lab);
    // One answer per ARP request on the wire: vecflow's (Linux answers the copy too, and
    // vecflow drops that).
    let replies = lab.exec(&lab.a, &["python3", "-c", ARP_REPLIES, &lab.veth("a", 0), "10.77.0.2", "10.77.0.1"]);
    let show = lab.stop_vecflow(vecflow, dir.path());
    let series = |name: &str| -> u64 {
        let line = metrics.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name}:\n{metrics}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(series("vecflow_lcp_punted_total{interface=\"wa\"}") >= 4, "{metrics}");
    assert!(series("vecflow_lcp_injected_total{interface=\"wa\"}") >= 3, "{metrics}");
    assert_eq!(series("vecflow_lcp_netlink_dumps_total"), 1, "{metrics}");
    assert!(series("vecflow_lcp_netlink_messages_total") >= 1, "{metrics}");
    let kernel = addresses.lines().any(|l| l.contains("10.77.0.9/24") && l.contains("kernel"));
    assert!(pinged && kernel, "ping to an address set in Linux:\n{ping_out}\n{addresses}");
    assert_eq!(String::from_utf8_lossy(&replies.stdout).trim(), "1", "{}", String::from_utf8_lossy(&replies.stderr));
    assert!(show.contains("lcp-duplicate-answer"), "Linux answered the copy, and that answer was dropped:\n{show}");
    // show lcp: the pair, and frames both ways (the TCP exchange, ARP).
    let lcp_rows: Vec<&str> = show.split("vecflow# show lcp").nth(1).expect("show lcp at exit").lines().collect();
    let row: Vec<&str> = lcp_rows.iter().find(|l| l.starts_with("wa ")).expect("wa's row").split_whitespace().collect();
    assert_eq!(row[1], "wa", "{show}");
    let (punted, injected): (u64, u64) = (row[3].parse().unwrap(), row[7].parse().unwrap());
    assert!(punted >= 4 && injected >= 3, "TCP and ARP went up and down the TAP:\n{show}");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "HELLO THROUGH THE TAP",
        "{}\n{}\nvecflow at exit:\n{show}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
