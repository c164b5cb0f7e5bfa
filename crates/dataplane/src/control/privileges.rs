//! Least privilege, the policy: the Linux capabilities a configuration needs to start, and
//! the fewer it keeps while running (`runtime::privileges` drops to them).
//!
//! - **At start** ([`check`]) every capability the configuration needs must be effective;
//!   else `vecflow run` stops before it opens anything, with an error naming the capability,
//!   what needs it and the capabilities it has.
//! - **While running** the process keeps only [`runtime_needs`]: `CAP_NET_ADMIN` when an
//!   AF_XDP interface (busy polling set live, NAPI settings) or linux-cp (the TAPs' addresses,
//!   MTU and state) needs it, else none.

use crate::config::{Config, Driver};
use crate::runtime::privileges::names;
use caps::{CapSet, Capability, CapsHashSet};

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
        let vrfs = if config.vrfs.is_empty() { "" } else { " and its VRFs' (NETNS-VRF)" };
        need(Capability::CAP_SYS_ADMIN, format!("making and entering linux-cp's namespace {}{vrfs}", lcp.netns));
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

/// Decides, for `config`, what the process keeps while running.
pub fn plan(config: &Config) {
    crate::runtime::privileges::keep_while_running(runtime_needs(config));
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
