//! BIRD 2 in the linux-cp labs' namespaces: started on a configuration written to the test's
//! directory, asked with `birdc`, its log shown when a test fails.

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
