//! The running dataplane: the handle the main thread keeps ([`Dataplane`]), what it owns
//! grouped by part (ports, routing, neighbors, sFlow, linux-cp), what its callers read of it,
//! and how it stops. Starting is in `start`, live changes in `apply` and `routes`.

use super::counters::{Cleared, RateSamples};
use super::neighbors::NeighborState;
use super::ports::Ports;
use super::routes::Routing;
use super::sflow::SflowRuntime;
use crate::config::Config;
use crate::datapath::Tables;
use crate::datapath::WorkerCounters;
use crate::drivers::KernelDrops;
use crate::drivers::host::HostLink;
use crate::interface::Interface;
use crate::l3::L3;
use crate::l3::fib::{FibError, FibWriters};
use crate::l3::rib::{Rib, RouteError};
use crate::runtime::snapshot::TablePublisher;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::Instant;

/// Why the dataplane could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration is invalid.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// A worker could not be created (memory, thread, CPU pinning).
    #[error("worker start-up: {0}")]
    Io(#[from] std::io::Error),
    /// The routes do not fit the FIB.
    #[error(transparent)]
    Fib(#[from] FibError),
    /// The environment asks for an instruction-set variant this CPU cannot run
    /// ([`crate::runtime::isa::ENV`]).
    #[error("{0}")]
    Isa(String),
    /// A driver could not open what the configuration names.
    #[error(transparent)]
    Driver(#[from] crate::drivers::PortError),
    /// A route cannot be one.
    #[error(transparent)]
    Route(#[from] RouteError),
    /// The Linux control plane's namespace, its netlink listener or a TAP could not be set up.
    #[error("linux-cp: {0}")]
    LinuxCp(std::io::Error),
}

/// Why a running dataplane refused a new configuration (it then runs on unchanged).
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The new configuration is invalid.
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
    /// It changes something only a restart can.
    #[error(
        "{0}: changing it needs a restart of vecflow (live changes: vrfs, routes, neighbors, mpls, interfaces' state, \
         mtu, addresses, vrf, mpls, l2xc, description, sflow and rx-mode, and sflow's sampling-rate, direction, \
         header-bytes and polling-interval)"
    )]
    NeedsRestart(String),
    /// A new VRF's tables could not be made (nothing was changed).
    #[error("the tables of a new VRF: {0}")]
    Tables(std::io::Error),
    /// The FIB refused the new routes (the old ones were put back).
    #[error(transparent)]
    Fib(#[from] FibError),
    /// A route of the batch cannot be one (nothing was changed).
    #[error(transparent)]
    Route(#[from] RouteError),
}

/// A running worker as the main thread sees it.
pub(super) struct WorkerHandle {
    /// Its number (0 ..= `workers.count` − 1).
    pub(super) id: u16,
    /// The CPU it is pinned to, if any.
    pub(super) core: Option<u16>,
    /// What it counts.
    pub(super) counters: Arc<WorkerCounters>,
    /// Its thread, until it is joined.
    pub(super) thread: Option<JoinHandle<std::io::Result<()>>>,
}

/// A running dataplane.
pub struct Dataplane {
    /// The instruction-set variant its workers' SIMD nodes run.
    pub(super) isa: crate::runtime::isa::Isa,
    /// The configuration it runs.
    pub(super) config: Config,
    /// When it started.
    pub(super) started: Instant,
    /// The interfaces, by index.
    pub(super) interfaces: Vec<Interface>,
    /// The workers' tables as last published.
    pub(super) tables: Arc<Tables>,
    /// Publishes new table snapshots to the workers.
    pub(super) publisher: TablePublisher<Tables>,
    /// The worker threads.
    pub(super) workers: Vec<WorkerHandle>,
    /// Tells the workers and linux-cp's threads to stop.
    pub(super) stop: Arc<AtomicBool>,
    /// Link state, host links, XDP programs, capture files.
    pub(super) ports: Ports,
    /// The RIB, the FIB writers and the routes the main thread makes itself.
    pub(super) routing: Routing,
    /// The neighbor table and its channels to and from the workers.
    pub(super) neighbors: NeighborState,
    /// The sFlow agent, when sFlow is on.
    pub(super) sflow: Option<SflowRuntime>,
    /// The Linux control plane's TAPs, when `linux-cp` is on.
    pub(super) lcp: Option<crate::lcp::LinuxCp>,
    /// Counter values at the last `clear` commands, which `show` commands count from.
    pub(super) cleared: Cleared,
    /// Interface counters at the last two link refreshes, for rates.
    pub(super) rate_samples: RateSamples,
}

impl Dataplane {
    /// Stops every worker and waits for it, then lets the sFlow agent send what the workers
    /// published and stops it; returns the first error.
    pub fn stop(&mut self) -> std::io::Result<()> {
        self.stop.store(true, Relaxed);
        if let Some(lcp) = &mut self.lcp {
            lcp.join();
        }
        let mut first = Ok(());
        for w in &mut self.workers {
            if let Some(t) = w.thread.take() {
                let r = t.join().unwrap_or_else(|_| Err(std::io::Error::other(format!("worker {} panicked", w.id))));
                if first.is_ok() {
                    first = r;
                }
            }
        }
        for out in &self.ports.pcap_sinks {
            if let Err(e) = out.sink.finish()
                && first.is_ok()
            {
                first = Err(std::io::Error::new(e.kind(), format!("{}: {e}", out.field)));
            }
        }
        if let Some(sf) = &mut self.sflow
            && let Some(t) = sf.thread.take()
        {
            sf.stop.store(true, Relaxed);
            let r = t.join().unwrap_or_else(|_| Err(std::io::Error::other("sflow agent panicked")));
            if first.is_ok() {
                first = r;
            }
        }
        first
    }

    /// True when the configuration reads captures, none in a loop, and every one has been
    /// read to its end and run through the graph: a replay is complete (`vecflow run` then
    /// stops by itself).
    pub fn replay_finished(&self) -> bool {
        self.ports.replays.as_ref().is_some_and(|r| r.iter().all(|f| f.load(Relaxed)))
    }

    /// The configuration it runs.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How AF_XDP interface `index` runs: its XDP mode (`native` or `skb`) and whether the
    /// kernel moves frames without copying; `None` for other drivers.
    pub fn xdp_attachment(&self, index: u16) -> Option<(&'static str, bool)> {
        self.ports.xdp_programs.iter().find(|a| a.port == index).map(|a| (a.mode(), a.zero_copy))
    }

    /// The NAPI ids that last delivered frames to the rx queues of AF_XDP interface `index`.
    pub fn xdp_napi_ids(&self, index: u16) -> Vec<u32> {
        self.ports.host(index).into_iter().flat_map(|h| &h.queues).filter_map(KernelDrops::napi_id).collect()
    }

    /// What the kernel said of the host interface behind `index` (`af-packet` interfaces).
    pub fn host_link(&self, index: u16) -> Option<&HostLink> {
        self.ports.host(index).map(|h| &h.link)
    }

    /// Seconds since start.
    pub fn uptime(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// The Linux control plane, when `linux-cp` is on.
    pub fn linux_cp(&self) -> Option<&crate::lcp::LinuxCp> {
        self.lcp.as_ref()
    }

    /// The interfaces, by index.
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }

    /// The layer 3 tables the workers forward with.
    pub fn l3(&self) -> &L3 {
        &self.tables.l3
    }

    /// The FIBs (routes, lookups).
    pub fn fib(&self) -> &FibWriters {
        &self.routing.fib
    }

    /// Every source's routes and the adjacencies and load-balance objects they point at.
    pub fn rib(&self) -> &Rib {
        &self.routing.rib
    }

    /// Each VRF's name, index and table id.
    pub fn vrfs(&self) -> &crate::l3::vrf::VrfIds {
        &self.routing.vrfs
    }

    /// The kernel's routes vecflow mirrors (linux-cp) and those it does not.
    pub fn kernel_routes(&self) -> &crate::lcp::mirror::KernelRoutes {
        &self.routing.kernel
    }

    /// The instruction-set variant the workers' SIMD nodes run.
    pub fn isa(&self) -> crate::runtime::isa::Isa {
        self.isa
    }
}

impl Drop for Dataplane {
    fn drop(&mut self) {
        // A worker error at drop time has nowhere to go; `stop` reports it to callers who ask.
        let _ = self.stop();
    }
}
