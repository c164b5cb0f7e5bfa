//! Drivers: where frames enter (rx input nodes) and leave (tx nodes) the graph.
//!
//! Each driver is an rx input node, polled by the worker that owns the queue, and a tx node,
//! reached through vectors: `interface-output` picks it per vector from the output
//! interface (its `tx_node`, which [`tx_node`] names by driver). The driver decides where a frame
//! sits in its buffer (the headroom in front of it); the nodes between never depend on the
//! driver.
//!
//! Here too: each worker's transmit side ([`WorkerPorts`]) and the error a driver reports when
//! it cannot open what the configuration names ([`PortError`]). The drivers' settings are
//! sub-sections of each interface's, so they live with the `interfaces` section, below the
//! drivers: `interface::driver_config` and `interface::stream_config` (the generator's
//! streams).

pub mod af_packet;
pub mod af_xdp;
pub mod drops;
pub mod generator;
pub mod host;
pub mod link_watch;
pub mod netdev;
pub mod nodes;
pub mod offload;
pub mod pace;
pub mod pcap;

use crate::interface::InterfaceCounters;
use crate::interface::{DriverKind, InterfaceWorker, TxRun};
use crate::runtime::drops::DropReason;
use crate::runtime::graph::{Features, Graph, NodeId, Outbox};
use crate::runtime::vector::{VECTOR_SIZE, VecHandle};
use std::ops::Range;

/// The transmit side of every kind of port, as each worker keeps it.
#[derive(Default)]
pub struct WorkerPorts {
    /// The worker's AF_XDP sockets (their UMEM is the graph's buffer pool, so they must close
    /// before it is unmapped: the graph declares its features before the pool).
    pub xsk: af_xdp::XskSockets,
    /// The worker's AF_PACKET send sockets (none until the worker opens them).
    pub tx: af_packet::TxSockets,
    /// The capture files its pcap interfaces transmit into.
    pub pcap_out: pcap::PcapSinks,
}

/// A worker's state as the drivers' input and tx nodes see it.
pub trait DriversWorker: InterfaceWorker + Features<Counters: GeneratorCounting> {
    /// The transmit side of the worker's ports.
    fn ports(&mut self) -> &mut WorkerPorts;
}

/// The node that transmits for interfaces of driver `kind`.
pub fn tx_node(kind: DriverKind) -> NodeId {
    match kind {
        DriverKind::Generator => nodes::GENERATOR_TX,
        DriverKind::AfPacket => nodes::AF_PACKET_TX,
        DriverKind::Pcap => nodes::PCAP_TX,
        DriverKind::AfXdp => nodes::AF_XDP_TX,
    }
}

/// The counters of the embedded generator and sink.
pub trait GeneratorCounting {
    /// Generator and sink totals.
    fn generator(&self) -> &generator::GenCounters;
}

/// A driver could not open or use what the configuration names: the field, and what went
/// wrong in words (`interfaces.wan0.host-interface: eth9: No such device`).
#[derive(Debug, thiserror::Error)]
#[error("{field}: {message}")]
pub struct PortError {
    /// Dotted path of the field, e.g. `interfaces.wan0.host-interface`.
    pub field: String,
    /// What went wrong, in words.
    pub message: String,
}

impl PortError {
    /// Host link `host` of interface `name` (its `host-interface`) failed with `e`.
    pub fn host(name: &str, host: &str, e: impl std::fmt::Display) -> Self {
        PortError { field: format!("interfaces.{name}.host-interface"), message: format!("{host}: {e}") }
    }
}

/// One rx queue a worker polls.
pub enum RxPort {
    /// A generator interface.
    Generator(generator::GeneratorPort),
    /// An AF_PACKET socket's rx ring.
    AfPacket(af_packet::RxQueue),
    /// A capture file being replayed.
    Pcap(Box<pcap::PcapPort>),
    /// An AF_XDP socket's rx ring.
    AfXdp(af_xdp::RxQueue),
}

impl RxPort {
    /// Polls the queue once (`now` = TSC, for paced generators): a vector of received frames,
    /// or `None` when there were none.
    #[inline]
    pub fn poll<F: DriversWorker>(&mut self, g: &mut Graph<F>, now: u64) -> Option<VecHandle> {
        match self {
            RxPort::Generator(p) => p.poll(g, now),
            RxPort::AfPacket(q) => q.poll(g),
            RxPort::Pcap(p) => p.poll(g, now),
            RxPort::AfXdp(q) => q.poll(g),
        }
    }

    /// For a queue a worker can sleep on in `poll(2)`: its descriptor and the interface whose
    /// `rx-mode` says whether to. `None` for the generator and captures (always ready).
    pub fn waitable(&self) -> Option<(std::os::fd::RawFd, u16)> {
        match self {
            RxPort::AfPacket(q) => Some((q.fd(), q.port)),
            RxPort::AfXdp(q) => Some((q.fd, q.port)),
            RxPort::Generator(_) | RxPort::Pcap(_) => None,
        }
    }

    /// The input node charged with its polls.
    pub fn node(&self) -> NodeId {
        match self {
            RxPort::Generator(_) => nodes::GENERATOR_INPUT,
            RxPort::AfPacket(_) => nodes::AF_PACKET_INPUT,
            RxPort::Pcap(_) => nodes::PCAP_INPUT,
            RxPort::AfXdp(_) => nodes::AF_XDP_INPUT,
        }
    }
}

/// The result of a libc call that returns -1 and sets errno on failure; an error names `what`.
pub(crate) fn cvt(r: libc::c_int, what: &str) -> std::io::Result<libc::c_int> {
    if r < 0 {
        let e = std::io::Error::last_os_error();
        Err(std::io::Error::new(e.kind(), format!("{what}: {e}")))
    } else {
        Ok(r)
    }
}

/// Sets socket option `name` of `level` on `fd` to `value`; an error names `what`.
pub(crate) fn set_opt<T>(
    fd: std::os::fd::RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
    what: &str,
) -> std::io::Result<()> {
    // SAFETY: `value` points to a live `T` of `size_of::<T>()` bytes for the duration of the
    // call; the kernel only reads it.
    let r = unsafe {
        libc::setsockopt(fd, level, name, (value as *const T).cast(), std::mem::size_of::<T>() as libc::socklen_t)
    };
    cvt(r, what).map(drop)
}

/// Reads socket option `name` of `level` on `fd` into a `T` (zeroed first: the kernel may fill
/// less of it); an error names `what`.
///
/// # Safety
/// `T` must be plain C data for which every bit pattern is a valid value (a struct of
/// integers, as the kernel's option structs are).
pub(crate) unsafe fn get_opt<T: Copy>(
    fd: std::os::fd::RawFd,
    level: libc::c_int,
    name: libc::c_int,
    what: &str,
) -> std::io::Result<T> {
    let mut value = std::mem::MaybeUninit::<T>::zeroed();
    let mut len = std::mem::size_of::<T>() as libc::socklen_t;
    // SAFETY: `value` is writable for `len` bytes and `len` is passed by pointer.
    let r = unsafe { libc::getsockopt(fd, level, name, value.as_mut_ptr().cast(), &mut len) };
    cvt(r, what)?;
    // SAFETY: every bit pattern is a valid `T` (the caller's contract), so the zeroed bytes
    // and whatever the kernel wrote over them are one.
    Ok(unsafe { value.assume_init() })
}

/// Where the kernel counts the frames of one rx queue it dropped before a worker saw them
/// (its ring was full, or it had no free buffer).
pub enum KernelDrops {
    /// An AF_PACKET socket (its counter resets when read).
    AfPacket(std::os::fd::OwnedFd),
    /// An AF_XDP socket (its counters only grow), with the total at the last read.
    AfXdp(std::os::fd::OwnedFd, u64),
}

impl KernelDrops {
    /// For an AF_XDP socket, the NAPI instance that last delivered a frame to it
    /// (`SO_INCOMING_NAPI_ID`): 0 before the first frame, or when the driver has no NAPI
    /// (busy polling needs one). `None` for AF_PACKET.
    pub fn napi_id(&self) -> Option<u32> {
        let KernelDrops::AfXdp(fd, _) = self else { return None };
        // SAFETY: the option is one u32: every bit pattern is valid.
        let id: u32 = unsafe {
            get_opt(std::os::fd::AsRawFd::as_raw_fd(fd), libc::SOL_SOCKET, libc::SO_INCOMING_NAPI_ID, "NAPI id")
        }
        .unwrap_or(0);
        Some(id)
    }

    /// The AF_XDP socket's descriptor (for its busy-polling options); `None` for AF_PACKET.
    pub fn xsk_fd(&self) -> Option<std::os::fd::RawFd> {
        let KernelDrops::AfXdp(fd, _) = self else { return None };
        Some(std::os::fd::AsRawFd::as_raw_fd(fd))
    }

    /// Frames dropped since the last call.
    pub fn take(&mut self) -> std::io::Result<u64> {
        match self {
            KernelDrops::AfPacket(fd) => af_packet::take_kernel_drops(fd),
            KernelDrops::AfXdp(fd, last) => {
                let total = af_xdp::socket::kernel_drops(fd)?;
                let new = total.saturating_sub(*last);
                *last = total;
                Ok(new)
            }
        }
    }
}

/// For an rx node: fills a vector of interface `port` with up to `want` frames, each put
/// into a fresh buffer by `next(g, buffer)`, which says `Some(Ok(()))` to keep it,
/// `Some(Err(reason))` to drop it (to `error-drop`, queued on `g`) and `None` when there are
/// no more frames. Returns the vector (`None` when nothing was kept) and how many buffers were
/// used (fewer than `want` when frames or free buffers ran out).
#[inline(always)]
fn receive<F: DriversWorker>(
    g: &mut Graph<F>,
    port: u16,
    want: usize,
    mut next: impl FnMut(&mut Graph<F>, u32) -> Option<Result<(), DropReason>>,
) -> (Option<VecHandle>, usize) {
    let mut bufs = [0u32; VECTOR_SIZE];
    let got = g.pool.alloc(&mut bufs[..want]);
    let good = g.vectors.alloc(port);
    let mut bad = Outbox::new(crate::interface::nodes::ERROR_DROP);
    let mut used = 0;
    while used < got {
        let i = bufs[used];
        match next(g, i) {
            None => break,
            Some(Ok(())) => g.vectors[good].push(i),
            Some(Err(reason)) => {
                g.pool.meta_mut(i).error = reason.raw();
                bad.push(g, i);
            }
        }
        used += 1;
    }
    g.pool.free(&bufs[used..got]);
    bad.finish(g);
    if g.vectors[good].is_empty() {
        g.vectors.free(good);
        return (None, used);
    }
    (Some(good), used)
}

/// For a tx node: calls `send(g, port, frames)` for each run of consecutive frames of vector
/// `v` (by position) that leave through one physical port.
fn for_each_port_run<F: DriversWorker>(
    g: &mut Graph<F>,
    v: VecHandle,
    mut send: impl FnMut(&mut Graph<F>, u16, Range<usize>),
) {
    let n = g.vectors[v].len();
    let mut start = 0;
    while start < n {
        let idx = g.vectors[v].indices();
        let port = g.features.interfaces().get(g.pool.meta(idx[start]).tx_if).port;
        let end = start
            + idx[start..]
                .iter()
                .take_while(|&&i| g.features.interfaces().get(g.pool.meta(i).tx_if).port == port)
                .count();
        send(g, port, start..end);
        start = end;
    }
}

/// Ends a tx node's work on vector `v`: counts every frame not `refused` (by position) as
/// transmitted on its output interface and frees it (unless `free_sent` is false: the driver
/// handed the buffer itself to the kernel, which gives it back later); refused ones go to
/// `error-drop` as `reason`.
fn complete_tx<F: DriversWorker>(
    g: &mut Graph<F>,
    v: VecHandle,
    refused: &[bool; VECTOR_SIZE],
    reason: DropReason,
    free_sent: bool,
) {
    let mut failed = Outbox::new(crate::interface::nodes::ERROR_DROP);
    let mut sent = [0u32; VECTOR_SIZE];
    let mut n_sent = 0;
    let mut run = TxRun::default();
    for (k, &refused) in refused[..g.vectors[v].len()].iter().enumerate() {
        let i = g.vectors[v].indices()[k];
        if refused {
            g.pool.meta_mut(i).error = reason.raw();
            failed.push(g, i);
            continue;
        }
        let m = g.pool.meta(i);
        if m.tx_if != run.tx_if {
            run.flush(g.counters.interface(run.tx_if));
            run = TxRun { tx_if: m.tx_if, ..TxRun::default() };
        }
        run.add_le(m.len(), u64::from_le_bytes(g.pool.line(i)[..8].try_into().expect("8 bytes")));
        sent[n_sent] = i;
        n_sent += 1;
    }
    run.flush(g.counters.interface(run.tx_if));
    if free_sent {
        g.pool.free(&sent[..n_sent]);
    }
    g.vectors.free(v);
    failed.finish(g);
}
