//! The forwarding tables: longest-prefix match for IPv4 (DIR-24-8) and IPv6 (B+-trees of
//! intervals under a direct first level).
//!
//! IPv4 uses DIR-24-8: `tbl24` (the first level) holds one 32-bit entry per value of the
//! address's first 24 bits (64 MiB of address space on transparent huge pages, touched only
//! where routes are), and `tbl8` holds groups of 256 entries, one group below each /24 that
//! holds longer prefixes. A lookup is one load, or two for /24s holding longer prefixes.
//! Leaves are pushed down (every entry holds its best match), so a walk never backtracks.
//! Entries change in place with atomic stores, a new group is filled before the store that
//! publishes it, and a group that is no longer needed is reused only after every worker has
//! passed a vector boundary ([`crate::runtime::qsbr`]). The `Fib<A>` and `FibWriter<A>`
//! types stay generic over the address family (their keys are left-aligned `u128`s), but only
//! IPv4 uses them. They are generic over the first level's width too (`FIRST`, 24 by default):
//! at 16 the same code is a 16-8-8 trie (a 256 KiB first level, up to two groups deep), the
//! shape for the many small tables of VRFs, where 64 MiB of tbl24 each would be written whole
//! by a default route.
//!
//! IPv6 uses [`Fib6`] (module `ip6`): an 18-bit direct first level over one static B+-tree of
//! elementary intervals per slot, rebuilt copy-on-write per batch, about 110 bytes per route of
//! a full table against the 1.6 KiB a DIR-24-8 extended to 128 bits took (see its module doc).
//! Its first level's width is generic too: a small table's (12 bits: 32 KiB, on small pages)
//! costs about 13 KiB resident empty or with a default route, where the default table's costs
//! 2 MiB empty and 3 MiB with one.
//!
//! An IPv4 entry is 0 (no route), a leaf `VALID | prefix_len << 22 | adjacency`, or
//! `EXT | group`; IPv6 leaves use the same leaf encoding.

mod ip6;
mod writer;
mod writers;

pub use ip6::{FIRST_BITS, Fib6, Fib6Writer};

pub use writer::{FibError, FibWriter, Route};
pub use writers::{FibInsert, FibWriters};

use crate::net::{AddrKey, key_mask};
use crate::runtime::hugemem::HugeRegion;
use std::marker::PhantomData;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering::Acquire};

const EXT: u32 = 1 << 31;
const VALID: u32 = 1 << 30;
const ADJ: u32 = (1 << 22) - 1;
const GROUP: u32 = VALID - 1;

/// Most adjacencies (next hops) a leaf can name, and most tbl8 groups.
pub const MAX_INDEX: u32 = ADJ;

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leaf {
    /// Adjacency (next-hop) index.
    pub adj: u32,
    /// Length of the matched prefix.
    pub prefix_len: u8,
}

const _: () = assert!(crate::l3::ADJ_DROP == 0, "Leaf::decode_or_drop reads no route as adjacency 0");

impl Leaf {
    /// The leaf an entry holds, `None` for no route (an entry of a finished walk is never
    /// `EXT`).
    #[inline(always)]
    pub fn decode(e: u32) -> Option<Leaf> {
        (e & (VALID | EXT) == VALID).then_some(Leaf { adj: e & ADJ, prefix_len: (e >> 22) as u8 })
    }

    /// The adjacency and prefix length of entry `e` of a finished walk, which is a leaf or 0
    /// (no route: [`ADJ_DROP`](crate::l3::ADJ_DROP), which is 0, length 0), read without a
    /// branch.
    #[inline(always)]
    pub fn decode_or_drop(e: u32) -> (u32, u8) {
        debug_assert!(e == 0 || Leaf::decode(e).is_some(), "a leaf or 0");
        (e & ADJ, (e >> 22) as u8)
    }

    fn encode(self) -> u32 {
        VALID | (u32::from(self.prefix_len) << 22) | self.adj
    }
}

/// True when entry `e` points to a group of longer prefixes (the walk goes on).
#[inline(always)]
pub fn is_ext(e: u32) -> bool {
    e & EXT != 0
}

/// An array of atomic entries in an anonymous huge-page mapping, zeroed (= no route).
///
/// Its length is a power of two (the mapping is only address space until an entry is
/// written) and every index is masked to it, as the buffer pool does: any index addresses an
/// entry of the table, for the price of one `and` instead of a compare and branch on the
/// lookup path. An index past the entries the table was made for is a logic error that reads
/// or writes another entry, never memory outside the table.
struct Entries {
    mem: HugeRegion,
    mask: usize,
}

impl Entries {
    /// `len` entries (rounded up to a power of two), on huge pages when `huge`.
    fn new(len: usize, huge: bool) -> std::io::Result<Self> {
        let len =
            len.max(1).checked_next_power_of_two().ok_or_else(|| std::io::Error::other(format!("{len} entries")))?;
        let bytes = len.checked_mul(4).ok_or_else(|| std::io::Error::other(format!("{len} entries")))?;
        Ok(Entries { mem: HugeRegion::with_pages(bytes, huge)?, mask: len - 1 })
    }

    /// Entry `i` (masked to the table's power-of-two length).
    #[inline(always)]
    fn get(&self, i: usize) -> &AtomicU32 {
        // SAFETY: `i & mask < mask + 1 = len`, and the region holds `len * 4` initialised
        // (zeroed) bytes (`new`), page-aligned (so 4-aligned), that live as long as `self`.
        // The pointer comes from the mapping itself (not from a shared reference), so atomic
        // writes through it are allowed; `AtomicU32` has the size and alignment of `u32`, and
        // every access to this memory, reads and writes alike, goes through these atomics. One
        // entry is borrowed, not the whole table, so Miri retags 4 bytes, not 64 MiB, per
        // access.
        unsafe { &*self.mem.as_ptr().cast::<AtomicU32>().add(i & self.mask) }
    }

    /// Starts loading entry `i` into the cache.
    #[inline(always)]
    fn prefetch(&self, i: usize) {
        crate::runtime::prefetch(self.get(i));
    }
}

/// The table workers look up in, for addresses `A`, whose first level is indexed by the
/// address's first `FIRST` bits (24: DIR-24-8, the default table's; 16: a 16-8-8 trie, whose
/// 256 KiB first level suits many small tables, as VPP's non-default tables). Shared (`Arc`)
/// between the workers and the [`FibWriter`].
pub struct Fib<A: AddrKey = Ipv4Addr, const FIRST: u8 = 24> {
    first_level: Entries,
    tbl8: Entries,
    groups: u32,
    family: PhantomData<A>,
}

impl<A: AddrKey, const FIRST: u8> Fib<A, FIRST> {
    /// The first level's bits, checked when a table is made: a multiple of 8 from 8 to 24.
    const FIRST_CHECKED: u8 = {
        assert!(FIRST >= 8 && FIRST <= 24 && FIRST.is_multiple_of(8), "a first level of 8, 16 or 24 bits");
        FIRST
    };

    /// Huge pages for the default table's 64 MiB tbl24 and its groups; small pages for a
    /// narrower first level, a small table of which there may be a thousand (a huge page
    /// would grow each by 2 MiB at its first route).
    const HUGE: bool = FIRST == 24;

    /// An empty table with room for `tbl8_groups` groups of 256 entries.
    pub fn new(tbl8_groups: u32) -> std::io::Result<Self> {
        assert!(tbl8_groups <= MAX_INDEX);
        Ok(Fib {
            first_level: Entries::new(1 << Self::FIRST_CHECKED, Self::HUGE)?,
            tbl8: Entries::new(tbl8_groups as usize * 256, Self::HUGE)?,
            groups: tbl8_groups,
            family: PhantomData,
        })
    }

    /// As [`Fib::new`], with its tables resident from the start ([`HugeRegion::populate`]):
    /// for a table that takes full Internet tables, whose first routes would otherwise wait
    /// for the kernel to find pages for them.
    pub fn resident(tbl8_groups: u32) -> std::io::Result<Self> {
        let mut fib = Self::new(tbl8_groups)?;
        fib.first_level.mem.populate();
        fib.tbl8.mem.populate();
        Ok(fib)
    }

    /// Number of tbl8 groups.
    pub fn tbl8_groups(&self) -> u32 {
        self.groups
    }

    /// The first level's entry of `key`.
    #[inline(always)]
    fn first(&self, key: u128) -> &AtomicU32 {
        self.first_level.get((key >> (128 - u32::from(FIRST))) as usize)
    }

    /// The entry of group `e` (an `EXT` entry) for the 8 bits of `key` after its first `depth`.
    #[inline(always)]
    fn below(&self, e: u32, key: u128, depth: u8) -> &AtomicU32 {
        self.tbl8.get(((e & GROUP) as usize) << 8 | ((key >> (120 - depth)) & 0xff) as usize)
    }

    /// Longest-prefix match of `addr`, walking every level (the main thread's lookups).
    pub fn lookup_addr(&self, addr: A) -> Option<Leaf> {
        let key = addr.key();
        let mut e = self.first(key).load(Acquire);
        let mut depth = FIRST;
        while is_ext(e) && depth < A::BITS {
            e = self.below(e, key, depth).load(Acquire);
            depth += 8;
        }
        Leaf::decode(e)
    }
}

impl<const FIRST: u8> Fib<Ipv4Addr, FIRST> {
    /// The entry of group `e` (an `EXT` entry) for the 8 bits of `addr` after its first
    /// `depth`.
    #[inline(always)]
    fn at(e: u32, addr: u32, depth: u8) -> usize {
        ((e & GROUP) as usize) << 8 | ((addr >> (24 - depth)) & 0xff) as usize
    }

    /// Longest-prefix match of `addr` (host order).
    #[inline(always)]
    pub fn lookup(&self, addr: u32) -> Option<Leaf> {
        let mut e = self.first_level.get((addr >> (32 - FIRST)) as usize).load(Acquire);
        let mut depth = FIRST;
        while is_ext(e) && depth < 32 {
            e = self.tbl8.get(Self::at(e, addr, depth)).load(Acquire);
            depth += 8;
        }
        Leaf::decode(e)
    }

    /// Starts loading the first level's entry of `addr` into the cache.
    #[inline(always)]
    pub fn prefetch(&self, addr: u32) {
        self.first_level.prefetch((addr >> (32 - FIRST)) as usize);
    }

    /// The final entry of each address of `dst` (at most a vector's worth, host order) into
    /// `out` (decode it with [`Leaf::decode`]), for a batch whose first-level entries
    /// [`Fib::prefetch`] asked for: every first-level entry first, then, level by level while
    /// some point to tbl8 groups, every tbl8 entry is prefetched before any is read, so their
    /// misses overlap (DIR-24-8 has one such level, 16-8-8 two).
    #[inline(always)]
    pub fn lookup_batch(&self, dst: &[u32], out: &mut [u32]) {
        Self::walk_batch(|_| self, dst, out);
    }

    /// As [`Fib::lookup_batch`], each address `dst[k]` in its own table, `tables[k]` (VRFs'
    /// packets in one vector); the first-level entries are prefetched here.
    #[inline(always)]
    pub fn lookup_batch_in(tables: &[&Self], dst: &[u32], out: &mut [u32]) {
        assert!(tables.len() == dst.len(), "a table per address");
        for (t, &d) in tables.iter().zip(dst) {
            t.prefetch(d);
        }
        Self::walk_batch(|k| tables[k], dst, out);
    }

    /// The walk of [`Fib::lookup_batch`], address `dst[k]` in table `table(k)`.
    #[inline(always)]
    fn walk_batch<'t>(table: impl Fn(usize) -> &'t Self, dst: &[u32], out: &mut [u32])
    where
        Self: 't,
    {
        assert!(dst.len() <= crate::runtime::vector::VECTOR_SIZE && out.len() == dst.len(), "a vector at most");
        let mut going = false;
        for (k, (e, &d)) in out.iter_mut().zip(dst).enumerate() {
            *e = table(k).first_level.get((d >> (32 - FIRST)) as usize).load(Acquire);
            going |= is_ext(*e);
        }
        let mut depth = FIRST;
        while going && depth < 32 {
            for (k, (&e, &d)) in out.iter().zip(dst).enumerate() {
                if is_ext(e) {
                    table(k).tbl8.prefetch(Self::at(e, d, depth));
                }
            }
            going = false;
            for (k, (e, &d)) in out.iter_mut().zip(dst).enumerate() {
                if is_ext(*e) {
                    *e = table(k).tbl8.get(Self::at(*e, d, depth)).load(Acquire);
                    going |= is_ext(*e);
                }
            }
            depth += 8;
        }
    }
}

/// Both tables, as a worker holds them.
#[derive(Clone)]
pub struct Fibs {
    /// The IPv4 table.
    pub ip4: Arc<Fib<Ipv4Addr>>,
    /// The IPv6 table.
    pub ip6: Arc<Fib6>,
}

impl Fibs {
    /// Two empty tables, the IPv4 one with room for `ip4_groups` tbl8 groups and, when
    /// `resident`, its memory resident from the start ([`Fib::resident`]).
    pub fn new(ip4_groups: u32, resident: bool) -> std::io::Result<Self> {
        let ip4 = if resident { Fib::resident(ip4_groups)? } else { Fib::new(ip4_groups)? };
        Ok(Fibs { ip4: Arc::new(ip4), ip6: Arc::new(Fib6::new()?) })
    }
}

/// The first level's bits of a VRF's IPv4 table: a 16-8-8 trie (a 256 KiB first level).
pub const VRF_FIRST4: u8 = 16;

/// The first level's bits of a VRF's IPv6 table (a 32 KiB first level).
pub const VRF_FIRST6: u32 = 12;

/// A VRF's IPv4 table.
pub type VrfFib4 = Fib<Ipv4Addr, VRF_FIRST4>;

/// A VRF's IPv6 table.
pub type VrfFib6 = Fib6<VRF_FIRST6>;

/// A VRF's two tables, as a worker holds them: small ones, on small pages, so that a
/// thousand VRFs of a hundred routes each fit in well under a GiB.
#[derive(Clone)]
pub struct VrfFibs {
    /// The IPv4 table.
    pub ip4: Arc<VrfFib4>,
    /// The IPv6 table.
    pub ip6: Arc<VrfFib6>,
}

/// The naive longest-prefix match over routes keyed by (key, length): the oracle the tables'
/// tests check lookups against.
#[cfg(test)]
pub(crate) fn oracle(routes: &std::collections::BTreeMap<(u128, u8), u32>, key: u128) -> Option<Leaf> {
    routes
        .iter()
        .filter(|((p, l), _)| key & key_mask(*l) == *p)
        .max_by_key(|((_, l), _)| *l)
        .map(|(&(_, l), &adj)| Leaf { adj, prefix_len: l })
}
