//! BIRD 2 in the linux-cp labs' namespaces: its configurations (a router's, a host's that
//! announces its loopbacks), started on one written to the test's directory, asked with
//! `birdc`, its log shown when a test fails.

use crate::common::{self, Daemon};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Whether a BIRD lab can run here: [`crate::lab::can_run`] and `bird` (a skip, or with
/// `CI=true` a failure, otherwise).
pub(crate) fn can_run() -> bool {
    crate::lab::can_run() && common::require("bird", &[PathBuf::from("/usr/sbin")], "apt-get install bird2").is_some()
}

/// Starts BIRD in namespace `ns` with `conf`, its socket and files (`NAME.conf`, `NAME.ctl`,
/// `NAME.log`) in `dir`; the daemon and its control socket.
pub(crate) fn start(ns: &str, dir: &Path, name: &str, conf: &str) -> (Daemon, PathBuf) {
    let (cfg, sock) = (dir.join(format!("{name}.conf")), dir.join(format!("{name}.ctl")));
    std::fs::write(&cfg, conf).unwrap();
    let bird = Daemon::spawn(
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
pub(crate) fn birdc(sock: &Path, cmd: &str) -> String {
    let mut args = vec!["-s".to_string(), sock.display().to_string()];
    args.extend(cmd.split(' ').map(str::to_string));
    let out = Command::new("birdc").args(&args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits up to `secs` for `cmd` on `sock` to print `needle`; the last output.
pub(crate) fn wait_for(sock: &Path, cmd: &str, needle: &str, secs: u64) -> Result<String, String> {
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

/// The files `names` of `dir` (BIRD's and vecflow's logs), each under a `--- name` line, for
/// a failure's message.
pub(crate) fn logs(dir: &Path, names: &[&str]) -> String {
    names.iter().map(|f| format!("--- {f}\n{}", std::fs::read_to_string(dir.join(f)).unwrap_or_default())).collect()
}

/// A BIRD configuration: router `id` in AS `asn`, its kernel protocols exporting what
/// `kernel_export` lets through (`merge paths on`: one ECMP route from equal BGP routes), an
/// `extra` part, and BGP `sessions` (see [`session`]).
pub(crate) fn bird_conf(id: &str, asn: u32, kernel_export: &str, extra: &str, sessions: &[String]) -> String {
    format!(
        r#"
log stderr all;
router id {id};
protocol device {{ scan time 1; }}
protocol kernel k4 {{ ipv4 {{ import none; export {kernel_export}; }}; merge paths on; }}
protocol kernel k6 {{ ipv6 {{ import none; export {kernel_export}; }}; merge paths on; }}
template bgp peer {{
  local as {asn};
  hold time 30;
  connect retry time 1;
  # A peer still starting (FRR's bgpd reads its configuration after it listens) may reset
  # the first connection: retry within a second, not after BIRD's default minute.
  error wait time 1, 5;
}}
{extra}
{}"#,
        sessions.concat()
    )
}

/// A BGP session `name` to `neighbor` (its family is the session's channel) in AS `peer_as`,
/// importing everything and exporting what `export` lets through.
pub(crate) fn session(name: &str, neighbor: &str, peer_as: u32, export: &str) -> String {
    let family = if neighbor.contains(':') { "ipv6" } else { "ipv4" };
    format!(
        "protocol bgp {name} from peer {{ neighbor {neighbor} as {peer_as}; {family} {{ import all; export {export}; }}; }}\n"
    )
}

/// A host's BIRD: announces its loopback prefixes (protocol `loop`: those on `lo` in
/// 10.255.0.0/16 and fd00:255::/32, not 127.0.0.1 and ::1) on `sessions` to the
/// router, installs what it learns by BGP in the kernel.
pub(crate) fn host_conf(id: &str, asn: u32, routers: &[(&str, &str)]) -> String {
    let sessions: Vec<String> =
        routers.iter().map(|(name, addr)| session(name, addr, 65000, "where source = RTS_DEVICE")).collect();
    let direct = r#"protocol direct loop {
  ipv4 { import where net ~ [10.255.0.0/16+]; };
  ipv6 { import where net ~ [fd00:255::/32+]; };
  interface "lo";
}"#;
    bird_conf(id, asn, "where source = RTS_BGP", direct, &sessions)
}

/// Waits up to 40 s until each of the BGP sessions `names` on `sock` is Established.
pub(crate) fn established(sock: &Path, names: &[&str]) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let out = birdc(sock, "show protocols");
        let up = |n: &&str| out.lines().any(|l| l.starts_with(&format!("{n} ")) && l.contains("Established"));
        if names.iter().all(up) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(out);
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}
