//! The AF_XDP driver: a Linux interface through XDP sockets whose UMEM is the worker's own
//! buffer pool, so no frame is copied in user space.
//!
//! - **Memory.** Each worker registers its whole buffer pool as one UMEM with unaligned
//!   chunks of one slot ([`STRIDE`] bytes, not a power of two). The kernel writes a received
//!   frame [`RX_HEADROOM`] bytes into the chunk we gave it (its fixed XDP headroom), so the
//!   graph has that much room to push headers. Sockets of one worker on other interfaces or
//!   queues share the UMEM (`XDP_SHARED_UMEM`), each with its own fill and completion rings.
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
pub mod ring;
pub mod setup;
pub mod socket;

use crate::datapath::{Features, Graph};
use crate::drivers::WorkerPorts;
use crate::interface::MAX_INTERFACES;
use crate::runtime::buffer::{BufferMeta, BufferPool, STRIDE};
use crate::runtime::drops::DropReason;
use crate::runtime::vector::{VECTOR_SIZE, VecHandle};
use socket::Xsk;
use std::os::fd::RawFd;

/// Where the kernel puts a received frame in its chunk (`XDP_PACKET_HEADROOM`).
pub const RX_HEADROOM: usize = 256;
/// The largest frame an AF_XDP port receives.
pub const RX_CAPACITY: usize = STRIDE - RX_HEADROOM;
/// The largest MTU of an AF_XDP interface: its frames, tagged, fit [`RX_CAPACITY`].
pub const MAX_MTU: u16 = (RX_CAPACITY - crate::interface::L2_OVERHEAD as usize) as u16;
/// An rx descriptor's address in unaligned mode: the chunk in the low 48 bits, the frame's
/// offset in it above.
const ADDR_MASK: u64 = (1 << 48) - 1;
/// No socket.
const NONE: u16 = u16::MAX;
/// Free fill-ring entries worth a refill.
const REFILL_BATCH: u32 = 64;

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
    pub fn umem_owner(&self) -> Option<RawFd> {
        self.socks.first().map(Xsk::fd)
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

/// Returns the chunks the kernel finished sending on `x` to `pool`.
#[inline]
fn reclaim(x: &mut Xsk, pool: &mut BufferPool) {
    let n = x.completion.available(u32::MAX);
    if n == 0 {
        return;
    }
    let mut done = [0u32; VECTOR_SIZE];
    let mut k = 0;
    while k < n {
        let batch = (n - k).min(VECTOR_SIZE as u32);
        for j in 0..batch {
            done[j as usize] = (x.completion.read(k + j) / STRIDE as u64) as u32;
        }
        pool.free(&done[..batch as usize]);
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
    let mut bufs = [0u32; VECTOR_SIZE];
    while room > 0 {
        let got = pool.alloc(&mut bufs[..(room as usize).min(VECTOR_SIZE)]);
        if got == 0 {
            break;
        }
        for (k, &i) in bufs[..got].iter().enumerate() {
            x.fill.write(k as u32, u64::from(i) * STRIDE as u64);
        }
        x.fill.submit(got as u32);
        room -= got as u32;
    }
}

impl RxQueue {
    /// The `af-xdp-input` node: hands up to 256 received frames over as one vector, in the
    /// buffers the kernel wrote them to; refills the fill ring and takes back sent buffers.
    /// `None` when nothing arrived.
    pub fn poll(&mut self, g: &mut Graph) -> Option<VecHandle> {
        let Graph { features: Features { drivers: WorkerPorts { xsk, .. }, .. }, pool, vectors, .. } = g;
        let x = &mut xsk.socks[usize::from(self.sock)];
        reclaim(x, pool);
        let rx = x.rx.as_mut()?;
        let n = rx.available(VECTOR_SIZE as u32);
        if n == 0 {
            refill(x, pool);
            if x.fill.needs_wakeup() {
                x.kick_rx();
            }
            return None;
        }
        let v = vectors.alloc(self.port);
        let capacity = u64::from(pool.capacity());
        for k in 0..n {
            let d = rx.read(k);
            let chunk = d.addr & ADDR_MASK;
            let i = chunk / STRIDE as u64;
            // The kernel hands back the chunks we gave it; anything else is not ours to keep.
            if !chunk.is_multiple_of(STRIDE as u64) || i >= capacity {
                continue;
            }
            let i = i as u32;
            *pool.meta_mut(i) = BufferMeta::placed((d.addr >> 48) as usize, d.len as usize, self.port);
            // The kernel wrote the frame (maybe on another core): its headers start loading
            // now, for ethernet-input.
            pool.prefetch_frame(i);
            vectors[v].push(i);
        }
        rx.release(n);
        refill(x, pool);
        if vectors[v].is_empty() {
            vectors.free(v);
            return None;
        }
        Some(v)
    }
}

/// The `af-xdp-tx` node: puts each run of frames for one port on the worker's tx ring of
/// that port and wakes the kernel; counts what went on the ring as transmitted (the kernel
/// owns those buffers until they complete); frames that found the ring full go to
/// `error-drop` as `tx-ring-full`.
pub fn tx(g: &mut Graph, v: VecHandle) {
    super::for_each_port_run(g, v, |g, port, run| {
        let Graph { features: Features { drivers: WorkerPorts { xsk, .. }, .. }, pool, vectors, .. } = g;
        let bufs = &vectors[v].indices()[run.clone()];
        let sent = match xsk.tx_of.get(usize::from(port)).copied().filter(|&s| s != NONE) {
            Some(s) => send_run(&mut xsk.socks[usize::from(s)], pool, bufs),
            None => 0,
        };
        xsk.refused[run.start..run.start + sent].fill(false);
        xsk.refused[run.start + sent..run.end].fill(true);
    });
    let refused = g.features.drivers.xsk.refused;
    super::complete_tx(g, v, &refused, DropReason::TxRingFull, false);
}

/// Puts as many of `bufs` as fit on `x`'s tx ring, wakes the kernel, and returns how many
/// went (the first ones).
#[inline]
fn send_run(x: &mut Xsk, pool: &mut BufferPool, bufs: &[u32]) -> usize {
    reclaim(x, pool);
    let n = x.tx.free(bufs.len() as u32).min(bufs.len() as u32);
    for (k, &i) in bufs[..n as usize].iter().enumerate() {
        let m = pool.meta(i);
        let addr = u64::from(i) * STRIDE as u64 + u64::from(m.offset());
        x.tx.write(k as u32, libc::xdp_desc { addr, len: u32::from(m.len()), options: 0 });
    }
    x.tx.submit(n);
    // Copy mode sends at most 32 frames per wake-up: go on while the kernel makes progress.
    let mut tries = n / 32 + 2;
    while x.tx.needs_wakeup() && tries > 0 && x.kick_tx() && x.tx.pending() > 0 {
        tries -= 1;
    }
    n as usize
}

/// Kernel tests: they need root (a network namespace of their own, `bpf(2)`, AF_XDP); they
/// skip without it, and fail under `CI=true`, where they must run.
#[cfg(test)]
pub(crate) mod kernel_tests {
    use super::bpf::{XdpMode, XdpProgram};
    use super::socket::{Umem, Xsk, XskOptions, ZeroCopy};
    use super::*;

    /// Runs `f` on a thread of its own in a new network namespace with `lo` up, when root;
    /// else skips (or fails under `CI=true`).
    pub(crate) fn in_new_netns(f: impl FnOnce() + Send + 'static) {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
            assert!(!ci, "AF_XDP kernel tests need root, and CI=true requires them to run");
            eprintln!("SKIP: AF_XDP kernel tests need root");
            return;
        }
        std::thread::spawn(move || {
            // SAFETY: unshare(2) moves only this thread into a new network namespace.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0, "{}", std::io::Error::last_os_error());
            lo_up();
            f();
        })
        .join()
        .expect("the test thread");
    }

    /// Sets `lo` (ifindex 1 in a new namespace) up.
    fn lo_up() {
        // SAFETY: a plain datagram socket for the interface ioctls, closed below; `ifreq` is
        // plain data, the name is NUL-terminated, and the ioctls read and write only it.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
            assert!(fd >= 0);
            let mut req: libc::ifreq = std::mem::zeroed();
            req.ifr_name[..2].copy_from_slice(&[b'l' as libc::c_char, b'o' as libc::c_char]);
            assert_eq!(libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req), 0);
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            assert_eq!(libc::ioctl(fd, libc::SIOCSIFFLAGS, &mut req), 0);
            libc::close(fd);
        }
    }

    #[test]
    fn frames_arrive_in_our_buffers_and_sent_ones_come_back() {
        in_new_netns(|| {
            let mut pool = BufferPool::new(1024).unwrap();
            let (addr, len) = pool.umem_region();
            let opts = XskOptions { ifindex: 1, queue: 0, ring_size: 64, rx: true, zero_copy: ZeroCopy::Auto };
            // SAFETY: `pool` outlives `x` (declared first, dropped last) and lends buffers only
            // through the rings below.
            let mut x = unsafe { Xsk::open(Umem { addr, len, chunk: STRIDE as u32 }, &opts, None) }.unwrap();
            assert!(!x.zero_copy, "lo has no zero-copy");
            let program = XdpProgram::load(1).unwrap();
            program.insert(0, x.fd()).unwrap();
            let _attached = program.attach(1, XdpMode::Skb).unwrap();
            refill(&mut x, &mut pool);
            assert_eq!(pool.free_count(), 1024 - 64, "the fill ring holds 64 buffers");

            let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            sock.send_to(b"vecflow af-xdp", sock.local_addr().unwrap()).unwrap();
            let rx = x.rx.as_mut().unwrap();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            while rx.available(8) == 0 {
                assert!(std::time::Instant::now() < deadline, "no frame reached the rx ring");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            let d = rx.read(0);
            rx.release(1);
            let (chunk, offset) = (d.addr & ADDR_MASK, (d.addr >> 48) as usize);
            assert_eq!((chunk % STRIDE as u64, offset), (0, RX_HEADROOM), "a whole chunk, the frame at the headroom");
            let i = (chunk / STRIDE as u64) as u32;
            *pool.meta_mut(i) = BufferMeta::placed(offset, d.len as usize, 1);
            let frame = pool.frame(i);
            assert_eq!(frame.len(), 14 + 20 + 8 + 14, "Ethernet, IPv4, UDP and the payload");
            assert_eq!(&frame[frame.len() - 14..], b"vecflow af-xdp");

            // Send it back out: the buffer goes to the kernel and returns by the completion ring.
            let free = pool.free_count();
            assert_eq!(send_run(&mut x, &mut pool, &[i]), 1);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
            while pool.free_count() == free {
                assert!(std::time::Instant::now() < deadline, "the sent buffer never completed");
                reclaim(&mut x, &mut pool);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            assert_eq!(pool.free_count(), free + 1);

            // A second UMEM on the same queue is refused, and the error says why.
            let other = BufferPool::new(1024).unwrap();
            let (addr, len) = other.umem_region();
            // SAFETY: as above (it is refused anyway).
            let e = unsafe { Xsk::open(Umem { addr, len, chunk: STRIDE as u32 }, &opts, None) }
                .err()
                .expect("a busy queue");
            assert!(e.to_string().contains("another AF_XDP socket is bound to this queue"), "{e}");
        });
    }
}
