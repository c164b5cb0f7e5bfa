//! Opening the ports a configuration names: host links (AF_PACKET and AF_XDP), their kernel
//! MTUs, and capture files.

use super::engine::StartError;
use crate::drivers::PortError;

use crate::config::{Config, Driver};
use crate::drivers::KernelDrops;
use crate::drivers::af_packet::{RxQueue, TxSockets};
use crate::drivers::af_xdp::busy_poll::BusyPoll;
use crate::drivers::af_xdp::setup::Attached;
use crate::drivers::host::{HostLink, HostPort};
use crate::drivers::pcap::{PcapPort, PcapSink};
use crate::interface::{Interface, LinkState};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// The ports of a running dataplane as the main thread keeps them.
pub(super) struct Ports {
    /// Link state by interface index (workers and the sFlow agent read it).
    pub(super) links: Arc<Vec<LinkState>>,
    /// The `af-packet` and `af-xdp` interfaces.
    pub(super) hosts: Vec<HostPort>,
    /// Busy polling of AF_XDP interfaces in that rx mode (NAPI settings put back when dropped).
    pub(super) busy_poll: BusyPoll,
    /// The XDP programs attached to AF_XDP interfaces (detached when dropped).
    pub(super) xdp_programs: Vec<Attached>,
    /// The capture files pcap interfaces write.
    pub(super) pcap_sinks: Vec<PcapOutput>,
    /// Finished flags of the captures read once; `None` when no capture is read or one loops.
    pub(super) replays: Option<Vec<Arc<AtomicBool>>>,
}

impl Ports {
    /// The host port behind interface `index`, if it has one.
    pub(super) fn host(&self, index: u16) -> Option<&HostPort> {
        self.hosts.iter().find(|h| h.index == index)
    }
}

/// A capture file a pcap interface writes.
pub(super) struct PcapOutput {
    /// The interface's index.
    pub(super) index: u16,
    /// The field that names the file (`interfaces.NAME.pcap.write`), for errors.
    pub(super) field: String,
    /// The file.
    pub(super) sink: Arc<PcapSink>,
}

/// The AF_PACKET interfaces of a starting dataplane: what the kernel says of each host
/// interface, opened before any worker starts so that every problem stops the start-up.
pub(super) struct HostPorts {
    /// The host interfaces, with their rx queues' kernel drop counters.
    pub(super) links: Vec<HostPort>,
    /// Rx queues by worker.
    pub(super) rx: Vec<Vec<RxQueue>>,
    /// Send sockets by worker.
    pub(super) tx: Vec<TxSockets>,
}

/// Reads the host interface of every `af-packet` and `af-xdp` interface, by interface name.
pub(super) fn read_host_links(config: &Config) -> Result<BTreeMap<String, HostLink>, StartError> {
    let mut out = BTreeMap::new();
    for (name, i) in &config.interfaces {
        if let (Driver::AfPacket | Driver::AfXdp, Some(host)) = (i.driver, &i.host_interface) {
            let link = HostLink::read(host).map_err(|e| PortError::host(name, host, e))?;
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
pub(super) fn with_kernel_mtus<'a>(
    config: &Config,
    hosts: impl IntoIterator<Item = (&'a String, &'a HostLink)>,
) -> Config {
    let mut c = config.clone();
    for (name, link) in hosts {
        let Some(i) = c.interfaces.get_mut(name) else { continue };
        let kernel = link.mtu.min(u32::from(config.buffers.max_mtu())) as u16;
        match i.mtu {
            None => {
                if link.mtu > u32::from(kernel) {
                    tracing::warn!(
                        "interfaces.{name}: host interface {} has MTU {}; vecflow's buffers hold an MTU of {kernel} \
                         (buffers.data-size {}: raise it, up to {}, for larger frames)",
                        link.name,
                        link.mtu,
                        config.buffers.data_size,
                        crate::runtime::buffer::MAX_DATA_SIZE
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
pub(super) fn open_host_ports(
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
            let queue = RxQueue::open(i.index, link.ifindex, &cfg, fanout)
                .map_err(|e| PortError::host(&name, &link.name, e))?;
            stats.push(KernelDrops::AfPacket(queue.stats_handle().map_err(|e| PortError::host(&name, &link.name, e))?));
            ports.rx[usize::from(config.interfaces[&name].queue_worker(q, i.rx_worker, workers as u16))].push(queue);
        }
        for tx in &mut ports.tx {
            tx.open(i.index, link.ifindex, usize::from(config.buffers.data_size))
                .map_err(|e| PortError::host(&name, &link.name, e))?;
        }
        tracing::info!(
            "interface {name}: af-packet on {} (ifindex {}), {} rx queue(s), MTU {}, link {}",
            link.name,
            link.ifindex,
            cfg.rx_queues,
            i.mtu,
            if link.oper_up { "up" } else { "down" }
        );
        ports.links.push(HostPort { index: i.index, link, queues: stats });
    }
    Ok(ports)
}

/// The pcap interfaces of a starting dataplane: captures opened for reading and files created
/// for writing, before any worker starts so that every problem stops the start-up.
pub(super) struct Captures {
    /// Replays by worker.
    pub(super) rx: Vec<Vec<PcapPort>>,
    /// The files the interfaces write.
    pub(super) sinks: Vec<PcapOutput>,
    /// The finished flags of the reads that are not looping.
    pub(super) replays: Vec<Arc<AtomicBool>>,
    /// Some read loops (so the captures never all end).
    pub(super) looping: bool,
}

/// Opens the captures every `pcap` interface reads and creates the files they write.
pub(super) fn open_captures(config: &Config, interfaces: &[Interface], tsc_hz: u64) -> Result<Captures, StartError> {
    let mut out = Captures {
        rx: (0..config.workers.count).map(|_| Vec::new()).collect(),
        sinks: Vec::new(),
        replays: Vec::new(),
        looping: false,
    };
    for i in interfaces {
        let Some(p) = config.interfaces.get(&i.name).and_then(|c| c.pcap.as_ref()) else { continue };
        let error = |field: &str, path: &std::path::Path, e: std::io::Error| PortError {
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
            out.sinks.push(PcapOutput { index: i.index, field, sink: Arc::new(sink) });
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
