//! The control API of `vecflow run` and `vecflow ctl`, against a daemon forwarding a small
//! generator lab: the socket's life cycle and mode, one-shot commands in text and JSON, and
//! requests that are malformed, oversized, slow, of another API version or many at once —
//! none of which may disturb the daemon or the other clients.

mod common;

use common::Daemon;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Two generator ports cross-connected and a routed pair, at modest rates; metrics on `port`.
fn lab(port: u16) -> String {
    format!(
        "metrics: {{address: '127.0.0.1:{port}'}}
interfaces:
  p0:
    l2xc: p1
    generator: {{streams: [{{template: l2, rate-pps: 20000}}]}}
  p1: {{l2xc: p0}}
  p2:
    addresses: [10.1.0.1/24]
    generator: {{streams: [{{template: ipv4-udp, src-ip: 10.1.0.2, dst-ip: 48.0.0.1, rate-pps: 20000}}]}}
  p3: {{addresses: [10.2.0.1/24]}}
routes: [{{prefix: 48.0.0.0/8, via: 10.2.0.2}}]
neighbors: [{{interface: p3, address: 10.2.0.2, mac: '02:00:00:00:00:22'}}]
"
    )
}

/// A running daemon and its socket, in a directory of its own.
struct Running {
    dir: tempfile::TempDir,
    socket: PathBuf,
    metrics_port: u16,
    daemon: Option<Daemon>,
}

impl Running {
    /// Starts `vecflow run` on [`lab`] and waits until its socket answers.
    fn start() -> Running {
        Running::start_with(lab)
    }

    /// Starts `vecflow run` on `config(metrics port)` and waits until it has started. Its
    /// metrics port is one the kernel picks (port 0), read from the daemon's log: a port
    /// picked here and freed could be taken by another test before the daemon binds it.
    fn start_with(config: fn(u16) -> String) -> Running {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("run").join("api.sock");
        let mut daemon = spawn_run(dir.path(), &socket, &config(0));
        let stderr = daemon.child().stderr.take().expect("piped");
        let (port_tx, port_rx) = std::sync::mpsc::channel();
        // Reads the log to its end (so the daemon never blocks on a full pipe), passing on
        // the metrics port.
        std::thread::spawn(move || {
            let mut log = String::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(port) = line
                    .split_once("metrics on http://127.0.0.1:")
                    .and_then(|(_, rest)| rest.split('/').next()?.parse::<u16>().ok())
                {
                    let _ = port_tx.send(Ok(port));
                }
                log.push_str(&line);
                log.push('\n');
            }
            let _ = port_tx.send(Err(log));
        });
        let metrics_port = match port_rx.recv_timeout(Duration::from_secs(30)) {
            Ok(Ok(port)) => port,
            Ok(Err(log)) => panic!("vecflow run ended before serving metrics:\n{log}"),
            Err(e) => panic!("vecflow run logged no metrics address in 30 s: {e}"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while UnixStream::connect(&socket).is_err() {
            assert!(Instant::now() < deadline, "no API socket at {}", socket.display());
            std::thread::sleep(Duration::from_millis(20));
        }
        Running { dir, socket, metrics_port, daemon: Some(daemon) }
    }

    /// `vecflow ctl --socket … ARGS`: success, stdout, stderr.
    fn ctl(&self, args: &[&str]) -> (bool, String, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_vecflow"))
            .args(["ctl", "--socket", self.socket.to_str().unwrap()])
            .args(args)
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
    }

    /// Stops the daemon with SIGTERM; it must exit 0 and remove its socket. Returns its
    /// directory.
    fn stop(mut self) -> tempfile::TempDir {
        let status = self.daemon.take().unwrap().stop(libc::SIGTERM, Duration::from_secs(10));
        assert!(status.success(), "vecflow run exit: {status}");
        assert!(!self.socket.exists(), "the socket is removed at exit");
        self.dir
    }
}

/// Starts `vecflow run --socket SOCKET` on the configuration `yaml`, written in `dir`.
fn spawn_run(dir: &Path, socket: &Path, yaml: &str) -> Daemon {
    let config = dir.join("lab.yaml");
    std::fs::write(&config, yaml).unwrap();
    Daemon::spawn(
        Command::new(env!("CARGO_BIN_EXE_vecflow"))
            .args(["run", "-c", config.to_str().unwrap(), "--socket", socket.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
}

/// One raw request line on a fresh connection; the answer.
fn raw(socket: &Path, line: &[u8]) -> Value {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(line).unwrap();
    let mut answer = String::new();
    BufReader::new(s).read_line(&mut answer).unwrap();
    serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

fn error_code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or_else(|| panic!("not an error: {v}"))
}

#[test]
fn ctl_runs_commands_in_text_and_json() {
    let d = Running::start();
    let mode = std::fs::metadata(&d.socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "socket mode");
    // Traffic is flowing: show runtime lists the L2 path.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (ok, out, err) = d.ctl(&["show", "runtime"]);
        assert!(ok, "{err}");
        if out.contains("l2-xconnect") {
            break;
        }
        assert!(Instant::now() < deadline, "no traffic: {out}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (ok, out, _) = d.ctl(&["--json", "show", "interface", "p1"]);
    assert!(ok);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["interfaces"][0]["interface"]["name"], "p1");
    assert!(v["interfaces"][0]["counters"]["tx_packets"].as_u64().unwrap() > 0, "{v}");
    // Rates over the last second: p0 sends 20 kpps (the first second after the start may
    // hold less, so the rate is given a few seconds to settle).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, out, _) = d.ctl(&["show", "interface", "p1", "--json"]);
        let v: Value = serde_json::from_str(&out).unwrap();
        let rate = v["interfaces"][0]["rates"]["tx_pps"].as_f64();
        if rate.is_some_and(|r| (r / 20000.0 - 1.0).abs() < 0.1) {
            break;
        }
        assert!(Instant::now() < deadline, "p1's tx rate never came to 20 kpps: {rate:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(d.ctl(&["show", "interface", "p1"]).1.contains("tx rate"));
    // Words may be cut short, as in VPP.
    let (ok, out, err) = d.ctl(&["sh", "int", "p1"]);
    assert!(ok && out.contains("p1") && !out.contains("p0"), "{out}{err}");
    // clear interfaces: show counts from then on (a fraction of what had been counted).
    let tx = |d: &Running| {
        let (_, out, _) = d.ctl(&["--json", "show", "interface", "p1"]);
        serde_json::from_str::<Value>(&out).unwrap()["interfaces"][0]["counters"]["tx_packets"].as_u64().unwrap()
    };
    std::thread::sleep(Duration::from_millis(500));
    let before = tx(&d);
    assert!(d.ctl(&["clear", "interfaces"]).0);
    assert!(tx(&d) < before / 2, "counting restarted at the clear");
    let (ok, _, err) = d.ctl(&["clear", "runtime", "now"]);
    assert!(!ok && err.contains("clear runtime: takes no arguments"), "{err}");
    assert!(d.ctl(&["clear", "runtime"]).0 && d.ctl(&["clear", "errors"]).0);
    let (ok, out, _) = d.ctl(&["show", "errors", "--json"]);
    assert!(ok && serde_json::from_str::<Value>(&out).unwrap()["errors"].is_array(), "{out}");
    let (ok, _, err) = d.ctl(&["show", "interface", "nope"]);
    assert!(!ok && err.contains("no interface named 'nope'"), "{err}");
    let (ok, _, err) = d.ctl(&["frobnicate"]);
    assert!(!ok && err.contains("unknown command 'frobnicate'"), "{err}");
    d.stop();
}

#[test]
fn the_socket_belongs_to_one_daemon_and_a_stale_one_is_replaced() {
    let d = Running::start();
    // A second daemon on the same socket does not start, and the first keeps answering.
    let second = spawn_run(d.dir.path(), &d.socket, &lab(d.metrics_port)).wait_with_output();
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success() && err.contains("another vecflow is running"), "{err}");
    assert!(d.ctl(&["show", "version"]).0);
    let socket = d.socket.clone();
    let dir = d.stop();
    // A socket file nobody answers on (a daemon that was killed) is replaced.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(socket.exists());
    let mut again = spawn_run(dir.path(), &socket, &lab(0));
    let deadline = Instant::now() + Duration::from_secs(10);
    while UnixStream::connect(&socket).is_err() {
        assert!(Instant::now() < deadline, "the stale socket was not replaced");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(again.child().try_wait().unwrap().is_none());
    // A path that is not a socket is never removed.
    let file = dir.path().join("not-a-socket");
    std::fs::write(&file, "keep me").unwrap();
    let out = spawn_run(dir.path(), &file, &lab(0)).wait_with_output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("exists and is not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
}

#[test]
fn bad_requests_get_errors_and_disturb_no_one() {
    let d = Running::start();
    let s = &d.socket;
    assert_eq!(error_code(&raw(s, b"this is not json\n")), -32700);
    assert_eq!(error_code(&raw(s, b"{\"id\": 1, \"method\": \"cli\"}\n")), -32600);
    assert_eq!(error_code(&raw(s, b"{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"reboot\"}\n")), -32601);
    assert_eq!(error_code(&raw(s, b"{\"jsonrpc\": \"2.0\", \"id\": 3, \"method\": \"cli\"}\n")), -32602);
    let v = raw(s, b"{\"jsonrpc\": \"2.0\", \"id\": 4, \"method\": \"version\", \"params\": {\"api\": 2}}\n");
    assert_eq!(error_code(&v), -32002);
    assert!(v["error"]["message"].as_str().unwrap().contains("params.api"), "{v}");
    let v = raw(
        s,
        b"{\"jsonrpc\": \"2.0\", \"id\": \"x\", \"method\": \"cli\", \"params\": {\"command\": \"show nothing\"}}\n",
    );
    assert_eq!((error_code(&v), &v["id"]), (-32000, &json!("x")));
    let v = raw(s, b"{\"jsonrpc\": \"2.0\", \"id\": 5, \"method\": \"version\"}\n");
    assert_eq!((v["id"].as_i64(), v["result"]["api"].as_i64()), (Some(5), Some(1)), "{v}");

    // Oversized: refused, connection closed.
    let mut big = UnixStream::connect(s).unwrap();
    big.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let junk = vec![b'x'; 2 << 20];
    let _ = big.write_all(&junk);
    let mut answer = String::new();
    let mut reader = BufReader::new(big);
    reader.read_line(&mut answer).unwrap();
    assert_eq!(error_code(&serde_json::from_str(&answer).unwrap()), -32001);
    let mut rest = Vec::new();
    assert_eq!(reader.read_to_end(&mut rest).unwrap_or(0), 0, "closed after an oversized request");

    // Slow: half a request, then silence; closed after the request timeout, while others
    // are answered meanwhile.
    let mut slow = UnixStream::connect(s).unwrap();
    slow.write_all(b"{\"jsonrpc\": \"2.0\", ").unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let started = Instant::now();
    let (ok, _, err) = d.ctl(&["show", "runtime"]);
    assert!(ok, "answered while another client stalls: {err}");
    let mut buf = [0u8; 64];
    assert_eq!(slow.read(&mut buf).unwrap_or(0), 0, "the stalled connection is closed");
    assert!(started.elapsed() >= Duration::from_secs(4), "closed too early: {:?}", started.elapsed());

    // Many at once: every answer arrives, to the right request.
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let socket = s.clone();
            std::thread::spawn(move || {
                let mut c = UnixStream::connect(&socket).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
                let mut reader = BufReader::new(c.try_clone().unwrap());
                for k in 0..20 {
                    let id = t * 100 + k;
                    let req = json!({"jsonrpc": "2.0", "id": id, "method": "cli", "params": {"command": "show interface p0"}});
                    c.write_all(format!("{req}\n").as_bytes()).unwrap();
                    let mut answer = String::new();
                    reader.read_line(&mut answer).unwrap();
                    let v: Value = serde_json::from_str(&answer).unwrap();
                    assert_eq!(v["id"].as_u64(), Some(id), "{v}");
                    assert!(v["result"]["text"].as_str().unwrap().contains("p0"), "{v}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    d.stop();
}

/// `GET path` on the metrics port: status line and body.
fn http_get(port: u16, path: &str) -> (String, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// The value of the sample `name` with label `interface="p1"` in a scrape.
fn p1_sample(body: &str, name: &str) -> f64 {
    let lines = body.lines().map(|l| Ok(l.to_string()));
    let scrape = prometheus_parse::Scrape::parse(lines).unwrap_or_else(|e| panic!("{e}: {body}"));
    let sample = scrape.samples.iter().find(|s| s.metric == name && s.labels.get("interface") == Some("p1"));
    match sample.unwrap_or_else(|| panic!("no {name}{{interface=p1}} in\n{body}")).value {
        prometheus_parse::Value::Counter(v)
        | prometheus_parse::Value::Untyped(v)
        | prometheus_parse::Value::Gauge(v) => v,
        ref other => panic!("{name}: {other:?}"),
    }
}

#[test]
fn metrics_are_served_and_move() {
    let d = Running::start();
    let (status, first) = http_get(d.metrics_port, "/metrics");
    assert!(status.contains("200"), "{status}");
    std::thread::sleep(Duration::from_millis(500));
    let (_, second) = http_get(d.metrics_port, "/metrics");
    for family in
        ["vecflow_node_vectors_total", "vecflow_node_clocks_total", "vecflow_interface_up", "vecflow_build_info"]
    {
        assert!(second.contains(family), "{family} missing:\n{second}");
    }
    let name = "vecflow_interface_tx_packets_total";
    let (a, b) = (p1_sample(&first, name), p1_sample(&second, name));
    assert!(b > a, "{name} moves: {a} then {b}");
    assert_eq!(p1_sample(&second, "vecflow_interface_up"), 1.0);
    let scrape = prometheus_parse::Scrape::parse(second.lines().map(|l| Ok(l.to_string()))).unwrap();
    let routes = scrape.samples.iter().find(|s| {
        s.metric == "vecflow_fib_routes"
            && s.labels.get("vrf") == Some("default")
            && s.labels.get("family") == Some("ipv4")
    });
    assert!(
        matches!(routes.map(|s| &s.value), Some(prometheus_parse::Value::Gauge(n)) if *n >= 2.0),
        "the default table's IPv4 routes (the lab's addresses give some): {routes:?}"
    );
    assert!(http_get(d.metrics_port, "/other").0.contains("404"));
    // Another daemon cannot take a busy metrics port: the error names the field.
    let dir = tempfile::tempdir().unwrap();
    let out = spawn_run(dir.path(), &dir.path().join("s.sock"), &lab(d.metrics_port)).wait_with_output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(&format!("metrics.address: 127.0.0.1:{}", d.metrics_port)), "{err}");
    // A socket group this host does not have: the error names the field.
    let yaml = format!("api: {{socket-group: vecflow-no-such-group}}\n{}", lab(0));
    let out = spawn_run(dir.path(), &dir.path().join("g.sock"), &yaml).wait_with_output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("api.socket-group: vecflow-no-such-group is not allowed"), "{err}");
    d.stop();
}

/// Change commands: each, what `show config` then shows, and the command that undoes it.
const CHANGES: &[(&[&str], &str, &[&str])] = &[
    (&["set", "interface", "state", "p3", "down"], "state: down", &["set", "interface", "state", "p3", "up"]),
    (
        &["set", "interface", "ip", "address", "p2", "10.7.0.1/24"],
        "10.7.0.1/24",
        &["set", "interface", "ip", "address", "del", "p2", "10.7.0.1/24"],
    ),
    (&["set", "interface", "mpls", "p2", "enable"], "mpls: true", &["set", "interface", "mpls", "p2", "disable"]),
    (
        &["set", "interface", "description", "p2", "to", "core"],
        "description: to core",
        &["set", "interface", "description", "p2"],
    ),
    (&["set", "interface", "l3", "p1"], "", &["set", "interface", "l2", "xconnect", "p1", "p0"]),
    (
        &["ip", "route", "add", "10.99.0.0/16", "via", "10.2.0.2"],
        "10.99.0.0/16",
        &["ip", "route", "del", "10.99.0.0/16"],
    ),
    (
        &["ip", "neighbor", "add", "p3", "10.2.0.3", "02:00:00:00:00:33"],
        "10.2.0.3",
        &["ip", "neighbor", "del", "p3", "10.2.0.3"],
    ),
    (
        &["mpls", "local-label", "add", "100", "via", "10.2.0.2", "p3", "out-labels", "200"],
        "label: 100",
        &["mpls", "local-label", "del", "100"],
    ),
    (
        &["set", "interface", "ip", "address", "p2", "2001:db8:7::1/64"],
        "2001:db8:7::1/64",
        &["set", "interface", "ip", "address", "del", "p2", "2001:db8:7::1/64"],
    ),
    (
        &["ip", "route", "add", "2001:db8:99::/48", "via", "fe80::1", "p3", "out-labels", "300"],
        "2001:db8:99::/48",
        &["ip", "route", "del", "2001:db8:99::/48"],
    ),
    (
        &["ip", "neighbor", "add", "p3", "fe80::1", "02:00:00:00:00:34"],
        "fe80::1",
        &["ip", "neighbor", "del", "p3", "fe80::1"],
    ),
    (&["mpls", "local-label", "add", "101", "payload", "ip6"], "payload: ip6", &["mpls", "local-label", "del", "101"]),
    // Last: the MTU comes back as 1500 written out, no longer left to the default.
    (&["set", "interface", "mtu", "p2", "1400"], "mtu: 1400", &["set", "interface", "mtu", "p2", "1500"]),
];

/// Commands refused, each with what its error says.
const REFUSED: &[(&[&str], &str)] = &[
    (&["set", "interface", "state", "nope", "up"], "no interface named 'nope'"),
    (&["set", "interface", "state", "p2", "sideways"], "neither up nor down"),
    (&["set", "interface", "mtu", "p2", "9000"], "interfaces.p2.mtu: 9000 is not allowed; allowed: 68 to 2030"),
    (&["set", "interface", "ip", "address", "del", "p2", "10.8.0.1/24"], "p2 has no address 10.8.0.1/24"),
    (&["ip", "route", "add", "10.99.0.0/16", "via", "192.0.2.1"], "routes[1].via: 192.0.2.1 is not allowed"),
    (&["ip", "route", "del", "10.98.0.0/16"], "no route 10.98.0.0/16"),
    (&["ip", "neighbor", "add", "p3", "10.2.0.4", "zz"], "'zz' is not a MAC address"),
    (&["mpls", "local-label", "add", "7"], "mpls.local-labels[0].label: 7 is not allowed"),
];

#[test]
fn configuration_changes_apply_all_or_nothing() {
    let d = Running::start();
    let show_config = || {
        let (ok, out, err) = d.ctl(&["show", "config"]);
        assert!(ok, "{err}");
        out
    };
    let plan = |apply: bool, config: &str| {
        let path = d.dir.path().join("new.yaml");
        std::fs::write(&path, config).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_vecflow"))
            .args([if apply { "apply" } else { "plan" }, "--json", "-c", path.to_str().unwrap()])
            .args(["--socket", d.socket.to_str().unwrap()])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success(), stdout, String::from_utf8_lossy(&out.stderr).to_string())
    };
    // show config round trips: planning it changes nothing.
    let running = show_config();
    let (ok, out, err) = plan(false, &running);
    assert!(ok, "{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["commands"], json!([]), "{out}");

    // Every change command: applied and visible in show config, then undone.
    for &(command, shows, undo) in CHANGES {
        let (ok, _, err) = d.ctl(command);
        assert!(ok, "{command:?}: {err}");
        assert!(show_config().contains(shows), "{command:?} shows {shows}");
        let (ok, _, err) = d.ctl(undo);
        assert!(ok, "{undo:?}: {err}");
        let now = show_config();
        match command[2] {
            "mtu" => assert!(now.contains("mtu: 1500"), "{undo:?}"),
            _ => assert_eq!(now, running, "{undo:?} undoes {command:?}"),
        }
    }
    // An IPv6 route is in the IPv6 FIB as soon as the command returns.
    let (ok, _, err) = d.ctl(&["ip", "route", "add", "2001:db8:98::/48", "via", "fe80::1", "p3"]);
    assert!(ok, "{err}");
    let (ok, out, err) = d.ctl(&["show", "ip6", "fib", "2001:db8:98::5"]);
    assert!(ok && out.contains("2001:db8:98::/48") && out.contains("fe80::1"), "{out}{err}");
    let (ok, _, err) = d.ctl(&["ip", "route", "del", "2001:db8:98::/48"]);
    assert!(ok, "{err}");
    let (ok, out, _) = d.ctl(&["show", "ip6", "fib", "2001:db8:98::5"]);
    assert!(ok && !out.contains("2001:db8:98::/48"), "{out}");
    let running = show_config();
    // Error paths: refused with a message, nothing changed.
    for &(command, says) in REFUSED {
        let (ok, _, err) = d.ctl(command);
        assert!(!ok && err.contains(says), "{command:?}: {err}");
    }
    assert_eq!(show_config(), running, "refused commands change nothing");

    // plan lists exactly the changes of a file; an invalid file or one needing a restart
    // changes nothing.
    let mut changed: Value = serde_json::to_value(dataplane::Config::load(&running).unwrap()).unwrap();
    changed["interfaces"]["p3"]["state"] = json!("down");
    changed["routes"].as_array_mut().unwrap().push(json!({"prefix": "10.99.0.0/16", "via": "10.2.0.2"}));
    changed["neighbors"]
        .as_array_mut()
        .unwrap()
        .push(json!({"interface": "p3", "address": "10.2.0.3", "mac": "02:00:00:00:00:33"}));
    let (ok, out, err) = plan(false, &changed.to_string());
    assert!(ok, "{err}");
    let want = json!([
        "set interface state p3 down",
        "ip neighbor p3 10.2.0.3 02:00:00:00:00:33",
        "ip route add 10.99.0.0/16 via 10.2.0.2"
    ]);
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["commands"], want, "{out}");
    assert_eq!(show_config(), running, "plan changes nothing");
    let mut invalid = changed.clone();
    invalid["routes"].as_array_mut().unwrap().push(json!({"prefix": "10.98.0.0/16", "via": "192.0.2.1"}));
    let (ok, _, err) = plan(true, &invalid.to_string());
    assert!(!ok && err.contains("routes[2].via"), "{err}");
    let mut restart = changed.clone();
    restart["fib"]["tbl8-groups"] = json!(100);
    let (ok, _, err) = plan(true, &restart.to_string());
    assert!(!ok && err.contains("fib.tbl8-groups: changing it needs a restart"), "{err}");
    assert_eq!(show_config(), running, "a refused file changes nothing");

    // Route changes on the routed pair, over and over, while the cross-connected pair
    // forwards: not one of its frames is dropped.
    let mut toggled = changed.clone();
    toggled["routes"].as_array_mut().unwrap().push(json!({"prefix": "10.100.0.0/16", "via": "10.2.0.3"}));
    for k in 0..20 {
        let (ok, _, err) = plan(true, &(if k % 2 == 0 { &toggled } else { &changed }).to_string());
        assert!(ok, "{err}");
    }
    let (_, out, _) = d.ctl(&["show", "errors", "--json"]);
    let errors: Value = serde_json::from_str(&out).unwrap();
    let on_pair = |e: &&Value| e["interface"] == "p0" || e["interface"] == "p1";
    assert!(errors["errors"].as_array().unwrap().iter().filter(on_pair).count() == 0, "{errors}");
    let (_, out, _) = d.ctl(&["show", "interface", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let count = |name: &str, c: &str| {
        v["interfaces"].as_array().unwrap().iter().find(|i| i["interface"]["name"] == name).unwrap()["counters"][c]
            .as_u64()
            .unwrap()
    };
    let (sent, got) = (count("p0", "rx_packets"), count("p1", "tx_packets"));
    assert!(sent > 1000 && sent.abs_diff(got) <= 256, "p0 received {sent}, p1 sent {got} (at most a vector apart)");
    let (ok, out, _) = plan(false, &changed.to_string());
    assert!(ok && serde_json::from_str::<Value>(&out).unwrap()["commands"] == json!([]), "{out}");
    d.stop();
}

/// Sends SIGTERM and asserts `vecflow run` exits 0 within a second: the promise of a stop that
/// always stops, whatever its clients, scrapers, collectors and socket file are doing.
fn stop_within_a_second(d: &mut Running) {
    let started = Instant::now();
    let status = d.daemon.take().unwrap().stop(libc::SIGTERM, Duration::from_secs(1));
    assert!(status.success(), "vecflow run exit: {status}");
    eprintln!("stopped in {:?}", started.elapsed());
}

#[test]
fn stop_is_prompt_when_the_socket_file_was_removed() {
    let mut d = Running::start();
    std::fs::remove_file(&d.socket).unwrap();
    stop_within_a_second(&mut d);
}

#[test]
fn stop_leaves_a_socket_that_is_no_longer_its_own() {
    let mut d = Running::start();
    // Another daemon (here a bare listener) took the path over since.
    std::fs::remove_file(&d.socket).unwrap();
    let _other = std::os::unix::net::UnixListener::bind(&d.socket).unwrap();
    stop_within_a_second(&mut d);
    assert!(d.socket.exists(), "the other daemon's socket must stay");
}

#[test]
fn stop_is_prompt_with_a_client_and_a_scraper_holding_their_connections() {
    // p0 sampled 1:10 and polled every second toward a collector that stopped answering:
    // nothing listens on its port, every datagram is refused.
    let mut d = Running::start_with(|port| {
        lab(port).replace("    l2xc: p1\n", "    l2xc: p1\n    sflow: {}\n")
            + &format!(
                "sflow: {{sampling-rate: 10, polling-interval: 1, collectors: [{{address: 127.0.0.1, port: {}}}]}}\n",
                std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
            )
    });
    let mut idle = UnixStream::connect(&d.socket).unwrap();
    let mut half_request = UnixStream::connect(&d.socket).unwrap();
    half_request.write_all(b"{\"jsonrpc\": \"2.0\", \"id\": 1, ").unwrap();
    let mut scrape = std::net::TcpStream::connect(("127.0.0.1", d.metrics_port)).unwrap();
    scrape.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n").unwrap();
    let _silent = std::net::TcpStream::connect(("127.0.0.1", d.metrics_port)).unwrap();
    // Let the refused datagrams and polls happen.
    std::thread::sleep(Duration::from_millis(1500));
    stop_within_a_second(&mut d);
    assert!(!d.socket.exists(), "its own socket is removed");
    // The held connections were closed, not left hanging.
    for s in [&mut idle, &mut half_request] {
        s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        assert!(matches!(s.read(&mut [0u8; 64]), Ok(0) | Err(_)), "API connection closed");
    }
    scrape.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
    assert!(matches!(scrape.read(&mut [0u8; 64]), Ok(0) | Err(_)), "scrape connection closed");
}

/// `vecflow ctl --wait` started before the daemon returns once it answers, then runs its
/// command; without a daemon it gives up after its timeout, saying where it waited.
#[test]
fn ctl_waits_until_the_daemon_answers() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("api.sock");
    let waiter = Command::new(env!("CARGO_BIN_EXE_vecflow"))
        .args(["ctl", "--socket", socket.to_str().unwrap(), "--wait=60", "show", "interface"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let daemon = spawn_run(dir.path(), &socket, &lab(0));
    let out = waiter.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("p0"), "show interface ran once it answered");
    assert!(daemon.stop(libc::SIGTERM, Duration::from_secs(10)).success());

    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_vecflow"))
        .args(["ctl", "--socket", socket.to_str().unwrap(), "--wait=1"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("no vecflow answered on") && err.contains("within 1 s"), "{err}");
    assert!(started.elapsed() >= Duration::from_secs(1), "it waited");
}

/// Under systemd (`Type=notify`) the daemon says READY=1 once its ports are attached and its
/// socket answers, and STOPPING=1 when it stops.
#[test]
fn the_daemon_tells_systemd_when_it_is_ready_and_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let notify = dir.path().join("notify.sock");
    let systemd = std::os::unix::net::UnixDatagram::bind(&notify).unwrap();
    systemd.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let socket = dir.path().join("api.sock");
    let config = dir.path().join("lab.yaml");
    std::fs::write(&config, lab(0)).unwrap();
    let daemon = Daemon::spawn(
        Command::new(env!("CARGO_BIN_EXE_vecflow"))
            .args(["run", "-c", config.to_str().unwrap(), "--socket", socket.to_str().unwrap()])
            .env("NOTIFY_SOCKET", &notify)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let mut buf = [0u8; 512];
    let n = systemd.recv(&mut buf).expect("a notification");
    let ready = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(ready.lines().any(|l| l == "READY=1"), "{ready}");
    assert!(ready.contains("STATUS=forwarding on 4 interfaces"), "{ready}");
    assert!(UnixStream::connect(&socket).is_ok(), "the API answers once ready");
    assert!(daemon.stop(libc::SIGTERM, Duration::from_secs(10)).success());
    let n = systemd.recv(&mut buf).expect("a notification");
    assert_eq!(String::from_utf8_lossy(&buf[..n]).trim(), "STOPPING=1");
}
