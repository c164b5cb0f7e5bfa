//! One AF_XDP socket: its UMEM (a worker's buffer pool, registered by the worker's first
//! socket and shared by the others), its four rings mapped into the process, and its binding
//! to one queue of one interface.

use super::ring::{Consumer, Producer, RingPtrs};
use crate::drivers::{get_opt, set_opt};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;

/// The memory registered as UMEM: a worker's buffer slots.
#[derive(Debug, Clone, Copy)]
pub struct Umem {
    /// Page-aligned start.
    pub addr: *mut u8,
    /// Length in bytes.
    pub len: usize,
    /// Bytes per chunk (a buffer slot; not a power of two, so unaligned chunks).
    pub chunk: u32,
}

/// Whether the kernel moves frames in and out of the UMEM without copying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZeroCopy {
    /// Zero-copy where the driver supports it, copy otherwise.
    Auto,
    /// Zero-copy or fail.
    On,
    /// Always copy.
    Off,
}

/// How to open one socket.
#[derive(Debug, Clone, Copy)]
pub struct XskOptions {
    /// Kernel interface index.
    pub ifindex: u32,
    /// Device queue.
    pub queue: u32,
    /// Entries in each of the four rings (a power of two).
    pub ring_size: u32,
    /// Open an rx ring (a socket only for sending has none).
    pub rx: bool,
    /// Zero-copy choice (for the socket that registers the UMEM; sharers inherit it).
    pub zero_copy: ZeroCopy,
}

/// One ring's mapping; unmapped on drop.
struct Mapping {
    base: NonNull<u8>,
    len: usize,
}

impl Mapping {
    /// Maps the ring at page offset `pgoff` of socket `fd`, `off` describing its layout.
    fn map<T>(
        fd: RawFd,
        pgoff: u64,
        off: &libc::xdp_ring_offset,
        size: u32,
        what: &str,
    ) -> io::Result<(Self, RingPtrs<T>)> {
        let len = off.desc as usize + size as usize * std::mem::size_of::<T>();
        // SAFETY: maps the ring the kernel made for `fd`; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_POPULATE,
                fd,
                pgoff as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("mmap of the {what} ring: {e}")));
        }
        let base = NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        // SAFETY: the offsets come from the kernel and lie inside the mapping just made.
        let ptrs = unsafe {
            RingPtrs {
                producer: base.as_ptr().add(off.producer as usize).cast(),
                consumer: base.as_ptr().add(off.consumer as usize).cast(),
                flags: base.as_ptr().add(off.flags as usize).cast(),
                descs: base.as_ptr().add(off.desc as usize).cast(),
                size,
            }
        };
        Ok((Mapping { base, len }, ptrs))
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping made in `map`, once.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

/// An open, bound AF_XDP socket with its rings.
pub struct Xsk {
    /// Received frames (none on a send-only socket).
    pub rx: Option<Consumer<libc::xdp_desc>>,
    /// Frames to send.
    pub tx: Producer<libc::xdp_desc>,
    /// Free chunks for the kernel to receive into.
    pub fill: Producer<u64>,
    /// Chunks the kernel is done sending.
    pub completion: Consumer<u64>,
    /// The kernel moves frames without copying.
    pub zero_copy: bool,
    /// Bound with `XDP_USE_SG`: frames larger than a chunk arrive and leave as several
    /// descriptors (false on a kernel before 6.6).
    pub multi_buffer: bool,
    // Declared last: the rings are unmapped before the socket closes.
    _maps: Vec<Mapping>,
    fd: OwnedFd,
}

// SAFETY: the ring pointers point into mappings owned by this value; moving the socket to a
// worker thread moves that ownership, and only that worker uses the rings.
unsafe impl Send for Xsk {}

impl Xsk {
    /// Opens a socket on `opts.queue` of `opts.ifindex`: registers `umem` when `share` is
    /// `None`, else shares the UMEM of socket `share` (with its own fill and completion
    /// rings, and its copy or zero-copy, need-wakeup and multi-buffer modes), maps the rings
    /// and binds, with multi-buffer where the kernel has it.
    ///
    /// # Safety
    /// `umem` must be a mapping that stays mapped for as long as the socket (and every socket
    /// sharing it) lives, and whose chunks the caller lends the kernel only through the fill
    /// and tx rings and does not touch while the kernel holds them: the kernel writes
    /// received frames into it.
    pub unsafe fn open(umem: Umem, opts: &XskOptions, share: Option<&Xsk>) -> io::Result<Self> {
        // SAFETY: socket(2) with constant arguments; the result is checked.
        let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("socket(AF_XDP): {e} (a kernel without CONFIG_XDP_SOCKETS?)"),
            ));
        }
        // SAFETY: `fd` was just opened and is ours.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let raw = fd.as_raw_fd();
        if share.is_none() {
            let reg = libc::xdp_umem_reg {
                addr: umem.addr as u64,
                len: umem.len as u64,
                chunk_size: umem.chunk,
                headroom: 0,
                flags: libc::XDP_UMEM_UNALIGNED_CHUNK_FLAG,
                tx_metadata_len: 0,
            };
            set_opt(raw, libc::SOL_XDP, libc::XDP_UMEM_REG, &reg, "registering the buffers as UMEM").map_err(|e| {
                match e.raw_os_error() {
                    Some(libc::ENOBUFS | libc::ENOMEM | libc::EPERM) => io::Error::new(
                        e.kind(),
                        format!("{e} (the UMEM is locked memory: raise `ulimit -l` or run with CAP_IPC_LOCK)"),
                    ),
                    _ => e,
                }
            })?;
        }
        let size = opts.ring_size;
        set_opt(raw, libc::SOL_XDP, libc::XDP_UMEM_FILL_RING, &size, "fill ring size")?;
        set_opt(raw, libc::SOL_XDP, libc::XDP_UMEM_COMPLETION_RING, &size, "completion ring size")?;
        if opts.rx {
            set_opt(raw, libc::SOL_XDP, libc::XDP_RX_RING, &size, "rx ring size")?;
        }
        set_opt(raw, libc::SOL_XDP, libc::XDP_TX_RING, &size, "tx ring size")?;
        // SAFETY: `xdp_mmap_offsets` is four structs of u64 offsets: every bit pattern is valid.
        let off: libc::xdp_mmap_offsets =
            unsafe { get_opt(raw, libc::SOL_XDP, libc::XDP_MMAP_OFFSETS, "XDP_MMAP_OFFSETS") }?;
        let mut maps = Vec::with_capacity(4);
        let (m, fill) = Mapping::map::<u64>(raw, libc::XDP_UMEM_PGOFF_FILL_RING, &off.fr, size, "fill")?;
        maps.push(m);
        let (m, completion) =
            Mapping::map::<u64>(raw, libc::XDP_UMEM_PGOFF_COMPLETION_RING, &off.cr, size, "completion")?;
        maps.push(m);
        let (m, tx) = Mapping::map::<libc::xdp_desc>(raw, libc::XDP_PGOFF_TX_RING as u64, &off.tx, size, "tx")?;
        maps.push(m);
        let rx = if opts.rx {
            let (m, rx) = Mapping::map::<libc::xdp_desc>(raw, libc::XDP_PGOFF_RX_RING as u64, &off.rx, size, "rx")?;
            maps.push(m);
            Some(rx)
        } else {
            None
        };
        let multi_buffer = match share {
            Some(owner) => {
                bind(raw, opts, Some(owner.fd()), false).map_err(|e| bind_error(e, opts))?;
                owner.multi_buffer
            }
            // A kernel without multi-buffer AF_XDP refuses the flag (and a driver whose
            // zero-copy lacks it refuses it with zero-copy on): bind without it.
            None => match bind(raw, opts, None, true) {
                Ok(()) => true,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::EOPNOTSUPP)) => {
                    bind(raw, opts, None, false).map_err(|e| bind_error(e, opts))?;
                    false
                }
                Err(e) => return Err(bind_error(e, opts)),
            },
        };
        // SAFETY: `xdp_options` is one u32 of flags: every bit pattern is valid.
        let options: libc::xdp_options = unsafe { get_opt(raw, libc::SOL_XDP, libc::XDP_OPTIONS, "XDP_OPTIONS") }?;
        // SAFETY: the rings were made by the kernel for this socket with `size` entries (a
        // power of two, checked by the kernel's setsockopt) and their mappings live in
        // `maps`, dropped with the rings; this socket is their only user-space user.
        unsafe {
            Ok(Xsk {
                rx: rx.map(|r| Consumer::new(r)),
                tx: Producer::new(tx),
                fill: Producer::new(fill),
                completion: Consumer::new(completion),
                zero_copy: options.flags & libc::XDP_OPTIONS_ZEROCOPY != 0,
                multi_buffer,
                _maps: maps,
                fd,
            })
        }
    }

    /// The socket's descriptor (for the XSKMAP, sharing the UMEM, and `poll`).
    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// A second descriptor of the socket, for reading its statistics from another thread.
    pub fn stats_handle(&self) -> io::Result<OwnedFd> {
        self.fd.try_clone()
    }

    /// Asks the kernel to look at the tx ring (`sendto`). Returns false when it stopped
    /// before the end of the ring for a reason a retry will not cure now (device queue full).
    #[inline]
    pub fn kick_tx(&self) -> bool {
        // SAFETY: a zero-length send with no address; the kernel only reads the tx ring.
        let r = unsafe { libc::sendto(self.fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT, std::ptr::null(), 0) };
        r >= 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EAGAIN)
    }

    /// Asks the kernel to look at the fill ring (`recvfrom`): when it said it needs it, and
    /// on every poll in busy polling, where the call runs the device's NAPI.
    #[inline]
    pub fn kick_rx(&self) {
        // SAFETY: a zero-length receive into nothing; only wakes the driver.
        unsafe {
            libc::recvfrom(
                self.fd(),
                std::ptr::null_mut(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        };
    }
}

/// Binds socket `fd` per `opts` (sharing socket `share`'s UMEM when given), with `XDP_USE_SG`
/// when `multi_buffer` (a sharer inherits the owner's).
fn bind(fd: RawFd, opts: &XskOptions, share: Option<RawFd>, multi_buffer: bool) -> io::Result<()> {
    // SAFETY: sockaddr_xdp is plain data; zero is valid for every field.
    let mut sa: libc::sockaddr_xdp = unsafe { std::mem::zeroed() };
    sa.sxdp_family = libc::AF_XDP as u16;
    sa.sxdp_ifindex = opts.ifindex;
    sa.sxdp_queue_id = opts.queue;
    sa.sxdp_flags = match share {
        // A sharer inherits copy or zero-copy and need-wakeup from the UMEM's first socket.
        Some(owner) => {
            sa.sxdp_shared_umem_fd = owner as u32;
            libc::XDP_SHARED_UMEM
        }
        None => {
            libc::XDP_USE_NEED_WAKEUP
                | if multi_buffer { libc::XDP_USE_SG } else { 0 }
                | match opts.zero_copy {
                    ZeroCopy::Auto => 0,
                    ZeroCopy::On => libc::XDP_ZEROCOPY,
                    ZeroCopy::Off => libc::XDP_COPY,
                }
        }
    };
    // SAFETY: `sa` is a valid sockaddr_xdp and the length is its size.
    let r = unsafe {
        libc::bind(
            fd,
            (&sa as *const libc::sockaddr_xdp).cast(),
            std::mem::size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
        )
    };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(()) }
}

/// Error `e` of binding per `opts`, with what it most likely means.
fn bind_error(e: io::Error, opts: &XskOptions) -> io::Error {
    let hint = match e.raw_os_error() {
        Some(libc::EBUSY) => " (another AF_XDP socket is bound to this queue)",
        Some(libc::EINVAL) => " (the interface has no such queue: see `ethtool -l`, or fewer af-xdp queues)",
        Some(libc::EOPNOTSUPP) => " (the driver has no zero-copy: use zero-copy auto or off)",
        Some(libc::ENETDOWN) => " (the interface is down)",
        _ => "",
    };
    io::Error::new(e.kind(), format!("binding to queue {}: {e}{hint}", opts.queue))
}

/// The frames the kernel could not deliver to one socket since it opened: no free chunk in
/// the fill ring (`rx_dropped`) or no room in the rx ring (`rx_ring_full`).
pub fn kernel_drops(fd: &OwnedFd) -> io::Result<u64> {
    // SAFETY: `xdp_statistics` is six u64 counters: every bit pattern is valid.
    let st: libc::xdp_statistics =
        unsafe { get_opt(fd.as_raw_fd(), libc::SOL_XDP, libc::XDP_STATISTICS, "XDP_STATISTICS") }?;
    Ok(st.rx_dropped + st.rx_ring_full)
}
