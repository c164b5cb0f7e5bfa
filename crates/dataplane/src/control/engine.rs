//! The dataplane as the main thread sees it: from a validated [`Config`] it builds the worker
//! tables, opens the ports, starts the workers and the sFlow agent; it applies new
//! configurations, services neighbor events and link state, and stops it all.

use super::counters::Cleared;
use super::ports::{HostPorts, open_captures, open_host_ports, read_host_links, with_kernel_mtus};
use crate::config::{Config, Driver};
use crate::datapath::WorkerCounters;
use crate::datapath::worker::{self, WorkerSetup};
use crate::drivers::af_xdp::setup::XdpPorts;
use crate::drivers::generator::{GeneratorPort, Stream};
use crate::drivers::host::HostLink;
use crate::drivers::pcap::{PcapSink, PcapSinks};
use crate::drivers::{KernelDrops, RxPort, WorkerPorts};
use crate::interface::build::build_interfaces;
use crate::interface::{IfStats, Interface, LinkState, Tables};
use crate::l3::fib::{FibError, FibInsert, FibWriters, Fibs};
use crate::l3::objects::{NextHop, Target};
use crate::l3::rib::{Rib, RouteChange, RouteError, Source};
use crate::l3::{L3, LabelStack, Routes, configured};
use crate::neighbor::Neighbors;
use crate::neighbor::punt::{Event, Probe, Punt};
use crate::runtime::qsbr::Qsbr;
use crate::runtime::snapshot::TablePublisher;
use crate::runtime::tsc;
use crate::sflow::agent::{self, AgentSetup, AgentShared};
use crate::sflow::ring::Ring;
use crate::sflow::{DropBudget, Refill, SflowWorker, WorkerBudget};
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
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
    /// The Linux control plane's namespace or a TAP could not be set up.
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
        "{0}: changing it needs a restart of vecflow (live changes: routes, neighbors, mpls, interfaces' state, mtu, \
         addresses, mpls, l2xc, description, sflow and rx-mode, and sflow's sampling-rate, direction, header-bytes and \
         polling-interval)"
    )]
    NeedsRestart(String),
    /// The FIB refused the new routes (the old ones were put back).
    #[error(transparent)]
    Fib(#[from] FibError),
    /// A route of the batch cannot be one (nothing was changed).
    #[error(transparent)]
    Route(#[from] RouteError),
}

pub(super) struct WorkerHandle {
    pub(super) id: u16,
    pub(super) core: Option<u16>,
    pub(super) counters: Arc<WorkerCounters>,
    pub(super) thread: Option<JoinHandle<std::io::Result<()>>>,
}

/// A running dataplane.
pub struct Dataplane {
    /// The instruction-set variant its workers' SIMD nodes run.
    pub(super) isa: crate::runtime::isa::Isa,
    pub(super) interfaces: Vec<Interface>,
    pub(super) sflow: Option<SflowRuntime>,
    pub(super) tables: Arc<Tables>,
    pub(super) fib: FibWriters,
    pub(super) workers: Vec<WorkerHandle>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) started: Instant,
    pub(super) config: Config,
    /// Publishes new table snapshots to the workers.
    pub(super) publisher: TablePublisher<Tables>,
    /// The neighbor table behind the snapshots' neighbors.
    pub(super) neighbors: Neighbors,
    /// What workers report (ARP learned, resolutions started).
    pub(super) events: Receiver<Event>,
    /// Refresh probes for worker 0 to send.
    pub(super) probes: SyncSender<Probe>,
    /// Link state by interface index.
    pub(super) links: Arc<Vec<LinkState>>,
    /// AF_PACKET and AF_XDP interfaces: index, host link, rx queues' kernel drop counters.
    pub(super) hosts: Vec<(u16, HostLink, Vec<KernelDrops>)>,
    /// Busy polling of AF_XDP interfaces in that rx mode (NAPI settings put back when dropped).
    pub(super) busy_poll: crate::drivers::af_xdp::busy_poll::BusyPoll,
    /// The XDP programs attached to AF_XDP interfaces (detached when dropped).
    pub(super) xdp_programs: Vec<crate::drivers::af_xdp::setup::Attached>,
    /// Capture files pcap interfaces write: index, field name, file.
    pub(super) pcap_sinks: Vec<(u16, String, Arc<PcapSink>)>,
    /// Finished flags of the captures read once; `None` when no capture is read or one loops.
    pub(super) replays: Option<Vec<Arc<AtomicBool>>>,
    /// Counter values at the last `clear` commands, which `show` commands count from.
    pub(super) cleared: Cleared,
    /// Every source's routes and the objects they point at.
    pub(super) rib: Rib,
    /// The adjacencies the label table's swaps hold (released when the labels change).
    pub(super) label_refs: Vec<u32>,
    /// The host routes of resolved neighbors on connected subnets (source neighbor).
    pub(super) host_routes: Routes,
    /// Interface counters at the last two link refreshes, for rates.
    pub(super) rate_samples: [Option<(Instant, BTreeMap<u16, IfStats>)>; 2],
    /// The Linux control plane's TAPs, when `linux-cp` is on.
    pub(super) lcp: Option<crate::lcp::LinuxCp>,
    /// The kernel's routes mirrored into the FIB (source kernel), and those not mirrored.
    pub(super) kernel_routes: super::kernel_routes::KernelRoutes,
}

/// The running sFlow agent.
pub(super) struct SflowRuntime {
    pub(super) sources: Vec<(u16, u32, u8)>,
    /// Where changed settings go to the samplers and the agent.
    pub(super) live: Arc<crate::sflow::LiveSettings>,
    pub(super) shared: Arc<AgentShared>,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) thread: Option<JoinHandle<std::io::Result<()>>>,
    pub(super) agent: IpAddr,
}

/// Room in the channel that carries workers' events to the main thread.
const EVENT_QUEUE: usize = 4096;
/// Room in the channel that carries refresh probes to worker 0.
const PROBE_QUEUE: usize = 1024;

/// The sFlow settings samplers and the agent follow, from a validated configuration (empty
/// when sFlow is off).
fn sflow_settings(config: &Config, interfaces: &[Interface]) -> crate::sflow::Settings {
    let Some(sf) = &config.sflow else { return crate::sflow::Settings::default() };
    let of = |i: &Interface| config.interfaces.get(&i.name).and_then(|c| c.sflow);
    let sources = interfaces
        .iter()
        .filter_map(|i| {
            let c = of(i).filter(|s| s.enable)?;
            let dir = c.direction.unwrap_or(sf.direction);
            let stages = if dir.rx() { crate::sflow::RX } else { 0 } | if dir.tx() { crate::sflow::TX } else { 0 };
            Some((i.index, c.sampling_rate.unwrap_or(sf.sampling_rate), stages))
        })
        .collect();
    let monitored = interfaces.iter().filter(|i| of(i).is_some_and(|s| s.drop_monitoring)).map(|i| i.index).collect();
    crate::sflow::Settings { sources, monitored, header_bytes: sf.header_bytes, polling_interval: sf.polling_interval }
}

/// What workers forward with, built from a validated configuration.
pub struct Forwarding {
    /// The interfaces, by index.
    pub interfaces: Vec<Interface>,
    /// Interface facts, adjacencies and neighbors.
    pub tables: Arc<Tables>,
    /// The FIBs with the interface addresses and routes installed.
    pub fib: FibWriters,
    /// The routes (connected and config) and the objects they point at.
    pub rib: Rib,
    /// The adjacencies the label table's swaps hold.
    pub label_refs: Vec<u32>,
}

/// Builds interfaces, tables and the FIB of a validated `config`; the FIB's readers announce
/// quiescent states through `qsbr`.
pub fn build_forwarding(config: &Config, qsbr: Arc<Qsbr>) -> Result<Forwarding, StartError> {
    let interfaces = build_interfaces(&config.interfaces, config.workers.count);
    let mut rib = Rib::default();
    let up = |_: u16, _: IpAddr| true;
    let (base, label_refs) = super::tables::build_l3(config, &interfaces, &mut rib.objects, &up);
    let mut batch = crate::l3::changes(
        &Routes::new(),
        &crate::l3::connected(&interfaces, config.linux_cp.is_some()),
        Source::Connected,
    );
    batch.extend(crate::l3::changes(&Routes::new(), &configured(&config.routes, &interfaces), Source::Config));
    let applied = rib.apply(&batch, &up)?;
    let mut fib = FibWriters::new(&Fibs::new(config.fib.tbl8_groups)?, qsbr);
    fib.apply(&applied.fib)?;
    rib.commit(applied);
    rib.objects.take_changed();
    let tables = Arc::new(Tables::new(&interfaces, base.with_objects(&rib.objects, &interfaces)));
    Ok(Forwarding { interfaces, tables, fib, rib, label_refs })
}

impl Dataplane {
    /// Validates `config`, starts the workers and returns the running dataplane.
    pub fn start(config: &Config) -> Result<Self, StartError> {
        config.validate()?;
        crate::runtime::isa::Isa::from_env().map_err(StartError::Isa)?;
        let isa = crate::runtime::isa::chosen();
        let (xdp_hosts, packet_hosts): (BTreeMap<_, _>, BTreeMap<_, _>) =
            read_host_links(config)?.into_iter().partition(|(name, _)| config.interfaces[name].driver == Driver::AfXdp);
        crate::drivers::af_xdp::setup::preflight(&config.xdp(), &xdp_hosts)?;
        let config = &with_kernel_mtus(config, packet_hosts.iter().chain(&xdp_hosts));
        config.validate()?;
        // The sFlow agent, when there is one, reads the FIB too (reader `workers.count`).
        log_buffers(config);
        let qsbr = Arc::new(Qsbr::new(config.workers.count as usize + 1));
        let Forwarding { interfaces, tables, fib, rib, label_refs } = build_forwarding(config, qsbr.clone())?;
        let HostPorts { links: mut host_links, rx: mut host_rx, tx: mut host_tx } =
            open_host_ports(config, &interfaces, packet_hosts)?;
        let XdpPorts { workers: xdp_workers, attached: xdp_programs, links: xdp_links } = if xdp_hosts.is_empty() {
            XdpPorts::default()
        } else {
            // One buffer pool per worker, each registered as that worker's UMEM.
            let pools = (0..config.workers.count)
                .map(|_| {
                    crate::runtime::buffer::BufferPool::with_data_size(config.workers.buffers, config.buffers.data_size)
                })
                .collect::<std::io::Result<Vec<_>>>()?;
            crate::drivers::af_xdp::setup::open(&config.xdp(), &interfaces, xdp_hosts, pools)?
        };
        host_links.extend(xdp_links);
        let mut xdp_workers = xdp_workers.into_iter();
        let hz = tsc::hz();
        let mut captures = open_captures(config, &interfaces, hz)?;
        let links: Arc<Vec<_>> = Arc::new((0..crate::net::MAX_INTERFACES).map(|_| LinkState::default()).collect());
        for i in &interfaces {
            links[usize::from(i.index)].oper_up.set(u64::from(i.admin_up));
            links[usize::from(i.index)].admin_up.set(u64::from(i.admin_up));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let sflow_start = sflow_settings(config, &interfaces);
        let (sources, monitored) = (sflow_start.sources.clone(), sflow_start.monitored.clone());
        let live_sflow = Arc::new(crate::sflow::LiveSettings::new(sflow_start));
        let (mut producers, consumers): (Vec<_>, Vec<_>) = match &config.sflow {
            Some(sf) => (0..config.workers.count).map(|_| Ring::new(sf.ring_depth).split()).unzip(),
            None => (Vec::new(), Vec::new()),
        };
        producers.reverse(); // popped in worker order below
        let (events_tx, events) = sync_channel(EVENT_QUEUE);
        let (probes, probes_rx) = sync_channel(PROBE_QUEUE);
        let mut probes_rx = Some(probes_rx);
        let now = Instant::now();
        let neighbors = Neighbors::new(tables.l3.all_neighbors(), now);
        let mut dp = Dataplane {
            isa,
            sflow: None,
            publisher: TablePublisher::new(tables.clone(), qsbr.clone()),
            neighbors,
            events,
            probes,
            interfaces,
            tables: tables.clone(),
            fib,
            workers: Vec::new(),
            stop,
            started: Instant::now(),
            config: config.clone(),
            links,
            hosts: host_links,
            busy_poll: Default::default(),
            xdp_programs,
            replays: (!captures.looping && !captures.replays.is_empty()).then_some(captures.replays),
            cleared: Cleared::default(),
            rib,
            label_refs,
            host_routes: Routes::new(),
            rate_samples: [None, None],
            pcap_sinks: captures.sinks,
            lcp: None,
            kernel_routes: Default::default(),
        };
        dp.refresh_links();
        dp.republish(); // with the links that are down at start marked
        if let Some(lcp) = &config.linux_cp {
            let names = config.linux_names()?;
            let up = |i| dp.link(i).oper_up.get() != 0;
            dp.lcp = Some(crate::lcp::LinuxCp::start(lcp, &names, &dp.interfaces, up).map_err(StartError::LinuxCp)?);
        }
        let mut lcp_ends = match &mut dp.lcp {
            Some(l) => {
                let rates = config.linux_cp.as_ref().map(|c| c.punt_rate).unwrap_or_default();
                l.start_io(&dp.interfaces, config.workers.count, rates, dp.stop.clone()).map_err(StartError::LinuxCp)?
            }
            None => Vec::new(),
        };
        lcp_ends.reverse(); // popped in worker order below
        dp.assert_tap_addresses();
        dp.sync_host_routes();
        // The agent's budget for discard samples.
        let drop_budget = DropBudget::new(usize::from(config.workers.count));
        // Made before the workers start: each worker's sampler sums a sample's pool over all.
        let all_counters: Vec<Arc<WorkerCounters>> =
            (0..config.workers.count).map(|_| Arc::new(WorkerCounters::new())).collect();
        for id in 0..config.workers.count {
            let mut ports: Vec<RxPort> = dp
                .interfaces
                .iter()
                .filter(|i| i.rx_worker == id)
                .filter_map(|i| {
                    let g = config.interfaces.get(&i.name)?.generator.as_ref()?;
                    let streams = g.streams.iter().map(|s| Stream::new(s, i.mac, hz)).collect();
                    Some(RxPort::Generator(GeneratorPort::new(i.index, streams)))
                })
                .collect();
            ports.extend(std::mem::take(&mut host_rx[usize::from(id)]).into_iter().map(RxPort::AfPacket));
            let xdp = xdp_workers.next();
            ports.extend(xdp.iter().flat_map(|x| x.rx.iter().copied().map(RxPort::AfXdp)));
            let (pool, xsk) = xdp.map(|x| (Some(x.pool), x.sockets)).unwrap_or_default();
            ports.extend(
                std::mem::take(&mut captures.rx[usize::from(id)]).into_iter().map(|p| RxPort::Pcap(Box::new(p))),
            );
            let mut pcap_out = PcapSinks::default();
            for (port, _, sink) in &dp.pcap_sinks {
                pcap_out.add(*port, sink.clone());
            }
            let counters = all_counters[usize::from(id)].clone();
            let core = config.workers.cores.get(id as usize).copied();
            let setup = WorkerSetup {
                id,
                core,
                buffers: config.workers.buffers,
                data_size: config.buffers.data_size,
                tables: tables.clone(),
                updates: dp.publisher.reader(),
                punt: Punt::new(Some(events_tx.clone()), probes_rx.take(), hz),
                fib: dp.fib.fibs(),
                qsbr: qsbr.register(usize::from(id)),
                counters: counters.clone(),
                ports,
                pool,
                drivers: WorkerPorts { xsk, tx: std::mem::take(&mut host_tx[usize::from(id)]), pcap_out },
                stop: dp.stop.clone(),
                lcp: lcp_ends.pop(),
                sflow: config.sflow.as_ref().map(|sf| {
                    let seed = crate::sflow::worker_seed(sf.seed, id);
                    tracing::debug!(worker = id, seed, configured = sf.seed.is_some(), "sFlow sampler seed");
                    SflowWorker::new(
                        &sources,
                        &monitored,
                        WorkerBudget::new(drop_budget.clone(), usize::from(id)),
                        sf.header_bytes,
                        seed,
                        producers.pop().expect("one ring per worker"),
                        all_counters.clone(),
                    )
                    .following(live_sflow.clone())
                }),
            };
            match worker::spawn(setup) {
                Ok(t) => dp.workers.push(WorkerHandle { id, core, counters, thread: Some(t) }),
                Err(e) => {
                    dp.stop()?;
                    return Err(e.into());
                }
            }
        }
        if let Some(sf) = &config.sflow {
            let agent_addr = sf
                .agent_address
                .or(config.first_address())
                .expect("validated: sflow.agent-address or an interface address");
            let shared = Arc::new(AgentShared::new());
            let stop = Arc::new(AtomicBool::new(false));
            let setup = AgentSetup {
                rings: consumers,
                workers: all_counters.clone(),
                fib: dp.fib.fibs(),
                qsbr: qsbr.register(config.workers.count as usize),
                agent: agent_addr,
                sub_agent_id: sf.sub_agent_id,
                max_datagram: usize::from(sf.max_datagram_size),
                collectors: sf.collectors.iter().map(|c| SocketAddr::new(c.address, c.port)).collect(),
                polling: crate::sflow::Polling::new(
                    sf.polling_interval,
                    &sources.iter().map(|s| s.0).collect::<Vec<_>>(),
                    &dp.interfaces,
                    all_counters,
                    dp.links.clone(),
                    0x9011_5eed,
                )
                .reporting(dp.sflow_if_indices()),
                if_indices: dp.sflow_if_indices(),
                shared: shared.clone(),
                stop: stop.clone(),
                drop_budget,
                refill: Refill::new(sf.drop_limit, usize::from(config.workers.count)),
                live: live_sflow.clone(),
                avoid_cpus: config.workers.cores.clone(),
                nice: sf.agent_nice,
            };
            let thread = agent::spawn(setup)?;
            dp.sflow =
                Some(SflowRuntime { sources, shared, stop, thread: Some(thread), agent: agent_addr, live: live_sflow });
        }
        if let Some(core) = config.workers.main_core {
            crate::runtime::cpu::pin_current_thread(core)?;
        }
        dp.started = Instant::now();
        Ok(dp)
    }

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
        for (_, field, sink) in &self.pcap_sinks {
            if let Err(e) = sink.finish()
                && first.is_ok()
            {
                first = Err(std::io::Error::new(e.kind(), format!("{field}: {e}")));
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
        self.replays.as_ref().is_some_and(|r| r.iter().all(|f| f.load(Relaxed)))
    }

    /// The configuration it runs.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// How AF_XDP interface `index` runs: its XDP mode (`native` or `skb`) and whether the
    /// kernel moves frames without copying; `None` for other drivers.
    pub fn xdp_attachment(&self, index: u16) -> Option<(&'static str, bool)> {
        self.xdp_programs.iter().find(|a| a.port == index).map(|a| (a.mode(), a.zero_copy))
    }

    /// The NAPI ids that last delivered frames to the rx queues of AF_XDP interface `index`.
    pub fn xdp_napi_ids(&self, index: u16) -> Vec<u32> {
        let drops = self.hosts.iter().filter(|(i, _, _)| *i == index).flat_map(|(_, _, d)| d);
        drops.filter_map(KernelDrops::napi_id).collect()
    }

    /// What the kernel said of the host interface behind `index` (`af-packet` interfaces).
    pub fn host_link(&self, index: u16) -> Option<&HostLink> {
        self.hosts.iter().find(|(i, _, _)| *i == index).map(|(_, link, _)| link)
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
        &self.fib
    }

    /// Every source's routes and the adjacencies and load-balance objects they point at.
    pub fn rib(&self) -> &Rib {
        &self.rib
    }

    /// The kernel's routes vecflow mirrors (linux-cp) and those it does not.
    pub fn kernel_routes(&self) -> &super::kernel_routes::KernelRoutes {
        &self.kernel_routes
    }

    /// Applies a batch of route changes, each naming its source, all or nothing and without
    /// stopping the workers: the adjacencies and load-balance objects it makes reach the
    /// workers' tables first, then the FIB changes; the objects no route uses any more are
    /// freed once every worker has moved on. Returns when workers forward on the new routes.
    /// Config-sourced changes do not edit the configuration (its commands do that).
    pub fn apply_routes(&mut self, batch: &[RouteChange]) -> Result<(), ApplyError> {
        let live = self.liveness();
        let applied = self.rib.apply(batch, &live)?;
        if self.rib.objects.take_changed() {
            self.republish();
        }
        if let Err(e) = self.fib.apply(&applied.fib) {
            let back = self.rib.rollback(applied);
            self.put_back(&back);
            return Err(e.into());
        }
        self.rib.commit(applied);
        self.fib.synchronize();
        self.rib.objects.settle();
        Ok(())
    }

    /// Sets (`Some`) or removes (`None`) the configured route to `prefix`: the configuration
    /// changes and is validated whole, the FIB by one change; nothing else is rebuilt.
    pub fn set_config_route(
        &mut self,
        prefix: crate::config::IpPrefix,
        route: Option<crate::config::Route>,
    ) -> Result<(), ApplyError> {
        let mut new = self.config.clone();
        let at = new.routes.iter().position(|r| (r.prefix.masked(), r.prefix.len) == (prefix.masked(), prefix.len));
        match (at, route) {
            (Some(k), Some(r)) => new.routes[k] = r,
            (None, Some(r)) => new.routes.push(r),
            (Some(k), None) => {
                new.routes.remove(k);
            }
            (None, None) => return Ok(()),
        }
        new.validate()?;
        let (prefix, len) = (prefix.masked(), prefix.len);
        let target = new
            .routes
            .iter()
            .find(|r| (r.prefix.masked(), r.prefix.len) == (prefix, len))
            .map(|r| crate::l3::configured_route(r, &self.interfaces));
        self.apply_routes(&[RouteChange { prefix, len, source: Source::Config, target }])?;
        self.config.routes = new.routes;
        Ok(())
    }

    /// Whether a next hop takes traffic now: its link is up and its neighbor did not fail to
    /// resolve.
    pub(super) fn liveness(&self) -> impl Fn(u16, IpAddr) -> bool + 'static {
        let failed = self.neighbors.failed();
        let up: Vec<bool> = (0..crate::net::MAX_INTERFACES).map(|i| self.link(i as u16).oper_up.get() != 0).collect();
        move |tx_if: u16, via: IpAddr| up[usize::from(tx_if) % up.len()] && !failed.contains(&(tx_if, via))
    }

    /// Publishes the workers' tables: `interfaces`, `base`'s labels and flows, the current
    /// adjacencies and load-balance objects, the neighbor table's MACs, the links that are down.
    fn publish_tables(&mut self, interfaces: &[Interface], base: &L3) {
        let l3 = L3 { adjs: self.rib.objects.adjs().to_vec(), lbs: self.rib.objects.lbs().to_vec(), ..base.clone() }
            .with_neighbors(interfaces, self.neighbors.macs(), self.neighbors.failed());
        let mut tables = Tables::new(interfaces, l3);
        self.hosts.iter().filter(|(_, link, _)| !link.oper_up).for_each(|(index, _, _)| tables.link_down(*index));
        self.publisher.publish(tables);
        self.tables = self.publisher.current();
    }

    /// Publishes the workers' tables again with what changed beside the configuration: the
    /// objects, the buckets, the neighbor table's MACs.
    pub(super) fn republish(&mut self) {
        let interfaces = std::mem::take(&mut self.interfaces);
        self.publish_tables(&interfaces, &self.tables.l3.clone());
        self.interfaces = interfaces;
    }

    /// Puts FIB entries back after a refused batch, one by one (a delete of an entry the
    /// refused batch never made is no error).
    fn put_back(&mut self, back: &[FibInsert]) {
        for change in back {
            match self.fib.apply(std::slice::from_ref(change)) {
                Ok(()) | Err(FibError::NoSuchRoute(..)) => {}
                Err(undo) => tracing::error!("putting a route back after a refused change failed too: {undo}"),
            }
        }
    }

    /// Keeps a host route (source neighbor) to every neighbor with a MAC inside a connected
    /// subnet of its interface, so traffic to connected hosts takes the next-hop path.
    fn sync_host_routes(&mut self) {
        let on_subnet = |i: u16, a: IpAddr| {
            self.interfaces
                .iter()
                .find(|x| x.index == i)
                .is_some_and(|x| x.addresses.iter().any(|p| p.contains(a) && p.addr != a))
        };
        let want: Routes = self
            .neighbors
            .macs()
            .into_keys()
            .filter(|&(i, a)| !crate::config::is_link_local(a) && on_subnet(i, a))
            .map(|(tx_if, via)| {
                let hop = NextHop { via, tx_if, weight: 1 };
                (
                    (via, if via.is_ipv4() { 32 } else { 128 }),
                    Target::Paths { hops: vec![hop], push: LabelStack::EMPTY },
                )
            })
            .collect();
        let batch = crate::l3::changes(&self.host_routes, &want, Source::Neighbor);
        if batch.is_empty() {
            return;
        }
        match self.apply_routes(&batch) {
            Ok(()) => self.host_routes = want,
            Err(e) => tracing::warn!("host routes of neighbors: {e}"),
        }
    }

    /// Follows the host links' state; looks after the neighbor table: takes in what workers
    /// learned, ages entries, has stale ones probed, and publishes a new table snapshot when
    /// what workers forward with changed. Call it often (every 10 ms or so): workers' events
    /// wait in a bounded queue.
    pub fn service(&mut self) {
        self.follow_carriers();
        let mut changed = self.follow_kernel();
        let now = Instant::now();
        while let Ok(event) = self.events.try_recv() {
            changed |= self.neighbors.on_event(event, now);
        }
        let (aged, probes) = self.neighbors.age(now);
        for p in probes {
            self.send_probe(p);
        }
        if changed || aged {
            let live = self.liveness();
            self.rib.objects.set_live(&live);
            self.rib.objects.take_changed();
            // The MACs changed: publish them, unless the host routes' batch already did.
            let before = self.tables.clone();
            self.sync_host_routes();
            if Arc::ptr_eq(&before, &self.tables) {
                self.republish();
            }
        }
    }

    /// Has worker 0 send probe `p` (dropped, and logged, when its queue is full).
    pub(super) fn send_probe(&self, p: Probe) {
        if self.probes.try_send(p).is_err() {
            tracing::debug!("probe queue full: {p:?} not sent");
        }
    }

    /// Changes the running dataplane to `new`, all or nothing: the whole configuration is
    /// validated first, and a change only a restart can make refuses it all. Interface facts,
    /// adjacencies, labels and neighbors change through one table snapshot swap, routes
    /// through the FIB's batch; a worker never sees a FIB entry naming an adjacency its
    /// snapshot does not have, so interfaces the change does not touch lose no packets.
    pub fn apply(&mut self, new: &Config) -> Result<(), ApplyError> {
        self.apply_running(new)?;
        self.assert_tap_addresses();
        Ok(())
    }

    /// [`Dataplane::apply`], but the configured addresses are not set on the TAPs again
    /// (a change that comes from Linux leaves Linux's addresses as they are).
    pub(super) fn apply_running(&mut self, new: &Config) -> Result<(), ApplyError> {
        let new = self.admissible(new)?;
        let interfaces = build_interfaces(&self.with_kernel_addresses(&new).interfaces, new.workers.count);
        let mut batch = crate::l3::changes(
            &crate::l3::connected(&self.interfaces, self.config.linux_cp.is_some()),
            &crate::l3::connected(&interfaces, new.linux_cp.is_some()),
            Source::Connected,
        );
        batch.extend(crate::l3::changes(
            &configured(&self.config.routes, &self.interfaces),
            &configured(&new.routes, &interfaces),
            Source::Config,
        ));
        let now = Instant::now();
        let old_statics = self.static_neighbors(&self.config, &self.interfaces);
        let live = self.liveness();
        let (base, label_refs) = super::tables::build_l3(&new, &interfaces, &mut self.rib.objects, &live);
        let applied = match self.rib.apply(&batch, &live) {
            Ok(a) => a,
            Err(e) => {
                label_refs.into_iter().for_each(|r| self.rib.objects.release(r));
                return Err(e.into());
            }
        };
        self.neighbors.set_statics(self.static_neighbors(&new, &interfaces), now);
        let old_tables = self.tables.clone();
        self.publish_tables(&interfaces, &base);
        if let Err(e) = self.fib.apply(&applied.fib) {
            let back = self.rib.rollback(applied);
            self.put_back(&back);
            label_refs.into_iter().for_each(|r| self.rib.objects.release(r));
            self.neighbors.set_statics(old_statics, now);
            self.publisher.publish((*old_tables).clone());
            self.tables = self.publisher.current();
            return Err(e.into());
        }
        self.rib.commit(applied);
        for r in std::mem::replace(&mut self.label_refs, label_refs) {
            self.rib.objects.release(r);
        }
        for i in &interfaces {
            let link = &self.links[usize::from(i.index)];
            link.admin_up.set(u64::from(i.admin_up));
            if self.host_link(i.index).is_none() {
                link.oper_up.set(u64::from(i.admin_up));
            }
        }
        if let Some(sf) = &mut self.sflow {
            let settings = sflow_settings(&new, &interfaces);
            sf.sources.clone_from(&settings.sources);
            sf.live.set(settings);
        }
        self.interfaces = interfaces;
        if new.flows != self.config.flows {
            self.cleared.flows = self.flow_hits_total();
        }
        self.config = new;
        // Subnets may have come or gone: so may host routes. Then no FIB entry names what
        // this change left unused, and once no worker holds a lookup made before, it is freed.
        self.sync_host_routes();
        self.follow_liveness();
        self.fib.synchronize();
        self.rib.objects.settle();
        self.sync_taps();
        Ok(())
    }

    /// The instruction-set variant the workers' SIMD nodes run.
    pub fn isa(&self) -> crate::runtime::isa::Isa {
        self.isa
    }

    /// `new` as this dataplane would run it (af-packet MTUs taken from the kernel), if it
    /// is valid and changes nothing only a restart can.
    fn admissible(&self, new: &Config) -> Result<Config, ApplyError> {
        new.validate()?;
        let hosts = self
            .hosts
            .iter()
            .filter_map(|(i, link, _)| Some((&self.interfaces.iter().find(|x| x.index == *i)?.name, link)));
        let new = with_kernel_mtus(new, hosts);
        new.validate()?;
        match self.config.needs_restart(&new) {
            Some(field) => Err(ApplyError::NeedsRestart(field)),
            None => Ok(new),
        }
    }

    /// What [`Dataplane::apply`] of `new` would change, as the commands that would make the
    /// same change one by one; nothing is changed.
    pub fn plan(&self, new: &Config) -> Result<Vec<String>, ApplyError> {
        Ok(crate::control::plan::plan(&self.config, &self.admissible(new)?))
    }
}

impl Drop for Dataplane {
    fn drop(&mut self) {
        // A worker error at drop time has nowhere to go; `stop` reports it to callers who ask.
        let _ = self.stop();
    }
}

/// Says at start how much memory the packet buffers take.
fn log_buffers(config: &Config) {
    let (count, workers) = (config.workers.buffers, config.workers.count);
    let per_worker = config.buffers.memory(count) as f64 / f64::from(1u32 << 20);
    tracing::info!(
        "buffers: {count} per worker of {} bytes of frame ({}-byte slots): {per_worker:.1} MiB per worker, {:.1} MiB \
         for {workers} worker(s)",
        config.buffers.data_size,
        crate::runtime::buffer::stride_for(config.buffers.data_size),
        per_worker * f64::from(workers)
    );
}
