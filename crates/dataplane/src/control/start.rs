//! Starting a dataplane, in the order each part needs the one before: the ports (host links,
//! AF_XDP sockets, captures), the tables, linux-cp's TAPs, the sFlow rings, the workers, and
//! last the sFlow agent that reads what they sample.

use super::counters::{Cleared, RateSamples};
use super::engine::{Dataplane, StartError, WorkerHandle};
use super::neighbors::{NeighborState, WorkerEnds};
use super::ports::{Captures, HostPorts, Ports, open_captures, open_host_ports, read_host_links, with_kernel_mtus};
use super::routes::{Forwarding, Routing, build_forwarding};
use super::sflow::SflowStart;
use crate::config::{Config, Driver};
use crate::datapath::WorkerCounters;
use crate::datapath::worker::{self, WorkerSetup};
use crate::drivers::af_packet::{RxQueue, TxSockets};
use crate::drivers::af_xdp::setup::{WorkerXdp, XdpPorts};
use crate::drivers::generator::{GeneratorPort, Stream};
use crate::drivers::host::HostLink;
use crate::drivers::pcap::PcapSinks;
use crate::drivers::{RxPort, WorkerPorts};
use crate::interface::LinkState;
use crate::l3::Routes;
use crate::lcp::{LcpWorker, LinuxCp};
use crate::neighbor::Neighbors;
use crate::neighbor::punt::Punt;
use crate::runtime::qsbr::Qsbr;
use crate::runtime::snapshot::TablePublisher;
use crate::runtime::tsc;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// What each worker receives of the ports a start opened, taken worker by worker.
struct WorkerPortEnds {
    /// AF_PACKET rx queues, by worker.
    host_rx: Vec<Vec<RxQueue>>,
    /// AF_PACKET send sockets, by worker.
    host_tx: Vec<TxSockets>,
    /// AF_XDP pools, sockets and rx queues, in worker order.
    xdp: std::vec::IntoIter<WorkerXdp>,
    /// Capture replays, by worker.
    captures: Vec<Vec<crate::drivers::pcap::PcapPort>>,
}

/// Opens every port `config` names over `interfaces`: the host links `packet_hosts` (AF_PACKET)
/// and `xdp_hosts` (AF_XDP, one buffer pool per worker registered as its UMEM), and the
/// captures. Every problem stops the start before any worker runs.
fn open_ports(
    config: &Config,
    interfaces: &[crate::interface::Interface],
    packet_hosts: BTreeMap<String, HostLink>,
    xdp_hosts: BTreeMap<String, HostLink>,
) -> Result<(Ports, WorkerPortEnds), StartError> {
    let HostPorts { links: mut hosts, rx: host_rx, tx: host_tx } = open_host_ports(config, interfaces, packet_hosts)?;
    let XdpPorts { workers: xdp, attached: xdp_programs, links: xdp_links } = if xdp_hosts.is_empty() {
        XdpPorts::default()
    } else {
        let pools = (0..config.workers.count)
            .map(|_| {
                crate::runtime::buffer::BufferPool::with_data_size(config.workers.buffers, config.buffers.data_size)
            })
            .collect::<std::io::Result<Vec<_>>>()?;
        crate::drivers::af_xdp::setup::open(&config.xdp(), interfaces, xdp_hosts, pools)?
    };
    hosts.extend(xdp_links);
    let Captures { rx: captures, sinks, replays, looping } = open_captures(config, interfaces, tsc::hz())?;
    let links: Arc<Vec<_>> = Arc::new((0..crate::net::MAX_INTERFACES).map(|_| LinkState::default()).collect());
    for i in interfaces {
        links[usize::from(i.index)].oper_up.set(u64::from(i.admin_up));
        links[usize::from(i.index)].admin_up.set(u64::from(i.admin_up));
    }
    let ports = Ports {
        links,
        hosts,
        busy_poll: Default::default(),
        xdp_programs,
        pcap_sinks: sinks,
        replays: (!looping && !replays.is_empty()).then_some(replays),
    };
    Ok((ports, WorkerPortEnds { host_rx, host_tx, xdp: xdp.into_iter(), captures }))
}

impl Dataplane {
    /// Validates `config`, starts the workers and returns the running dataplane.
    pub fn start(config: &Config) -> Result<Self, StartError> {
        config.validate()?;
        crate::runtime::isa::Isa::from_env().map_err(StartError::Isa)?;
        let (xdp_hosts, packet_hosts): (BTreeMap<_, _>, BTreeMap<_, _>) =
            read_host_links(config)?.into_iter().partition(|(name, _)| config.interfaces[name].driver == Driver::AfXdp);
        crate::drivers::af_xdp::setup::preflight(&config.xdp(), &xdp_hosts)?;
        let config = &with_kernel_mtus(config, packet_hosts.iter().chain(&xdp_hosts));
        config.validate()?;
        log_buffers(config);
        let stop = Arc::new(AtomicBool::new(false));
        // linux-cp's listener first: its dump of the kernel's table goes on while the rest
        // starts (at a full table it takes longer than all the rest).
        let vrf_ids = crate::l3::vrf::VrfIds::default().assign(&config.vrfs);
        let vrfs: Vec<(u16, &str)> = vrf_ids.iter().map(|(name, index, _)| (index, name)).collect();
        let lcp = config.linux_cp.as_ref().map(|c| LinuxCp::open(c, &vrfs, stop.clone()));
        let lcp = lcp.transpose().map_err(StartError::LinuxCp)?;
        // The sFlow agent, when there is one, reads the FIB too (reader `workers.count`).
        let qsbr = Arc::new(Qsbr::new(usize::from(config.workers.count) + 1));
        let Forwarding { interfaces, tables, fib, rib, label_refs, vrfs } = build_forwarding(config, qsbr.clone())?;
        let (ports, mut ends) = open_ports(config, &interfaces, packet_hosts, xdp_hosts)?;
        let (neighbors, neighbor_ends) = NeighborState::new(Neighbors::new(tables.l3.all_neighbors(), Instant::now()));
        let mut dp = Dataplane {
            isa: crate::runtime::isa::chosen(),
            config: config.clone(),
            started: Instant::now(),
            interfaces,
            publisher: TablePublisher::new(tables.clone(), qsbr.clone()),
            tables,
            workers: Vec::new(),
            stop,
            ports,
            routing: Routing { rib, fib, label_refs, host_routes: Routes::new(), kernel: Default::default(), vrfs },
            neighbors,
            sflow: None,
            lcp,
            cleared: Cleared::default(),
            rate_samples: RateSamples::default(),
        };
        dp.refresh_links();
        dp.republish(); // with the links that are down at start marked
        let lcp_ends = dp.start_linux_cp()?;
        dp.assert_tap_addresses();
        dp.sync_host_routes();
        let counters: Vec<_> = (0..config.workers.count).map(|_| Arc::new(WorkerCounters::new())).collect();
        let mut sflow = SflowStart::new(config, &dp.interfaces, counters.clone());
        dp.spawn_workers(&mut ends, neighbor_ends, lcp_ends, &mut sflow, counters, &qsbr)?;
        dp.start_agent(sflow, &qsbr)?;
        if let Some(core) = config.workers.main_core {
            crate::runtime::cpu::pin_current_thread(core)?;
        }
        dp.started = Instant::now();
        Ok(dp)
    }

    /// Opens linux-cp's TAPs and starts its control thread, when the configuration has
    /// `linux-cp` (its listener runs already); returns each worker's end of them, in worker
    /// order (none when linux-cp is off).
    fn start_linux_cp(&mut self) -> Result<Vec<LcpWorker>, StartError> {
        let Some(config) = &self.config.linux_cp else { return Ok(Vec::new()) };
        let names = self.config.linux_names()?;
        let Some(mut lcp) = self.lcp.take() else { return Ok(Vec::new()) };
        let up = |i| self.link(i).oper_up.get() != 0;
        let started = lcp
            .open_taps(&names, &self.interfaces, up)
            .and_then(|()| lcp.start_io(&self.interfaces, self.config.workers.count, config.punt_rate));
        self.lcp = Some(lcp);
        started.map_err(StartError::LinuxCp)
    }

    /// Spawns the workers in order, each with its ports, its sampler and its ends of the
    /// channels; stops those already running when one fails.
    fn spawn_workers(
        &mut self,
        ends: &mut WorkerPortEnds,
        neighbor_ends: WorkerEnds,
        lcp_ends: Vec<LcpWorker>,
        sflow: &mut SflowStart,
        counters: Vec<Arc<WorkerCounters>>,
        qsbr: &Arc<Qsbr>,
    ) -> Result<(), StartError> {
        let config = self.config.clone();
        let hz = tsc::hz();
        let mut probes = Some(neighbor_ends.probes);
        let mut lcp_ends = lcp_ends.into_iter();
        for (id, counters) in (0..config.workers.count).zip(counters) {
            let w = usize::from(id);
            let mut ports: Vec<RxPort> = self
                .interfaces
                .iter()
                .filter(|i| i.rx_worker == id)
                .filter_map(|i| {
                    let g = config.interfaces.get(&i.name)?.generator.as_ref()?;
                    let streams = g.streams.iter().map(|s| Stream::new(s, i.mac, hz)).collect();
                    Some(RxPort::Generator(GeneratorPort::new(i.index, streams)))
                })
                .collect();
            ports.extend(std::mem::take(&mut ends.host_rx[w]).into_iter().map(RxPort::AfPacket));
            let xdp = ends.xdp.next();
            ports.extend(xdp.iter().flat_map(|x| x.rx.iter().copied().map(RxPort::AfXdp)));
            let (pool, xsk) = xdp.map(|x| (Some(x.pool), x.sockets)).unwrap_or_default();
            ports.extend(std::mem::take(&mut ends.captures[w]).into_iter().map(|p| RxPort::Pcap(Box::new(p))));
            let mut pcap_out = PcapSinks::default();
            for out in &self.ports.pcap_sinks {
                pcap_out.add(out.index, out.sink.clone());
            }
            let core = config.workers.cores.get(w).copied();
            let setup = WorkerSetup {
                id,
                core,
                buffers: config.workers.buffers,
                data_size: config.buffers.data_size,
                tables: self.tables.clone(),
                updates: self.publisher.reader(),
                punt: Punt::new(Some(neighbor_ends.events.clone()), probes.take(), hz),
                fib: self.routing.fib.fibs(),
                qsbr: qsbr.register(w),
                counters: counters.clone(),
                ports,
                pool,
                drivers: WorkerPorts { xsk, tx: std::mem::take(&mut ends.host_tx[w]), pcap_out },
                stop: self.stop.clone(),
                lcp: lcp_ends.next(),
                sflow: sflow.sampler(&config, id),
            };
            match worker::spawn(setup) {
                Ok(t) => self.workers.push(WorkerHandle { id, core, counters, thread: Some(t) }),
                Err(e) => {
                    self.stop()?;
                    return Err(e.into());
                }
            }
        }
        Ok(())
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
