//! The namespaces, veths, collector and helpers the end-to-end labs of `netns.rs` share.

use crate::common::{Daemon, require, skip};
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Runs `cmd` with `args`, returns its output; panics when it cannot start.
pub(crate) fn run(cmd: &str, args: &[&str]) -> Output {
    Command::new(cmd).args(args).output().unwrap_or_else(|e| panic!("{cmd}: {e}"))
}

/// Runs `cmd` and panics with its stderr when it fails.
pub(crate) fn must(cmd: &str, args: &[&str]) -> String {
    let out = run(cmd, args);
    assert!(out.status.success(), "{cmd} {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Three namespaces and two veth pairs, all named after a random tag; deleted on drop (the
/// veths go with their namespaces).
pub(crate) struct Lab {
    pub(crate) a: String,
    pub(crate) b: String,
    pub(crate) r: String,
    pub(crate) tag: String,
}

impl Lab {
    /// The namespaces and veths (B's with MTU `mtu_b`), IPv6 off, links up; no addresses.
    pub(crate) fn new(mtu_b: &str) -> Lab {
        Lab::with_ipv6(mtu_b, false)
    }

    /// As [`Lab::new`], with IPv6 on the hosts' ends when `ipv6` (duplicate address detection
    /// off, so that addresses work at once). The router's ends never have it: vecflow, not
    /// the kernel, answers there.
    pub(crate) fn with_ipv6(mtu_b: &str, ipv6: bool) -> Lab {
        Lab::with_mtus("1500", mtu_b, ipv6)
    }

    /// As [`Lab::with_ipv6`], with MTU `mtu_a` on A's veth as well.
    pub(crate) fn with_mtus(mtu_a: &str, mtu_b: &str, ipv6: bool) -> Lab {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos();
        let tag = format!("{:04x}", (std::process::id() ^ nanos) as u16);
        let lab = Lab { a: format!("vfa{tag}"), b: format!("vfb{tag}"), r: format!("vfr{tag}"), tag };
        for ns in [&lab.a, &lab.b, &lab.r] {
            must("ip", &["netns", "add", ns]);
            must("ip", &["-n", ns, "link", "set", "lo", "up"]);
        }
        for (host, side, mtu) in [(&lab.a, "a", mtu_a), (&lab.b, "b", mtu_b)] {
            lab.veth_pair(host, &lab.veth(side, 0), &lab.veth(side, 1), mtu, ipv6);
        }
        lab
    }

    /// A veth pair from `host`'s end `h` to the router's end `rt` ([`veth_between`]).
    pub(crate) fn veth_pair(&self, host: &str, h: &str, rt: &str, mtu: &str, ipv6: bool) {
        veth_between((host, h), (&self.r, rt), mtu, ipv6);
    }

    /// One more link between host `side` and the router, set up as the first (MTU 1500):
    /// veth `vf<link>0<tag>` in the host's namespace to `vf<link>1<tag>` in the router's
    /// (`link`: a letter other than "a" and "b"); the two ends' names. Gone with the
    /// namespaces.
    #[allow(dead_code)] // not every lab has a third link (netns.rs's do not)
    pub(crate) fn extra_link(&self, side: &str, link: &str, ipv6: bool) -> (String, String) {
        let (h, rt) = (self.veth(link, 0), self.veth(link, 1));
        self.veth_pair(self.host(side), &h, &rt, "1500", ipv6);
        (h, rt)
    }

    /// Turns off tx checksum offload on host `side`'s end when `port` (the router's port it
    /// faces) is AF_XDP, which hands over no "checksum left undone" flag: that driver's limit.
    pub(crate) fn facing(&self, side: &str, port: Port) {
        if port == Port::AfXdp {
            self.offloads(self.host(side), &self.veth(side, 0), &["tx", "off"]);
        }
    }

    /// Sets offloads (`ethtool -K DEV` arguments) of `dev` in namespace `ns`.
    pub(crate) fn offloads(&self, ns: &str, dev: &str, settings: &[&str]) {
        let mut args = vec!["netns", "exec", ns, "ethtool", "-K", dev];
        args.extend_from_slice(settings);
        must("ip", &args);
    }

    /// The namespace of host `side` ("a" or "b").
    pub(crate) fn host(&self, side: &str) -> &str {
        if side == "a" { &self.a } else { &self.b }
    }

    /// Gives host `side` address `addr` (with prefix length) and, if any, a default route via
    /// `gateway`.
    pub(crate) fn address(&self, side: &str, addr: &str, gateway: Option<&str>) {
        let (ns, dev) = (self.host(side), self.veth(side, 0));
        must("ip", &["-n", ns, "addr", "add", addr, "dev", &dev]);
        if let Some(gw) = gateway {
            must("ip", &["-n", ns, "route", "add", "default", "via", gw]);
        }
    }

    /// Starts `vecflow run --show-at-exit` in the router namespace ([`start_vecflow_in`]).
    pub(crate) fn start_vecflow(&self, dir: &Path, config: &str) -> (Daemon, String) {
        start_vecflow_in(&self.r, dir, config)
    }

    /// The routed labs' configuration: two workers, `wa` (index 1) on veth A's router end and
    /// `wb` (index 2) on B's, each with its driver and the rest of its settings (`wa`, `wb`),
    /// both sampled at 1:10 and polled every second for a collector on `port`. On AF_XDP,
    /// `wa` is in rx-mode busy-poll and `wb` adaptive.
    pub(crate) fn router_yaml(&self, wa: (Port, &str), wb: (Port, &str), port: u16) -> String {
        format!(
            "workers: {{count: 2}}
metrics: {{enabled: false}}
interfaces:
  wa: {{index: 1, {}, host-interface: {}, mac: '02:fe:00:00:00:01', sflow: {{}}, {}}}
  wb: {{index: 2, {}, host-interface: {}, mac: '02:fe:00:00:00:02', sflow: {{}}, {}}}
sflow: {{sampling-rate: 10, polling-interval: 1, collectors: [{{address: 127.0.0.1, port: {port}}}]}}
",
            wa.0.yaml(2, "busy-poll"),
            self.veth("a", 1),
            wa.1,
            wb.0.yaml(1, "adaptive"),
            self.veth("b", 1),
            wb.1,
        )
    }

    /// Stops vecflow ([`stop_vecflow_in`]).
    pub(crate) fn stop_vecflow(&self, vecflow: Daemon, dir: &Path) -> String {
        stop_vecflow_in(vecflow, dir)
    }

    /// iperf3 from A to B's `server` address for 2 s (`extra`: e.g. UDP options); the bytes B
    /// received and, for UDP, the share lost in percent.
    pub(crate) fn iperf3(&self, server: &str, extra: &[&str]) -> (u64, Option<f64>) {
        let port = (20000 + (std::process::id() % 20000) as u16).to_string();
        let _server = Daemon::spawn(
            Command::new("ip")
                .args(["netns", "exec", &self.b, "iperf3", "-s", "-1", "-p", &port])
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
        );
        self.wait_listening(&self.b, &port);
        let mut cmd = vec!["iperf3", "-c", server, "-p", &port, "-t", "2", "-J"];
        cmd.extend_from_slice(extra);
        let out = self.exec(&self.a, &cmd);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        assert!(out.status.success() && report["error"].is_null(), "iperf3 {extra:?}: {report}");
        let end = &report["end"];
        let bytes = end["sum_received"]["bytes"].as_u64().or(end["sum"]["bytes"].as_u64()).unwrap_or(0);
        (bytes, end["sum"]["lost_percent"].as_f64().filter(|_| extra.contains(&"-u")))
    }

    /// Waits until a TCP socket listens on `port` in namespace `ns` ([`wait_listening_in`]).
    pub(crate) fn wait_listening(&self, ns: &str, port: &str) {
        wait_listening_in(ns, port)
    }

    /// The veth of `side` ("a" or "b"): 0 the host's end, 1 the router's.
    pub(crate) fn veth(&self, side: &str, end: u8) -> String {
        format!("vf{side}{end}{}", self.tag)
    }

    /// `cmd` run inside namespace `ns`.
    pub(crate) fn exec(&self, ns: &str, cmd: &[&str]) -> Output {
        let mut args = vec!["netns", "exec", ns];
        args.extend_from_slice(cmd);
        run("ip", &args)
    }

    /// `ping` from `ns` with `args`; its output (stdout) and whether it succeeded.
    pub(crate) fn ping(&self, ns: &str, args: &[&str]) -> (bool, String) {
        let mut cmd = vec!["ping", "-n"];
        cmd.extend_from_slice(args);
        let out = self.exec(ns, &cmd);
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The kernel's (rx packets, tx packets) of `dev` in `ns`.
    pub(crate) fn link_packets(&self, ns: &str, dev: &str) -> (u64, u64) {
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

/// A veth pair from `h` (namespace, device) to the router's end `rt`, with two queues each,
/// the kernel's default offloads, MTU `mtu`, up; IPv6 on `h` when `ipv6` (duplicate address
/// detection off, so that addresses work at once), never on `rt`: vecflow, not the kernel,
/// answers there.
pub(crate) fn veth_between(h: (&str, &str), rt: (&str, &str), mtu: &str, ipv6: bool) {
    let queues = ["numtxqueues", "2", "numrxqueues", "2"];
    let mut add = vec!["link", "add", h.1];
    add.extend_from_slice(&queues);
    add.extend_from_slice(&["netns", h.0, "type", "veth", "peer", "name", rt.1]);
    add.extend_from_slice(&queues);
    add.extend_from_slice(&["netns", rt.0]);
    must("ip", &add);
    // The kernel's default offloads stay on (TSO, GSO, tx checksums; veth has GRO off): a
    // host facing an AF_XDP port turns its tx checksums off ([`Lab::facing`]).
    for ((ns, dev), host_ipv6) in [(h, ipv6), (rt, false)] {
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

/// Starts `vecflow run --show-at-exit` in namespace `ns` on `config` (written to `dir`) and
/// waits until it runs; its stderr goes to `dir/vecflow.log`, its stdout (the `show` commands
/// at exit) to `dir/show.txt`, its API socket is `dir/api.sock`. Returns it and the start-up
/// log.
pub(crate) fn start_vecflow_in(ns: &str, dir: &Path, config: &str) -> (Daemon, String) {
    let vecflow = spawn_vecflow_in(ns, dir, config, &[env!("CARGO_BIN_EXE_vecflow")]);
    let started = wait_for_log(&dir.join("vecflow.log"), "running");
    (vecflow, started)
}

/// Starts `vecflow run --show-at-exit` as [`start_vecflow_in`] does, through `launch` (the
/// program and its arguments up to vecflow's binary: `setpriv …  path/vecflow`), without
/// waiting for it.
pub(crate) fn spawn_vecflow_in(ns: &str, dir: &Path, config: &str, launch: &[&str]) -> Daemon {
    let yaml = dir.join("router.yaml");
    std::fs::write(&yaml, config).unwrap();
    let log = dir.join("vecflow.log");
    Daemon::spawn(
        Command::new("ip")
            .args(["netns", "exec", ns])
            .args(launch)
            .args(["run", "--show-at-exit"])
            .arg("--socket")
            .arg(dir.join("api.sock"))
            .arg("-c")
            .arg(&yaml)
            .stdout(std::fs::File::create(dir.join("show.txt")).unwrap())
            .stderr(std::fs::File::create(&log).unwrap()),
    )
}

/// Stops the vecflow started in `dir` with SIGTERM, checks it exited 0, and returns what it
/// printed at exit.
pub(crate) fn stop_vecflow_in(vecflow: Daemon, dir: &Path) -> String {
    let status = vecflow.stop(libc::SIGTERM, Duration::from_secs(10));
    let text = std::fs::read_to_string(dir.join("vecflow.log")).unwrap_or_default();
    assert!(status.success() && text.contains("stopped"), "vecflow run exits 0 on SIGTERM ({status}):\n{text}");
    std::fs::read_to_string(dir.join("show.txt")).unwrap()
}

/// Reads `read` every `period` for up to `secs` until `done` holds of what it read: that
/// reading and how long it took, or the last reading.
#[allow(dead_code)] // netns.rs's labs poll nothing
pub(crate) fn poll<T>(
    secs: u64,
    period: Duration,
    mut read: impl FnMut() -> T,
    done: impl Fn(&T) -> bool,
) -> Result<(T, Duration), T> {
    let start = Instant::now();
    loop {
        let reading = read();
        if done(&reading) {
            return Ok((reading, start.elapsed()));
        }
        if start.elapsed() > Duration::from_secs(secs) {
            return Err(reading);
        }
        std::thread::sleep(period);
    }
}

/// Waits (up to 10 s) until a TCP socket listens on `port` in namespace `ns`: a server
/// started with `ip netns exec` may take longer than any fixed sleep on a loaded machine.
pub(crate) fn wait_listening_in(ns: &str, port: &str) {
    let filter = format!("sport = :{port}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = run("ip", &["netns", "exec", ns, "ss", "-Hltn", &filter]);
        if !out.stdout.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "nothing listens on TCP port {port} in {ns} after 10 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// TCP from namespace `client` to `server` at `addr` (iperf3, 1 s, on a port of this test
/// process's): the bytes received.
#[allow(dead_code)] // netns.rs's labs measure with `Lab::iperf3`
pub(crate) fn tcp_bytes(client: &str, server: &str, addr: &str) -> u64 {
    let port = (21000 + (std::process::id() % 20000) as u16).to_string();
    let _server = Daemon::spawn(
        Command::new("ip")
            .args(["netns", "exec", server, "iperf3", "-s", "-1", "-p", &port])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    wait_listening_in(server, &port);
    let out = run("ip", &["netns", "exec", client, "iperf3", "-c", addr, "-p", &port, "-t", "1", "-J"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    assert!(out.status.success(), "iperf3 {client} -> {addr}: {report}");
    report["end"]["sum_received"]["bytes"].as_u64().unwrap_or(0)
}

/// An sFlow collector: a UDP socket on 127.0.0.1 inside namespace `ns`, read by a thread.
pub(crate) struct Collector {
    pub(crate) port: u16,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) thread: std::thread::JoinHandle<Vec<(Instant, Vec<u8>)>>,
}

impl Collector {
    pub(crate) fn start(ns: &str) -> Collector {
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
    pub(crate) fn finish(self) -> Vec<(Instant, Vec<u8>)> {
        std::thread::sleep(Duration::from_millis(300));
        self.stop.store(true, Relaxed);
        self.thread.join().unwrap()
    }
}

/// Sends `count` ARP requests for `target` from `sender` tagged with VLAN `vid`, out of `dev`
/// in namespace `ns`, through a packet socket (the kernels here have no 802.1Q module, so no
/// VLAN device can send them).
pub(crate) fn send_tagged_arp(ns: &str, dev: &str, vid: u16, sender: [u8; 4], target: [u8; 4], count: usize) {
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
pub(crate) fn ctl(dir: &Path, args: &[&str]) -> String {
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
pub(crate) fn wait_for_log(path: &Path, needle: &str) -> String {
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
pub(crate) enum Port {
    AfPacket,
    AfXdp,
}

impl Port {
    /// The port's driver settings as YAML flow-mapping entries: AF_PACKET with `queues` rx
    /// queues; AF_XDP on both of the veth's queues, waiting in `rx_mode`.
    pub(crate) fn yaml(self, queues: u16, rx_mode: &str) -> String {
        match (self, queues) {
            (Port::AfPacket, 1) => "driver: af-packet".to_string(),
            (Port::AfPacket, n) => format!("driver: af-packet, af-packet: {{rx-queues: {n}}}"),
            (Port::AfXdp, _) => format!("driver: af-xdp, af-xdp: {{queues: 2}}, rx-mode: {rx_mode}"),
        }
    }
}

/// Whether this test can run here: root and the tools (a skip, or with `CI=true` a failure,
/// otherwise).
pub(crate) fn can_run() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip("needs root for network namespaces");
        return false;
    }
    let sbin = [PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")];
    ["ip", "ss", "ping", "ethtool", "iperf3", "python3"]
        .iter()
        .all(|t| require(t, &sbin, "./test.sh --full installs it as root").is_some())
}
