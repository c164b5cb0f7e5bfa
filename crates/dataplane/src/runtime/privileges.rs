//! Least privilege, the mechanism: the Linux capabilities the main thread keeps while running,
//! the drop to them (per thread, as capabilities are), and every thread's set read back.
//! What a configuration needs is decided in `control::privileges`.
//!
//! Only the main thread does what needs a capability once the dataplane runs (NAPI settings,
//! socket options, TAP ioctls, netlink requests). So every other long-lived thread drops every
//! capability as it starts ([`thread_start`]: workers, the sFlow agent, linux-cp's threads, the
//! API and metrics threads), and the main thread drops to the running set once the dataplane
//! runs ([`main_started`]); [`report`] reads every thread's effective set back from `/proc`.

/// A set of capabilities (the `caps` crate's).
pub use caps::CapsHashSet;
use caps::{CapSet, Capability};
use std::sync::OnceLock;

/// What the process keeps while running, once decided ([`keep_while_running`]).
static RUNTIME: OnceLock<CapsHashSet> = OnceLock::new();

/// Decides what the process keeps while running (the first call wins; later ones are ignored).
pub fn keep_while_running(keep: CapsHashSet) {
    let _ = RUNTIME.set(keep);
}

/// Names a set of capabilities, sorted: `CAP_BPF, CAP_NET_RAW`, or `none`.
pub fn names(set: &CapsHashSet) -> String {
    let mut v: Vec<String> = set.iter().map(ToString::to_string).collect();
    v.sort();
    if v.is_empty() { "none".into() } else { v.join(", ") }
}

/// A long-lived thread's first step: drops every capability, once the running set is decided
/// ([`keep_while_running`]; nothing before, as in tests that start a dataplane alone).
pub fn thread_start() {
    if RUNTIME.get().is_some() {
        drop_logged(&CapsHashSet::new());
    }
}

/// The main thread's step once the dataplane runs: drops to the running set (nothing before
/// it is decided).
pub fn main_started() {
    if let Some(keep) = RUNTIME.get() {
        drop_logged(keep);
    }
}

/// Drops this thread's capabilities to `keep`: effective, permitted, inheritable and ambient
/// sets, and the bounding set when the thread may change it (`CAP_SETPCAP`). A failure is
/// logged: the thread runs on either way.
fn drop_logged(keep: &CapsHashSet) {
    if let Err(e) = drop_to(keep) {
        tracing::warn!("cannot drop capabilities to {}: {e}", names(keep));
    }
}

fn drop_to(keep: &CapsHashSet) -> Result<(), caps::errors::CapsError> {
    if caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP)? {
        for cap in caps::read(None, CapSet::Bounding)?.difference(keep) {
            caps::drop(None, CapSet::Bounding, *cap)?;
        }
    }
    caps::clear(None, CapSet::Ambient)?;
    for set in [CapSet::Inheritable, CapSet::Effective, CapSet::Permitted] {
        let now = caps::read(None, set)?;
        caps::set(None, set, &now.intersection(keep).copied().collect())?;
    }
    Ok(())
}

/// Every thread of this process with its effective capabilities, read from `/proc`, the main
/// thread first.
pub fn report() -> std::io::Result<Vec<(String, CapsHashSet)>> {
    let mut out = Vec::new();
    for task in std::fs::read_dir("/proc/self/task")? {
        let dir = task?.path();
        let (Ok(name), Ok(status)) =
            (std::fs::read_to_string(dir.join("comm")), std::fs::read_to_string(dir.join("status")))
        else {
            continue; // the thread ended meanwhile
        };
        let mask = status.lines().find_map(|l| l.strip_prefix("CapEff:")).map(str::trim).unwrap_or("0");
        let bits = u64::from_str_radix(mask, 16).unwrap_or(0);
        let set = caps::all().into_iter().filter(|c| bits & c.bitmask() != 0).collect();
        let main = dir.file_name() == Some(std::ffi::OsStr::new(&std::process::id().to_string()));
        out.push((main, name.trim().to_string(), set));
    }
    out.sort_by_key(|(main, _, _)| !main);
    Ok(out.into_iter().map(|(_, name, set)| (name, set)).collect())
}
