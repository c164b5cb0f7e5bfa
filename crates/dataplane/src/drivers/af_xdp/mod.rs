//! The AF_XDP driver: a Linux interface through XDP sockets whose UMEM is the worker's own
//! buffer pool, so no frame that fits one chunk is copied in user space.
//!
//! - **Memory.** Each worker registers its whole buffer pool as one UMEM with unaligned
//!   chunks, one per buffer slot: a chunk starts where a slot starts and is the slot, or its
//!   first 4 KiB when the slot is larger (the kernel's chunks end at a page; see
//!   [`chunk_size`]). The kernel writes a received frame [`RX_HEADROOM`] bytes into the chunk
//!   we gave it (its fixed XDP headroom), so the graph has that much room to push headers.
//!   Sockets of one worker on other interfaces or queues share the UMEM (`XDP_SHARED_UMEM`),
//!   each with its own fill and completion rings.
//! - **Frames larger than a chunk** (jumbo frames, or a 2 KB frame in a 2112-byte slot after
//!   the 256-byte headroom) use multi-buffer AF_XDP: sockets bound with `XDP_USE_SG`, the
//!   program loaded with `BPF_F_XDP_HAS_FRAGS`. The kernel hands such a frame over in several
//!   chunks, chained with `XDP_PKT_CONTD`; `af-xdp-input` gathers them into the first chunk's
//!   slot (moving the first part down to the usual headroom when the whole does not fit after
//!   the XDP headroom) and returns the others to the pool, so the graph sees one buffer per
//!   frame, as from every driver. On transmit, a frame longer than a chunk goes out as
//!   several descriptors over its one buffer, chained the same way. A kernel without
//!   multi-buffer AF_XDP (before 6.6) still runs frames that fit one chunk.
//! - **Queues.** A device queue binds one UMEM, so workers never share a queue: every worker
//!   has its own socket (its own queue) on every AF_XDP interface, for receiving (the queues
//!   placed on it) or only for sending. A worker transmits on its own socket only.
//! - **Rx, node `af-xdp-input`.** A poll reads up to 256 rx descriptors; each names a chunk,
//!   that is a buffer index, which goes into the vector as it is. Then the fill ring gets as
//!   many free buffers back, and the completion ring's sent buffers return to the pool.
//! - **Tx, node `af-xdp-tx`.** Each run of frames for one port becomes tx descriptors
//!   pointing at the buffers (the kernel now owns them, until the completion ring hands them
//!   back), then one wake-up (`sendto`) when the kernel asks for it (`need_wakeup`); in copy
//!   mode the kernel sends 32 frames per wake-up, so a run takes several. Frames that find
//!   the tx ring full are dropped as `tx-ring-full`.
//! - **The XDP program** ([`bpf`]) redirects each frame to the socket of its rx queue, or
//!   passes it to the kernel when that queue has none.

pub mod bpf;
pub mod busy_poll;
pub mod ring;
pub mod setup;
pub mod socket;

use crate::drivers::DriversWorker;
use crate::drivers::drops;
use crate::net::MAX_INTERFACES;
use crate::net::PollMode;
use crate::runtime::buffer::{BufferPool, HEADROOM};
use crate::runtime::graph::Graph;
use crate::runtime::graph::Outbox;
use crate::runtime::vector::{VECTOR_SIZE, VecHandle};
use ring::Consumer;
use socket::Xsk;
use std::os::fd::RawFd;

/// Where the kernel puts a received frame in its chunk (`XDP_PACKET_HEADROOM`).
pub const RX_HEADROOM: usize = 256;
/// The largest UMEM chunk the kernel accepts (a page).
const MAX_CHUNK: usize = 4096;
/// An rx descriptor's address in unaligned mode: the chunk in the low 48 bits, the frame's
/// offset in it above.
const ADDR_MASK: u64 = (1 << 48) - 1;
/// No socket.
const NONE: u16 = u16::MAX;
/// Free fill-ring entries worth a refill.
const REFILL_BATCH: u32 = 64;

/// The UMEM chunk size for buffer slots of `stride` bytes: the slot, up to a page.
pub fn chunk_size(stride: usize) -> u32 {
    stride.min(MAX_CHUNK) as u32
}

/// The largest frame one chunk holds after the kernel's XDP headroom: longer frames need
/// multi-buffer AF_XDP.
pub fn single_chunk_frame(stride: usize) -> usize {
    chunk_size(stride) as usize - RX_HEADROOM
}

/// A worker's AF_XDP sockets.
pub struct XskSockets {
    socks: Vec<Xsk>,
    /// By vecflow port: the socket it transmits on, or [`NONE`].
    tx_of: Vec<u16>,
    /// Per frame of the vector being sent: no room in the tx ring.
    refused: [bool; VECTOR_SIZE],
}

impl Default for XskSockets {
    fn default() -> Self {
        XskSockets { socks: Vec::new(), tx_of: vec![NONE; MAX_INTERFACES], refused: [false; VECTOR_SIZE] }
    }
}

impl XskSockets {
    /// Adds socket `xsk` of vecflow port `port` and returns its rx queue handle; the first
    /// socket added for a port is the one the worker transmits on.
    pub fn add(&mut self, port: u16, xsk: Xsk) -> RxQueue {
        let sock = self.socks.len() as u16;
        if let Some(t) = self.tx_of.get_mut(usize::from(port))
            && *t == NONE
        {
            *t = sock;
        }
        let fd = xsk.fd();
        self.socks.push(xsk);
        RxQueue { port, sock, fd }
    }

    /// The first socket, whose UMEM the others share; `None` before any was added.
    pub fn umem_owner(&self) -> Option<&Xsk> {
        self.socks.first()
    }
}

/// One rx queue a worker polls: an AF_XDP socket of its own.
#[derive(Debug, Clone, Copy)]
pub struct RxQueue {
    /// Interface index (in vecflow) of what it receives.
    pub port: u16,
    sock: u16,
    /// The socket's descriptor (to sleep on in `poll(2)`).
    pub fd: RawFd,
}

/// Returns the buffers the kernel finished sending on `x` to `pool`. A frame sent as several
/// descriptors completes once per descriptor: only its first (at the frame's offset in the
/// slot, below one chunk) returns the buffer.
#[inline]
fn reclaim(x: &mut Xsk, pool: &mut BufferPool) {
    let n = x.completion.available(u32::MAX);
    if n == 0 {
        return;
    }
    let (stride, chunk) = (pool.stride() as u64, u64::from(chunk_size(pool.stride())));
    let mut done = [0u32; VECTOR_SIZE];
    let mut k = 0;
    while k < n {
        let batch = (n - k).min(VECTOR_SIZE as u32);
        let mut m = 0;
        for j in 0..batch {
            let addr = x.completion.read(k + j);
            done[m] = (addr / stride) as u32;
            m += usize::from(addr % stride < chunk);
        }
        pool.free(&done[..m]);
        k += batch;
    }
    x.completion.release(n);
}

/// Gives the kernel free buffers for what the fill ring has room for (when that is at least
/// a batch), as many as the pool has.
#[inline]
fn refill(x: &mut Xsk, pool: &mut BufferPool) {
    let mut room = x.fill.free(REFILL_BATCH);
    if room < REFILL_BATCH {
        return;
    }
    let stride = pool.stride() as u64;
    let mut bufs = [0u32; VECTOR_SIZE];
    while room > 0 {
        let got = pool.alloc(&mut bufs[..(room as usize).min(VECTOR_SIZE)]);
        if got == 0 {
            break;
        }
        for (k, &i) in bufs[..got].iter().enumerate() {
            x.fill.write(k as u32, u64::from(i) * stride);
        }
        x.fill.submit(got as u32);
        room -= got as u32;
    }
}

/// The buffer whose chunk rx descriptor address `addr` names, or `None` for an address that is
/// not the start of one of `pool`'s chunks (the kernel hands back only the chunks we gave it;
/// anything else is not ours to keep).
#[inline(always)]
fn buffer_of(addr: u64, pool: &BufferPool) -> Option<u32> {
    let (chunk, stride) = (addr & ADDR_MASK, pool.stride() as u64);
    let i = chunk / stride;
    (chunk.is_multiple_of(stride) && i < u64::from(pool.capacity())).then_some(i as u32)
}

/// The offset in its chunk of the frame rx descriptor address `addr` names.
#[inline(always)]
fn offset_of(addr: u64) -> usize {
    (addr >> 48) as usize
}

/// Gathers the frame the kernel handed over as rx descriptors `first..=last` of `rx` (the
/// first and its continuations, each naming a chunk of `pool`) into the first one's buffer,
/// returned with its metadata set for `port`; every other chunk goes back to the pool. `Err`
/// with the first buffer (its metadata set) when the whole frame does not fit one buffer: it
/// is dropped as `rx-truncated`. `Ok(None)` when the first descriptor names no chunk of ours.
fn gather(
    pool: &mut BufferPool,
    rx: &Consumer<libc::xdp_desc>,
    first: u32,
    last: u32,
    port: u16,
) -> Result<Option<u32>, u32> {
    let head = rx.read(first);
    let into = buffer_of(head.addr, pool);
    let (at, len) = (offset_of(head.addr), head.len as usize);
    let total: usize = (first..=last).map(|j| rx.read(j).len as usize).sum();
    let stride = pool.stride();
    // Where the frame starts: where the kernel put it, else at the usual headroom.
    let start = if at + total <= stride { at } else { HEADROOM };
    // The buffer to gather into, when the whole frame fits it.
    let target = into.filter(|_| start + total <= stride && at + len <= stride);
    let mut end = start + len;
    if let Some(b) = target {
        pool.copy_bytes(b, at, b, start, len);
    }
    for j in first + 1..=last {
        let d = rx.read(j);
        let Some(i) = buffer_of(d.addr, pool) else { continue };
        if let Some(b) = target {
            let l = (d.len as usize).min(stride - end).min(stride.saturating_sub(offset_of(d.addr)));
            pool.copy_bytes(i, offset_of(d.addr), b, end, l);
            end += l;
        }
        pool.free(&[i]);
    }
    match (target, into) {
        (Some(b), _) => {
            *pool.meta_mut(b) = pool.placed(start, end - start, port);
            Ok(Some(b))
        }
        (None, Some(b)) => {
            *pool.meta_mut(b) = pool.placed(at, 0, port);
            Err(b)
        }
        (None, None) => Ok(None),
    }
}

impl RxQueue {
    /// The `af-xdp-input` node: hands up to 256 received frames over as one vector, in the
    /// buffers the kernel wrote them to (a frame in several chunks gathered into its first);
    /// refills the fill ring and takes back sent buffers. `None` when nothing arrived.
    pub fn poll<F: DriversWorker>(&mut self, g: &mut Graph<F>) -> Option<VecHandle> {
        let mut truncated = [0u32; VECTOR_SIZE];
        let mut n_truncated = 0;
        let got = {
            let rx_mode = g.features.interfaces().get(self.port).rx_mode;
            let Graph { features, pool, vectors, .. } = g;
            let xsk = &mut features.ports().xsk;
            let x = &mut xsk.socks[usize::from(self.sock)];
            reclaim(x, pool);
            let rx = x.rx.as_mut()?;
            let n = rx.available(VECTOR_SIZE as u32);
            let busy_poll = n < VECTOR_SIZE as u32 && rx_mode == PollMode::BusyPoll;
            if busy_poll {
                // The kernel runs the device's NAPI in this call and fills the rx ring for
                // the next poll (its interrupt stays off while polls keep coming).
                x.kick_rx();
            }
            let rx = x.rx.as_mut()?;
            if n == 0 {
                refill(x, pool);
                if !busy_poll && x.fill.needs_wakeup() {
                    x.kick_rx();
                }
                return None;
            }
            let v = vectors.alloc(self.port);
            let mut k = 0;
            while k < n {
                let d = rx.read(k);
                if d.options & libc::XDP_PKT_CONTD == 0 {
                    k += 1;
                    let Some(i) = buffer_of(d.addr, pool) else { continue };
                    *pool.meta_mut(i) = pool.placed(offset_of(d.addr), d.len as usize, self.port);
                    // The kernel wrote the frame (maybe on another core): its headers start
                    // loading now, for ethernet-input.
                    pool.prefetch_frame(i);
                    vectors[v].push(i);
                    continue;
                }
                // A frame in several chunks: all of it, or (its end not yet read) none of it.
                let Some(last) = (k..n).find(|&j| rx.read(j).options & libc::XDP_PKT_CONTD == 0) else { break };
                match gather(pool, rx, k, last, self.port) {
                    Ok(Some(i)) => vectors[v].push(i),
                    Ok(None) => {}
                    Err(i) => {
                        truncated[n_truncated] = i;
                        n_truncated += 1;
                    }
                }
                k = last + 1;
            }
            rx.release(k);
            refill(x, pool);
            if vectors[v].is_empty() {
                vectors.free(v);
                None
            } else {
                Some(v)
            }
        };
        if n_truncated > 0 {
            let mut bad = Outbox::new(crate::interface::nodes::ERROR_DROP);
            for &i in &truncated[..n_truncated] {
                g.pool.meta_mut(i).error = drops::RX_TRUNCATED.raw();
                bad.push(g, i);
            }
            bad.finish(g);
        }
        got
    }
}

/// The `af-xdp-tx` node: puts each run of frames for one port on the worker's tx ring of
/// that port and wakes the kernel; counts what went on the ring as transmitted (the kernel
/// owns those buffers until they complete); frames that found the ring full go to
/// `error-drop` as `tx-ring-full`.
#[inline(never)]
pub fn tx<F: DriversWorker>(g: &mut Graph<F>, v: VecHandle) {
    super::for_each_port_run(g, v, |g, port, run| {
        let Graph { features, pool, vectors, .. } = g;
        let xsk = &mut features.ports().xsk;
        let bufs = &vectors[v].indices()[run.clone()];
        let sent = match xsk.tx_of.get(usize::from(port)).copied().filter(|&s| s != NONE) {
            Some(s) => send_run(&mut xsk.socks[usize::from(s)], pool, bufs),
            None => 0,
        };
        xsk.refused[run.start..run.start + sent].fill(false);
        xsk.refused[run.start + sent..run.end].fill(true);
    });
    let refused = g.features.ports().xsk.refused;
    super::complete_tx(g, v, &refused, drops::TX_RING_FULL, false);
}

/// Puts as many of `bufs` as fit on `x`'s tx ring, wakes the kernel, and returns how many
/// went (the first ones). A frame longer than a chunk takes one descriptor per chunk's worth
/// of it, chained with `XDP_PKT_CONTD` (a socket without multi-buffer never sees one: its
/// interfaces' MTU keeps frames within a chunk).
#[inline]
fn send_run(x: &mut Xsk, pool: &mut BufferPool, bufs: &[u32]) -> usize {
    reclaim(x, pool);
    let (stride, chunk) = (pool.stride() as u64, chunk_size(pool.stride()));
    let (mut descs, mut sent) = (0u32, 0);
    for &i in bufs {
        let m = pool.meta(i);
        let (offset, len) = (u32::from(m.offset()), u32::from(m.len()));
        let addr = u64::from(i) * stride + u64::from(offset);
        let parts = if len <= chunk { 1 } else { len.div_ceil(chunk) };
        // Continuation descriptors lie at least a chunk into the slot, which tells their
        // completions from the frame's first (see `reclaim`); a frame starting that far in
        // could not be told apart and is refused (no node moves a frame that far).
        if x.tx.free(descs + parts) < descs + parts || offset >= chunk {
            break;
        }
        for p in 0..parts {
            let (at, part) = (p * chunk, (len - p * chunk).min(chunk));
            let options = if p + 1 < parts { libc::XDP_PKT_CONTD } else { 0 };
            x.tx.write(descs + p, libc::xdp_desc { addr: addr + u64::from(at), len: part, options });
        }
        descs += parts;
        sent += 1;
    }
    x.tx.submit(descs);
    // Copy mode sends at most 32 frames per wake-up: go on while the kernel makes progress.
    let mut tries = descs / 32 + 2;
    while x.tx.needs_wakeup() && tries > 0 && x.kick_tx() && x.tx.pending() > 0 {
        tries -= 1;
    }
    sent
}

/// Kernel tests: they need root (a network namespace of their own, `bpf(2)`, AF_XDP); they
/// skip without it, and fail under `CI=true`, where they must run.
#[cfg(test)]
pub(crate) mod kernel_tests;
