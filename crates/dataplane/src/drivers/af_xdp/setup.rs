//! Opening the AF_XDP interfaces of a starting dataplane: each worker's sockets over its
//! buffer pool, one queue per worker and interface, and the XDP program attached to each
//! interface. Everything is opened before any worker starts, so every problem stops the
//! start-up with the field it concerns.

use super::bpf::{Attachment, XdpMode, XdpProgram};
use super::socket::{Umem, Xsk, XskOptions, ZeroCopy};
use super::{RxQueue, XskSockets, chunk_size, single_chunk_frame};
use crate::drivers::KernelDrops;
use crate::drivers::PortError;
use crate::drivers::host::{HostLink, HostPort};
use crate::interface::Interface;
use crate::interface::config::InterfaceConfig;
use crate::interface::driver_config::{AfXdpConfig, XdpModeConfig, ZeroCopyConfig};
use crate::runtime::buffer::BufferPool;
use std::collections::BTreeMap;

/// One worker's share of the AF_XDP interfaces.
pub struct WorkerXdp {
    /// Its buffer pool, registered as its sockets' UMEM.
    pub pool: BufferPool,
    /// Its sockets.
    pub sockets: XskSockets,
    /// The rx queues it polls.
    pub rx: Vec<RxQueue>,
}

/// The XDP program of one interface, attached; detached when dropped.
pub struct Attached {
    /// The interface's index (in vecflow).
    pub port: u16,
    /// The kernel moves the frames without copying.
    pub zero_copy: bool,
    attachment: Attachment,
    _program: XdpProgram,
    /// Keeps the interface promiscuous (see [`crate::drivers::af_packet::promiscuous`]).
    _promiscuous: std::os::fd::OwnedFd,
}

impl Attached {
    /// Where the program runs: `native` or `skb`.
    pub fn mode(&self) -> &'static str {
        self.attachment.mode().name()
    }
}

/// What opening the AF_XDP interfaces gives the engine.
#[derive(Default)]
pub struct XdpPorts {
    /// By worker.
    pub workers: Vec<WorkerXdp>,
    /// The attached programs, to keep for as long as the dataplane runs.
    pub attached: Vec<Attached>,
    /// The host interfaces, with their rx queues' kernel drop counters.
    pub links: Vec<HostPort>,
}

/// An error about field `field` of interface `name`.
fn field_error(name: &str, field: &str, message: impl std::fmt::Display) -> PortError {
    PortError { field: format!("interfaces.{name}.{field}"), message: message.to_string() }
}

/// What the AF_XDP setup reads of the configuration.
#[derive(Debug, Clone, Copy)]
pub struct XdpSettings<'a> {
    /// The `interfaces` section.
    pub interfaces: &'a BTreeMap<String, InterfaceConfig>,
    /// `workers.count`.
    pub workers: u16,
    /// `workers.buffers`: the buffers of each worker's pool.
    pub worker_buffers: u32,
    /// `buffers.data-size`.
    pub data_size: u16,
}

/// Checks what can be checked before anything is opened, for the `af-xdp` interfaces of
/// `hosts` (by interface name): that each worker's buffers cover what its sockets lend the
/// kernel, and that each host interface's MTU lets its frames fit a buffer (the kernel would
/// drop longer ones unseen).
pub fn preflight(config: &XdpSettings, hosts: &BTreeMap<String, HostLink>) -> Result<(), PortError> {
    check_buffers(config, &crate::interface::build::build_interfaces(config.interfaces, config.workers, |_| 0), hosts)?;
    let max = crate::net::max_mtu(config.data_size);
    for (name, link) in hosts {
        if link.mtu > u32::from(max) {
            return Err(field_error(
                name,
                "host-interface",
                format!(
                    "{} has MTU {}; AF_XDP frames must fit a buffer (buffers.data-size {}), so its MTU may be at \
                     most {max} (ip link set {} mtu {max}, or raise buffers.data-size up to {})",
                    link.name,
                    link.mtu,
                    config.data_size,
                    link.name,
                    crate::runtime::buffer::MAX_DATA_SIZE
                ),
            ));
        }
    }
    Ok(())
}

/// Opens every `af-xdp` interface of `hosts` (by interface name) over `pools`, one buffer pool
/// per worker (each registered as that worker's UMEM): the sockets, and the XDP program on
/// each interface.
pub fn open(
    config: &XdpSettings,
    interfaces: &[Interface],
    hosts: BTreeMap<String, HostLink>,
    pools: Vec<BufferPool>,
) -> Result<XdpPorts, PortError> {
    let mut out = XdpPorts { workers: Vec::new(), attached: Vec::new(), links: Vec::new() };
    for pool in pools {
        out.workers.push(WorkerXdp { pool, sockets: XskSockets::default(), rx: Vec::new() });
    }
    for (name, link) in hosts {
        let i = interfaces.iter().find(|i| i.name == name).expect("an interface of the config");
        let ic = &config.interfaces[&name];
        let cfg = ic.af_xdp.unwrap_or_default();
        let host_err = |e: std::io::Error| PortError::host(&name, &link.name, e);
        let queues = sockets_of(config, i, &name);
        let program = XdpProgram::load(queues.len() as u32).map_err(host_err)?;
        let mut drops = Vec::new();
        let mut zero_copy = false;
        for &(w, queue, rx) in &queues {
            let wx = &mut out.workers[usize::from(w)];
            let (addr, len) = wx.pool.umem_region();
            let umem = Umem { addr, len, chunk: chunk_size(wx.pool.stride()) };
            let opts = XskOptions {
                ifindex: link.ifindex,
                queue,
                ring_size: cfg.ring_size,
                rx,
                zero_copy: zero_copy_choice(cfg.zero_copy),
            };
            // SAFETY: the UMEM is the worker's pool, which moves into the worker's graph with
            // the sockets and is dropped with them (its pages stay pinned by the kernel until
            // the last socket closes); the driver lends its buffers only through the rings.
            let xsk = unsafe { Xsk::open(umem, &opts, wx.sockets.umem_owner()) }.map_err(|e| {
                let what = if rx { "rx queue" } else { "its own tx queue for worker" };
                let detail = if rx { String::new() } else { format!(" {w}") };
                field_error(&name, "host-interface", format!("{} {what}{detail}: {e}", link.name))
            })?;
            zero_copy |= xsk.zero_copy;
            check_multi_buffer(&name, &link, i.mtu, wx.pool.stride(), xsk.multi_buffer && program.frags)?;
            if rx {
                program.insert(queue, xsk.fd()).map_err(host_err)?;
                drops.push(KernelDrops::AfXdp(xsk.stats_handle().map_err(host_err)?, 0));
            }
            let q = wx.sockets.add(i.index, xsk);
            if rx {
                wx.rx.push(q);
            }
        }
        if cfg.zero_copy == ZeroCopyConfig::On && !zero_copy {
            return Err(field_error(&name, "af-xdp.zero-copy", format!("on: {} has no zero-copy", link.name)));
        }
        if zero_copy {
            tracing::warn!(
                "interfaces.{name}: zero-copy: buffers are {}-byte chunks that may cross 4 KiB pages; the kernel \
                 refuses those whose pages are not physically contiguous, so keep transparent huge pages on \
                 (/sys/kernel/mm/transparent_hugepage/enabled: always or madvise)",
                chunk_size(crate::runtime::buffer::stride_for(config.data_size))
            );
        }
        let attachment = program
            .attach(link.ifindex, xdp_mode(cfg.mode))
            .map_err(|e| field_error(&name, "af-xdp.mode", format!("{}: {e}", link.name)))?;
        warn_unread_queues(&name, &link, cfg.queues);
        log_opened(&name, &link, &cfg, &attachment, zero_copy, queues.len(), i.mtu);
        let promiscuous = crate::drivers::af_packet::promiscuous(link.ifindex)
            .map_err(|e| field_error(&name, "host-interface", format!("{}: {e}", link.name)))?;
        out.attached.push(Attached {
            port: i.index,
            zero_copy,
            attachment,
            _program: program,
            _promiscuous: promiscuous,
        });
        out.links.push(HostPort { index: i.index, link, queues: drops });
    }
    Ok(out)
}

/// The sockets of interface `i` (named `name`), as (worker, device queue, receives): the rx
/// queues 0..queues on the workers placed on them, then a queue of its own (to transmit on)
/// for each worker that polls none of them.
fn sockets_of(config: &XdpSettings, i: &Interface, name: &str) -> Vec<(u16, u32, bool)> {
    let (ic, workers) = (&config.interfaces[name], config.workers);
    let cfg = ic.af_xdp.unwrap_or_default();
    let mut queues: Vec<(u16, u32, bool)> =
        (0..cfg.queues).map(|q| (ic.queue_worker(q, i.rx_worker, workers), u32::from(q), true)).collect();
    let mut spare = u32::from(cfg.queues);
    for w in 0..workers {
        if !queues.iter().any(|&(qw, _, _)| qw == w) {
            queues.push((w, spare, false));
            spare += 1;
        }
    }
    queues
}

/// Checks that interface `name` (MTU `mtu`, on host link `link`) can carry its largest
/// frames on a socket over buffers of `stride` bytes: within one chunk, or in several when
/// the socket and program have `multi_buffer`.
fn check_multi_buffer(
    name: &str,
    link: &HostLink,
    mtu: u16,
    stride: usize,
    multi_buffer: bool,
) -> Result<(), PortError> {
    let largest = usize::from(mtu + crate::net::L2_OVERHEAD);
    if multi_buffer || largest <= single_chunk_frame(stride) {
        return Ok(());
    }
    let most = single_chunk_frame(stride) - usize::from(crate::net::L2_OVERHEAD);
    Err(field_error(
        name,
        "mtu",
        format!(
            "{mtu}: {}'s frames do not fit one AF_XDP chunk, and this kernel has no multi-buffer AF_XDP \
             (XDP_USE_SG, Linux 6.6 and later); use an MTU of at most {most}",
            link.name
        ),
    ))
}

/// Buffers a worker keeps for the graph beyond those its sockets lend the kernel.
const GRAPH_BUFFERS: u32 = 4096;

/// Checks that each worker's buffers cover what its sockets lend the kernel (full fill and rx
/// rings per rx queue, full tx and completion rings per interface: it sends on one socket of
/// each) with [`GRAPH_BUFFERS`] to spare.
fn check_buffers(
    config: &XdpSettings,
    interfaces: &[Interface],
    hosts: &BTreeMap<String, HostLink>,
) -> Result<(), PortError> {
    if hosts.is_empty() {
        return Ok(()); // no AF_XDP socket lends anything
    }
    let mut lent = vec![0u32; usize::from(config.workers)];
    for name in hosts.keys() {
        let i = interfaces.iter().find(|i| &i.name == name).expect("an interface of the config");
        let ring = config.interfaces[name].af_xdp.unwrap_or_default().ring_size;
        let sockets = sockets_of(config, i, name);
        for (w, lent) in lent.iter_mut().enumerate() {
            let rx = sockets.iter().filter(|&&(sw, _, rx)| usize::from(sw) == w && rx).count() as u32;
            *lent += 2 * (rx + 1) * ring;
        }
    }
    let most = lent.iter().copied().max().unwrap_or(0);
    if config.worker_buffers < most + GRAPH_BUFFERS {
        return Err(PortError {
            field: "workers.buffers".into(),
            message: format!(
                "{}: a worker's AF_XDP sockets lend the kernel up to {most} buffers (twice ring-size for each \
                 rx queue and for each interface it sends on), so it needs at least {} (or a smaller \
                 af-xdp.ring-size)",
                config.worker_buffers,
                most + GRAPH_BUFFERS
            ),
        });
    }
    Ok(())
}

/// Warns when host interface `link` has more rx queues than the `queues` vecflow reads: the
/// XDP program passes frames arriving on the others to the kernel.
fn warn_unread_queues(name: &str, link: &HostLink, queues: u16) {
    let dir = format!("/sys/class/net/{}/queues", link.name);
    let rx = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(Result::ok).filter(|e| e.file_name().to_string_lossy().starts_with("rx-")).count())
        .unwrap_or(0);
    if rx > usize::from(queues) {
        tracing::warn!(
            "interfaces.{name}.af-xdp.queues: {} has {rx} rx queues and vecflow reads {queues}; frames the device \
             puts on the others go to the kernel (set queues: {rx}, or `ethtool -L {} combined {queues}`)",
            link.name,
            link.name
        );
    }
}

/// Says what was opened for interface `name`.
fn log_opened(
    name: &str,
    link: &HostLink,
    cfg: &AfXdpConfig,
    a: &Attachment,
    zero_copy: bool,
    sockets: usize,
    mtu: u16,
) {
    tracing::info!(
        "interface {name}: af-xdp on {} (ifindex {}), {} rx queue(s), {sockets} socket(s), XDP {} mode via {}, {}, \
         rings of {}, MTU {mtu}, link {}",
        link.name,
        link.ifindex,
        cfg.queues,
        a.mode().name(),
        if a.is_link() { "bpf_link" } else { "netlink" },
        if zero_copy { "zero-copy" } else { "copy" },
        cfg.ring_size,
        if link.oper_up { "up" } else { "down" }
    );
}

fn zero_copy_choice(z: ZeroCopyConfig) -> ZeroCopy {
    match z {
        ZeroCopyConfig::Auto => ZeroCopy::Auto,
        ZeroCopyConfig::On => ZeroCopy::On,
        ZeroCopyConfig::Off => ZeroCopy::Off,
    }
}

fn xdp_mode(m: XdpModeConfig) -> XdpMode {
    match m {
        XdpModeConfig::Auto => XdpMode::Auto,
        XdpModeConfig::Native => XdpMode::Native,
        XdpModeConfig::Skb => XdpMode::Skb,
    }
}
