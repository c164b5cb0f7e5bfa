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

use common::{Daemon, require, skip};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Runs `cmd` with `args`, returns its output; panics when it cannot start.
fn run(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

/// Runs `cmd` and panics with its stderr when it fails.
fn must(cmd: &str, args: &[&str]) -> String {
    let out = run(cmd, args);
    assert!(out.status.success(), "{cmd} {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Three namespaces and two veth pairs, all named after a random tag; deleted on drop (the
/// veths go with their namespaces).
struct Lab {
    a: String,
    b: String,
    r: String,
    tag: String,
}

impl Lab {
    /// The namespaces and veths (B's with MTU `mtu_b`), offloads and IPv6 off, links up; no
    /// addresses.
    fn new(mtu_b: &str) -> Lab {
        Lab::with_ipv6(mtu_b, false)
    }

    /// As [`Lab::new`], with IPv6 on the hosts' ends when `ipv6` (duplicate address detection
    /// off, so that addresses work at once). The router's ends never have it: vecflow, not
    /// the kernel, answers there.
    fn with_ipv6(mtu_b: &str, ipv6: bool) -> Lab {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let tag = format!("{:04x}", (std::process::id() ^ nanos) as u16);
        let lab = Lab { a: format!("vfa{tag}"), b: format!("vfb{tag}"), r: format!("vfr{tag}"), tag };
        for ns in [&lab.a, &lab.b, &lab.r] {
            must("ip", &["netns", "add", ns]);
            must("ip", &["-n", ns, "link", "set", "lo", "up"]);
        }
        for (host, side, mtu) in [(&lab.a, "a", "1500"), (&lab.b, "b", mtu_b)] {
            let (h, rt) = (lab.veth(side, 0), lab.veth(side, 1));
            let queues = ["numtxqueues", "2", "numrxqueues", "2"];
            let mut add = vec!["link", "add", &h];
            add.extend_from_slice(&queues);
            add.extend_from_slice(&["netns", host, "type", "veth", "peer", "name", &rt]);
            add.extend_from_slice(&queues);
            add.extend_from_slice(&["netns", &lab.r]);
            must("ip", &add);
            for (ns, dev) in [(host, &h), (&lab.r, &rt)] {
                // Offloads off: the kernel's GSO/GRO and partial checksums stay out of the test.
                must(
                    "ip",
                    &["netns", "exec", ns, "ethtool", "-K", dev, "tx", "off", "tso", "off", "gso", "off", "gro", "off"],
                );
                let host_ipv6 = ipv6 && ns == host;
                let sysctl = |key: &str, value: &str| {
                    must("ip", &["netns", "exec", ns, "sysctl", "-qw", &format!("net.ipv6.conf.{dev}.{key}={value}")]);
                };
                sysctl("disable_ipv6", if host_ipv6 { "0" } else { "1" });
                if host_ipv6 {
                    sysctl("accept_dad", "0");
                }
                must("ip", &["-n", ns, "link", "set", dev, "mtu", mtu, "up"]);
            }
        }
        lab
    }

    /// The namespace of host `side` ("a" or "b").
    fn host(&self, side: &str) -> &str {
        if side == "a" { &self.a } else { &self.b }
    }

    /// Gives host `side` address `addr` (with prefix length) and, if any, a default route via
    /// `gateway`.
    fn address(&self, side: &str, addr: &str, gateway: Option<&str>) {
        let (ns, dev) = (self.host(side), self.veth(side, 0));
        must("ip", &["-n", ns, "addr", "add", addr, "dev", &dev]);
        if let Some(gw) = gateway {
            must("ip", &["-n", ns, "route", "add", "default", "via", gw]);
        }
    }

    /// Starts `vecflow run --show-at-exit` in the router namespace on `config` (written to
    /// `dir`) and waits until it runs; its stderr goes to `dir/vecflow.log`, its stdout (the
    /// `show` commands at exit) to `dir/show.txt`. Returns it and the start-up log.
    fn start_vecflow(&self, dir: &Path, config: &str) -> (Daemon, String) {
        let yaml = dir.join("router.yaml");
        std::fs::write(&yaml, config).unwrap();
        let log = dir.join("vecflow.log");
        let vecflow = Daemon::spawn(
            Command::new("ip")
                .args(["netns", "exec", &self.r, env!("CARGO_BIN_EXE_vecflow"), "run", "--show-at-exit"])
                .arg("--socket")
                .arg(dir.join("api.sock"))
                .arg("-c")
                .arg(&yaml)
                .stdout(std::fs::File::create(dir.join("show.txt")).unwrap())
                .stderr(std::fs::File::create(&log).unwrap()),
        );
        let started = wait_for_log(&log, "running");
        (vecflow, started)
    }

    /// The routed labs' configuration: two workers, `wa` (index 1) on veth A's router end and
    /// `wb` (index 2) on B's, each with its driver and the rest of its settings (`wa`, `wb`),
    /// both sampled at 1:10 and polled every second for a collector on `port`.
    fn router_yaml(&self, wa: (Port, &str), wb: (Port, &str), port: u16) -> String {
        format!(
            "workers: {{count: 2}}
metrics: {{enabled: false}}
interfaces:
  wa: {{index: 1, {}, host-interface: {}, mac: '02:fe:00:00:00:01', sflow: {{}}, {}}}
  wb: {{index: 2, {}, host-interface: {}, mac: '02:fe:00:00:00:02', sflow: {{}}, {}}}
sflow: {{sampling-rate: 10, polling-interval: 1, collectors: [{{address: 127.0.0.1, port: {port}}}]}}
",
            wa.0.yaml(2, "polling"),
            self.veth("a", 1),
            wa.1,
            wb.0.yaml(1, "adaptive"),
            self.veth("b", 1),
            wb.1,
        )
    }

    /// Stops vecflow with SIGTERM, checks it exited 0, and returns what it printed at exit.
    fn stop_vecflow(&self, vecflow: Daemon, dir: &Path) -> String {
        let status = vecflow.stop(libc::SIGTERM, Duration::from_secs(10));
        let text = std::fs::read_to_string(dir.join("vecflow.log")).unwrap_or_default();
        assert!(status.success() && text.contains("stopped"), "vecflow run exits 0 on SIGTERM ({status}):\n{text}");
        std::fs::read_to_string(dir.join("show.txt")).unwrap()
    }

    /// iperf3 from A to B's `server` address for 2 s (`extra`: e.g. UDP options); the bytes B
    /// received and, for UDP, the share lost in percent.
    fn iperf3(&self, server: &str, extra: &[&str]) -> (u64, Option<f64>) {
        let port = (20000 + (std::process::id() % 20000) as u16).to_string();
        let _server = Daemon::spawn(
            Command::new("ip")
                .args(["netns", "exec", &self.b, "iperf3", "-s", "-1", "-p", &port])
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        std::thread::sleep(Duration::from_millis(300));
        let mut cmd = vec!["iperf3", "-c", server, "-p", &port, "-t", "2", "-J"];
        cmd.extend_from_slice(extra);
        let out = self.exec(&self.a, &cmd);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        assert!(out.status.success() && report["error"].is_null(), "iperf3 {extra:?}: {report}");
        let end = &report["end"];
        let bytes = end["sum_received"]["bytes"].as_u64().or(end["sum"]["bytes"].as_u64()).unwrap_or(0);
        (bytes, end["sum"]["lost_percent"].as_f64().filter(|_| extra.contains(&"-u")))
    }

    /// The veth of `side` ("a" or "b"): 0 the host's end, 1 the router's.
    fn veth(&self, side: &str, end: u8) -> String {
        format!("vf{side}{end}{}", self.tag)
    }

    /// `cmd` run inside namespace `ns`.
    fn exec(&self, ns: &str, cmd: &[&str]) -> Output {
        let mut args = vec!["netns", "exec", ns];
        args.extend_from_slice(cmd);
        run("ip", &args)
    }

    /// `ping` from `ns` with `args`; its output (stdout) and whether it succeeded.
    fn ping(&self, ns: &str, args: &[&str]) -> (bool, String) {
        let mut cmd = vec!["ping", "-n"];
        cmd.extend_from_slice(args);
        let out = self.exec(ns, &cmd);
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The kernel's (rx packets, tx packets) of `dev` in `ns`.
    fn link_packets(&self, ns: &str, dev: &str) -> (u64, u64) {
        let out = must("ip", &["-n", ns, "-s", "-j", "link", "show", dev]);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let s = &v[0]["stats64"];
        (s["rx"]["packets"].as_u64().unwrap(), s["tx"]["packets"].as_u64().unwrap())
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b, &self.r] {
            let _ = run("ip", &["netns", "del", ns]);
        }
    }
}

/// An sFlow collector: a UDP socket on 127.0.0.1 inside namespace `ns`, read by a thread.
struct Collector {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<(Instant, Vec<u8>)>>,
}

impl Collector {
    fn start(ns: &str) -> Collector {
        let file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || {
            // SAFETY: setns(2) moves only this thread into the namespace the open file names.
            assert_eq!(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns");
            let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
            sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
            tx.send(sock.local_addr().unwrap().port()).unwrap();
            let (mut got, mut buf) = (Vec::new(), [0u8; 9000]);
            loop {
                match sock.recv(&mut buf) {
                    Ok(n) => got.push((Instant::now(), buf[..n].to_vec())),
                    Err(_) if s.load(Relaxed) => break got,
                    Err(_) => {}
                }
            }
        });
        Collector { port: rx.recv().unwrap(), stop, thread }
    }

    /// Stops listening; every datagram with the time it arrived.
    fn finish(self) -> Vec<(Instant, Vec<u8>)> {
        std::thread::sleep(Duration::from_millis(300));
        self.stop.store(true, Relaxed);
        self.thread.join().unwrap()
    }
}

/// Sends `count` ARP requests for `target` from `sender` tagged with VLAN `vid`, out of `dev`
/// in namespace `ns`, through a packet socket (the kernels here have no 802.1Q module, so no
/// VLAN device can send them).
fn send_tagged_arp(ns: &str, dev: &str, vid: u16, sender: [u8; 4], target: [u8; 4], count: usize) {
    let file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
    let dev = std::ffi::CString::new(dev).unwrap();
    std::thread::spawn(move || {
        // SAFETY: setns(2) moves only this thread into the namespace the open file names.
        assert_eq!(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns");
        // SAFETY: a C string that lives across the call.
        let ifindex = unsafe { libc::if_nametoindex(dev.as_ptr()) };
        assert!(ifindex > 0, "{dev:?}");
        // SAFETY: socket(2) with constant arguments; checked below.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let mac = [2, 0, 0, 0, 0x64, 2];
        let mut f = vec![0xffu8; 6];
        f.extend_from_slice(&mac);
        f.extend_from_slice(&[0x81, 0x00, (vid >> 8) as u8, vid as u8, 0x08, 0x06]);
        f.extend_from_slice(&[0, 1, 8, 0, 6, 4, 0, 1]);
        f.extend_from_slice(&mac);
        f.extend_from_slice(&sender);
        f.extend_from_slice(&[0; 6]);
        f.extend_from_slice(&target);
        f.resize(64, 0);
        // SAFETY: sockaddr_ll is plain data; zero is valid for every field.
        let mut to: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        to.sll_family = libc::AF_PACKET as u16;
        to.sll_ifindex = ifindex as i32;
        to.sll_halen = 6;
        for _ in 0..count {
            // SAFETY: `f` and `to` live across the call, with the lengths passed.
            let n = unsafe {
                libc::sendto(
                    fd,
                    f.as_ptr().cast(),
                    f.len(),
                    0,
                    (&to as *const libc::sockaddr_ll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
                )
            };
            assert_eq!(n, f.len() as isize, "sendto: {}", std::io::Error::last_os_error());
            std::thread::sleep(Duration::from_millis(50));
        }
        // SAFETY: closes the socket opened above, once.
        unsafe { libc::close(fd) };
    })
    .join()
    .unwrap();
}

/// `vecflow ctl` on the API socket in `dir` with `args`; its output (panics when it fails).
fn ctl(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_vecflow"))
        .arg("ctl")
        .arg("--socket")
        .arg(dir.join("api.sock"))
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "ctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits up to 10 s for `needle` in the file at `path`.
fn wait_for_log(path: &Path, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains(needle) {
            return text;
        }
        assert!(Instant::now() < deadline, "no '{needle}' in vecflow's log:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The driver of a port of vecflow's in a lab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Port {
    AfPacket,
    AfXdp,
}

impl Port {
    /// The port's driver settings as YAML flow-mapping entries: AF_PACKET with `queues` rx
    /// queues; AF_XDP on both of the veth's queues, waiting in `rx_mode`.
    fn yaml(self, queues: u16, rx_mode: &str) -> String {
        match (self, queues) {
            (Port::AfPacket, 1) => "driver: af-packet".to_string(),
            (Port::AfPacket, n) => format!("driver: af-packet, af-packet: {{rx-queues: {n}}}"),
            (Port::AfXdp, _) => format!("driver: af-xdp, af-xdp: {{queues: 2}}, rx-mode: {rx_mode}"),
        }
    }
}

/// Whether this test can run here: root and the tools (a skip, or with `CI=true` a failure,
/// otherwise).
fn can_run() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip("needs root for network namespaces");
        return false;
    }
    let sbin = [PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")];
    ["ip", "ping", "ethtool", "iperf3", "python3"]
        .iter()
        .all(|t| require(t, &sbin, "./test.sh installs it as root").is_some())
}

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

/// The routed lab with vecflow's ports `wa` and `wb` on drivers `pa` and `pb`.
fn ipv4_lab(pa: Port, pb: Port) {
    if !can_run() {
        return;
    }
    let lab = Lab::new("1400");
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
    // Tagged frames: the kernel strips the tag before a packet socket sees the frame, vecflow
    // puts it back, so wa's VLAN 100 sub-interface answers ARP (its replies go out tagged);
    // its counters are checked with the others below.
    send_tagged_arp(&lab.a, &lab.veth("a", 0), 100, [10, 0, 100, 2], [10, 0, 100, 1], 3);
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

    // The last round with A's checksum offload on: its TCP segments reach vecflow with the
    // checksum left undone (TP_STATUS_CSUMNOTREADY), which vecflow completes. (AF_XDP hands
    // over no such flag: hosts facing an AF_XDP port must not leave checksums to offload.)
    let mut rounds = vec![("TCP", vec![]), ("UDP", vec!["-u", "-b", "20M"])];
    if pa == Port::AfPacket {
        rounds.push(("TCP, checksums left to offload", vec![]));
    }
    for (name, extra) in rounds {
        let offload = if name.contains("offload") { "on" } else { "off" };
        must("ip", &["netns", "exec", &lab.a, "ethtool", "-K", &lab.veth("a", 0), "tx", offload]);
        let (bytes, lost) = lab.iperf3("10.0.2.2", &extra);
        assert!(bytes > 1_000_000, "iperf3 {name} moved {bytes} bytes");
        if let Some(lost) = lost {
            eprintln!("iperf3 UDP 20 Mbit/s through vecflow: {lost:.2} % lost");
            assert!(lost < 5.0, "UDP loss {lost} %");
        }
    }
    must("ip", &["netns", "exec", &lab.a, "ethtool", "-K", &lab.veth("a", 0), "tx", "off"]);

    // Counters over a last exchange: the hosts' veth counters before it (in a quiet moment, a
    // second after the load, so that vecflow has polled its counters since) and after it,
    // against vecflow's last counter poll before it and its final one at stop. (During the
    // load the kernel may drop frames vecflow's ring had no room for: rx-miss, which goes
    // into ifInDiscards, not the packet counters.) From here on the hosts keep the router's
    // MAC, so that no ARP of theirs lands after vecflow stopped.
    std::thread::sleep(Duration::from_millis(1500));
    let quiet = Instant::now();
    let before: Vec<(u64, u64)> =
        [("a", &lab.a), ("b", &lab.b)].iter().map(|(side, ns)| lab.link_packets(ns, &lab.veth(side, 0))).collect();
    for (ns, dev, gw, mac) in [
        (&lab.a, lab.veth("a", 0), "10.0.1.1", "02:fe:00:00:00:01"),
        (&lab.b, lab.veth("b", 0), "10.0.2.1", "02:fe:00:00:00:02"),
    ] {
        must("ip", &["-n", ns, "neigh", "replace", gw, "lladdr", mac, "dev", &dev, "nud", "permanent"]);
    }
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
    let (bytes, lost) = lab.iperf3("10.0.5.2", &["-u", "-b", "20M"]);
    let lost = lost.unwrap_or(100.0);
    eprintln!("iperf3 UDP 20 Mbit/s through vecflow's L2XC: {bytes} bytes, {lost:.2} % lost");
    assert!(bytes > 1_000_000 && lost < 5.0, "UDP: {bytes} bytes, {lost} % lost");
    std::thread::sleep(Duration::from_millis(300));
    let show = lab.stop_vecflow(vecflow, dir.path());
    // Every frame a host sent reached vecflow (or the kernel dropped it for want of ring
    // room: rx miss), and every frame a host received came from vecflow.
    for (k, (side, name, peer)) in [("a", "xa", "xb"), ("b", "xb", "xa")].into_iter().enumerate() {
        let (host_rx, host_tx) = lab.link_packets(lab.host(side), &lab.veth(side, 0));
        let (mine, theirs) = (show_counters(&show, name), show_counters(&show, peer));
        let got = |c: &std::collections::BTreeMap<String, u64>, k: &str| c.get(k).copied().unwrap_or(0);
        assert_eq!(
            host_tx - before[k].1,
            got(&mine, "rx packets") + got(&mine, "rx miss"),
            "{name} received what host {side} sent\n{show}"
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
