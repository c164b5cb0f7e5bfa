//! The AF_PACKET driver: a Linux interface through packet sockets.
//!
//! Rx side, node `af-packet-input`: each rx queue is a socket with a TPACKET_V3 ring mapped
//! into the process (blocks of frames the kernel fills and hands over whole). A poll walks the
//! blocks the kernel has handed over and copies up to 256 frames into fresh buffers at the
//! full headroom, one vector; a block goes back to the kernel once all its frames are copied.
//! While copying it restores what the kernel took away or left undone:
//! - the 802.1Q tag the kernel strips (`TP_STATUS_VLAN_VALID`) is put back from
//!   `tp_vlan_tci`/`tp_vlan_tpid`, so the graph sees the frame as it was on the wire;
//! - the socket has `PACKET_VNET_HDR`: each frame comes with a `virtio_net_hdr` saying what
//!   the sender (or GRO) left undone ([`super::offload`]). A partial checksum (a veth peer with
//!   tx checksumming on) is completed at the offsets it names, whatever the protocol; a GSO/GRO
//!   super-frame (TCP over IPv4 or IPv6, UDP) is cut into the segments that would have been
//!   on the wire, one buffer each, so each is forwarded, counted and sampled as the packet it
//!   is;
//! - a frame larger than a buffer that is no super-frame, a super-frame that cannot be cut
//!   (UDP fragmentation offload, a tunnel's, segments larger than a buffer), or one the ring
//!   cut short is dropped as `rx-truncated`: it is never forwarded mangled.
//!
//! Several rx queues of one interface join one `PACKET_FANOUT` group (flows hashed over
//! them); `PACKET_IGNORE_OUTGOING` keeps what is sent on the host interface (by us or by the
//! kernel) out of the ring; the interface is put in promiscuous mode for as long as the
//! socket lives.
//!
//! Tx side, node `af-packet-tx`: each worker has its own send-only socket per interface
//! (`PACKET_QDISC_BYPASS`), and sends each run of frames for one interface with one
//! `sendmmsg` whose iovecs point into the buffers (no copy in user space). Frames the kernel
//! refuses (its queue full) are dropped as `tx-error`.

use super::offload::{Plan, VNET_HDR_LEN, VnetHdr, complete_partial};
use super::{cvt, get_opt, set_opt};
use crate::drivers::DriversWorker;
use crate::drivers::drops;
use crate::interface::driver_config::AfPacketConfig;
use crate::net::MAX_INTERFACES;
use crate::runtime::buffer::{BufferPool, HEADROOM};
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::vector::{VECTOR_SIZE, VecHandle};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use wire::EtherType;

/// `ETH_P_ALL` in network byte order, as packet sockets want it.
fn eth_p_all() -> u16 {
    (libc::ETH_P_ALL as u16).to_be()
}

/// Sets socket option `name` of level `SOL_PACKET` to `value`.
fn set_packet_opt<T>(fd: RawFd, name: libc::c_int, value: &T, what: &str) -> io::Result<()> {
    set_opt(fd, libc::SOL_PACKET, name, value, what)
}

/// A new packet socket (`SOCK_RAW`) that receives `protocol` (network byte order; 0 =
/// nothing), non-blocking, close-on-exec.
/// Puts host interface `ifindex` in promiscuous mode for as long as packet socket `fd` is
/// open: vecflow's own MAC may not be the interface's, and the NIC must not filter the
/// multicast groups vecflow answers for (IPv6 solicited-node groups) either.
fn join_promiscuous(fd: RawFd, ifindex: u32) -> io::Result<()> {
    let mreq = libc::packet_mreq {
        mr_ifindex: ifindex as i32,
        mr_type: libc::PACKET_MR_PROMISC as u16,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    set_packet_opt(fd, libc::PACKET_ADD_MEMBERSHIP, &mreq, "promiscuous mode")
}

/// Keeps host interface `ifindex` promiscuous for as long as the returned socket is open (a
/// packet socket that receives nothing), for drivers other than AF_PACKET's.
pub fn promiscuous(ifindex: u32) -> io::Result<OwnedFd> {
    let fd = packet_socket(0)?;
    join_promiscuous(fd.as_raw_fd(), ifindex)?;
    Ok(fd)
}

fn packet_socket(protocol: u16) -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let fd = unsafe {
        libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC, i32::from(protocol))
    };
    let fd = cvt(fd, "socket(AF_PACKET)")?;
    // SAFETY: `fd` is a descriptor we just opened and own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Binds packet socket `fd` to interface `ifindex` for `protocol` (network byte order).
fn bind(fd: RawFd, ifindex: u32, protocol: u16) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain data; zero is valid for every field.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = protocol;
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: `sll` is a valid sockaddr_ll and the length is its size.
    let r = unsafe {
        libc::bind(
            fd,
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    cvt(r, "bind").map(drop)
}

/// The TPACKET_V3 ring of one socket, mapped shared with the kernel; unmapped on drop.
struct RingMap {
    base: NonNull<u8>,
    len: usize,
}

impl Drop for RingMap {
    fn drop(&mut self) {
        // SAFETY: `base..base+len` is the mapping made in `RxQueue::open`, unmapped once.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// One rx queue: a packet socket bound to the host interface with its ring.
pub struct RxQueue {
    /// Interface index (in vecflow) of what it receives.
    pub port: u16,
    ring: RingMap,
    block_size: usize,
    blocks: usize,
    /// Block being read.
    block: usize,
    /// Frames of it not yet copied, and the offset of the next one.
    left: u32,
    offset: usize,
    /// The super-frame at `offset` being cut: its plan and the next segment.
    segment: Option<(Plan, usize)>,
    // Declared last: the socket closes after the ring is unmapped.
    fd: OwnedFd,
}

// SAFETY: the ring mapping is owned by this value alone (the kernel writes only blocks it owns,
// see `poll`); moving the queue to a worker thread moves that ownership.
unsafe impl Send for RxQueue {}

impl RxQueue {
    /// Opens an rx queue on host interface `ifindex` for vecflow interface `port`: socket,
    /// TPACKET_V3 ring per `cfg`, promiscuous mode, bound; joined to fanout group `fanout`
    /// when the interface has several queues.
    pub fn open(port: u16, ifindex: u32, cfg: &AfPacketConfig, fanout: Option<u16>) -> io::Result<Self> {
        // No protocol until the ring is ready, so nothing queues outside it.
        let fd = packet_socket(0)?;
        let raw = fd.as_raw_fd();
        set_packet_opt(raw, libc::PACKET_VERSION, &(libc::tpacket_versions::TPACKET_V3 as libc::c_int), "TPACKET_V3")?;
        set_packet_opt(raw, libc::PACKET_IGNORE_OUTGOING, &1 as &libc::c_int, "PACKET_IGNORE_OUTGOING")?;
        // Offloaded frames arrive whole, with a virtio_net_hdr saying what is left to do.
        set_packet_opt(raw, libc::PACKET_VNET_HDR, &1 as &libc::c_int, "PACKET_VNET_HDR")?;
        let frame_size = 2048u32.min(cfg.block_size);
        let req = libc::tpacket_req3 {
            tp_block_size: cfg.block_size,
            tp_block_nr: cfg.blocks,
            tp_frame_size: frame_size,
            tp_frame_nr: cfg.block_size / frame_size * cfg.blocks,
            tp_retire_blk_tov: cfg.block_timeout_ms,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        };
        set_packet_opt(raw, libc::PACKET_RX_RING, &req, "PACKET_RX_RING")?;
        let len = cfg.block_size as usize * cfg.blocks as usize;
        // SAFETY: maps the ring the kernel just allocated for `raw`; the result is checked.
        let p = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, raw, 0)
        };
        if p == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("mmap of the rx ring: {e}")));
        }
        let ring = RingMap { base: NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned null"))?, len };
        join_promiscuous(raw, ifindex)?;
        bind(raw, ifindex, eth_p_all())?;
        if let Some(group) = fanout {
            // Plain flow hashing: no defragmenting (the kernel would hold transit fragments and
            // hand over reassembled datagrams, possibly larger than a buffer).
            let arg = u32::from(group) | libc::PACKET_FANOUT_HASH << 16;
            set_packet_opt(raw, libc::PACKET_FANOUT, &arg, "PACKET_FANOUT")?;
        }
        Ok(RxQueue {
            port,
            ring,
            block_size: cfg.block_size as usize,
            blocks: cfg.blocks as usize,
            block: 0,
            left: 0,
            offset: 0,
            segment: None,
            fd,
        })
    }

    /// The socket's descriptor (to sleep on in `poll(2)`: readable once a block is handed over).
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// A second descriptor of the socket, for reading its statistics from another thread.
    pub fn stats_handle(&self) -> io::Result<OwnedFd> {
        self.fd.try_clone()
    }

    /// The start of block `b`.
    fn block_ptr(&self, b: usize) -> *mut u8 {
        // SAFETY: `b < blocks`, so the offset is inside the mapping.
        unsafe { self.ring.base.as_ptr().add(b * self.block_size) }
    }

    /// The status word of block `b` (`tpacket_hdr_v1.block_status`, shared with the kernel).
    fn block_status(&self, b: usize) -> &AtomicU32 {
        let hdr = std::mem::offset_of!(libc::tpacket_block_desc, hdr);
        // SAFETY: every block starts with a `tpacket_block_desc` (8-byte aligned, as blocks
        // are page-aligned); its `block_status` is a u32 the kernel and we hand back and
        // forth. Here it is read atomically while the kernel may own the block; the plain
        // read of the whole descriptor in `next_block` happens only once it is ours (USER),
        // when the kernel no longer writes it.
        unsafe { AtomicU32::from_ptr(self.block_ptr(b).add(hdr).cast()) }
    }

    /// Hands the current block back to the kernel and moves to the next.
    fn release_block(&mut self) {
        self.block_status(self.block).store(libc::TP_STATUS_KERNEL, Ordering::Release);
        self.block = (self.block + 1) % self.blocks;
    }

    /// The `af-packet-input` node: copies up to 256 received frames into fresh buffers and
    /// returns them as one vector; frames it must drop go to `error-drop` (queued on `g`).
    /// `None` when nothing arrived (or no buffer was free).
    pub fn poll<F: DriversWorker>(&mut self, g: &mut Graph<F>) -> Option<VecHandle> {
        if self.left == 0 && !self.next_block() {
            return None;
        }
        let port = self.port;
        super::receive(g, port, VECTOR_SIZE, |g, i| (self.left > 0 || self.next_block()).then(|| self.copy_next(g, i)))
            .0
    }

    /// Starts on the next block if the kernel has handed it over (skipping empty ones).
    fn next_block(&mut self) -> bool {
        loop {
            if self.block_status(self.block).load(Ordering::Acquire) & libc::TP_STATUS_USER == 0 {
                return false;
            }
            let base = self.block_ptr(self.block);
            let bh = std::mem::offset_of!(libc::tpacket_block_desc, hdr);
            // SAFETY: the block is ours (status USER, read with Acquire above), and starts
            // with its descriptor; the kernel does not touch it until we release it.
            let h = unsafe { std::ptr::read_unaligned(base.add(bh).cast::<libc::tpacket_hdr_v1>()) };
            if h.num_pkts > 0 && (h.offset_to_first_pkt as usize) < self.block_size {
                self.left = h.num_pkts;
                self.offset = h.offset_to_first_pkt as usize;
                return true;
            }
            self.release_block();
        }
    }

    /// Copies the next frame of the current block into buffer `i` (releasing the block after
    /// its last frame), tag restored and checksum completed, or says why it cannot be used. A
    /// super-frame is cut into its segments, one per call: the ring moves past it after the
    /// last.
    fn copy_next<F: DriversWorker>(&mut self, g: &mut Graph<F>, i: u32) -> Result<(), DropReason> {
        // Fresh metadata first: a frame dropped before it is stored is still this port's.
        *g.pool.meta_mut(i) = g.pool.received(0, self.port);
        let base = self.block_ptr(self.block);
        let hdr_len = std::mem::size_of::<libc::tpacket3_hdr>();
        if self.offset + hdr_len > self.block_size {
            self.left = 1; // a block we cannot walk further: give it back
            self.frame_done(0);
            return Err(drops::RX_TRUNCATED);
        }
        // SAFETY: the header lies inside the block (checked above), which is ours until
        // released; read unaligned, so an offset the kernel did not align is harmless.
        let h = unsafe { std::ptr::read_unaligned(base.add(self.offset).cast::<libc::tpacket3_hdr>()) };
        let (mac, snap) = (usize::from(h.tp_mac), h.tp_snaplen as usize);
        let next = h.tp_next_offset as usize;
        // Cut short by the ring (its block too small for the frame), or not where it should be.
        let cut = (h.tp_len as usize) > snap;
        let verdict = if cut || self.offset + mac + snap > self.block_size || mac < hdr_len + VNET_HDR_LEN {
            Err(drops::RX_TRUNCATED)
        } else {
            // SAFETY: `mac + snap` bytes from the header are inside the block (checked), and
            // the `virtio_net_hdr` the kernel writes just before the frame is after the header.
            let (frame, vnet) = unsafe {
                let vnet: &[u8; VNET_HDR_LEN] = &*base.add(self.offset + mac - VNET_HDR_LEN).cast();
                (std::slice::from_raw_parts(base.add(self.offset + mac), snap), VnetHdr::parse(vnet))
            };
            let ring = RingFrame { frame, h: &h, vnet };
            if vnet.gso() == VnetHdr::GSO_NONE {
                store(g, i, self.port, &ring)
            } else {
                self.store_segment(g, i, &ring)
            }
        };
        if self.segment.is_none() {
            self.frame_done(next);
        }
        verdict
    }

    /// Writes the next segment of super-frame `ring` into buffer `i` (planning the cut at its
    /// first); drops a super-frame it cannot cut as `rx-truncated`.
    fn store_segment<F: DriversWorker>(
        &mut self,
        g: &mut Graph<F>,
        i: u32,
        ring: &RingFrame<'_>,
    ) -> Result<(), DropReason> {
        let tagged = ring.h.tp_status & libc::TP_STATUS_VLAN_VALID != 0;
        let extra = if tagged { 4 } else { 0 };
        let (plan, k) = match self.segment {
            Some(cut) => cut,
            None => match Plan::new(ring.frame, &ring.vnet, g.pool.data_capacity() - extra) {
                Some(plan) => (plan, 0),
                None => return Err(drops::RX_TRUNCATED),
            },
        };
        self.segment = (k + 1 < plan.count()).then_some((plan, k + 1));
        let len = plan.write(ring.frame, k, &mut g.pool.slot_mut(i)[HEADROOM + extra..]);
        *g.pool.meta_mut(i) = g.pool.received(len + extra, self.port);
        if tagged {
            insert_tag(g.pool.slot_mut(i), ring.h);
        }
        Ok(())
    }

    /// Moves past the current frame (`next` bytes on, 0 for the block's last) and gives the
    /// block back after its last frame.
    fn frame_done(&mut self, next: usize) {
        self.offset += next;
        if next == 0 {
            self.left = 1;
        }
        self.left -= 1;
        if self.left == 0 {
            self.release_block();
        }
    }
}

/// A frame as the rx ring holds it: its bytes, its `tpacket3_hdr` and its `virtio_net_hdr`.
struct RingFrame<'a> {
    frame: &'a [u8],
    h: &'a libc::tpacket3_hdr,
    vnet: VnetHdr,
}

/// Puts back, in the slot of a frame just written `HEADROOM + 4` bytes into it, the 802.1Q
/// tag the kernel stripped (`h`'s TCI and TPID), the frame now starting at the headroom.
fn insert_tag(slot: &mut [u8], h: &libc::tpacket3_hdr) {
    slot.copy_within(HEADROOM + 4..HEADROOM + 16, HEADROOM);
    let tpid = if h.tp_status & libc::TP_STATUS_VLAN_TPID_VALID != 0 { h.hv1.tp_vlan_tpid } else { EtherType::VLAN };
    slot[HEADROOM + 12..HEADROOM + 14].copy_from_slice(&tpid.to_be_bytes());
    slot[HEADROOM + 14..HEADROOM + 16].copy_from_slice(&(h.hv1.tp_vlan_tci as u16).to_be_bytes());
}

/// Copies received `ring` frame (not a super-frame) into buffer `i` at the full headroom, as a
/// frame of interface `port`, tag restored and a partial checksum completed.
fn store<F: DriversWorker>(g: &mut Graph<F>, i: u32, port: u16, ring: &RingFrame<'_>) -> Result<(), DropReason> {
    let (frame, h) = (ring.frame, ring.h);
    let tagged = h.tp_status & libc::TP_STATUS_VLAN_VALID != 0;
    let extra = if tagged { 4 } else { 0 };
    if frame.len() + extra > g.pool.data_capacity() || frame.len() < 12 {
        return Err(drops::RX_TRUNCATED);
    }
    g.pool.slot_mut(i)[HEADROOM + extra..HEADROOM + extra + frame.len()].copy_from_slice(frame);
    if tagged {
        insert_tag(g.pool.slot_mut(i), h);
    }
    *g.pool.meta_mut(i) = g.pool.received(frame.len() + extra, port);
    let v = ring.vnet;
    let (start, offset) = (usize::from(v.csum_start) + extra, usize::from(v.csum_offset));
    if v.flags & VnetHdr::NEEDS_CSUM != 0 && !complete_partial(g.pool.frame_mut(i), start, offset) {
        return Err(drops::CSUM_NOT_READY);
    }
    Ok(())
}

/// Frames the kernel dropped on a queue since the last read (`PACKET_STATISTICS`, which
/// resets on read), through a descriptor from [`RxQueue::stats_handle`].
pub fn take_kernel_drops(fd: &OwnedFd) -> io::Result<u64> {
    // SAFETY: `tpacket_stats_v3` is three u32 counters: every bit pattern is valid.
    let st: libc::tpacket_stats_v3 =
        unsafe { get_opt(fd.as_raw_fd(), libc::SOL_PACKET, libc::PACKET_STATISTICS, "PACKET_STATISTICS") }?;
    Ok(u64::from(st.tp_drops))
}

/// A worker's send sockets, one per AF_PACKET interface, and the scratch `sendmmsg` needs.
pub struct TxSockets {
    /// By vecflow interface index (physical ports only).
    fds: Vec<Option<OwnedFd>>,
    iov: Box<[libc::iovec; VECTOR_SIZE]>,
    msgs: Box<[libc::mmsghdr; VECTOR_SIZE]>,
    /// Per frame of the vector being sent: the kernel did not take it.
    refused: [bool; VECTOR_SIZE],
}

// SAFETY: the iovec and mmsghdr scratch hold pointers only while `send` runs (set, used by
// the syscall and dead before it returns); between calls they are plain stale data.
unsafe impl Send for TxSockets {}

impl Default for TxSockets {
    fn default() -> Self {
        // SAFETY: iovec and mmsghdr are plain C data; all-zero is a valid value of each.
        let (iov, msgs) = unsafe { (Box::new(std::mem::zeroed()), Box::new(std::mem::zeroed())) };
        TxSockets { fds: (0..MAX_INTERFACES).map(|_| None).collect(), iov, msgs, refused: [false; VECTOR_SIZE] }
    }
}

impl TxSockets {
    /// Opens the send socket of vecflow interface `port` on host interface `ifindex`, for
    /// frames of up to `largest` bytes.
    pub fn open(&mut self, port: u16, ifindex: u32, largest: usize) -> io::Result<()> {
        let fd = packet_socket(0)?;
        set_packet_opt(fd.as_raw_fd(), libc::PACKET_QDISC_BYPASS, &1 as &libc::c_int, "PACKET_QDISC_BYPASS")?;
        // Room for a whole vector of the largest frames in flight (the default, about
        // 200 KiB, refuses part of a burst on a NIC whose completions lag).
        let room: libc::c_int = (VECTOR_SIZE * largest * 2) as libc::c_int;
        if set_opt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &room, "SO_SNDBUFFORCE").is_err() {
            set_opt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, &room, "SO_SNDBUF")?;
        }
        bind(fd.as_raw_fd(), ifindex, 0)?;
        if let Some(slot) = self.fds.get_mut(usize::from(port)) {
            *slot = Some(fd);
        }
        Ok(())
    }
}

/// The `af-packet-tx` node: sends each run of frames for one port with one `sendmmsg`,
/// counts what was sent on the output interfaces and frees it; what the kernel refused goes
/// to `error-drop` as `tx-error`.
#[inline(never)]
pub fn tx<F: DriversWorker>(g: &mut Graph<F>, v: VecHandle) {
    super::for_each_port_run(g, v, |g, port, run| {
        let first = run.start;
        send_run(&mut g.features.ports().tx, &g.pool, port, &g.vectors[v].indices()[run], first);
    });
    let refused = g.features.ports().tx.refused;
    super::complete_tx(g, v, &refused, drops::TX_ERROR, true);
}

/// Sends `bufs` (all for `port`, frames `first..` of the vector) with `sendmmsg` and marks in
/// `tx.refused[first..]` the ones the kernel did not take. After a partial send it goes on from the first message not sent; a
/// message the kernel rejects (too big for the device, say) is skipped and the rest still
/// sent; when the socket's queue is full (`EAGAIN`, `ENOBUFS`) the rest are refused.
fn send_run(tx: &mut TxSockets, pool: &BufferPool, port: u16, bufs: &[u32], first: usize) {
    let refused = &mut tx.refused[first..first + bufs.len()];
    refused.fill(true);
    let Some(Some(fd)) = tx.fds.get(usize::from(port)) else { return };
    let fd = fd.as_raw_fd();
    let (iov, msgs) = (&mut *tx.iov, &mut *tx.msgs);
    for (k, &i) in bufs.iter().enumerate() {
        let f = pool.frame(i);
        iov[k] = libc::iovec { iov_base: f.as_ptr() as *mut libc::c_void, iov_len: f.len() };
        // SAFETY: msghdr is plain C data; all-zero is valid (no name, no control data).
        msgs[k].msg_hdr = unsafe { std::mem::zeroed() };
        msgs[k].msg_hdr.msg_iov = &mut iov[k];
        msgs[k].msg_hdr.msg_iovlen = 1;
    }
    let mut at = 0;
    while at < bufs.len() {
        // SAFETY: `msgs[at..len]` are initialised above and point to iovecs over frames that
        // live in the pool, unchanged during the call; the kernel only reads them.
        let r = unsafe {
            libc::sendmmsg(fd, msgs[at..].as_mut_ptr(), (bufs.len() - at) as libc::c_uint, libc::MSG_DONTWAIT)
        };
        if r > 0 {
            refused[at..at + r as usize].fill(false);
            at += r as usize;
            continue;
        }
        match io::Error::last_os_error().raw_os_error() {
            Some(libc::EAGAIN | libc::ENOBUFS | libc::EINTR) | None => break,
            Some(_) => at += 1, // this message is refused; try the next
        }
    }
}

/// Kernel tests: they need root (a network namespace of their own); they skip without it, and
/// fail under `CI=true`, where they must run.
#[cfg(test)]
mod kernel_tests;
