//! The workers' side of linux-cp: the `linux-cp-punt` node, which sends packets for the router
//! up to the control thread, and the frames Linux wrote on the TAPs, which a worker sends out
//! of their port. Both cross in bounded channels a worker only ever polls (`try_send`,
//! `try_recv`): it never blocks and never makes a system call for them. Nor does it allocate:
//! it copies a punted frame into an empty byte buffer the control thread handed it (none left:
//! the frame is dropped as `punt-queue-full`), and hands back each injected frame's buffer.
//! Two classes go up in channels of their own, each within its rate (a policer per interface
//! and class, `punt-policed`): the routing and neighbor protocols, and the rest, so that the
//! rest cannot starve the first. A worker asleep in `poll(2)` (`interrupt`, `adaptive`) is
//! woken by an eventfd when Linux wrote frames for it.

use super::PuntRate;
use crate::interface::InterfaceTables;
use crate::interface::InterfaceWorker;
use crate::lcp::drops;
use crate::net::MAX_INTERFACES;
use crate::runtime::buffer::BufferPool;
use crate::runtime::graph::Graph;
use crate::runtime::graph::Outbox;
use crate::runtime::rate::TokenBucket;
use crate::runtime::vector::{VECTOR_SIZE, VecHandle};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender};
use wire::{EtherType, icmpv6, ipv4};

/// A frame crossing between a worker and the control thread, and its vecflow interface: the
/// input interface of a punted frame, the output interface of an injected one.
#[derive(Debug)]
pub struct Frame {
    /// Interface index.
    pub interface: u16,
    /// The Ethernet frame, untagged.
    pub bytes: Vec<u8>,
}

/// Frames in flight each way per worker: the byte buffers made for them at start, and the
/// capacity of each channel.
pub const QUEUE: usize = 1024;

/// Bytes a frame's buffer holds: the longest frame any buffer size lets an interface carry
/// (a longer one read from a TAP is cut, and dropped when it reaches a worker).
pub const FRAME_BYTES: usize = crate::runtime::buffer::MAX_DATA_SIZE as usize;

/// One worker's ends of the channels, and its punt policers.
#[derive(Debug)]
pub struct LcpWorker {
    /// Punted frames, to the control thread: the control class's, then the other class's.
    punt: [SyncSender<Frame>; 2],
    /// Empty byte buffers for punted frames, back from the control thread.
    spare: Receiver<Vec<u8>>,
    /// Frames Linux wrote on the TAPs of interfaces this worker sends for.
    inject: Receiver<Frame>,
    /// One taken from `inject` when no packet buffer was free, sent first next time.
    pending: Option<Frame>,
    /// The byte buffers of injected frames, back to the control thread.
    used: SyncSender<Vec<u8>>,
    /// By interface index: the control class's policer, then the other class's.
    policers: Vec<[TokenBucket; 2]>,
    /// Readable when the control thread handed it frames to send (an eventfd).
    wake: Arc<OwnedFd>,
}

impl LcpWorker {
    /// A worker's ends of the channels, policing what it punts at `rates` (TSC of `hz`), woken
    /// through eventfd `wake`.
    pub fn new(
        punt: [SyncSender<Frame>; 2],
        spare: Receiver<Vec<u8>>,
        inject: Receiver<Frame>,
        used: SyncSender<Vec<u8>>,
        rates: PuntRate,
        hz: u64,
        wake: Arc<OwnedFd>,
    ) -> Self {
        // A tenth of a second's worth at once, at least one packet.
        let bucket = |rate: u32| TokenBucket::new(u64::from(rate), u64::from(rate / 10).max(1), hz);
        let policers = vec![[bucket(rates.control), bucket(rates.other)]; MAX_INTERFACES];
        LcpWorker { punt, spare, inject, pending: None, used, policers, wake }
    }

    /// The eventfd that is readable when frames wait for this worker, to sleep on.
    pub fn wake_fd(&self) -> RawFd {
        self.wake.as_raw_fd()
    }
}

/// A fresh eventfd, non-blocking, that [`wake`] makes readable.
pub fn eventfd() -> std::io::Result<OwnedFd> {
    // SAFETY: eventfd has no memory effects; a non-negative return is a new descriptor we own.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is open and owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Makes eventfd `fd` readable (a worker sleeping on it wakes).
pub fn wake(fd: &OwnedFd) {
    let one = 1u64.to_ne_bytes();
    // SAFETY: writes 8 bytes from a live buffer to an open eventfd; a full counter (EAGAIN)
    // means it is readable already.
    unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
}

/// Resets eventfd `fd` after a wake (call it only when `poll(2)` found it readable).
pub fn clear_wake(fd: RawFd) {
    let mut count = [0u8; 8];
    // SAFETY: reads at most 8 bytes into a live buffer from an open, non-blocking eventfd.
    unsafe { libc::read(fd, count.as_mut_ptr().cast(), count.len()) };
}

/// What became of a frame sent up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Up {
    /// Queued for its TAP.
    Sent,
    /// Over its class's rate (`punt-policed`).
    Policed,
    /// No byte buffer free (`punt-queue-full`), or linux-cp is off.
    NoRoom,
}

/// True for a routing or neighbor protocol's frame (the punt class the other cannot starve):
/// ARP, LLDP; IGMP, OSPF, VRRP; ICMPv6 MLD and neighbor discovery; BGP (TCP 179), BFD (UDP
/// 3784, 3785, 4784), RIP and RIPng (UDP 520, 521). `l3` is where the IP header starts (the
/// ethertype is the two bytes before it).
fn is_control(f: &[u8], l3: usize) -> bool {
    let byte = |k: usize| f.get(l3 + k).copied();
    let ports = |l4: usize| {
        (f.get(l3 + l4..l3 + l4 + 4)).map(|p| [u16::from_be_bytes([p[0], p[1]]), u16::from_be_bytes([p[2], p[3]])])
    };
    let l4 = |proto: Option<u8>, at: usize| match proto {
        Some(2 | 89 | 112) => true,
        Some(ipv4::protocol::TCP) => ports(at).is_some_and(|p| p.contains(&179)),
        Some(ipv4::protocol::UDP) => {
            ports(at).is_some_and(|p| p.iter().any(|x| matches!(x, 520 | 521 | 3784 | 3785 | 4784)))
        }
        _ => false,
    };
    match l3.checked_sub(2).and_then(|e| f.get(e..l3)).map(|e| u16::from_be_bytes([e[0], e[1]])) {
        Some(EtherType::ARP | EtherType::LLDP) => true,
        Some(EtherType::IPV4) => byte(0).is_some_and(|v| l4(byte(9), usize::from(v & 0x0f) * 4)),
        Some(EtherType::IPV6) => match byte(6) {
            Some(icmpv6::PROTOCOL) => byte(40).is_some_and(|t| matches!(t, 130..=137 | 143)),
            nh => l4(nh, 40),
        },
        _ => false,
    }
}

impl LcpWorker {
    /// Copies frame `i` of `pool` up the TAP of its input interface as it arrived (less a
    /// sub-interface's tag), leaving the buffer as it is, within its class's rate.
    pub fn copy_up(&mut self, pool: &BufferPool, i: u32) -> Up {
        let m = pool.meta(i);
        let f = pool.frame(i);
        let l3 = usize::from(m.l3_offset);
        let class = usize::from(!is_control(f, l3));
        let policer = &mut self.policers[usize::from(m.rx_if) % MAX_INTERFACES][class];
        if !policer.take(crate::runtime::tsc::now()) {
            return Up::Policed;
        }
        let Ok(mut bytes) = self.spare.try_recv() else { return Up::NoRoom };
        // The addresses, then the ethertype of the payload (past any tag) and the payload.
        let ethertype_at = l3.saturating_sub(2).clamp(12.min(f.len()), f.len());
        bytes.clear();
        bytes.extend_from_slice(&f[..12.min(f.len())]);
        bytes.extend_from_slice(&f[ethertype_at..]);
        // A buffer is handed out only with room for a queued frame: the send does not fail.
        if self.punt[class].try_send(Frame { interface: m.rx_if, bytes }).is_ok() { Up::Sent } else { Up::NoRoom }
    }
}

/// A worker's state as `linux-cp-punt` and the injection of the TAPs' frames see it.
pub trait LinuxCpWorker: InterfaceWorker {
    /// The worker's channels to linux-cp's control thread, when linux-cp is on.
    fn linux_cp(&mut self) -> Option<&mut LcpWorker>;
}

/// `linux-cp-punt`: each frame goes up the TAP of its input interface ([`LcpWorker::copy_up`]), counted
/// as taken by the router (`rx_local`); its buffer is freed (the bytes were copied). Over its
/// class's rate it is dropped as `punt-policed`, with no free byte buffer as
/// `punt-queue-full`.
#[inline(never)]
pub fn punt<F: LinuxCpWorker>(g: &mut Graph<F>, v: VecHandle) {
    let mut sent = [0u32; VECTOR_SIZE];
    let mut n = 0;
    let mut dropped = Outbox::new(crate::interface::nodes::ERROR_DROP);
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let up = g.features.linux_cp().map_or(Up::NoRoom, |l| l.copy_up(&g.pool, i));
        let reason = match up {
            Up::Sent => {
                crate::interface::consumed(g, i);
                sent[n] = i;
                n += 1;
                continue;
            }
            Up::Policed => drops::PUNT_POLICED,
            Up::NoRoom => drops::PUNT_QUEUE_FULL,
        };
        g.pool.meta_mut(i).error = reason.raw();
        dropped.push(g, i);
    }
    g.pool.free(&sent[..n]);
    g.vectors.free(v);
    dropped.finish(g);
}

/// Sends the frames waiting for this worker (at most a vector) out of their interfaces,
/// through `interface-output`, as packets this router originates. True when there were some.
/// Call it between runs, once the last run's sFlow samples are published.
pub fn inject<F: LinuxCpWorker>(g: &mut Graph<F>) -> bool {
    let next =
        |g: &mut Graph<F>| g.features.linux_cp().and_then(|l| l.pending.take().or_else(|| l.inject.try_recv().ok()));
    // Nothing waiting (the usual round): one look at the channel.
    let Some(first) = next(g) else { return false };
    let mut first = Some(first);
    let (mut out, mut dropped) =
        (Outbox::new(crate::interface::nodes::INTERFACE_OUTPUT), Outbox::new(crate::interface::nodes::ERROR_DROP));
    let mut any = false;
    // Between runs, with every sFlow sample of the last run published: any free buffer may
    // be taken.
    g.pool.settle();
    for _ in 0..VECTOR_SIZE {
        let Some(frame) = first.take().or_else(|| next(g)) else { break };
        let Some(i) = g.alloc_buffer() else {
            if let Some(l) = g.features.linux_cp() {
                l.pending = Some(frame);
            }
            break;
        };
        // A TAP's MTU is its interface's: a longer frame cannot come, nor be sent.
        let whole = g.pool.write_frame(i, &frame.bytes) == frame.bytes.len();
        if let Some(l) = g.features.linux_cp() {
            // The channel holds every buffer there is: it never refuses one.
            let _ = l.used.try_send(frame.bytes);
        }
        if !whole {
            g.pool.free(&[i]);
            continue;
        }
        any = true;
        if answered_already(g, i, frame.interface) {
            g.pool.meta_mut(i).error = drops::LCP_DUPLICATE_ANSWER.raw();
            dropped.push(g, i);
            continue;
        }
        g.pool.meta_mut(i).tx_if = frame.interface;
        out.push(g, i);
    }
    out.finish(g);
    dropped.finish(g);
    any
}

/// True when frame `i`, which Linux wrote on the TAP of `interface`, answers what vecflow
/// answered already: an ARP reply from one of the interface's addresses (not a gratuitous
/// one), or a solicited neighbor advertisement for one. The wire gets one answer, vecflow's.
fn answered_already<F: LinuxCpWorker>(g: &Graph<F>, i: u32, interface: u16) -> bool {
    let f = g.pool.frame(i);
    let tables = g.features.snapshot();
    match f.get(12..14).map(|t| u16::from_be_bytes([t[0], t[1]])) {
        Some(EtherType::ARP) => f.get(14..).and_then(|p| wire::arp::Arp::parse(p).ok()).is_some_and(|a| {
            a.op == wire::arp::REPLY && a.spa != a.tpa && tables.interfaces().is_own_address(interface, a.spa)
        }),
        Some(EtherType::IPV6) => {
            // An advertisement right after the fixed header: type 136, the solicited flag
            // (0x40), the target at bytes 8 to 24 of the message.
            let Some(na) = f.get(14 + 40..14 + 40 + 24) else { return false };
            let target: [u8; 16] = na[8..24].try_into().expect("16 bytes");
            f[14 + 6] == icmpv6::PROTOCOL
                && na[0] == 136
                && na[4] & 0x40 != 0
                && tables.interfaces().is_own_address6(interface, std::net::Ipv6Addr::from(target))
        }
        _ => false,
    }
}
