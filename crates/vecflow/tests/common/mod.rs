//! Shared by the vecflow integration tests: skipping honestly, and the daemons they start.
//!
//! A test that cannot run here (a tool is missing, no IPv6 loopback) calls [`skip`]: with
//! `CI=true` that fails the test, elsewhere it prints `SKIP <test>: <reason>` and appends the
//! line to the file `$VECFLOW_SKIP_LOG` names, which `./test.sh` and `./test.sh --full` count in its summary.

// Each test crate uses part of this module.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output};
use std::time::{Duration, Instant};

/// Whether we run in CI (`CI=true`, as CI services set it): there, nothing may be skipped.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

/// Gives up on the running test (or the part of it that needs what is missing) for `reason`.
/// Panics with `CI=true`; elsewhere reports `SKIP <test name>: <reason>` on stderr and in
/// `$VECFLOW_SKIP_LOG`, and returns.
pub fn skip(reason: &str) {
    // libtest runs each test on a thread named after it.
    let test = std::thread::current().name().unwrap_or("<unnamed test>").to_string();
    assert!(!in_ci(), "{test} cannot run here: {reason}; with CI=true that is a failure, not a skip");
    let line = format!("SKIP {test}: {reason}");
    eprintln!("{line}");
    if let Some(log) = std::env::var_os("VECFLOW_SKIP_LOG") {
        // One short O_APPEND write per line: lines of tests running in parallel do not mix.
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()))
            .unwrap_or_else(|e| panic!("VECFLOW_SKIP_LOG {}: {e}", Path::new(&log).display()));
    }
}

/// The executable `tool`, from the PATH or else from one of `also` (where installers put it
/// that a PATH may lack). When it is missing: [`skip`] (a failure with `CI=true`), naming how
/// `./test.sh` installs it (`install`), and None.
pub fn require(tool: &str, also: &[PathBuf], install: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain(also.iter().cloned())
        .map(|dir| dir.join(tool))
        .find(|p| p.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0));
    if found.is_none() {
        skip(&format!("{tool} is not installed ({install})"));
    }
    found
}

/// A child process a test started. Dropping it (also when the test panics) kills and reaps it,
/// so a failing test never leaves a daemon running.
pub struct Daemon {
    name: String,
    child: Option<Child>,
}

impl Daemon {
    /// Starts `cmd`.
    pub fn spawn(cmd: &mut Command) -> Daemon {
        let name = cmd.get_program().to_string_lossy().into_owned();
        let child = cmd.spawn().unwrap_or_else(|e| panic!("starting {name}: {e}"));
        Daemon { name, child: Some(child) }
    }

    /// The running process (for its pipes).
    pub fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("not yet stopped")
    }

    /// Sends `signal` (e.g. `libc::SIGTERM`, so that it flushes what it holds) and waits up to
    /// `grace` for the process to exit; panics, after killing it, if it does not.
    pub fn stop(mut self, signal: libc::c_int, grace: Duration) -> ExitStatus {
        let pid = libc::pid_t::try_from(self.child().id()).expect("pid");
        // SAFETY: kill(2) has no memory effects; `pid` is our child, not reaped yet, so it
        // still names that process.
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "signal {signal} to {}", self.name);
        self.wait_exit(grace)
    }

    /// Waits up to `grace` for the process to end by itself; panics, after killing it, if it
    /// does not.
    pub fn wait_exit(mut self, grace: Duration) -> ExitStatus {
        let child = self.child.as_mut().expect("not yet stopped");
        let deadline = Instant::now() + grace;
        loop {
            if let Some(status) = child.try_wait().expect("waitpid") {
                self.child = None;
                return status;
            }
            // Drop kills and reaps it.
            assert!(Instant::now() < deadline, "{} did not exit within {grace:?}", self.name);
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the process to end by itself and collects its piped output.
    pub fn wait_with_output(mut self) -> Output {
        self.child.take().expect("not yet stopped").wait_with_output().expect("waitpid")
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Waits (up to 10 s) until a socket is bound to UDP `port` on this host (`ss`): a decoder
/// started as a child can take longer to open its socket than any fixed sleep on a loaded
/// machine, and what is sent before is lost.
pub fn wait_udp_bound(port: u16) {
    let filter = format!("sport = :{port}");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = Command::new("ss").args(["-Hlun", &filter]).output().expect("ss (iproute2) runs");
        if !out.stdout.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "nothing bound UDP port {port} after 10 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}
