//! FRR (zebra and bgpd) in the linux-cp labs' namespaces, and `vtysh` to ask it.

use crate::bird::logs;
use crate::common::Daemon;
use crate::lab::must;
use std::path::Path;
use std::time::{Duration, Instant};

/// Starts FRR's `zebra` (with `zebra_args`, e.g. `-n`: namespaces as VRFs) and then `bgpd`
/// on `bgpd_conf` in namespace `ns`, as user `frr` (FRR will not run as root, which is not in
/// its vty group), their sockets, configurations and logs (`zebra.log`, `bgpd.log`) in
/// `dir`/frr (owned by `frr`), no vty on TCP.
pub(crate) fn start(ns: &str, dir: &Path, zebra_args: &[&str], bgpd_conf: &str) -> [Daemon; 2] {
    let dir = dir.join("frr");
    std::fs::create_dir(&dir).unwrap();
    must("chown", &["frr:frr", &dir.display().to_string()]);
    let zserv = dir.join("zserv.api");
    let daemon = |name: &str, conf: &str, extra: &[&str]| {
        let file = dir.join(format!("{name}.conf"));
        std::fs::write(&file, conf).unwrap();
        let mut cmd = std::process::Command::new("ip");
        cmd.args(["netns", "exec", ns, &format!("/usr/lib/frr/{name}"), "-u", "frr", "-g", "frr", "-P", "0", "-f"])
            .arg(&file)
            .arg("-z")
            .arg(&zserv)
            .arg("-i")
            .arg(dir.join(format!("{name}.pid")))
            .arg("--vty_socket")
            .arg(&dir)
            .arg("--log")
            .arg(format!("file:{}", dir.join(format!("{name}.log")).display()))
            .args(extra)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        Daemon::spawn(&mut cmd)
    };
    let zebra = daemon("zebra", "hostname vecflow-router\n", zebra_args);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !zserv.exists() {
        assert!(Instant::now() < deadline, "zebra made no {}: {}", zserv.display(), logs(&dir, &["zebra.log"]));
        std::thread::sleep(Duration::from_millis(20));
    }
    [zebra, daemon("bgpd", bgpd_conf, &[])]
}

/// `vtysh` on the FRR of the test's directory `dir` (its sockets in `dir`/frr): the output of
/// commands `cmds`, one `-c` each.
pub(crate) fn vtysh(dir: &Path, cmds: &[&str]) -> String {
    let mut cmd = std::process::Command::new("vtysh");
    cmd.arg("--vty_socket").arg(dir.join("frr"));
    for c in cmds {
        cmd.args(["-c", c]);
    }
    let out = cmd.output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}
