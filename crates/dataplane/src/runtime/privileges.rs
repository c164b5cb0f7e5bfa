//! Least privilege, the mechanism: the Linux capabilities the process keeps while running,
//! the drop to them (per thread, as capabilities are), and every thread's set read back.
//! What a configuration needs is decided in `control::privileges`.
//!
//! Capabilities belong to each thread, so every long-lived thread drops to the running set
//! as it starts ([`enter_runtime`]: workers, the sFlow agent, linux-cp's threads, the API and
//! metrics threads) and the main thread once the dataplane runs; [`report`] reads every
//! thread's effective set back from `/proc`.

use caps::{CapSet, Capability, CapsHashSet};
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

/// Drops this thread's capabilities to the running set ([`keep_while_running`]; nothing
/// before it is decided): effective, permitted, inheritable and ambient sets, and the bounding
/// set when the thread may change it (`CAP_SETPCAP`). Failures are logged: the thread runs on
/// either way.
pub fn enter_runtime() {
    let Some(keep) = RUNTIME.get() else { return };
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

/// Every thread of this process with its effective capabilities, read from `/proc`.
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
        out.push((name.trim().to_string(), set));
    }
    Ok(out)
}
