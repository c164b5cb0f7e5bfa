//! Per-worker packet buffers: one data region, one dense metadata array, a LIFO free list.
//!
//! Packet data lives in slots of [`STRIDE`] bytes — 33 cache lines, deliberately not a power
//! of two, so that the first line of every packet does not land in the same L1 cache sets.
//! Each slot starts with [`HEADROOM`] bytes for pushed headers (VLAN tags, MPLS labels).
//! Metadata (offset, length, interfaces, drop reason) is a separate array of 16-byte entries,
//! four per cache line. Vectors carry `u32` buffer indices into both.
//!
//! Invariant: every index that leaves [`BufferPool::alloc`] is `< capacity`, and a buffer's
//! `offset + len <= STRIDE`. The accessors rely on it to skip bounds checks on the hot path.

use crate::hugemem::HugeRegion;

/// Bytes between the starts of two consecutive packet slots (33 × 64).
pub const STRIDE: usize = 2112;
/// Bytes reserved in front of the packet for headers pushed on output.
pub const HEADROOM: usize = 64;
/// Largest frame a buffer holds (bytes after the headroom).
pub const DATA_CAPACITY: usize = STRIDE - HEADROOM;
/// [`BufferMeta::error`] of a packet no node has dropped.
pub const NOT_DROPPED: u16 = u16::MAX;

/// Per-buffer metadata, kept apart from the packet bytes: 32 bytes, two per cache line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(32))]
pub struct BufferMeta {
    /// Start of the frame within the slot.
    pub offset: u16,
    /// Frame length in bytes (without FCS).
    pub len: u16,
    /// Interface the frame arrived on (a sub-interface for tagged frames).
    pub rx_if: u16,
    /// Interface chosen for output (0 = not yet decided).
    pub tx_if: u16,
    /// Drop reason (a [`crate::errors::DropReason`] as `u16`) when sent to `error-drop`;
    /// [`NOT_DROPPED`] otherwise.
    pub error: u16,
    /// Bytes from the frame start to the network header. Drivers deliver plain Ethernet, so
    /// it starts at 14 (the default); nodes that push or pop headers keep it right.
    pub l3_offset: u16,
    /// Length of the prefix the destination matched (set by the lookup).
    pub dst_prefix_len: u8,
    /// Adjacency (next hop) chosen by the lookup.
    pub adj: u32,
}

impl Default for BufferMeta {
    fn default() -> Self {
        Self {
            offset: HEADROOM as u16,
            len: 0,
            rx_if: 0,
            tx_if: 0,
            error: NOT_DROPPED,
            l3_offset: wire::ethernet::HEADER_LEN as u16,
            dst_prefix_len: 0,
            adj: 0,
        }
    }
}

/// A worker's buffers. Not shared: only the owning worker touches it.
pub struct BufferPool {
    data: HugeRegion,
    meta: Vec<BufferMeta>,
    free: Vec<u32>,
    capacity: u32,
}

impl BufferPool {
    /// Creates `capacity` buffers, all free, with their memory touched (faulted in) now.
    pub fn new(capacity: u32) -> std::io::Result<Self> {
        let mut data = HugeRegion::new(capacity as usize * STRIDE)?;
        for page in data.as_mut_slice().chunks_mut(4096) {
            page[0] = 0;
        }
        let meta = vec![BufferMeta::default(); capacity as usize];
        // Reverse order so that the first allocations get the lowest indices.
        let free = (0..capacity).rev().collect();
        Ok(Self { data, meta, free, capacity })
    }

    /// Total buffers in the pool.
    pub fn capacity(&self) -> u32 {
        self.capacity
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

    /// Returns buffers to the pool.
    #[inline]
    pub fn free(&mut self, indices: &[u32]) {
        debug_assert!(self.free.len() + indices.len() <= self.capacity as usize, "double free");
        debug_assert!(indices.iter().all(|&i| i < self.capacity));
        self.free.extend_from_slice(indices);
    }

    /// The metadata of buffer `i`.
    #[inline(always)]
    pub fn meta(&self, i: u32) -> &BufferMeta {
        debug_assert!(i < self.capacity);
        // SAFETY: indices come from `alloc`, so `i < capacity == meta.len()` (module invariant).
        unsafe { self.meta.get_unchecked(i as usize) }
    }

    /// The metadata of buffer `i`, writable.
    #[inline(always)]
    pub fn meta_mut(&mut self, i: u32) -> &mut BufferMeta {
        debug_assert!(i < self.capacity);
        // SAFETY: as in `meta`.
        unsafe { self.meta.get_unchecked_mut(i as usize) }
    }

    /// The whole slot of buffer `i` (headroom included).
    #[inline(always)]
    pub fn slot(&self, i: u32) -> &[u8; STRIDE] {
        debug_assert!(i < self.capacity);
        // SAFETY: `i < capacity` and the region holds `capacity * STRIDE` bytes, so the
        // STRIDE bytes at `i * STRIDE` are in bounds; `[u8; N]` has alignment 1.
        unsafe { &*self.data.as_slice().as_ptr().add(i as usize * STRIDE).cast::<[u8; STRIDE]>() }
    }

    /// The whole slot of buffer `i`, writable.
    #[inline(always)]
    pub fn slot_mut(&mut self, i: u32) -> &mut [u8; STRIDE] {
        debug_assert!(i < self.capacity);
        // SAFETY: as in `slot`, and `&mut self` makes the access exclusive.
        unsafe { &mut *self.data.as_mut_slice().as_mut_ptr().add(i as usize * STRIDE).cast::<[u8; STRIDE]>() }
    }

    /// The frame bytes of buffer `i` (`offset .. offset + len`).
    #[inline(always)]
    pub fn frame(&self, i: u32) -> &[u8] {
        let m = *self.meta(i);
        let (o, l) = (m.offset as usize, m.len as usize);
        debug_assert!(o + l <= STRIDE);
        // SAFETY: `offset + len <= STRIDE` is kept by every writer (module invariant).
        unsafe { self.slot(i).get_unchecked(o..o + l) }
    }

    /// The frame bytes of buffer `i`, writable.
    #[inline(always)]
    pub fn frame_mut(&mut self, i: u32) -> &mut [u8] {
        let m = *self.meta(i);
        let (o, l) = (m.offset as usize, m.len as usize);
        debug_assert!(o + l <= STRIDE);
        // SAFETY: as in `frame`.
        unsafe { self.slot_mut(i).get_unchecked_mut(o..o + l) }
    }

    /// The 64 bytes starting at the frame (or ending at the slot's end, for a frame that
    /// starts in the slot's last 64 bytes). Bytes past the frame's length are stale: callers
    /// look only at the first `len` of them.
    #[inline(always)]
    pub fn line(&self, i: u32) -> &[u8; 64] {
        let o = (self.meta(i).offset as usize).min(STRIDE - 64);
        self.slot(i)[o..o + 64].try_into().expect("64 bytes")
    }

    /// The first 8 bytes at the frame start as a big-endian `u64` (the destination MAC in the
    /// top 48 bits); stale beyond a frame shorter than 8 bytes.
    #[inline(always)]
    pub fn head_u64(&self, i: u32) -> u64 {
        u64::from_be_bytes(self.line(i)[..8].try_into().expect("8 bytes"))
    }

    /// Makes room for `n` more bytes in front of the frame (from the headroom) and returns
    /// the new frame, or `None` when the headroom is too small.
    pub fn grow_head(&mut self, i: u32, n: usize) -> Option<&mut [u8]> {
        let m = self.meta_mut(i);
        let o = usize::from(m.offset).checked_sub(n)?;
        m.offset = o as u16;
        m.len += n as u16;
        Some(self.frame_mut(i))
    }

    /// Drops the first `n` bytes of the frame and returns what is left, or `None` when the
    /// frame is shorter than `n`.
    pub fn shrink_head(&mut self, i: u32, n: usize) -> Option<&mut [u8]> {
        let m = self.meta_mut(i);
        let len = usize::from(m.len).checked_sub(n)?;
        m.offset += n as u16;
        m.len = len as u16;
        Some(self.frame_mut(i))
    }

    /// Copies `bytes` into buffer `i` at the default offset and sets its length.
    /// Frames longer than [`DATA_CAPACITY`] are cut to it; returns the stored length.
    pub fn write_frame(&mut self, i: u32, bytes: &[u8]) -> usize {
        let n = bytes.len().min(DATA_CAPACITY);
        self.slot_mut(i)[HEADROOM..HEADROOM + n].copy_from_slice(&bytes[..n]);
        let m = self.meta_mut(i);
        *m = BufferMeta { len: n as u16, ..BufferMeta::default() };
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alloc_free_lifo_and_exhaustion() {
        let mut p = BufferPool::new(4).unwrap();
        let mut out = [0u32; 8];
        assert_eq!(p.alloc(&mut out[..3]), 3);
        assert_eq!(&out[..3], &[2, 1, 0]);
        assert_eq!(p.alloc(&mut out[3..8]), 1);
        assert_eq!(p.alloc(&mut out[..1]), 0);
        p.free(&[2]);
        assert_eq!(p.alloc(&mut out[..1]), 1);
        assert_eq!(out[0], 2, "the most recently freed buffer comes back first");
    }

    #[test]
    fn frames_do_not_overlap_and_stride_is_not_power_of_two() {
        assert!(!STRIDE.is_power_of_two() && STRIDE.is_multiple_of(64));
        let mut p = BufferPool::new(3).unwrap();
        let mut ids = [0u32; 3];
        p.alloc(&mut ids);
        for &i in &ids {
            p.write_frame(i, &[i as u8; 100]);
        }
        for &i in &ids {
            assert!(p.frame(i).iter().all(|&b| b == i as u8));
            assert_eq!(p.frame(i).len(), 100);
        }
        assert_eq!(p.write_frame(0, &[0u8; 5000]), DATA_CAPACITY);
    }
}
