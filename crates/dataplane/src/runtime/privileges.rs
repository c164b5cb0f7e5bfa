//! Least privilege: the Linux capabilities a configuration needs to start, the fewer it keeps
//! while it runs, and the drop from one to the other.
//!
//! - **At start** ([`check`]) every capability the configuration needs must be effective;
//!   else `vecflow run` stops before it opens anything, with an error naming the capability,
//!   what needs it and the capabilities it has.
//! - **While running** the process keeps only [`runtime_needs`]: `CAP_NET_ADMIN` when an
//!   AF_XDP interface (busy polling set live, NAPI settings) or linux-cp (the TAPs' addresses,
//!   MTU and state) needs it, else none. Capabilities belong to each thread, so every
//!   long-lived thread drops to that set as it starts ([`enter_runtime`]: workers, the sFlow
//!   agent, linux-cp's threads, the API and metrics threads) and the main thread once the
//!   dataplane runs; [`report`] reads every thread's effective set back from `/proc`.

use caps::{CapSet, Capability, CapsHashSet};
use std::sync::OnceLock;

use crate::config::{Config, Driver};

/// What the process keeps while running, once decided ([`plan`]).
static RUNTIME: OnceLock<CapsHashSet> = OnceLock::new();

/// One capability a configuration needs, and what for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// The capability.
    pub cap: Capability,
    /// What needs it, in words.
    pub why: String,
}

/// The capabilities `config` needs to start, each with the first thing that needs it.
pub fn start_needs(config: &Config) -> Vec<Need> {
    let mut needs: Vec<Need> = Vec::new();
    let mut need = |cap, why: String| {
        if !needs.iter().any(|n| n.cap == cap) {
            needs.push(Need { cap, why });
        }
    };
    for (name, i) in &config.interfaces {
        match i.driver {
            Driver::AfPacket => need(Capability::CAP_NET_RAW, format!("the AF_PACKET sockets of interface {name}")),
            Driver::AfXdp => {
                need(Capability::CAP_NET_RAW, format!("the AF_XDP sockets of interface {name}"));
                need(Capability::CAP_BPF, format!("loading the XDP program of interface {name}"));
                need(Capability::CAP_NET_ADMIN, format!("attaching the XDP program of interface {name}"));
                if !memlock_unlimited() {
                    need(Capability::CAP_IPC_LOCK, format!("registering buffers as AF_XDP UMEM (interface {name})"));
                }
            }
            Driver::Generator | Driver::Pcap => {}
        }
    }
    if let Some(lcp) = &config.linux_cp {
        need(Capability::CAP_SYS_ADMIN, format!("making and entering linux-cp's namespace {}", lcp.netns));
        need(Capability::CAP_NET_ADMIN, "linux-cp's TAPs and their addresses".into());
    }
    needs
}

/// The capabilities `config` keeps while running.
pub fn runtime_needs(config: &Config) -> CapsHashSet {
    let xdp = config.interfaces.values().any(|i| i.driver == Driver::AfXdp);
    let mut keep = CapsHashSet::new();
    if xdp || config.linux_cp.is_some() {
        keep.insert(Capability::CAP_NET_ADMIN);
    }
    keep
}

/// Whether locked memory is unlimited (`RLIMIT_MEMLOCK`), so AF_XDP needs no `CAP_IPC_LOCK`.
fn memlock_unlimited() -> bool {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills the struct it is given.
    unsafe { libc::getrlimit(libc::RLIMIT_MEMLOCK, &mut limit) == 0 && limit.rlim_cur == libc::RLIM_INFINITY }
}

/// Names a set of capabilities, sorted: `CAP_BPF, CAP_NET_RAW`, or `none`.
pub fn names(set: &CapsHashSet) -> String {
    let mut v: Vec<String> = set.iter().map(ToString::to_string).collect();
    v.sort();
    if v.is_empty() { "none".into() } else { v.join(", ") }
}

/// Fails when a capability `config` needs to start is not effective in this thread; the error
/// names it, what needs it and what the process has.
pub fn check(config: &Config) -> Result<(), String> {
    let have = caps::read(None, CapSet::Effective).map_err(|e| format!("reading this process's capabilities: {e}"))?;
    let missing: Vec<Need> = start_needs(config).into_iter().filter(|n| !have.contains(&n.cap)).collect();
    let Some(first) = missing.first() else { return Ok(()) };
    let all: Vec<String> = missing.iter().map(|n| n.cap.to_string()).collect();
    Err(format!(
        "{} is needed for {}, and vecflow runs without it (missing: {}; effective: {}); run it as root or grant \
         them (see docs/install.md)",
        first.cap,
        first.why,
        all.join(", "),
        names(&have)
    ))
}

/// Decides what the process keeps while running (the first call wins; later ones are ignored).
pub fn plan(config: &Config) {
    let _ = RUNTIME.set(runtime_needs(config));
}

/// Drops this thread's capabilities to the running set ([`plan`]); nothing before a plan.
/// Effective, permitted, inheritable and ambient sets, and the bounding set when the thread may
/// change it (`CAP_SETPCAP`). Failures are logged: the thread runs on either way.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(yaml: &str) -> Config {
        Config::load(yaml).unwrap()
    }

    #[test]
    fn what_each_driver_and_linux_cp_need() {
        let g = config("interfaces: {g: {addresses: [10.0.0.1/24]}}");
        assert!(start_needs(&g).is_empty() && runtime_needs(&g).is_empty());
        let p = config("interfaces: {p: {driver: af-packet, host-interface: e1}}");
        assert_eq!(start_needs(&p).iter().map(|n| n.cap).collect::<Vec<_>>(), vec![Capability::CAP_NET_RAW]);
        assert!(runtime_needs(&p).is_empty());
        let x = config("interfaces: {x: {driver: af-xdp, host-interface: e1}}");
        let caps: Vec<_> = start_needs(&x).iter().map(|n| n.cap).collect();
        for c in [Capability::CAP_NET_RAW, Capability::CAP_BPF, Capability::CAP_NET_ADMIN] {
            assert!(caps.contains(&c), "{caps:?}");
        }
        assert_eq!(names(&runtime_needs(&x)), "CAP_NET_ADMIN");
    }
}
