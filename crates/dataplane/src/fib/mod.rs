//! The IPv4 forwarding table: longest-prefix match in DIR-24-8 form.
//!
//! [`Fib`] is what workers read: `tbl24` holds one 32-bit entry per /24 (64 MiB, on
//! transparent huge pages) and `tbl8` holds groups of 256 entries for /24s that contain longer
//! prefixes. A lookup is one load, or two for such /24s. [`FibWriter`] is what the main thread
//! changes it with: entries are updated in place with atomic stores (never a copy of the table),
//! a new tbl8 group is filled before the store that publishes it, and a group that is no longer
//! needed is reused only after every worker has passed a vector boundary ([`crate::qsbr`]).
//!
//! An entry is 0 (no route), a leaf `VALID | prefix_len << 24 | adjacency`, or `EXT | group`.

mod writer;

pub use writer::{FibError, FibWriter, Route, mask};

use crate::hugemem::HugeRegion;
use std::sync::atomic::{AtomicU32, Ordering::Acquire};

const EXT: u32 = 1 << 31;
const VALID: u32 = 1 << 30;
const INDEX: u32 = 0x00ff_ffff;

/// Most adjacencies (next hops) a leaf can name, and most tbl8 groups.
pub const MAX_INDEX: u32 = INDEX;

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leaf {
    /// Adjacency (next-hop) index.
    pub adj: u32,
    /// Length of the matched prefix.
    pub prefix_len: u8,
}

impl Leaf {
    #[inline(always)]
    fn decode(e: u32) -> Option<Leaf> {
        (e & VALID != 0).then_some(Leaf { adj: e & INDEX, prefix_len: ((e >> 24) & 0x3f) as u8 })
    }

    fn encode(self) -> u32 {
        VALID | (u32::from(self.prefix_len) << 24) | self.adj
    }
}

/// An array of atomic entries in an anonymous huge-page mapping, zeroed (= no route).
struct Entries {
    mem: HugeRegion,
    len: usize,
}

impl Entries {
    fn new(len: usize) -> std::io::Result<Self> {
        let bytes = len.checked_mul(4).ok_or_else(|| std::io::Error::other(format!("{len} entries")))?;
        Ok(Entries { mem: HugeRegion::new(bytes)?, len })
    }

    /// Entry `i` (panics when out of range).
    #[inline(always)]
    fn get(&self, i: usize) -> &AtomicU32 {
        assert!(i < self.len, "entry {i} outside a table of {}", self.len);
        // SAFETY: `i < len` (checked above) and the region holds `len * 4` initialised (zeroed)
        // bytes (`new`), page-aligned (so 4-aligned), that live as long as `self`. The pointer
        // comes from the mapping itself (not from a shared reference), so atomic writes through
        // it are allowed; `AtomicU32` has the size and alignment of `u32`, and every access to
        // this memory, reads and writes alike, goes through these atomics. One entry is
        // borrowed, not the whole table, so Miri retags 4 bytes, not 64 MiB, per access.
        unsafe { &*self.mem.as_ptr().cast::<AtomicU32>().add(i) }
    }
}

/// The table workers look up in. Shared (`Arc`) between the workers and the [`FibWriter`].
pub struct Fib {
    tbl24: Entries,
    tbl8: Entries,
    groups: u32,
}

impl Fib {
    /// An empty table with room for `tbl8_groups` groups of 256 longer-than-/24 entries.
    pub fn new(tbl8_groups: u32) -> std::io::Result<Self> {
        assert!(tbl8_groups <= MAX_INDEX);
        Ok(Fib { tbl24: Entries::new(1 << 24)?, tbl8: Entries::new(tbl8_groups as usize * 256)?, groups: tbl8_groups })
    }

    /// Number of tbl8 groups.
    pub fn tbl8_groups(&self) -> u32 {
        self.groups
    }

    /// Longest-prefix match of `addr` (host order).
    #[inline(always)]
    pub fn lookup(&self, addr: u32) -> Option<Leaf> {
        let mut e = self.tbl24.get((addr >> 8) as usize).load(Acquire);
        if e & EXT != 0 {
            e = self.tbl8.get(((e & INDEX) as usize) << 8 | (addr & 0xff) as usize).load(Acquire);
        }
        Leaf::decode(e)
    }

    /// Starts loading the tbl24 entry of `addr` into the cache.
    #[inline(always)]
    pub fn prefetch(&self, addr: u32) {
        let p: *const AtomicU32 = self.tbl24.get((addr >> 8) as usize);
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetching is a hint with no memory effects; `p` points into the table.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = p;
    }
}
