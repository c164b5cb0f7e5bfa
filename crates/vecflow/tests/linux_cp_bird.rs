//! BIRD runs on a vecflow router: in the linux-cp namespace, on the TAP of port `wa`, it holds
//! an OSPF adjacency (point-to-point, 1 s hellos) and a BGP session with BIRD on host A across
//! vecflow, and the BGP session stays Established across a vecflow restart (SIGTERM, start
//! again: the TAP is adopted, the session lives in Linux). Needs root, `ip`, `python3` and
//! BIRD 2 (`bird2`).
//!
//! ```text
//!  ns A: vfa0 10.77.0.2/24, BIRD ──veth── vfa1 ─ ns R: vecflow run, wa 10.77.0.1/24
//!                                                   └─ TAP wa in ns L: 10.77.0.1/24, BIRD
//! ```

mod common;

#[path = "netns/lab.rs"]
#[allow(dead_code)] // the routed labs' helpers this lab does not use
mod lab;
#[path = "netns/lcp_lab.rs"]
mod lcp_lab;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A BIRD configuration: router `me` in AS `asn` speaking OSPF on `dev` and BGP to `peer`
/// in AS `peer_as`.
fn bird_conf(me: &str, asn: u32, dev: &str, peer: &str, peer_as: u32) -> String {
    format!(
        r#"
router id {me};
protocol device {{ scan time 1; }}
protocol ospf v2 o {{
  ipv4 {{ import none; export none; }};
  area 0 {{ interface "{dev}" {{ type ptp; hello 1; dead 4; }}; }};
}}
protocol bgp b {{
  local {me} as {asn};
  neighbor {peer} as {peer_as};
  hold time 30;
  connect retry time 1;
  # While vecflow restarts no process holds the TAP and the kernel reports no carrier:
  # with BIRD's default (check link on) the session would close (docs/linux-cp.md).
  check link no;
  ipv4 {{ import all; export none; }};
}}
"#
    )
}

/// Starts BIRD in namespace `ns` with `conf`, its socket and files in `dir`.
fn start_bird(ns: &str, dir: &Path, name: &str, conf: &str) -> (common::Daemon, PathBuf) {
    let (cfg, sock) = (dir.join(format!("{name}.conf")), dir.join(format!("{name}.ctl")));
    std::fs::write(&cfg, conf).unwrap();
    let bird = common::Daemon::spawn(
        Command::new("ip")
            .args(["netns", "exec", ns, "bird", "-f", "-c"])
            .arg(&cfg)
            .arg("-s")
            .arg(&sock)
            .arg("-P")
            .arg(dir.join(format!("{name}.pid")))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join(format!("{name}.log"))).unwrap()),
    );
    (bird, sock)
}

/// `birdc` on socket `sock`: the output of `cmd`.
fn birdc(sock: &Path, cmd: &str) -> String {
    let mut args = vec!["-s".to_string(), sock.display().to_string()];
    args.extend(cmd.split(' ').map(str::to_string));
    let out = Command::new("birdc").args(&args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits up to `secs` for `cmd` on `sock` to print `needle`; the last output.
fn wait_for(sock: &Path, cmd: &str, needle: &str, secs: u64) -> Result<String, String> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let out = birdc(sock, cmd);
        if out.contains(needle) {
            return Ok(out);
        }
        if Instant::now() > deadline {
            return Err(out);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The time of day (seconds) in a `show protocols` line: when the protocol entered its state.
fn since(line: &str) -> Option<f64> {
    let t = line.split_whitespace().find(|w| w.matches(':').count() == 2)?;
    let mut parts = t.split(':').map(|p| p.parse::<f64>().ok());
    Some(parts.next()?? * 3600.0 + parts.next()?? * 60.0 + parts.next()??)
}

/// The BGP session's line of `show protocols`.
fn bgp_line(sock: &Path) -> String {
    birdc(sock, "show protocols").lines().find(|l| l.starts_with("b ")).unwrap_or_default().to_string()
}

#[test]
fn bird_holds_ospf_and_bgp_across_vecflow_and_bgp_survives_a_restart() {
    if !lab::can_run() || common::require("bird", &[PathBuf::from("/usr/sbin")], "apt-get install bird2").is_none() {
        return;
    }
    let lab = lab::Lab::new("1500");
    let dir = tempfile::tempdir().unwrap();
    let (lcp, vecflow, config) = lcp_lab::linux_cp_router(&lab, dir.path());
    let (_router_bird, router) =
        start_bird(&lcp.0, dir.path(), "router", &bird_conf("10.77.0.1", 65001, "wa", "10.77.0.2", 65002));
    let (_host_bird, host) =
        start_bird(&lab.a, dir.path(), "host", &bird_conf("10.77.0.2", 65002, &lab.veth("a", 0), "10.77.0.1", 65001));
    let failed = |what: &str, out: String| {
        let logs: String = ["router.log", "host.log", "vecflow.log"]
            .iter()
            .map(|f| format!("--- {f}\n{}", std::fs::read_to_string(dir.path().join(f)).unwrap_or_default()))
            .collect();
        panic!("{what}:\n{out}\n{logs}");
    };
    if let Err(out) = wait_for(&router, "show protocols", "Established", 30) {
        failed("BGP Established over the TAP", out);
    }
    if let Err(out) = wait_for(&router, "show ospf neighbors o", "Full", 30) {
        failed("OSPF Full over the TAP", out);
    }
    let before = bgp_line(&router);

    // A restart within the hold time (30 s): the session lives on.
    let show = lab.stop_vecflow(vecflow, dir.path());
    assert!(show.contains("vecflow# show lcp"), "{show}");
    let (vecflow, _) = lab.start_vecflow(dir.path(), &config);
    // Keepalives cross again (BIRD sends one every 10 s): still Established, same since.
    std::thread::sleep(Duration::from_secs(12));
    let after = bgp_line(&router);
    // The same session: Established since the same moment (BIRD prints it to the millisecond,
    // and its conversion may move it by one), not re-established after the restart.
    let same_since = since(&after).zip(since(&before)).is_some_and(|(a, b)| (a - b).abs() < 1.0);
    assert!(after.contains("Established") && same_since, "BGP across the restart:\nbefore {before}\nafter  {after}");
    assert!(bgp_line(&host).contains("Established"), "{}", bgp_line(&host));
    lab.stop_vecflow(vecflow, dir.path());
}
