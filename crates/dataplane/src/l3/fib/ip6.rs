//! The IPv6 forwarding table: a Poptrie (Asai & Ohara, SIGCOMM 2015) under a direct-pointing
//! first level.
//!
//! # Layout
//!
//! - **First level**: one `AtomicPtr` per value of the address's first [`FIRST_BITS`] bits, in a
//!   huge-page mapping. An entry is a leaf (`leaf << 1`; 0 is no route), or a tagged pointer
//!   (`| 1`) to the immutable **subtree** of the routes longer than `FIRST_BITS` inside that
//!   slot.
//! - **Defaults**: one `AtomicU32` leaf per slot, the longest route of length ≤ `FIRST_BITS`
//!   that covers the slot. A subtree holds only the routes longer than `FIRST_BITS`; where none
//!   covers an address its leaf is 0 and the lookup takes the slot's default (a cold branch).
//!   A short route (a /0, a /16) so changes the defaults and the first-level leaves of the
//!   slots without subtrees, never a subtree.
//! - **Subtree**: one allocation (`Box<[u64]>`): a header word (its length in words), then nodes
//!   of stride 6, then the leaves. A node is `vector` (bit i: index i has a child node),
//!   `leafvec` (bit i: a run of equal leaves starts at index i, among the indices without a
//!   child), and two byte offsets, relative to the node itself, of its first child and first
//!   leaf. The children of a node are contiguous, and so are its leaves, so the child of index
//!   i is at `child + 24 · popcnt(vector & ≤i)` and its leaf at `leaf + 4 · popcnt(leafvec &
//!   ≤i)`. Leaves are pushed down (every leaf holds its best match inside the subtree): a walk
//!   never backtracks. Offsets relative to the node mean a walk carries one pointer, no base.
//! - **Single-route nodes** (an addition to Poptrie): a child below which one route alone is
//!   longer than the child's depth, ending within 64 bits of it, is stored as that route: its
//!   bits, their number, its leaf and the leaf it inherited, in the same 24 bytes (tagged by an
//!   odd leaf offset). The walk compares and ends there. In the real table the /48s of a /32
//!   split within a few bits, so most of them end on such a node: of the walks to the 230 k
//!   prefixes of `ip6-bgp`, 4.3 loads on average instead of 6.5, and the table is a quarter
//!   smaller.

//! # Why, and the numbers
//!
//! The DIR-24-8 table it replaces cost 64 MiB of first level plus a 1 KiB group per 8 bits
//! of a prefix shared with no other: 1 661 bytes per route for the 230 k routes of `vecflow
//! bench --scenario ip6-bgp`, and a walk of up to 14 loads touching a fresh 1 KiB group each.
//! A Poptrie node is 24 bytes for 64 entries and a run of equal leaves is one `u32`. For the
//! same table [`Fib6Writer::bytes`] counts 118 bytes per route: the first level (2 MiB, one
//! huge page), the defaults (1 MiB), the subtrees (about 28 bytes a route) and the writer's
//! route map (72 bytes a route, measured). Building it in one batch takes 88 ms (2.6 M
//! routes/s), 10 000 random deletes in one batch 24 ms (`tests::build_rate`).
//!
//! The `ip6-lookup` node costs about 3.2× `ip4-lookup` at full-table scale (`vecflow bench
//! --scenario ip6-bgp --runs 3`: 69–75 clocks/packet against 22–26), down from 4.3× before
//! single-route nodes, and from 3.2× with the old table at 14 times the memory. It is not the
//! 1.5× hoped for: a walk is the first level, then about 3.3 nodes of which the deeper ones
//! are misses in a 6 MB structure, where an IPv4 lookup is one load; even in cache a walk
//! costs about 45 cycles.
//!
//! The first level of 18 bits was measured against 16 (115 bytes a route) and 20 (161): the
//! lookups of 16 and 18 were within the noise of this shared machine in `tests::lookup_rate`,
//! and 20 against 18 in alternating `ip6-bgp` runs gave 3.32–3.34× against 3.25–3.48× (2.9
//! nodes a walk against 3.2) for a third more memory. With 18 bits the /32s and /48s, most of
//! the real table, end 2 and 4 nodes below it.

//! # Updates
//!
//! Subtrees are never changed in place. The [`Fib6Writer`] keeps every route in an ordered map;
//! a batch updates the map, the defaults and first-level leaves for short routes, then rebuilds
//! each slot touched by a longer route once, from the map's range of that slot (an in-order
//! recursive build, linear in the routes of the slot), publishes it with one release store, and
//! retires the old subtree, freed after every reader has passed a quiescent state
//! ([`crate::runtime::qsbr`]).
//!
//! # Lookup
//!
//! [`Fib6::lookup_batch`] walks the addresses of a vector level by level: each pass takes every
//! walk still going one node down and prefetches where it goes next (the next node, or the leaf),
//! so the cache misses of up to 256 walks overlap instead of adding up.

mod build;
#[cfg(test)]
mod tests;
mod writer;

pub use writer::Fib6Writer;

use super::Leaf;
use crate::runtime::hugemem::HugeRegion;
use crate::runtime::vector::VECTOR_SIZE;
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering::Acquire, Ordering::Relaxed};

/// Bits of the address the first level indexes.
pub const FIRST_BITS: u32 = 18;
/// Number of first-level slots.
const SLOTS: usize = 1 << FIRST_BITS;
/// Bits of the address each node indexes.
const STRIDE: u32 = 6;
/// Bytes of a node.
const NODE: usize = std::mem::size_of::<Node>();

/// A node of a subtree, 24 bytes.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Node {
    /// Bit i: index i has a child node.
    vector: u64,
    /// Bit i: a run of equal leaves starts at index i (indices with a child are skipped).
    leafvec: u64,
    /// Bytes from this node to its first child, minus one node.
    child: u32,
    /// Bytes from this node to its first leaf, minus one leaf.
    leaf: u32,
}

/// The index bits of `key` at a node `depth` bits into the address (past /128: zeros).
#[inline(always)]
fn index(key: u128, depth: u32) -> u32 {
    ((key << depth) >> (128 - STRIDE)) as u32
}

/// The first-level slot of a key.
#[inline(always)]
fn slot_of(key: u128) -> usize {
    (key >> (128 - FIRST_BITS)) as usize
}

/// Bits 0 to `i` of a word.
#[inline(always)]
fn upto(i: u32) -> u64 {
    (2u64 << i).wrapping_sub(1)
}

/// Where a walk goes from a node.
enum Step {
    /// To this child node.
    Child(*const Node),
    /// To this leaf (of the subtree; 0: no long route covers).
    Leaf(*const u32),
    /// The walk is over with this leaf (0: no long route covers).
    Done(u32),
}

/// Where the walk of `key` goes from `node`, `depth` bits into the address.
///
/// # Safety
/// `node` points to a node of a live subtree (published, not yet freed).
#[inline(always)]
unsafe fn step(node: *const Node, key: u128, depth: u32) -> Step {
    // SAFETY: the caller's.
    unsafe { step_bits(node, ((key << depth) >> 64) as u64) }
}

/// [`step`] given `bits`, the 64 bits of the key after the node's depth (one 128-bit shift
/// per level, shared by the index and a single route's compare).
///
/// # Safety
/// As [`step`].
#[inline(always)]
unsafe fn step_bits(node: *const Node, bits: u64) -> Step {
    // SAFETY: the caller's; a subtree's nodes are 8-aligned words, never written once
    // published.
    let n = unsafe { node.read() };
    if n.leaf & 1 != 0 {
        // A single route: its `child` bits after `depth` are `vector`'s first ones.
        let hit = (bits ^ n.vector) >> (64 - n.child) == 0;
        return Step::Done(if hit { n.leafvec as u32 } else { (n.leafvec >> 32) as u32 });
    }
    let i = (bits >> (64 - STRIDE)) as u32;
    let up = upto(i);
    if n.vector & (1 << i) != 0 {
        let off = n.child as usize + NODE * (n.vector & up).count_ones() as usize;
        // The builder set `child` so that this is the child of index i, in the subtree's
        // allocation (`build`).
        Step::Child(node.wrapping_byte_add(off))
    } else {
        let off = n.leaf as usize + 4 * (n.leafvec & up).count_ones() as usize;
        Step::Leaf(node.wrapping_byte_add(off).cast())
    }
}

/// The table workers look up IPv6 destinations in. Shared (`Arc`) between the workers and the
/// [`Fib6Writer`].
pub struct Fib6 {
    /// `SLOTS` first-level entries (`AtomicPtr<u64>`), zeroed: no route.
    first: HugeRegion,
    /// The longest route of length ≤ `FIRST_BITS` covering each slot.
    defaults: Box<[AtomicU32]>,
    /// Subtrees published in `first` (kept by the writer), so that drop frees them.
    live: AtomicUsize,
}

impl Fib6 {
    /// An empty table.
    pub fn new() -> std::io::Result<Self> {
        Ok(Fib6 {
            first: HugeRegion::new(SLOTS * std::mem::size_of::<AtomicPtr<u64>>())?,
            defaults: (0..SLOTS).map(|_| AtomicU32::new(0)).collect(),
            live: AtomicUsize::new(0),
        })
    }

    /// First-level entry `slot` (masked to the table).
    #[inline(always)]
    fn first(&self, slot: usize) -> &AtomicPtr<u64> {
        // SAFETY: the region holds at least `SLOTS` pointer-sized, page-aligned entries, zeroed
        // (null pointers) by the mapping, alive as long as `self`, and the index is masked to
        // them. The pointer comes from the mapping itself, so atomic stores through it are
        // allowed; every access to this memory goes through these atomics.
        unsafe { &*self.first.as_ptr().cast::<AtomicPtr<u64>>().add(slot & (SLOTS - 1)) }
    }

    /// The default leaf of `slot`.
    #[inline(always)]
    fn default_of(&self, slot: usize) -> u32 {
        self.defaults[slot & (SLOTS - 1)].load(Relaxed)
    }

    /// Longest-prefix match of `addr` (the address as a big-endian `u128`).
    #[inline]
    pub fn lookup(&self, addr: u128) -> Option<Leaf> {
        let slot = slot_of(addr);
        let e = self.first(slot).load(Acquire);
        if e.addr() & 1 == 0 {
            return Leaf::decode((e.addr() >> 1) as u32);
        }
        let mut node = root(e);
        let mut depth = FIRST_BITS;
        loop {
            // SAFETY: `node` is the root of the subtree just loaded (acquire: its contents are
            // visible) or a child of one of its nodes; the subtree is freed only after this
            // reader's next quiescent state (the caller is a QSBR reader or holds the writer).
            match unsafe { step(node, addr, depth) } {
                Step::Child(child) => {
                    node = child;
                    depth += STRIDE;
                }
                // SAFETY: a leaf of the same live subtree.
                Step::Leaf(leaf) => return Leaf::decode(self.or_default(unsafe { leaf.read() }, slot)),
                Step::Done(leaf) => return Leaf::decode(self.or_default(leaf, slot)),
            }
        }
    }

    /// `leaf` of a subtree of `slot`, or the slot's default when no long route covered.
    #[inline(always)]
    fn or_default(&self, leaf: u32, slot: usize) -> u32 {
        if leaf != 0 { leaf } else { self.default_of(slot) }
    }

    /// Longest-prefix match of `addr`.
    pub fn lookup_addr(&self, addr: Ipv6Addr) -> Option<Leaf> {
        self.lookup(u128::from(addr))
    }

    /// Starts loading the first-level entry of `addr` into the cache.
    #[inline(always)]
    pub fn prefetch(&self, addr: &[u8; 16]) {
        let top = u32::from_be_bytes([addr[0], addr[1], addr[2], addr[3]]);
        crate::runtime::prefetch(self.first((top >> (32 - FIRST_BITS)) as usize));
    }

    /// The leaf (decode it with [`Leaf::decode`]) of each address of `dst` (at most a vector's
    /// worth) into `out`, for a batch whose first-level entries [`Fib6::prefetch`] asked for.
    /// The walks go level by level: each pass takes every walk still going one node down and
    /// prefetches where it goes next, so their cache misses overlap instead of adding up.
    #[inline]
    pub fn lookup_batch(&self, dst: &[[u8; 16]], out: &mut [u32]) {
        assert!(dst.len() <= VECTOR_SIZE && out.len() == dst.len(), "a vector at most");
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: this CPU has the instruction.
            return unsafe { self.lookup_batch_popcnt(dst, out) };
        }
        self.walk_batch(dst, out);
    }

    /// [`Fib6::walk_batch`] with each population count one instruction: every x86-64 CPU
    /// since 2008 has it, but the baseline target does not assume it, and without it each
    /// count is a dozen instructions (two per node visited). 15 % faster in
    /// `tests::lookup_rate` (21 against 24.5 ns a lookup at 230 000 routes).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn lookup_batch_popcnt(&self, dst: &[[u8; 16]], out: &mut [u32]) {
        self.walk_batch(dst, out);
    }

    /// [`Fib6::lookup_batch`]'s walks, level by level.
    #[inline(always)]
    fn walk_batch(&self, dst: &[[u8; 16]], out: &mut [u32]) {
        // Walks at a node: their index in `dst` and where they are.
        let mut going = [0u8; VECTOR_SIZE];
        let mut at = [std::ptr::null::<Node>(); VECTOR_SIZE];
        let mut n = 0;
        // Walks that reached a leaf of a subtree (prefetched), read at the end.
        let mut ended = [0u8; VECTOR_SIZE];
        let mut leaf = [std::ptr::null::<u32>(); VECTOR_SIZE];
        let mut m = 0;
        let mut keys = [0u128; VECTOR_SIZE];
        for (k, (d, o)) in dst.iter().zip(out.iter_mut()).enumerate() {
            keys[k] = u128::from_be_bytes(*d);
            let e = self.first(slot_of(keys[k])).load(Acquire);
            if e.addr() & 1 == 0 {
                *o = (e.addr() >> 1) as u32;
            } else {
                at[n] = root(e);
                prefetch_node(at[n]);
                going[n] = k as u8;
                n += 1;
            }
        }
        let mut depth = FIRST_BITS;
        while n > 0 {
            let mut still = 0;
            for j in 0..n {
                let k = usize::from(going[j]);
                let key = keys[k];
                // SAFETY: `at[j]` is the root or a node of a subtree loaded (acquire) from the
                // first level in this call, freed only after our next quiescent state.
                match unsafe { step_bits(at[j], ((key << depth) >> 64) as u64) } {
                    Step::Child(child) => {
                        prefetch_node(child);
                        at[still] = child;
                        going[still] = k as u8;
                        still += 1;
                    }
                    Step::Leaf(l) => {
                        crate::runtime::prefetch(l);
                        leaf[m] = l;
                        ended[m] = k as u8;
                        m += 1;
                    }
                    Step::Done(l) => out[k] = self.or_default(l, slot_of(key)),
                }
            }
            n = still;
            depth += STRIDE;
        }
        for (&k, &l) in ended[..m].iter().zip(&leaf[..m]) {
            let k = usize::from(k);
            // SAFETY: a leaf of a live subtree, as above.
            out[k] = self.or_default(unsafe { l.read() }, slot_of(keys[k]));
        }
    }
}

/// Starts loading a node into the cache: both lines when it straddles two (a quarter of the
/// nodes do, at 24 bytes each), so that reading it never waits for a second miss.
#[inline(always)]
fn prefetch_node(node: *const Node) {
    crate::runtime::prefetch(node);
    crate::runtime::prefetch(node.wrapping_byte_add(NODE - 1));
}

/// The root node of the subtree a first-level entry (tagged) points to: one word past its
/// header.
#[inline(always)]
fn root(e: *mut u64) -> *const Node {
    e.wrapping_byte_add(7).cast_const().cast()
}

impl Drop for Fib6 {
    fn drop(&mut self) {
        let mut live = *self.live.get_mut();
        let mut slot = 0;
        while live > 0 && slot < SLOTS {
            let e = self.first(slot).load(Relaxed);
            if e.addr() & 1 == 1 {
                // SAFETY: `&mut self`: no reader is left; the entry is a subtree the writer
                // published and still owned by the table.
                unsafe { writer::free(e) };
                live -= 1;
            }
            slot += 1;
        }
    }
}
