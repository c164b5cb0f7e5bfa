//! Per-worker packet buffers: one data region, one dense metadata array, a LIFO free list.
//!
//! Packet data lives in slots of one stride each ([`stride_for`] of the configured data size,
//! `buffers.data-size`: 2112 bytes for the default 2048, 9280 for 9216): a whole number of
//! cache lines, always an odd one, so that the first line of every packet does not land in
//! the same L1 cache sets. Each slot starts with [`HEADROOM`] bytes for pushed headers (VLAN
//! tags, MPLS labels). Metadata (offset, length, interfaces, drop reason) is a separate array
//! of 32-byte entries, two per cache line. Vectors carry `u32` buffer indices into both.
//!
//! Soundness without per-access bounds checks: the pool maps `2^k ≥ capacity` slots and
//! metadata entries (the ones past `capacity` are never handed out and stay untouched, so
//! they cost address space only), and every accessor masks the index with `2^k − 1`. So any
//! `u32` a caller passes addresses memory inside the pool, at the price of one `and`; an
//! index the pool did not hand out is a logic error, never an access outside it. One
//! exception to "never undefined behaviour": the AF_XDP driver lends free buffers to the
//! kernel (fill and tx rings), which writes and reads them meanwhile; the driver never hands
//! such an index to the graph, but a made-up index that lands on one would race with the
//! kernel over plain bytes. A frame never leaves its slot: [`BufferMeta`]'s offset and length
//! are private, the pool's own constructors ([`BufferPool::received`],
//! [`BufferPool::placed`]) cut them to its stride, and every way of changing them keeps the
//! frame's end where it was. The region also maps [`MAX_STRIDE`] `−` stride bytes past its
//! last slot, so even a metadata entry copied from a pool of larger buffers (a logic error)
//! reads and writes only the pool's own memory.

use crate::runtime::hugemem::HugeRegion;

/// Bytes reserved in front of the packet for headers pushed on output.
pub const HEADROOM: usize = 64;
/// The default of `buffers.data-size`: the largest frame a buffer holds after its headroom.
pub const DEFAULT_DATA_SIZE: u16 = 2048;
/// The smallest `buffers.data-size`.
pub const MIN_DATA_SIZE: u16 = 2048;
/// The largest `buffers.data-size` (VPP's `default-data-size` range ends here too).
pub const MAX_DATA_SIZE: u16 = 9216;
/// The stride of the largest buffers: no frame's offset plus length ever exceeds it.
pub const MAX_STRIDE: usize = stride_for(MAX_DATA_SIZE);
/// [`BufferMeta::error`] of a packet no node has dropped.
pub const NOT_DROPPED: u16 = u16::MAX;

/// Bytes between the starts of two consecutive slots of buffers holding `data_size` bytes
/// after the headroom: rounded up to whole cache lines, and to an odd number of them.
pub const fn stride_for(data_size: u16) -> usize {
    let lines = (data_size as usize + HEADROOM).div_ceil(64);
    (lines | 1) * 64
}

/// Per-buffer metadata, kept apart from the packet bytes: 32 bytes, two per cache line.
///
/// Invariant (relied on by [`BufferPool::frame`]): `offset + len` is at most the stride of the
/// pool that made it, and never more than [`MAX_STRIDE`]. The two fields are private;
/// [`BufferPool::received`], [`BufferPool::placed`], [`BufferPool::grow_head`] and
/// [`BufferPool::shrink_head`] are the only ways to set them, and each keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(32))]
pub struct BufferMeta {
    offset: u16,
    len: u16,
    /// Interface the frame arrived on (a sub-interface for tagged frames).
    pub rx_if: u16,
    /// Interface chosen for output (0 = not yet decided).
    pub tx_if: u16,
    /// Drop reason (a [`crate::runtime::drops::DropReason`] as `u16`) when sent to `error-drop`;
    /// [`NOT_DROPPED`] otherwise.
    pub error: u16,
    /// Bytes from the frame start to the network header. Drivers deliver plain Ethernet, so
    /// it starts at 14 (the default); nodes that push or pop headers keep it right.
    pub l3_offset: u16,
    /// The features' per-packet results, opaque to the runtime (layer 3 keeps the route a
    /// lookup chose there and names its fields: `l3::RouteMeta`). Zero when received.
    pub scratch: Scratch,
    /// Traced and sampled marks ([`crate::runtime::trace::TRACED`] and the others there).
    pub flags: u8,
}

/// Per-packet scratch in the buffer metadata for what a feature's node leaves for the nodes
/// after it. The runtime gives the fields no meaning; the feature that writes them does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C)]
pub struct Scratch {
    /// A 32-bit result.
    pub word: u32,
    /// A 16-bit result.
    pub half: u16,
    /// An 8-bit result.
    pub byte: u8,
    /// A second 8-bit result.
    pub byte2: u8,
    /// A second 16-bit result.
    pub half2: u16,
}

impl Default for BufferMeta {
    fn default() -> Self {
        Self::placed(HEADROOM, 0, 0, MAX_STRIDE)
    }
}

impl BufferMeta {
    /// The metadata of a frame of `len` bytes received on `rx_if` that a driver placed
    /// `headroom` bytes into a slot of `stride` bytes. Both are cut to what the slot holds.
    #[inline(always)]
    const fn placed(headroom: usize, len: usize, rx_if: u16, stride: usize) -> Self {
        let stride = if stride < MAX_STRIDE { stride } else { MAX_STRIDE };
        let offset = if headroom < stride { headroom } else { stride };
        let len = if len < stride - offset { len } else { stride - offset };
        Self {
            offset: offset as u16,
            len: len as u16,
            rx_if,
            tx_if: 0,
            error: NOT_DROPPED,
            l3_offset: wire::ethernet::HEADER_LEN as u16,
            scratch: Scratch { word: 0, half: 0, byte: 0, byte2: 0, half2: 0 },
            flags: 0,
        }
    }

    /// Start of the frame within its slot (bytes of headroom left in front of it).
    #[inline(always)]
    pub fn offset(&self) -> u16 {
        self.offset
    }

    /// Frame length in bytes (without FCS).
    #[inline(always)]
    pub fn len(&self) -> u16 {
        self.len
    }

    /// True for an empty frame.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Where a pool's memory is, for SIMD code that gathers fields of many buffers at once: buffer
/// `i`'s metadata at `meta + (i & mask)` and its slot at `data + (i & mask) * stride`. The
/// byte offsets of [`BufferMeta`]'s fields it reads are the constants below.
#[derive(Debug, Clone, Copy)]
pub struct RawPool {
    /// The first slot.
    pub data: *const u8,
    /// The first metadata entry.
    pub meta: *const BufferMeta,
    /// `2^k − 1` with `2^k` slots and metadata entries.
    pub mask: u32,
    /// Bytes from one slot to the next.
    pub stride: u32,
}

impl RawPool {
    /// Byte offset in [`BufferMeta`] of the 32-bit word holding the frame's offset in its slot
    /// (low 16 bits) and length (high 16 bits).
    pub const OFFSET_LEN: usize = 0;
    /// Byte offset in [`BufferMeta`] of the 32-bit word holding `error` (low 16 bits) and
    /// `l3_offset` (high 16 bits).
    pub const ERROR_L3: usize = 8;

    /// True when every slot's byte offset fits an `i32` (the index type of SIMD gathers):
    /// pools up to 1 GiB.
    pub fn gatherable(&self) -> bool {
        (self.mask as usize + 1) * self.stride as usize + MAX_STRIDE <= 1 << 30
    }
}

const _: () = {
    assert!(std::mem::offset_of!(BufferMeta, offset) == RawPool::OFFSET_LEN);
    assert!(std::mem::offset_of!(BufferMeta, len) == RawPool::OFFSET_LEN + 2);
    assert!(std::mem::offset_of!(BufferMeta, error) == RawPool::ERROR_L3);
    assert!(std::mem::offset_of!(BufferMeta, l3_offset) == RawPool::ERROR_L3 + 2);
    assert!(std::mem::size_of::<BufferMeta>() == 32);
};

/// A worker's buffers. Not shared: only the owning worker touches it.
pub struct BufferPool {
    data: HugeRegion,
    meta: Vec<BufferMeta>,
    free: Vec<u32>,
    /// How many entries at the bottom of `free` were already free at the last
    /// [`BufferPool::settle`] (at most `free.len()` of them still are).
    settled: usize,
    capacity: u32,
    /// `2^k − 1` with `2^k ≥ capacity`: `data` holds `mask + 1` slots and `meta` as many
    /// entries, so `i & mask` is in bounds for every `u32` `i`.
    mask: u32,
    /// Bytes from one slot to the next ([`stride_for`] the data size).
    stride: usize,
    /// `stride − 64`: the last offset in a slot that still has a whole line after it
    /// ([`BufferPool::line`]), kept so that reading a line costs no subtraction.
    last_line: usize,
}

impl BufferPool {
    /// Creates `capacity` buffers (at least 1) of the default data size
    /// ([`DEFAULT_DATA_SIZE`]), all free, with their memory touched (faulted in) now.
    pub fn new(capacity: u32) -> std::io::Result<Self> {
        Self::with_data_size(capacity, DEFAULT_DATA_SIZE)
    }

    /// Creates `capacity` buffers (at least 1) that each hold a frame of `data_size` bytes
    /// after the headroom (cut to [`MIN_DATA_SIZE`]..=[`MAX_DATA_SIZE`]), all free, with their
    /// memory touched (faulted in) now.
    pub fn with_data_size(capacity: u32, data_size: u16) -> std::io::Result<Self> {
        let capacity = capacity.max(1);
        let stride = stride_for(data_size.clamp(MIN_DATA_SIZE, MAX_DATA_SIZE));
        let too_big = || std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{capacity} buffers"));
        let mapped = capacity.checked_next_power_of_two().ok_or_else(too_big)?;
        let bytes = (mapped as usize).checked_mul(stride).ok_or_else(too_big)? + (MAX_STRIDE - stride);
        let mut data = HugeRegion::new(bytes)?;
        for page in data.as_mut_slice()[..capacity as usize * stride].chunks_mut(4096) {
            page[0] = 0;
        }
        let meta = vec![BufferMeta::default(); mapped as usize];
        // Reverse order so that the first allocations get the lowest indices.
        let free = (0..capacity).rev().collect();
        Ok(Self { data, meta, free, settled: 0, capacity, mask: mapped - 1, stride, last_line: stride - 64 })
    }

    /// Total buffers in the pool.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Bytes from one slot to the next (the headroom, the data size, and padding to an odd
    /// number of cache lines).
    #[inline(always)]
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The largest frame a buffer holds at the default offset ([`HEADROOM`]).
    #[inline(always)]
    pub fn data_capacity(&self) -> usize {
        self.stride - HEADROOM
    }

    /// Bytes of packet memory the pool maps (its slots, as a power of two of them, and the
    /// guard past the last).
    pub fn mapped_bytes(&self) -> usize {
        self.data.len()
    }

    /// The metadata of a frame of `len` bytes just received on `rx_if` at the full headroom.
    /// A `len` above [`BufferPool::data_capacity`] is cut to it (the slot holds no more).
    #[inline(always)]
    pub fn received(&self, len: usize, rx_if: u16) -> BufferMeta {
        BufferMeta::placed(HEADROOM, len, rx_if, self.stride)
    }

    /// The metadata of a frame of `len` bytes received on `rx_if` that a driver placed
    /// `headroom` bytes into its slot. Both are cut to what the slot holds.
    #[inline(always)]
    pub fn placed(&self, headroom: usize, len: usize, rx_if: u16) -> BufferMeta {
        BufferMeta::placed(headroom, len, rx_if, self.stride)
    }

    /// The memory of all slots (start, bytes; slot `i` at `i * stride`), to register with the
    /// kernel as an AF_XDP UMEM. The kernel then writes received frames into free buffers
    /// handed to it and reads frames to send from them, never into a buffer the pool has
    /// handed out to the graph meanwhile (the driver keeps those apart).
    pub fn umem_region(&self) -> (*mut u8, usize) {
        (self.data.as_ptr(), self.data.len())
    }

    /// Where its memory is, for SIMD gathers across buffers.
    #[inline(always)]
    pub fn raw(&self) -> RawPool {
        RawPool { data: self.data.as_ptr(), meta: self.meta.as_ptr(), mask: self.mask, stride: self.stride as u32 }
    }

    /// Buffers currently free.
    pub fn free_count(&self) -> usize {
        self.free.len()
    }

    /// Takes up to `out.len()` buffers (the most recently freed first, still warm in cache),
    /// writes their indices into `out` and returns how many it took.
    #[inline]
    pub fn alloc(&mut self, out: &mut [u32]) -> usize {
        let n = out.len().min(self.free.len());
        let from = self.free.len() - n;
        out[..n].copy_from_slice(&self.free[from..]);
        self.free.truncate(from);
        n
    }

    /// Marks every buffer free now as settled: [`BufferPool::alloc_settled`] hands out only
    /// these, never one freed after this call. The graph settles the pool when a run starts,
    /// so that a packet the worker makes mid-run never reuses a buffer an unpublished sFlow
    /// sample still describes (samples are completed from their buffers' metadata after the
    /// run).
    pub fn settle(&mut self) {
        self.settled = self.free.len();
    }

    /// Settled buffers still free.
    pub fn settled_count(&self) -> usize {
        self.settled.min(self.free.len())
    }

    /// Takes one settled buffer (see [`BufferPool::settle`]), or `None` when none is left.
    /// Cold path: it shifts the entries freed since the pool was settled.
    pub fn alloc_settled(&mut self) -> Option<u32> {
        let s = self.settled_count();
        let i = self.free.remove(s.checked_sub(1)?);
        self.settled = s - 1;
        Some(i)
    }

    /// Returns buffers to the pool.
    ///
    /// # Panics
    /// On an index the pool never handed out, or more frees than buffers (a double free):
    /// both are bugs in the caller, caught here before they can hand one buffer out twice.
    #[inline]
    pub fn free(&mut self, indices: &[u32]) {
        assert!(self.free.len() + indices.len() <= self.capacity as usize, "buffer double free");
        let highest = indices.iter().fold(0, |a, &i| a.max(i));
        assert!(indices.is_empty() || highest < self.capacity, "buffer {highest} is not in the pool");
        self.free.extend_from_slice(indices);
    }

    /// Where buffer `i` lives: `i` masked into the mapped range (see the module doc).
    #[inline(always)]
    fn at(&self, i: u32) -> usize {
        (i & self.mask) as usize
    }

    /// The metadata of buffer `i`.
    #[inline(always)]
    pub fn meta(&self, i: u32) -> &BufferMeta {
        let k = self.at(i);
        // SAFETY: `k <= mask` and `meta.len() == mask + 1` (set in `new`, never resized).
        unsafe { self.meta.get_unchecked(k) }
    }

    /// The metadata of buffer `i`, writable.
    #[inline(always)]
    pub fn meta_mut(&mut self, i: u32) -> &mut BufferMeta {
        let k = self.at(i);
        // SAFETY: as in `meta`.
        unsafe { self.meta.get_unchecked_mut(k) }
    }

    /// The whole slot of buffer `i` (headroom included): [`BufferPool::stride`] bytes.
    #[inline(always)]
    pub fn slot(&self, i: u32) -> &[u8] {
        let k = self.at(i);
        // SAFETY: `k <= mask` and the region holds `(mask + 1) * stride` bytes and more (set
        // in `new`), so the `stride` bytes at `k * stride` are in bounds; the pointer comes
        // from the mapping itself, and `&self` rules out a writer.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr().add(k * self.stride), self.stride) }
    }

    /// The whole slot of buffer `i`, writable.
    #[inline(always)]
    pub fn slot_mut(&mut self, i: u32) -> &mut [u8] {
        let k = self.at(i);
        // SAFETY: as in `slot`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_ptr().add(k * self.stride), self.stride) }
    }

    /// The frame bytes of buffer `i` (`offset .. offset + len`).
    #[inline(always)]
    pub fn frame(&self, i: u32) -> &[u8] {
        let (k, m) = (self.at(i), self.meta(i));
        let (o, l) = (m.offset as usize, m.len as usize);
        // SAFETY: `offset + len <= MAX_STRIDE` is `BufferMeta`'s invariant and the region maps
        // `MAX_STRIDE` bytes from the start of its last slot (`k <= mask`), so the range is
        // inside the mapping; `&self` rules out a writer.
        unsafe { std::slice::from_raw_parts(self.data.as_ptr().add(k * self.stride + o), l) }
    }

    /// The frame bytes of buffer `i`, writable.
    #[inline(always)]
    pub fn frame_mut(&mut self, i: u32) -> &mut [u8] {
        let (k, m) = (self.at(i), self.meta(i));
        let (o, l) = (m.offset as usize, m.len as usize);
        // SAFETY: as in `frame`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.data.as_ptr().add(k * self.stride + o), l) }
    }

    /// Copies `len` bytes at offset `from` of buffer `src`'s slot to offset `to` of buffer
    /// `dst`'s slot (the same buffer, or overlapping ranges, are fine). Not the metadata.
    ///
    /// # Panics
    /// When either range does not lie inside a slot.
    pub fn copy_bytes(&mut self, src: u32, from: usize, dst: u32, to: usize, len: usize) {
        assert!(from + len <= self.stride && to + len <= self.stride, "a copy outside the slot");
        let base = self.data.as_ptr();
        let (s, d) = (self.at(src) * self.stride + from, self.at(dst) * self.stride + to);
        // SAFETY: both ranges lie inside a slot (checked above) of the region (`at` masks the
        // index), `&mut self` makes the access exclusive, and `copy` allows overlap.
        unsafe { std::ptr::copy(base.add(s), base.add(d), len) };
    }

    /// Starts loading the cache line at the start of buffer `i`'s frame (for a driver whose
    /// frames were written by someone else: the kernel, another core).
    #[inline(always)]
    pub fn prefetch_frame(&self, i: u32) {
        let at = self.at(i) * self.stride + usize::from(self.meta(i).offset);
        crate::runtime::prefetch(self.data.as_ptr().wrapping_add(at));
    }

    /// The 64 bytes starting at the frame (or ending at the slot's end, for a frame that
    /// starts in the slot's last 64 bytes). Bytes past the frame's length are stale: callers
    /// look only at the first `len` of them.
    #[inline(always)]
    pub fn line(&self, i: u32) -> &[u8; 64] {
        let (k, o) = (self.at(i), (self.meta(i).offset as usize).min(self.last_line));
        // SAFETY: `o + 64 <= stride`, so the 64 bytes lie in slot `k`, inside the region (see
        // `slot`); `[u8; 64]` has alignment 1, and `&self` rules out a writer.
        unsafe { &*self.data.as_ptr().add(k * self.stride + o).cast::<[u8; 64]>() }
    }

    /// The first 8 bytes at the frame start as a big-endian `u64` (the destination MAC in the
    /// top 48 bits); stale beyond a frame shorter than 8 bytes.
    #[inline(always)]
    pub fn head_u64(&self, i: u32) -> u64 {
        u64::from_be_bytes(self.line(i)[..8].try_into().expect("8 bytes"))
    }

    /// Makes room for `n` more bytes in front of the frame (from the headroom) and returns
    /// the new frame, or `None` (frame unchanged) when the headroom is too small.
    #[inline]
    pub fn grow_head(&mut self, i: u32, n: usize) -> Option<&mut [u8]> {
        let m = self.meta_mut(i);
        let o = usize::from(m.offset).checked_sub(n)?;
        m.offset = o as u16;
        m.len += n as u16; // the end does not move, so `offset + len` stays within the slot
        Some(self.frame_mut(i))
    }

    /// Drops the first `n` bytes of the frame and returns what is left, or `None` (frame
    /// unchanged) when the frame is shorter than `n`.
    #[inline]
    pub fn shrink_head(&mut self, i: u32, n: usize) -> Option<&mut [u8]> {
        let m = self.meta_mut(i);
        let len = usize::from(m.len).checked_sub(n)?;
        m.offset += n as u16; // the end does not move
        m.len = len as u16;
        Some(self.frame_mut(i))
    }

    /// Copies `bytes` into buffer `i` at the default offset ([`HEADROOM`]) and sets its
    /// length. Frames longer than [`BufferPool::data_capacity`] are cut to it; returns the
    /// stored length.
    pub fn write_frame(&mut self, i: u32, bytes: &[u8]) -> usize {
        self.write_frame_at(i, HEADROOM, bytes)
    }

    /// Copies `bytes` into buffer `i` `headroom` bytes into its slot (a driver's placement)
    /// and sets its length; both are cut to what the slot holds. Returns the stored length.
    pub fn write_frame_at(&mut self, i: u32, headroom: usize, bytes: &[u8]) -> usize {
        let m = self.placed(headroom, bytes.len(), 0);
        let (o, n) = (usize::from(m.offset), usize::from(m.len));
        self.slot_mut(i)[o..o + n].copy_from_slice(&bytes[..n]);
        *self.meta_mut(i) = m;
        n
    }
}

#[cfg(test)]
mod tests;
