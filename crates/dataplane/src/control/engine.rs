//! The dataplane as the main thread sees it: builds interfaces and worker tables from a
//! validated [`Config`], starts the workers, reads their counters, stops them.

use crate::config::{AdminState, Config, Driver};
use crate::datapath::WorkerCounters;
use crate::datapath::worker::{self, WorkerSetup};
use crate::drivers::af_packet::{RxQueue, TxSockets};
use crate::drivers::af_xdp::setup::XdpPorts;
use crate::drivers::generator::GenStats;
use crate::drivers::generator::{GeneratorPort, Stream};
use crate::drivers::host::HostLink;
use crate::drivers::pcap::{PcapPort, PcapSink, PcapSinks};
use crate::drivers::{KernelDrops, RxPort};
use crate::interface::{DriverKind, IfStats, Interface, LinkState, MAX_INTERFACES, RxMode, Tables};
use crate::l3::L3;
use crate::l3::fib::{FibError, FibWriters, Fibs};
use crate::neighbor::punt::{Event, Probe, Punt, PuntStats};
use crate::neighbor::{NeighborRow, Neighbors};
use crate::runtime::drops::{DropReason, N_REASONS};
use crate::runtime::graph::{LoopStats, NodeId, NodeStats};
use crate::runtime::qsbr::Qsbr;
use crate::runtime::snapshot::TablePublisher;
use crate::runtime::tsc;
use crate::sflow::SflowStats;
use crate::sflow::agent::{self, AgentSetup, AgentShared, AgentStats};
use crate::sflow::ring::Ring;
use crate::sflow::{DropBudget, Refill, SflowWorker, WorkerBudget};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::Instant;
use wire::MacAddr;

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
    #[error("{field}: {message}")]
    Driver {
        /// Dotted path of the field, e.g. `interfaces.wan0.host-interface`.
        field: String,
        /// What went wrong, in words.
        message: String,
    },
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
}

/// A start-up error of interface `name`'s host interface.
pub(crate) fn host_error(name: &str, host: &str, e: impl std::fmt::Display) -> StartError {
    StartError::Driver { field: format!("interfaces.{name}.host-interface"), message: format!("{host}: {e}") }
}

/// The AF_PACKET interfaces of a starting dataplane: what the kernel says of each host
/// interface, opened before any worker starts so that every problem stops the start-up.
struct HostPorts {
    /// (interface index, host link, kernel drop counters of its rx queues).
    links: Vec<(u16, HostLink, Vec<KernelDrops>)>,
    /// Rx queues by worker.
    rx: Vec<Vec<RxQueue>>,
    /// Send sockets by worker.
    tx: Vec<TxSockets>,
}

/// Reads the host interface of every `af-packet` and `af-xdp` interface, by interface name.
fn read_host_links(config: &Config) -> Result<BTreeMap<String, HostLink>, StartError> {
    let mut out = BTreeMap::new();
    for (name, i) in &config.interfaces {
        if let (Driver::AfPacket | Driver::AfXdp, Some(host)) = (i.driver, &i.host_interface) {
            let link = HostLink::read(host).map_err(|e| host_error(name, host, e))?;
            for warning in link.kernel_conflicts() {
                tracing::warn!("interfaces.{name}: {warning}");
            }
            out.insert(name.clone(), link);
        }
    }
    Ok(out)
}

/// `config` with the MTU of each interface of `hosts` (by interface name: the `af-packet` and
/// `af-xdp` ones) that names none taken from the kernel (at most what a buffer holds); warns
/// where the configured MTU is above the kernel's.
fn with_kernel_mtus<'a>(config: &Config, hosts: impl IntoIterator<Item = (&'a String, &'a HostLink)>) -> Config {
    let mut c = config.clone();
    for (name, link) in hosts {
        let Some(i) = c.interfaces.get_mut(name) else { continue };
        let kernel = link.mtu.min(u32::from(crate::config::MAX_MTU)) as u16;
        match i.mtu {
            None => {
                if link.mtu > u32::from(kernel) {
                    tracing::warn!(
                        "interfaces.{name}: host interface {} has MTU {}; vecflow's buffers hold {kernel}",
                        link.name,
                        link.mtu
                    );
                }
                i.mtu = Some(kernel);
            }
            Some(m) if u32::from(m) > link.mtu => tracing::warn!(
                "interfaces.{name}.mtu: {m} is above host interface {}'s MTU {}; frames larger than the kernel's \
                 MTU may be dropped by the kernel or the peer",
                link.name,
                link.mtu
            ),
            Some(_) => {}
        }
    }
    c
}

/// Opens the rx queues and send sockets of every `af-packet` interface.
fn open_host_ports(
    config: &Config,
    interfaces: &[Interface],
    hosts: BTreeMap<String, HostLink>,
) -> Result<HostPorts, StartError> {
    let workers = usize::from(config.workers.count);
    let mut ports = HostPorts {
        links: Vec::new(),
        rx: (0..workers).map(|_| Vec::new()).collect(),
        tx: (0..workers).map(|_| TxSockets::default()).collect(),
    };
    for (name, link) in hosts {
        let i = interfaces.iter().find(|i| i.name == name).expect("an interface of the config");
        let cfg = config.interfaces[&name].af_packet.unwrap_or_default();
        let fanout = (cfg.rx_queues > 1).then(|| (std::process::id() as u16).wrapping_add(i.index));
        let mut stats = Vec::new();
        for q in 0..cfg.rx_queues {
            let queue =
                RxQueue::open(i.index, link.ifindex, &cfg, fanout).map_err(|e| host_error(&name, &link.name, e))?;
            stats.push(KernelDrops::AfPacket(queue.stats_handle().map_err(|e| host_error(&name, &link.name, e))?));
            ports.rx[usize::from(config.interfaces[&name].queue_worker(q, i.rx_worker, workers as u16))].push(queue);
        }
        for tx in &mut ports.tx {
            tx.open(i.index, link.ifindex).map_err(|e| host_error(&name, &link.name, e))?;
        }
        tracing::info!(
            "interface {name}: af-packet on {} (ifindex {}), {} rx queue(s), MTU {}, link {}",
            link.name,
            link.ifindex,
            cfg.rx_queues,
            i.mtu,
            if link.oper_up { "up" } else { "down" }
        );
        ports.links.push((i.index, link, stats));
    }
    Ok(ports)
}

/// The pcap interfaces of a starting dataplane: captures opened for reading and files created
/// for writing, before any worker starts so that every problem stops the start-up.
struct Captures {
    /// Replays by worker.
    rx: Vec<Vec<PcapPort>>,
    /// (interface index, `interfaces.NAME.pcap.write`, the file).
    sinks: Vec<(u16, String, Arc<PcapSink>)>,
    /// The finished flags of the reads that are not looping.
    replays: Vec<Arc<AtomicBool>>,
    /// Some read loops (so the captures never all end).
    looping: bool,
}

/// Opens the captures every `pcap` interface reads and creates the files they write.
fn open_captures(config: &Config, interfaces: &[Interface], tsc_hz: u64) -> Result<Captures, StartError> {
    let mut out = Captures {
        rx: (0..config.workers.count).map(|_| Vec::new()).collect(),
        sinks: Vec::new(),
        replays: Vec::new(),
        looping: false,
    };
    for i in interfaces {
        let Some(p) = config.interfaces.get(&i.name).and_then(|c| c.pcap.as_ref()) else { continue };
        let error = |field: &str, path: &std::path::Path, e: std::io::Error| StartError::Driver {
            field: field.to_owned(),
            message: format!("{}: {e}", path.display()),
        };
        if let Some(path) = &p.read {
            let field = format!("interfaces.{}.pcap.read", i.name);
            let finished = Arc::new(AtomicBool::new(false));
            let port = PcapPort::open(i.index, field.clone(), path, p.looping, p.rate_pps, tsc_hz, finished.clone())
                .map_err(|e| error(&field, path, e))?;
            out.rx[usize::from(i.rx_worker)].push(port);
            if p.looping {
                out.looping = true;
            } else {
                out.replays.push(finished);
            }
        }
        if let Some(path) = &p.write {
            let field = format!("interfaces.{}.pcap.write", i.name);
            let sink = PcapSink::create(path).map_err(|e| error(&field, path, e))?;
            out.sinks.push((i.index, field, Arc::new(sink)));
        }
        tracing::info!(
            "interface {}: pcap, reads {}{}, writes {}",
            i.name,
            p.read.as_ref().map_or("nothing".into(), |r| r.display().to_string()),
            if p.looping { " in a loop" } else { "" },
            p.write.as_ref().map_or("nothing".into(), |w| w.display().to_string()),
        );
    }
    Ok(out)
}

struct WorkerHandle {
    id: u16,
    core: Option<u16>,
    counters: Arc<WorkerCounters>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

/// One worker's runtime counters.
#[derive(Debug, Clone)]
pub struct WorkerRuntime {
    /// Worker number.
    pub id: u16,
    /// CPU it is pinned to.
    pub core: Option<u16>,
    /// Per node, in [`NodeId::ALL`] order.
    pub nodes: Vec<(NodeId, NodeStats)>,
    /// Loop timing.
    pub looping: LoopStats,
}

/// The input "interface" of packets vecflow made itself, in `show errors`.
pub const LOCAL: &str = "(local)";

/// One row of `show errors`.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorRow {
    /// Frames dropped.
    pub count: u64,
    /// Node that dropped them.
    pub node: &'static str,
    /// Reason name.
    pub reason: &'static str,
    /// Input interface name.
    pub interface: String,
}

/// A running dataplane.
pub struct Dataplane {
    /// The instruction-set variant its workers' SIMD nodes run.
    isa: crate::runtime::isa::Isa,
    interfaces: Vec<Interface>,
    sflow: Option<SflowRuntime>,
    tables: Arc<Tables>,
    fib: FibWriters,
    workers: Vec<WorkerHandle>,
    stop: Arc<AtomicBool>,
    started: Instant,
    config: Config,
    /// Publishes new table snapshots to the workers.
    publisher: TablePublisher<Tables>,
    /// The neighbor table behind the snapshots' neighbors.
    neighbors: Neighbors,
    /// What workers report (ARP learned, resolutions started).
    events: Receiver<Event>,
    /// Refresh probes for worker 0 to send.
    probes: SyncSender<Probe>,
    /// Link state by interface index.
    links: Arc<Vec<LinkState>>,
    /// AF_PACKET and AF_XDP interfaces: index, host link, rx queues' kernel drop counters.
    hosts: Vec<(u16, HostLink, Vec<KernelDrops>)>,
    /// The XDP programs attached to AF_XDP interfaces (detached when dropped).
    xdp_programs: Vec<crate::drivers::af_xdp::setup::Attached>,
    /// Capture files pcap interfaces write: index, field name, file.
    pcap_sinks: Vec<(u16, String, Arc<PcapSink>)>,
    /// Finished flags of the captures read once; `None` when no capture is read or one loops.
    replays: Option<Vec<Arc<AtomicBool>>>,
    /// Counter values at the last `clear` commands, which `show` commands count from.
    cleared: Cleared,
    /// Adjacency indices a configuration change retired, free for the next one.
    free_adjs: Vec<u32>,
    /// Interface counters at the last two link refreshes, for rates.
    rate_samples: [Option<(Instant, BTreeMap<u16, IfStats>)>; 2],
}

/// An interface's packet and bit rates over the last link-refresh interval.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct IfRates {
    /// Packets per second received.
    pub rx_pps: f64,
    /// Bits per second received.
    pub rx_bps: f64,
    /// Packets per second transmitted.
    pub tx_pps: f64,
    /// Bits per second transmitted.
    pub tx_bps: f64,
}

/// Counter values read by the `clear` commands. The counters themselves never go back (sFlow
/// and Prometheus need them monotonic); what `show` prints is the difference.
#[derive(Default)]
struct Cleared {
    /// By interface index: its counters and its rx-miss count.
    interfaces: BTreeMap<u16, (IfStats, u64)>,
    /// By worker: each node's counters and the loop counters (start = when cleared).
    runtime: Vec<WorkerRuntime>,
    /// By (interface index, reason).
    errors: BTreeMap<(u16, u16), u64>,
    /// Each flow rule's packets when the rules last changed (ids are places in the list).
    flows: Vec<u64>,
}

/// The running sFlow agent.
struct SflowRuntime {
    sources: Vec<(u16, u32, u8)>,
    /// Where changed settings go to the samplers and the agent.
    live: Arc<crate::sflow::LiveSettings>,
    shared: Arc<AgentShared>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<std::io::Result<()>>>,
    agent: IpAddr,
}

/// One data source in `show sflow`.
#[derive(Debug, Clone, Serialize)]
pub struct SflowSourceRow {
    /// Interface name.
    pub interface: String,
    /// Its ifIndex.
    pub if_index: u16,
    /// 1-in-N.
    pub sampling_rate: u32,
    /// Which packets are sampled: rx, tx or both.
    pub direction: &'static str,
    /// Sampler totals over workers.
    pub sampler: SflowStats,
    /// Flow samples encoded into datagrams.
    pub samples_sent: u64,
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

/// Resolves interface indices: explicit ones first, then the lowest free index in name order.
fn assign_indices(config: &Config) -> BTreeMap<String, u16> {
    let mut taken: Vec<bool> = vec![false; MAX_INTERFACES];
    taken[0] = true;
    let mut out = BTreeMap::new();
    for (name, i) in &config.interfaces {
        if let Some(x) = i.index {
            taken[x as usize] = true;
            out.insert(name.clone(), x);
        }
    }
    let subs = config.interfaces.iter().flat_map(|(n, i)| i.sub_interfaces.keys().map(move |s| format!("{n}.{s}")));
    let mut next = 1;
    for name in config.interfaces.keys().cloned().chain(subs) {
        out.entry(name).or_insert_with(|| {
            while taken[next] {
                next += 1;
            }
            taken[next] = true;
            next as u16
        });
    }
    out
}

/// Builds the interface list of a validated configuration: physical interfaces, then their
/// 802.1Q sub-interfaces (named `parent.sub-id`, polled with their parent).
pub fn build_interfaces(config: &Config) -> Vec<Interface> {
    let idx = assign_indices(config);
    let mode = |l2xc: &Option<String>| l2xc.as_ref().map_or(RxMode::L3, |p| RxMode::L2Xconnect { peer: idx[p] });
    let mut rr = 0u16;
    let mut out = Vec::new();
    for (name, i) in &config.interfaces {
        let index = idx[name];
        let placed = i.rx_placement.as_ref().and_then(|p| p.worker.or(p.queues.first().copied()));
        let rx_worker = placed.unwrap_or_else(|| {
            rr += 1;
            (rr - 1) % config.workers.count
        });
        let parent = Interface {
            index,
            name: name.clone(),
            admin_up: i.state == AdminState::Up,
            mac: i.mac.map_or(MacAddr([0x02, 0xfe, 0, 0, (index >> 8) as u8, index as u8]), |m| m.0),
            mtu: i.mtu(),
            mode: mode(&i.l2xc),
            driver: match i.driver {
                Driver::Generator => DriverKind::Generator,
                Driver::AfPacket => DriverKind::AfPacket,
                Driver::Pcap => DriverKind::Pcap,
                Driver::AfXdp => DriverKind::AfXdp,
            },
            rx_worker,
            rx_mode: i.rx_mode,
            mpls: i.mpls,
            addresses: i.addresses.clone(),
            parent: None,
            vlan: None,
        };
        for (sub, s) in &i.sub_interfaces {
            let sub_name = format!("{name}.{sub}");
            out.push(Interface {
                index: idx[&sub_name],
                name: sub_name,
                admin_up: s.state == AdminState::Up,
                mtu: s.mtu.unwrap_or(i.mtu()),
                mode: mode(&s.l2xc),
                mpls: s.mpls,
                addresses: s.addresses.clone(),
                parent: Some(index),
                vlan: Some(s.encapsulation.dot1q),
                ..parent.clone()
            });
        }
        out.push(parent);
    }
    for i in &mut out {
        add_link_local(i);
    }
    out.sort_by_key(|i| i.index);
    out
}

/// Gives an L3 interface with IPv6 addresses but no link-local one the link-local address of
/// its MAC (fe80::/64 with the modified EUI-64 identifier, RFC 4862 §5.3), as Linux does.
fn add_link_local(i: &mut Interface) {
    let v6 = |a: &crate::config::IpPrefix| a.addr.is_ipv6();
    if i.mode == RxMode::L3
        && i.addresses.iter().any(v6)
        && !i.addresses.iter().any(|a| crate::config::is_link_local(a.addr))
    {
        let addr = wire::icmpv6::link_local_from_mac(i.mac);
        i.addresses.push(crate::config::IpPrefix { addr: addr.into(), len: 64 });
    }
}

/// What workers forward with, built from a validated configuration.
pub struct Forwarding {
    /// The interfaces, by index.
    pub interfaces: Vec<Interface>,
    /// Interface facts, adjacencies and neighbors.
    pub tables: Arc<Tables>,
    /// The FIBs with the interface addresses and routes installed.
    pub fib: FibWriters,
}

/// Builds interfaces, tables and the FIB of a validated `config`; the FIB's readers announce
/// quiescent states through `qsbr`.
pub fn build_forwarding(config: &Config, qsbr: Arc<Qsbr>) -> Result<Forwarding, StartError> {
    let interfaces = build_interfaces(config);
    let (l3, inserts) = crate::l3::build(config, &interfaces);
    let tables = Arc::new(Tables::new(&interfaces, l3));
    let mut fib = FibWriters::new(&Fibs::new(config.fib.tbl8_groups, config.fib.ip6_groups)?, qsbr);
    fib.apply(&inserts)?;
    Ok(Forwarding { interfaces, tables, fib })
}

impl Dataplane {
    /// Validates `config`, starts the workers and returns the running dataplane.
    pub fn start(config: &Config) -> Result<Self, StartError> {
        config.validate()?;
        crate::runtime::isa::Isa::from_env().map_err(StartError::Isa)?;
        let isa = crate::runtime::isa::chosen();
        let (xdp_hosts, packet_hosts): (BTreeMap<_, _>, BTreeMap<_, _>) =
            read_host_links(config)?.into_iter().partition(|(name, _)| config.interfaces[name].driver == Driver::AfXdp);
        crate::drivers::af_xdp::setup::preflight(config, &xdp_hosts)?;
        let config = &with_kernel_mtus(config, packet_hosts.iter().chain(&xdp_hosts));
        config.validate()?;
        // The sFlow agent, when there is one, reads the FIB too (reader `workers.count`).
        let qsbr = Arc::new(Qsbr::new(config.workers.count as usize + 1));
        let Forwarding { interfaces, tables, fib } = build_forwarding(config, qsbr.clone())?;
        let HostPorts { links: mut host_links, rx: mut host_rx, tx: mut host_tx } =
            open_host_ports(config, &interfaces, packet_hosts)?;
        let XdpPorts { workers: xdp_workers, attached: xdp_programs, links: xdp_links } = if xdp_hosts.is_empty() {
            XdpPorts::default()
        } else {
            crate::drivers::af_xdp::setup::open(config, &interfaces, xdp_hosts)?
        };
        host_links.extend(xdp_links);
        let mut xdp_workers = xdp_workers.into_iter();
        let hz = tsc::hz();
        let mut captures = open_captures(config, &interfaces, hz)?;
        let links: Arc<Vec<LinkState>> = Arc::new((0..MAX_INTERFACES).map(|_| LinkState::default()).collect());
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
            xdp_programs,
            replays: (!captures.looping && !captures.replays.is_empty()).then_some(captures.replays),
            cleared: Cleared::default(),
            free_adjs: Vec::new(),
            rate_samples: [None, None],
            pcap_sinks: captures.sinks,
        };
        dp.refresh_links();
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
                tables: tables.clone(),
                updates: dp.publisher.reader(),
                punt: Punt::new(Some(events_tx.clone()), probes_rx.take(), hz),
                fib: dp.fib.fibs(),
                qsbr: qsbr.register(usize::from(id)),
                counters: counters.clone(),
                ports,
                tx: std::mem::take(&mut host_tx[usize::from(id)]),
                pool,
                xsk,
                pcap_out,
                stop: dp.stop.clone(),
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
                ),
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
            worker::pin_current_thread(core)?;
        }
        dp.started = Instant::now();
        Ok(dp)
    }

    /// Stops every worker and waits for it, then lets the sFlow agent send what the workers
    /// published and stops it; returns the first error.
    pub fn stop(&mut self) -> std::io::Result<()> {
        self.stop.store(true, Relaxed);
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

    /// sFlow: the agent address, its totals and each data source's counters; `None` when
    /// sFlow is off.
    pub fn sflow(&self) -> Option<(IpAddr, AgentStats, Vec<SflowSourceRow>)> {
        let sf = self.sflow.as_ref()?;
        let mut totals = AgentStats::default();
        sf.shared.counters.add_to(&mut totals);
        let rows = sf
            .sources
            .iter()
            .map(|&(port, rate, stages)| {
                let mut sampler = SflowStats::default();
                for w in &self.workers {
                    w.counters.sflow(port).add_to(&mut sampler);
                }
                SflowSourceRow {
                    interface: self
                        .interfaces
                        .iter()
                        .find(|i| i.index == port)
                        .map_or(String::new(), |i| i.name.clone()),
                    if_index: port,
                    sampling_rate: rate,
                    direction: match stages {
                        crate::sflow::RX => "rx",
                        crate::sflow::TX => "tx",
                        _ => "both",
                    },
                    sampler,
                    samples_sent: sf.shared.sent_by_port[port as usize].get(),
                }
            })
            .collect();
        Some((sf.agent, totals, rows))
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

    /// What the kernel said of the host interface behind `index` (`af-packet` interfaces).
    pub fn host_link(&self, index: u16) -> Option<&HostLink> {
        self.hosts.iter().find(|(i, _, _)| *i == index).map(|(_, link, _)| link)
    }

    /// Seconds since start.
    pub fn uptime(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
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

    /// Applies a batch of route changes to the running FIB (inserts or replaces with
    /// `Some(adjacency)`, deletes with `None`), in place and without stopping the workers.
    pub fn apply_routes(&mut self, changes: &[crate::l3::FibInsert]) -> Result<(), FibError> {
        self.fib.apply(changes)
    }

    /// Re-reads what the kernel says of each AF_PACKET interface: link state and speed, and
    /// the frames its rx rings dropped since the last call (added to `rx-miss`). Call it
    /// about once a second.
    pub fn refresh_links(&mut self) {
        let counts = self.interfaces.iter().map(|i| (i.index, self.interface_stats(i.index))).collect();
        self.rate_samples = [self.rate_samples[1].take(), Some((Instant::now(), counts))];
        for (index, link, stats) in &mut self.hosts {
            let was_up = link.oper_up;
            link.refresh();
            if link.oper_up != was_up {
                tracing::info!("host interface {}: link {}", link.name, if link.oper_up { "up" } else { "down" });
            }
            let state = &self.links[usize::from(*index)];
            state.oper_up.set(u64::from(link.oper_up));
            state.speed.set(link.speed);
            for drops in stats.iter_mut() {
                match drops.take() {
                    Ok(n) => state.rx_miss.set(state.rx_miss.get() + n),
                    Err(e) => tracing::warn!("host interface {}: {e}", link.name),
                }
            }
        }
    }

    /// The link state of interface `index` (a sub-interface has its parent's link).
    pub fn link(&self, index: u16) -> &LinkState {
        let port = self.tables.get(index).port;
        &self.links[usize::from(port) % MAX_INTERFACES]
    }

    /// Looks after the neighbor table: takes in what workers learned, ages entries, has
    /// stale ones probed, and publishes a new table snapshot when what workers forward with
    /// changed. Call it often (every 10 ms or so): workers' events wait in a bounded queue.
    pub fn service(&mut self) {
        let now = Instant::now();
        let mut changed = false;
        while let Ok(event) = self.events.try_recv() {
            changed |= self.neighbors.on_event(event, now);
        }
        let (aged, probes) = self.neighbors.age(now);
        for p in probes {
            if self.probes.try_send(p).is_err() {
                tracing::debug!("probe queue full: {p:?} not sent");
            }
        }
        if changed || aged {
            let l3 = self.tables.l3.with_neighbors(&self.interfaces, self.neighbors.macs(), self.neighbors.failed());
            self.publisher.publish(Tables { l3, ..(*self.tables).clone() });
            self.tables = self.publisher.current();
        }
    }

    /// The neighbor table (`show ip neighbors`).
    pub fn neighbors(&self) -> Vec<NeighborRow> {
        self.neighbors.rows(Instant::now())
    }

    /// What workers made themselves (ARP, ICMP) and reported, summed.
    pub fn punt_stats(&self) -> PuntStats {
        let mut s = PuntStats::default();
        for w in &self.workers {
            w.counters.punt.add_to(&mut s);
        }
        s
    }

    /// Counters of interface `index`, summed over workers.
    pub fn interface_stats(&self, index: u16) -> IfStats {
        let mut s = IfStats::default();
        for w in &self.workers {
            w.counters.interface(index).add_to(&mut s);
        }
        s
    }

    /// Each worker's per-node counters and loop timing.
    pub fn runtime(&self) -> Vec<WorkerRuntime> {
        self.workers
            .iter()
            .map(|w| {
                let nodes = NodeId::ALL
                    .iter()
                    .map(|&n| {
                        let mut s = NodeStats::default();
                        w.counters.nodes[n as usize].add_to(&mut s);
                        (n, s)
                    })
                    .collect();
                let mut looping = LoopStats::default();
                w.counters.looping.add_to(&mut looping);
                WorkerRuntime { id: w.id, core: w.core, nodes, looping }
            })
            .collect()
    }

    /// Non-zero drop counters per (reason, input interface), summed over workers.
    pub fn errors(&self) -> Vec<ErrorRow> {
        let mut rows = Vec::new();
        for (index, name) in self.drop_sources() {
            for &r in DropReason::ALL {
                let count: u64 = self.workers.iter().map(|w| w.counters.error(index, r).get()).sum();
                if count > 0 {
                    rows.push(ErrorRow { count, node: r.node().name(), reason: r.name(), interface: name.clone() });
                }
            }
        }
        rows
    }

    /// Where drops are counted: each interface by index and name, and index 0, named
    /// [`LOCAL`], for packets vecflow made itself (ARP requests, ICMP errors, echo replies).
    fn drop_sources(&self) -> impl Iterator<Item = (u16, String)> + '_ {
        std::iter::once((0, LOCAL.to_string())).chain(self.interfaces.iter().map(|i| (i.index, i.name.clone())))
    }

    /// Changes the running dataplane to `new`, all or nothing: the whole configuration is
    /// validated first, and a change only a restart can make refuses it all. Interface facts,
    /// adjacencies, labels and neighbors change through one table snapshot swap, routes
    /// through the FIB's batch; a worker never sees a FIB entry naming an adjacency its
    /// snapshot does not have, so interfaces the change does not touch lose no packets.
    pub fn apply(&mut self, new: &Config) -> Result<(), ApplyError> {
        let new = self.admissible(new)?;
        let interfaces = build_interfaces(&new);
        let (l3, inserts) = crate::l3::build(&new, &interfaces);
        let mut free = self.free_adjs.clone();
        let crate::l3::Renumbered { l3, inserts, retired } = self.tables.l3.renumbered(l3, inserts, &mut free);
        let now = Instant::now();
        let index: BTreeMap<&str, u16> = interfaces.iter().map(|i| (i.name.as_str(), i.index)).collect();
        let statics = |c: &Config| -> Vec<(u16, IpAddr, MacAddr)> {
            c.neighbors.iter().map(|n| (index[n.interface.as_str()], n.address, n.mac.0)).collect()
        };
        let old_statics = statics(&self.config);
        self.neighbors.set_statics(statics(&new), now);
        let l3 = l3.with_neighbors(&interfaces, self.neighbors.macs(), self.neighbors.failed());
        // The FIB's content is the configuration's: the difference is what to change.
        let key = |&(a, l, adj): &crate::l3::FibInsert| {
            let masked = match a {
                IpAddr::V4(a) => IpAddr::V4(crate::l3::fib::Route::new(a, l, 0).prefix),
                IpAddr::V6(a) => IpAddr::V6(crate::l3::fib::Route::new(a, l, 0).prefix),
            };
            ((masked, l), adj.unwrap_or(0))
        };
        type Routes = BTreeMap<(IpAddr, u8), u32>;
        let want: Routes = inserts.iter().map(key).collect();
        let have: Routes = self.fib.routes();
        let diff = |from: &Routes, to: &Routes| -> Vec<crate::l3::FibInsert> {
            let gone = from.keys().filter(|k| !to.contains_key(k)).map(|&(p, l)| (p, l, None));
            let set = to.iter().filter(|(k, a)| from.get(k) != Some(a)).map(|(&(p, l), &a)| (p, l, Some(a)));
            gone.chain(set).collect()
        };
        let old_tables = self.tables.clone();
        self.publisher.publish(Tables::new(&interfaces, l3));
        self.tables = self.publisher.current();
        if let Err(e) = self.fib.apply(&diff(&have, &want)) {
            let now_have = self.fib.routes();
            if let Err(undo) = self.fib.apply(&diff(&now_have, &have)) {
                tracing::error!("putting the routes back after a refused change failed too: {undo}");
            }
            self.neighbors.set_statics(old_statics, now);
            self.publisher.publish((*old_tables).clone());
            self.tables = self.publisher.current();
            return Err(e.into());
        }
        // No FIB entry names a retired adjacency any more; once no worker holds a lookup
        // made before, they become drops, free for the next change.
        self.fib.synchronize();
        if !retired.is_empty() {
            let mut t = (*self.tables).clone();
            for &r in &retired {
                t.l3.adjs[r as usize] = crate::l3::Adjacency::Drop;
            }
            self.publisher.publish(t);
            self.tables = self.publisher.current();
            free.extend(retired);
        }
        self.free_adjs = free;
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
        Ok(())
    }

    /// Each flow rule's packets since start, by id, summed over workers.
    fn flow_hits_total(&self) -> Vec<u64> {
        (0..crate::flows::MAX_FLOWS).map(|r| self.workers.iter().map(|w| w.counters.flow_hits[r].get()).sum()).collect()
    }

    /// The packets each flow rule (by id) matched since the rules last changed.
    pub fn flow_hits(&self) -> Vec<u64> {
        let base = &self.cleared.flows;
        let total = self.flow_hits_total();
        (0..self.config.flows.len()).map(|r| total[r] - base.get(r).copied().unwrap_or(0)).collect()
    }

    /// The instruction-set variant the workers' SIMD nodes run.
    pub fn isa(&self) -> crate::runtime::isa::Isa {
        self.isa
    }

    /// What the workers' megaflow caches did, summed.
    pub fn flow_cache_stats(&self) -> crate::flows::FlowCacheStats {
        let mut s = crate::flows::FlowCacheStats::default();
        for w in &self.workers {
            w.counters.flow_cache.add_to(&mut s);
        }
        s
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
        Ok(crate::control::change::plan(&self.config, &self.admissible(new)?))
    }

    /// Interface `index`'s rates between the last two link refreshes (`vecflow run` does one
    /// a second), or `None` before there were two.
    pub fn rates(&self, index: u16) -> Option<IfRates> {
        let [Some((t0, a)), Some((t1, b))] = &self.rate_samples else { return None };
        let dt = t1.duration_since(*t0).as_secs_f64().max(1e-3);
        let (a, b) = (a.get(&index)?, b.get(&index)?);
        let per_s = |x: u64, y: u64| y.wrapping_sub(x) as f64 / dt;
        Some(IfRates {
            rx_pps: per_s(a.rx_packets, b.rx_packets),
            rx_bps: per_s(a.rx_octets, b.rx_octets) * 8.0,
            tx_pps: per_s(a.tx_packets, b.tx_packets),
            tx_bps: per_s(a.tx_octets, b.tx_octets) * 8.0,
        })
    }

    /// `clear interfaces`: what [`Dataplane::interface_stats_shown`] and
    /// [`Dataplane::rx_miss_shown`] count from now on.
    pub fn clear_interfaces(&mut self) {
        self.cleared.interfaces = self
            .interfaces
            .iter()
            .map(|i| (i.index, (self.interface_stats(i.index), self.links[usize::from(i.index)].rx_miss.get())))
            .collect();
    }

    /// Interface `index`'s counters since the last `clear interfaces`.
    pub fn interface_stats_shown(&self, index: u16) -> IfStats {
        let base = self.cleared.interfaces.get(&index).map(|b| b.0).unwrap_or_default();
        self.interface_stats(index).since(base)
    }

    /// Frames the kernel dropped for want of ring room on interface `index` since the last
    /// `clear interfaces`.
    pub fn rx_miss_shown(&self, index: u16) -> u64 {
        let base = self.cleared.interfaces.get(&index).map_or(0, |b| b.1);
        self.links[usize::from(index)].rx_miss.get().wrapping_sub(base)
    }

    /// `clear runtime`: what [`Dataplane::runtime_shown`] counts from now on.
    pub fn clear_runtime(&mut self) {
        self.cleared.runtime = self.runtime();
        let now = tsc::now();
        for w in &mut self.cleared.runtime {
            w.looping.start_tsc = now;
        }
    }

    /// Per worker node counters since the last `clear runtime` (the loop's start time then
    /// being that clear).
    pub fn runtime_shown(&self) -> Vec<WorkerRuntime> {
        let mut now = self.runtime();
        for (w, base) in now.iter_mut().zip(&self.cleared.runtime) {
            for ((_, s), (_, b)) in w.nodes.iter_mut().zip(&base.nodes) {
                *s = s.since(*b);
            }
            w.looping.loops = w.looping.loops.wrapping_sub(base.looping.loops);
            w.looping.start_tsc = base.looping.start_tsc;
        }
        now
    }

    /// `clear errors`: what [`Dataplane::errors_shown`] counts from now on.
    pub fn clear_errors(&mut self) {
        self.cleared.errors = self
            .drop_sources()
            .flat_map(|(i, _)| self.drops_of(i).into_iter().enumerate().map(move |(r, n)| ((i, r as u16), n)))
            .collect();
    }

    /// Drops since the last `clear errors`, as [`Dataplane::errors`] lists them.
    pub fn errors_shown(&self) -> Vec<ErrorRow> {
        let mut rows = self.errors();
        rows.retain_mut(|row| {
            let i = self.drop_sources().find(|(_, name)| *name == row.interface).map_or(0, |(i, _)| i);
            let r = DropReason::ALL.iter().find(|r| r.name() == row.reason && r.node().name() == row.node);
            let base = r.and_then(|r| self.cleared.errors.get(&(i, *r as u16))).copied().unwrap_or(0);
            row.count = row.count.wrapping_sub(base);
            row.count > 0
        });
        rows
    }

    /// `trace add`: traces the next `count` packets each worker receives through `input`
    /// (an rx input node), replacing any armed request; the traces already finished stay.
    pub fn trace_add(&self, input: NodeId, count: u32) {
        for w in &self.workers {
            w.counters.trace.arm(Some(crate::runtime::trace::Request { input, count }));
        }
    }

    /// `clear trace`: disarms the tracer and forgets the finished traces.
    pub fn trace_clear(&self) {
        for w in &self.workers {
            w.counters.trace.arm(None);
            w.counters.trace.clear();
        }
    }

    /// The finished traces of every worker, oldest first.
    pub fn traces(&self) -> Vec<crate::runtime::trace::PacketTrace> {
        let mut all: Vec<_> = self.workers.iter().flat_map(|w| w.counters.trace.finished()).collect();
        all.sort_by_key(|p| p.entries.first().map_or(0, |e| e.tsc));
        all
    }

    /// Drops of input interface `index` by reason, summed over workers.
    pub fn drops_of(&self, index: u16) -> [u64; N_REASONS] {
        let mut out = [0; N_REASONS];
        for w in &self.workers {
            for &r in DropReason::ALL {
                out[r as usize] += w.counters.error(index, r).get();
            }
        }
        out
    }

    /// Generator and sink totals, summed over workers.
    pub fn generator_stats(&self) -> GenStats {
        let mut s = GenStats::default();
        for w in &self.workers {
            w.counters.generator.add_to(&mut s);
        }
        s
    }
}

impl Drop for Dataplane {
    fn drop(&mut self) {
        // A worker error at drop time has nowhere to go; `stop` reports it to callers who ask.
        let _ = self.stop();
    }
}
