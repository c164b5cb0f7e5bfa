//! The Linux control plane (`linux-cp`): a TAP twin in a Linux network namespace for every
//! vecflow interface and sub-interface, so that routing daemons, sshd and the kernel's own
//! stack see the router's ports, as VPP's linux-cp plugin and grout give them.
//!
//! Built so far: the namespace (made as `ip netns add` makes it, never deleted), one
//! persistent TAP per interface named by `linux-name`, adopted by name on a restart, with the
//! interface's MAC and MTU, up exactly when the interface is admin up and with carrier
//! exactly when its link is up, and with router advertisements, autoconfiguration and
//! redirects off. Packets to the router's addresses that vecflow does not answer itself
//! (`ip4-local`, `ip6-local`: fragments too, for the kernel to reassemble), link-local
//! multicast and LLDP (`ethernet-input`) go up the TAP of their input interface
//! ([`worker::punt`], within two policers per interface), ARP and neighbor discovery are
//! copied up, and what Linux writes on a TAP leaves its interface ([`worker::inject`]),
//! through a control thread (`vecflow-lcp`, [`io`]). Never up: transit traffic, frames for
//! other MACs, LACP, STP. A netlink listener ([`listener`], thread `vecflow-netlink`, started
//! before the rest of the dataplane so that its first dump overlaps the start) keeps the
//! kernel view of its namespace's links, addresses, neighbor entries, next-hop objects and
//! routes ([`pending`]); the controller ([`follow`]) takes what changed in it into the
//! dataplane (routes to the FIB, [`mirror`]; neighbor entries; the TAPs' addresses, MTUs and
//! admin states), and the configured addresses are set on the TAPs (`kernel.rs`). With VRFs,
//! each VRF has a namespace of its own (`NETNS-VRF`, `space.rs`) with its interfaces' TAPs,
//! its listener and its view, whose routes go into that VRF's tables.

pub mod config;
pub mod drops;
pub mod follow;
pub mod io;
mod kernel;
pub mod listener;
pub mod mirror;
pub mod neighbors;
pub mod netlink;
mod netns;
pub mod nexthops;
pub mod nodes;
pub mod pending;
pub mod redump;
pub mod route_bytes;
pub mod route_table;
pub mod routes;
mod space;
mod tap;
mod targets;
pub mod worker;

pub use config::{LinuxCpConfig, MAX_PUNT_RATE, PuntRate};
pub use kernel::{KernelUpdate, ViewCounts};
pub use netns::{NETNS_DIR, Netns};
pub use tap::{MAX_NAME, Tap};
pub use targets::Mirrored;
pub use worker::LcpWorker;

use crate::interface::Interface;
use std::io as stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

/// What a TAP was last set to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TapState {
    up: bool,
    carrier: bool,
    mtu: u16,
}

/// One vecflow interface and its TAP.
#[derive(Debug)]
struct Pair {
    index: u16,
    /// The space (namespace) the TAP is in, by its place in [`LinuxCp`]'s.
    space: usize,
    tap: Tap,
    set: TapState,
    counters: std::sync::Arc<io::TapCounters>,
    /// The configuration's addresses vecflow last set on the TAP.
    asserted: Vec<crate::net::IpPrefix>,
    /// The kernel view has shown the TAP as vecflow set it up, at least once. Until then its
    /// state in the view is older than vecflow's set-up (the listener's first dump begins
    /// before the TAPs are opened: an adopted TAP as the last run left it, then each step of
    /// the set-up in turn) and is not followed.
    settled: std::cell::Cell<bool>,
}

/// The running Linux control plane: the namespaces (the default table's, then one per VRF),
/// a TAP per interface in its VRF's, the control thread, and per namespace a netlink listener
/// and its kernel view.
#[derive(Debug)]
pub struct LinuxCp {
    /// The default table's namespace first, then the VRFs'.
    spaces: Vec<space::Space>,
    pairs: Vec<Pair>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The routing table mirrored in each namespace (`linux-cp.table`).
    table: u32,
    /// The namespace whose changes are taken first next time: each in turn, so that a busy
    /// one (the default table's churn) cannot keep the others waiting.
    next_space: std::cell::Cell<usize>,
    /// Set, the control thread and the listeners end.
    stop: Arc<AtomicBool>,
}

impl LinuxCp {
    /// Opens (or makes) the namespaces, `linux-cp.netns` for the default table and
    /// `NETNS-VRF` for each of `vrfs` (index, name), and starts a netlink listener in each
    /// (`stop` ends them), before anything else of the dataplane: their first dumps of the
    /// namespaces' links, addresses and routes (seconds at a full table) go on while the rest
    /// starts. The TAPs come with [`LinuxCp::open_taps`], the control thread with
    /// [`LinuxCp::start_io`].
    pub fn open(config: &LinuxCpConfig, vrfs: &[(u16, &str)], stop: Arc<AtomicBool>) -> stdio::Result<LinuxCp> {
        let names = std::iter::once((crate::l3::vrf::DEFAULT_VRF, config.netns.clone()))
            .chain(vrfs.iter().map(|&(vrf, name)| (vrf, config.vrf_netns(name))));
        let mut lcp = LinuxCp {
            spaces: Vec::new(),
            pairs: Vec::new(),
            thread: None,
            table: config.table,
            next_space: Default::default(),
            stop: stop.clone(),
        };
        for (vrf, name) in names {
            // On an error, dropping `lcp` ends the listeners already started.
            lcp.spaces.push(space::Space::open(&name, vrf, config.table, config.netlink_buffer, stop.clone())?);
        }
        Ok(lcp)
    }

    /// Opens a TAP for each of `interfaces` (`names` gives each one's TAP name, by interface
    /// name), set to its MAC, MTU, admin state and carrier (`link_up` by interface index),
    /// and has the kernel view take each TAP for its interface.
    pub fn open_taps(
        &mut self,
        names: &[(String, String)],
        interfaces: &[Interface],
        link_up: impl Fn(u16) -> bool,
    ) -> stdio::Result<()> {
        for i in interfaces {
            let Some((_, linux)) = names.iter().find(|(n, _)| *n == i.name) else { continue };
            let state = TapState { up: i.admin_up, carrier: link_up(i.index), mtu: i.mtu };
            let space = self.spaces.iter().position(|s| s.vrf == i.vrf).unwrap_or(0);
            let netns = &self.spaces[space].netns;
            // An adopted TAP (a restart) keeps its state where it is right: a down and up
            // would end the sessions of the daemons on it.
            let tap = netns.run(|| {
                let tap = Tap::open(linux)?;
                if tap.mac()? != i.mac {
                    tap.set_mac(i.mac)?;
                }
                if tap.mtu()? != state.mtu {
                    tap.set_mtu(state.mtu)?;
                }
                tap.quiet_sysctls()?;
                tap.set_carrier(state.carrier)?;
                tap.set_up(state.up)?;
                Ok(tap)
            })?;
            tracing::info!(
                "linux-cp: {} is {} (ifindex {}) in namespace {}",
                i.name,
                tap.name,
                tap.ifindex,
                netns.name
            );
            self.pairs.push(Pair {
                index: i.index,
                space,
                tap,
                set: state,
                counters: Default::default(),
                asserted: Vec::new(),
                settled: Default::default(),
            });
        }
        for (k, space) in self.spaces.iter().enumerate() {
            let here = self.pairs.iter().filter(|p| p.space == k);
            space.kernel.lock().set_interfaces(here.map(|p| (p.tap.ifindex, p.index)));
        }
        Ok(())
    }

    /// Brings each TAP in step with its interface: admin state, MTU (`interfaces`) and carrier
    /// (`link_up`). Only what changed is set.
    pub fn sync(&mut self, interfaces: &[Interface], link_up: impl Fn(u16) -> bool) {
        for p in &mut self.pairs {
            let Some(i) = interfaces.iter().find(|i| i.index == p.index) else { continue };
            let want = TapState { up: i.admin_up, carrier: link_up(i.index), mtu: i.mtu };
            if want == p.set {
                continue;
            }
            // The TAP's control socket was made in the namespace and its descriptor is the
            // device's, so no thread has to enter the namespace (no CAP_SYS_ADMIN while running).
            let (tap, set) = (&p.tap, p.set);
            let done = (|| {
                if want.mtu != set.mtu {
                    tap.set_mtu(want.mtu)?;
                }
                if want.carrier != set.carrier {
                    tap.set_carrier(want.carrier)?;
                }
                if want.up != set.up {
                    tap.set_up(want.up)?;
                }
                Ok::<(), stdio::Error>(())
            })();
            match done {
                Ok(()) => p.set = want,
                Err(e) => tracing::warn!("linux-cp: {e}"),
            }
        }
    }

    /// Starts the control thread, which runs until the stop flag [`LinuxCp::open`] took is
    /// set, and returns each of `workers` workers' ends of its channels. Frames Linux writes
    /// on a TAP go to the worker that polls its interface's (first) rx queue.
    pub fn start_io(
        &mut self,
        interfaces: &[Interface],
        workers: u16,
        rates: PuntRate,
    ) -> stdio::Result<Vec<LcpWorker>> {
        use std::sync::mpsc::sync_channel;
        let workers = usize::from(workers.max(1));
        let (used, used_rx) = sync_channel(worker::QUEUE * workers);
        let (mut ends, mut lines) = (Vec::new(), Vec::new());
        for _ in 0..workers {
            let ((control, control_rx), (other, other_rx)) = (sync_channel(worker::QUEUE), sync_channel(worker::QUEUE));
            let (spare, spare_rx) = sync_channel(worker::QUEUE);
            for _ in 0..worker::QUEUE {
                spare.try_send(Vec::with_capacity(worker::FRAME_BYTES)).expect("room for each");
            }
            let (inject, inject_rx) = sync_channel(worker::QUEUE);
            let hz = crate::runtime::tsc::hz();
            let wake = std::sync::Arc::new(worker::eventfd()?);
            ends.push(LcpWorker::new([control, other], spare_rx, inject_rx, used.clone(), rates, hz, wake.clone()));
            lines.push(io::WorkerLine { punted: [control_rx, other_rx], spare, inject, wake });
        }
        let mut taps = Vec::new();
        for p in &self.pairs {
            let worker = interfaces.iter().find(|i| i.index == p.index).map_or(0, |i| usize::from(i.rx_worker));
            let worker = worker.min(workers - 1);
            taps.push(io::TapIo { index: p.index, file: p.tap.file()?, worker, counters: p.counters.clone() });
        }
        let free = (0..worker::QUEUE).map(|_| Vec::with_capacity(worker::FRAME_BYTES)).collect();
        let stop = self.stop.clone();
        self.thread = Some(io::spawn(io::Io { taps, workers: lines, used: used_rx, free, stop })?);
        Ok(ends)
    }

    /// Waits for the control thread and the netlink listeners to end (after the stop flag
    /// was set).
    pub fn join(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        for space in &mut self.spaces {
            if let Some(l) = space.listener.take() {
                l.join();
            }
        }
    }

    /// Each namespace's name, VRF index and netlink listener's counters (none once it has
    /// ended), the default table's first.
    pub fn listeners(&self) -> impl Iterator<Item = (&str, u16, Option<&listener::ListenerCounters>)> {
        self.spaces.iter().map(|s| (s.netns.name.as_str(), s.vrf, s.listener.as_ref().map(|l| &*l.counters)))
    }

    /// Each interface's TAP: interface index, TAP name, Linux ifindex, its counters.
    pub fn pairs(&self) -> impl Iterator<Item = (u16, &str, u32, &io::TapCounters)> {
        self.pairs.iter().map(|p| (p.index, p.tap.name.as_str(), p.tap.ifindex, &*p.counters))
    }

    /// The kernel routing table mirrored into the FIB (`linux-cp.table`).
    pub fn table(&self) -> u32 {
        self.table
    }

    /// The default table's namespace's name.
    pub fn netns(&self) -> &str {
        &self.spaces[0].netns.name
    }
}

impl Drop for LinuxCp {
    /// Ends the threads still running: a start that fails after [`LinuxCp::open`] leaves
    /// none behind.
    fn drop(&mut self) {
        if self.spaces.iter().any(|s| s.listener.is_some()) || self.thread.is_some() {
            self.stop.store(true, Relaxed);
            self.join();
        }
    }
}
