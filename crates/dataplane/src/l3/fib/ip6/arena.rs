//! The lines of the IPv6 table's trees: one huge-page mapping, indexed by 32-bit line numbers
//! (so a first-level entry holds a tree in 32 bits), and the writer's allocator over it.

use super::{EMPTY, Line};
use crate::runtime::hugemem::HugeRegion;
use std::collections::{BTreeMap, BTreeSet};

/// Bytes of the mapping: address space only until lines are written. 256 MiB hold about seven
/// million routes of the real table's kind (about 38 bytes of lines a route); under Miri, which
/// allocates a mapping whole, 1 MiB.
pub(super) const BYTES: usize = if cfg!(miri) { 1 << 20 } else { 256 << 20 };
/// Lines of the mapping (at most 2^26: a first-level entry holds a line's byte offset in 32
/// bits).
pub(super) const CAPACITY: u32 = (BYTES / 64) as u32;
const _: () = assert!(CAPACITY <= 1 << 26);

/// The mapping. Line 0 is the empty leaf, written once at creation; the writer writes other
/// lines only while no reader can reach them (free, or never used), and readers read lines
/// only through trees published after their lines were written.
pub(super) struct Lines {
    mem: HugeRegion,
}

impl Lines {
    /// A mapping whose line 0 is the empty leaf, on huge pages when `huge` (else small ones:
    /// a small table's few lines).
    pub(super) fn new(huge: bool) -> std::io::Result<Self> {
        let lines = Lines { mem: HugeRegion::with_pages(BYTES, huge)? };
        // SAFETY: line 0 of a fresh mapping, not shared yet.
        unsafe { lines.write(0, &[EMPTY]) };
        Ok(lines)
    }

    /// Line 0 (the pointer carries the mapping's provenance: lines are reached from it).
    #[inline(always)]
    pub(super) fn base(&self) -> *mut Line {
        self.mem.as_ptr().cast()
    }

    /// The line at address `addr` (a line of this mapping, from [`Lines::base`] and an offset).
    #[inline(always)]
    pub(super) fn at(&self, addr: usize) -> *const Line {
        self.base().with_addr(addr).cast_const()
    }

    /// Writes `lines` at line `at`.
    ///
    /// # Safety
    /// `at..at + lines.len()` is within the mapping, and no reader can reach those lines
    /// (they are free, and unpublished).
    pub(super) unsafe fn write(&self, at: u32, lines: &[Line]) {
        debug_assert!(at as usize + lines.len() <= CAPACITY as usize);
        // SAFETY: the caller's; `lines` is not in the mapping (the writer builds trees in its
        // own memory), so the two do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(lines.as_ptr(), self.base().add(at as usize), lines.len()) };
    }
}

/// The writer's allocator of lines: free runs by first line and by length (the shortest that
/// fits is taken, and split), merged with their free neighbours when given back, and the first
/// line never used.
pub(super) struct Alloc {
    /// Free runs: first line → length.
    by_start: BTreeMap<u32, u32>,
    /// The same runs, as (length, first line).
    by_len: BTreeSet<(u32, u32)>,
    top: u32,
    /// Lines it may hand out: the mapping's (less in tests).
    cap: u32,
}

impl Default for Alloc {
    fn default() -> Self {
        Alloc { by_start: BTreeMap::new(), by_len: BTreeSet::new(), top: 1, cap: CAPACITY }
    }
}

impl Alloc {
    /// The first of `n` free lines, or `None` when the mapping has no room for them.
    pub(super) fn take(&mut self, n: u32) -> Option<u32> {
        if let Some(&(len, at)) = self.by_len.range((n, 0)..).next() {
            self.remove(at, len);
            if len > n {
                self.insert(at + n, len - n);
            }
            return Some(at);
        }
        let at = self.top;
        self.top = at.checked_add(n).filter(|&t| t <= self.cap)?;
        Some(at)
    }

    /// Gives back `n` lines from `at` (no reader can reach them any more), merged with the free
    /// runs just before and after them.
    pub(super) fn give(&mut self, mut at: u32, mut n: u32) {
        debug_assert!(n > 0 && at + n <= self.top);
        if let Some((&before, &len)) = self.by_start.range(..at).next_back()
            && before + len == at
        {
            self.remove(before, len);
            (at, n) = (before, len + n);
        }
        if let Some(&len) = self.by_start.get(&(at + n)) {
            self.remove(at + n, len);
            n += len;
        }
        self.insert(at, n);
    }

    /// Records free run `at..at + n`.
    fn insert(&mut self, at: u32, n: u32) {
        self.by_start.insert(at, n);
        self.by_len.insert((n, at));
    }

    /// Forgets free run `at..at + n`.
    fn remove(&mut self, at: u32, n: u32) {
        self.by_start.remove(&at);
        self.by_len.remove(&(n, at));
    }

    /// Lines ever used (the mapping's memory the table touched: what it costs).
    pub(super) fn touched(&self) -> u32 {
        self.top
    }

    /// Hands out no line past `cap`.
    #[cfg(test)]
    pub(super) fn limit(&mut self, cap: u32) {
        self.cap = cap.min(CAPACITY);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_reused_split_and_bounded() {
        let mut a = Alloc::default();
        let x = a.take(4).unwrap();
        let y = a.take(2).unwrap();
        let e = 1;
        assert_eq!((x, y), (e, e + 4), "the empty leaf comes first");
        a.give(x, 4);
        assert_eq!(a.take(3), Some(e), "a longer free run is split");
        assert_eq!(a.take(1), Some(e + 3), "its rest is free");
        assert_eq!(a.take(1), Some(e + 6), "then the top");
        assert_eq!(a.touched(), e + 7);
        assert_eq!(a.take(CAPACITY), None, "no room past the mapping");
        assert_eq!((a.take(1), a.touched()), (Some(e + 7), e + 8), "a refused take takes nothing");
    }

    /// A tree that grows by a line at each rebuild (its old lines freed after each) reuses
    /// the merged runs: the lines touched stay within a few times its size.
    #[test]
    #[cfg_attr(miri, ignore = "the allocator's bookkeeping is safe code (16 s under Miri beside a build)")]
    fn freed_neighbours_merge() {
        let mut a = Alloc::default();
        let mut tree = (a.take(1).unwrap(), 1);
        for n in 2..200 {
            let next = a.take(n).unwrap();
            a.give(tree.0, tree.1);
            tree = (next, n);
        }
        assert!(a.touched() < 3 * 200, "touched {} (without merging: about 20 000)", a.touched());
        let mut b = Alloc::default();
        let (x, y, z) = (b.take(3).unwrap(), b.take(3).unwrap(), b.take(3).unwrap());
        b.give(x, 3);
        b.give(z, 3);
        b.give(y, 3);
        assert_eq!(b.take(9), Some(x), "three runs given back in any order are one");
    }
}
