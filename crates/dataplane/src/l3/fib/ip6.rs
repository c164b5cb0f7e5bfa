//! The IPv6 forwarding table: an 18-bit first level over static B+-trees of elementary
//! intervals (DXR's intervals, searched as PlanB searches them: fixed-height trees of 64-byte
//! nodes compared with SIMD, a vector of lookups walked level by level).
//!
//! # Layout
//!
//! - **First level**: one `AtomicU64` per value of the address's first [`FIRST_BITS`] bits, in a
//!   huge-page mapping. 0: no route longer than the first level in that slot (the answer is the
//!   slot's default). Otherwise the slot's tree: the slot's *region* (bits 41–63: the address
//!   bits `FIRST_BITS..d` every route of the slot shares, left-aligned), `d - FIRST_BITS` (bits
//!   32–37), the byte offset of its root in the arena (bits 6–31) and the tree's height (bits
//!   0–2, 1 to 7).
//! - **Defaults**: one leaf per slot, the longest route of length ≤ `FIRST_BITS` covering it,
//!   the answer where no longer route covers.
//! - **Tree** (module `build`): the slot's routes flattened into elementary intervals of a
//!   32-bit key, the address bits `d..d + 32`, each with its longest match; `d` is where the
//!   slot's routes stop sharing bits (at most [`max_region`]), so the /48s and /64s of one site
//!   fit one window. Internal nodes hold 15 keys (the last key of each child but the last) and
//!   the offset of their first child, leaves 7 keys and 8 results; every walk in a tree takes
//!   exactly its height steps. An address outside the slot's region walks the empty leaf.
//! - **Escapes**: a route longer than `d + 32` splits one key of the window; that key's result
//!   is an escape (`EXT`, the escape tree's height and line offset) to a tree of the next 32
//!   bits.
//! - **Hosts** (module `hosts`): /128s are in a hash table, not in the trees; the key holding
//!   one is marked (`HOSTS`): a lookup that lands there probes the table, and takes the marked
//!   result when the address is not a host route. 254 neighbours on a /64 cost one probe each,
//!   not four escape trees.
//! - **Arena** (module `arena`): every tree's lines in one huge-page mapping; line 0 is the
//!   empty leaf.
//!
//! # Updates
//!
//! Trees are never changed in place. The [`Fib6Writer`] keeps every route in an ordered map; a
//! batch updates the map and the defaults, republishes the host table when a /128 changed,
//! rebuilds each slot touched by a longer route from the map's range of that slot into free
//! arena lines, publishes it with one release store, and frees the old lines after every
//! reader has passed a quiescent state ([`crate::runtime::qsbr`]).
//!
//! # Lookup
//!
//! [`Fib6::lookup_batch`] walks a vector level by level: the first pass reads every first-level
//! entry, prefetches each root and lists the walks with an internal node to step through;
//! each next pass takes every listed walk one node down and prefetches where it goes (a walk
//! whose tree is shorter than the pass stays where it is, branch-free). Escapes and host
//! probes, rare, go through a cold pass of their own.

mod arena;
mod build;
mod hosts;
#[cfg(test)]
mod tests;
mod writer;

pub use writer::Fib6Writer;

use super::{EXT, Leaf};
use crate::runtime::hugemem::HugeRegion;
use crate::runtime::isa::Isa;
use crate::runtime::vector::VECTOR_SIZE;
use build::window_key;
use hosts::Hosts;
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering::Acquire, Ordering::Relaxed};

/// Bits of the address the default table's first level indexes (a table's `FIRST`).
pub const FIRST_BITS: u32 = 18;
/// Bits of a region past the first level: the longest a slot's region may be is
/// [`max_region`].
const REGION_BITS: u32 = 23;

/// The longest a slot's region may be, in a table of a `first`-bit first level: its tree's
/// window starts at most there, and the region's bits past the first level fit the
/// first-level entry.
const fn max_region(first: u32) -> u32 {
    first + REGION_BITS
}
/// A result with this bit (and not `EXT`): a host route may match; without the bit, the
/// result where none does. Leaves in trees are at most /127, so their length never sets it.
const HOSTS: u32 = 1 << 29;
/// Bits of an escape result that hold the offset, in lines, from its leaf to the escape's root.
const OFFSET: u32 = (1 << 28) - 1;
/// Keys are stored and compared as `i32`s biased by this (SIMD compares are signed).
const BIAS: u32 = 1 << 31;
/// A key no key is above: the key lanes a node does not use.
const PAD: u32 = u32::MAX ^ BIAS;

/// 16 lanes, one cache line: an internal node or a leaf.
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Line([u32; 16]);

/// The empty leaf: no key, every result 0 (no route: the slot's default).
const EMPTY: Line = Line([PAD, PAD, PAD, PAD, PAD, PAD, PAD, PAD, 0, 0, 0, 0, 0, 0, 0, 0]);
/// The region bits of a first-level entry, where they xor out of a key's 64 bits after the
/// first level.
const REGION_MASK: u64 = u64::MAX << (64 - REGION_BITS);

/// The first-level slot of a key, in a table of a `FIRST`-bit first level.
#[inline(always)]
fn slot_of<const FIRST: u32>(key: u128) -> usize {
    (key >> (128 - FIRST)) as usize
}

/// The number of key lanes 0–14 of internal node `node` below `x` (biased): the child that
/// holds `x`.
///
/// # Safety
/// `node` points to a live line; with `AVX2`, the CPU has AVX2.
#[inline(always)]
unsafe fn below15<const AVX2: bool>(node: *const Line, x: i32) -> usize {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's; a line is 64 bytes, 64-aligned.
    unsafe {
        use std::arch::x86_64::*;
        if AVX2 {
            let p = node.cast::<__m256i>();
            let xs = _mm256_set1_epi32(x);
            let m = _mm256_packs_epi32(
                _mm256_cmpgt_epi32(xs, _mm256_load_si256(p)),
                _mm256_cmpgt_epi32(xs, _mm256_load_si256(p.add(1))),
            );
            // Lane 15 (the child offset) is the packed vector's last 16 bits.
            return (((_mm256_movemask_epi8(m) as u32) & 0x3fff_ffff).count_ones() >> 1) as usize;
        }
        let p = node.cast::<__m128i>();
        let xs = _mm_set1_epi32(x);
        let a = _mm_packs_epi32(_mm_cmpgt_epi32(xs, _mm_load_si128(p)), _mm_cmpgt_epi32(xs, _mm_load_si128(p.add(1))));
        let b = _mm_packs_epi32(
            _mm_cmpgt_epi32(xs, _mm_load_si128(p.add(2))),
            _mm_cmpgt_epi32(xs, _mm_load_si128(p.add(3))),
        );
        ((_mm_movemask_epi8(_mm_packs_epi16(a, b)) as u32) & 0x7fff).count_ones() as usize
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's.
    unsafe {
        (*node).0[..15].iter().filter(|&&k| x > k as i32).count()
    }
}

/// The number of key lanes 0–7 of leaf `node` below `x` (biased): the result that holds `x`.
///
/// # Safety
/// As [`below15`].
#[inline(always)]
unsafe fn below8<const AVX2: bool>(node: *const Line, x: i32) -> usize {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's; a line is 64 bytes, 64-aligned.
    unsafe {
        use std::arch::x86_64::*;
        if AVX2 {
            let m = _mm256_cmpgt_epi32(_mm256_set1_epi32(x), _mm256_load_si256(node.cast()));
            return (_mm256_movemask_ps(_mm256_castsi256_ps(m)) as u32).count_ones() as usize;
        }
        let p = node.cast::<__m128i>();
        let xs = _mm_set1_epi32(x);
        let a = _mm_packs_epi32(_mm_cmpgt_epi32(xs, _mm_load_si128(p)), _mm_cmpgt_epi32(xs, _mm_load_si128(p.add(1))));
        ((_mm_movemask_epi8(a) as u32).count_ones() >> 1) as usize
    }
    #[cfg(not(target_arch = "x86_64"))]
    // SAFETY: the caller's.
    unsafe {
        (*node).0[..8].iter().filter(|&&k| x > k as i32).count()
    }
}

/// The child of internal node `node` that holds `x` (its address; read only if `node` is
/// internal: the lane a leaf has there is a result).
///
/// # Safety
/// As [`below15`].
#[inline(always)]
unsafe fn child<const AVX2: bool>(node: *const Line, x: i32) -> *const Line {
    // SAFETY: the caller's.
    unsafe { node.wrapping_add((*node).0[15] as usize + below15::<AVX2>(node, x)) }
}

/// The result of leaf `node` for `x`.
///
/// # Safety
/// As [`below15`].
#[inline(always)]
unsafe fn result<const AVX2: bool>(node: *const Line, x: i32) -> u32 {
    // SAFETY: the caller's.
    unsafe { (*node).0[8 + (below8::<AVX2>(node, x) & 7)] }
}

/// A key window as the nodes store keys.
#[inline(always)]
fn biased(k: u32) -> i32 {
    (k ^ BIAS) as i32
}

/// Where the walk of `key` starts from first-level entry `e`, as an address in the arena
/// (based at `arena`) tagged with the tree's height (the empty leaf, height 0, when the entry is
/// 0 or `key` is outside the slot's region), and the key's window. Branch-free.
#[inline(always)]
fn start<const FIRST: u32>(e: u64, key: u128, arena: usize) -> (usize, i32) {
    let shift = ((e >> 32) & 63) as u32; // d - FIRST
    // The key's 64 bits after the first level, with the region xored out: inside the region,
    // its first `shift` bits are 0.
    let y = (((key >> 64) as u64) << FIRST | (key as u64) >> (64 - FIRST)) ^ (e & REGION_MASK);
    let keep = usize::from(y.leading_zeros() >= shift).wrapping_neg();
    (arena + (e as u32 as usize & keep), biased(((y << shift) >> 32) as u32))
}

/// Where the window of slot entry `e` starts: `d`.
#[inline(always)]
fn window_of<const FIRST: u32>(e: u64) -> u32 {
    FIRST + ((e >> 32) & 63) as u32
}

/// The table workers look up IPv6 destinations in, whose first level indexes the address's
/// first `FIRST` bits ([`FIRST_BITS`] for the default table, on huge pages; fewer for the
/// many small tables of VRFs, on small pages). Shared (`Arc`) between the workers and the
/// [`Fib6Writer`].
pub struct Fib6<const FIRST: u32 = 18> {
    /// `SLOTS` first-level entries (`AtomicU64`), zeroed: no tree.
    first: HugeRegion,
    /// The longest route of length ≤ `FIRST` covering each slot.
    defaults: Box<[AtomicU32]>,
    /// The host routes (/128s), or null when there are none; owned by the table.
    hosts: AtomicPtr<Hosts>,
    /// The lines of every tree.
    arena: arena::Lines,
    /// The lookup paths this CPU can run.
    cpu: Cpu,
}

/// The instructions of [`Fib6::lookup_batch`]'s paths this CPU has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cpu {
    /// AVX2, BMI2, LZCNT, MOVBE and POPCNT (every x86-64 CPU since 2013).
    Avx2,
    /// POPCNT (since 2008).
    Popcnt,
    /// Neither.
    Baseline,
}

impl Cpu {
    /// What this CPU has.
    fn detect() -> Cpu {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("bmi2") && has!("lzcnt") && has!("movbe") && has!("popcnt") {
                return Cpu::Avx2;
            }
            if has!("popcnt") {
                return Cpu::Popcnt;
            }
        }
        Cpu::Baseline
    }
}

impl<const FIRST: u32> Fib6<FIRST> {
    /// First-level slots, checked when a table is made: 8 to 18 bits.
    const SLOTS: usize = {
        assert!(FIRST >= 8 && FIRST <= FIRST_BITS, "a first level of 8 to 18 bits");
        1 << FIRST
    };
    /// Huge pages for the default table; small pages for a narrower first level, a small
    /// table of which there may be a thousand.
    const HUGE: bool = FIRST == FIRST_BITS;

    /// An empty table.
    pub fn new() -> std::io::Result<Self> {
        let bytes = Self::SLOTS * std::mem::size_of::<AtomicU64>();
        Ok(Fib6 {
            first: HugeRegion::with_pages(bytes, Self::HUGE)?,
            defaults: (0..Self::SLOTS).map(|_| AtomicU32::new(0)).collect(),
            hosts: AtomicPtr::new(std::ptr::null_mut()),
            arena: arena::Lines::new(Self::HUGE)?,
            cpu: Cpu::detect(),
        })
    }

    /// First-level entry `slot` (masked to the table).
    #[inline(always)]
    fn first(&self, slot: usize) -> &AtomicU64 {
        self.first_level()(slot)
    }

    /// A function to first-level entries (from a pointer read once).
    #[inline(always)]
    fn first_level<'a>(&'a self) -> impl Fn(usize) -> &'a AtomicU64 + Copy + 'a {
        let base = self.first.as_ptr().cast::<AtomicU64>();
        // SAFETY: the region holds at least `SLOTS` 8-byte, page-aligned entries, zeroed by the
        // mapping, alive as long as `self`, and the index is masked to them. The pointer comes
        // from the mapping itself, so atomic stores through it are allowed; every access to
        // this memory goes through these atomics.
        move |slot| unsafe { &*base.add(slot & (Self::SLOTS - 1)) }
    }

    /// The default leaf of `slot`.
    #[inline(always)]
    fn default_of(&self, slot: usize) -> u32 {
        self.defaults[slot & (Self::SLOTS - 1)].load(Relaxed)
    }

    /// The host table, if any.
    #[inline(always)]
    fn hosts(&self) -> Option<&Hosts> {
        // SAFETY: published (release) by the writer before any tree that marks a host, and
        // freed only after every reader has been quiescent since it was replaced.
        unsafe { self.hosts.load(Acquire).as_ref() }
    }

    /// Longest-prefix match of `addr` (the address as a big-endian `u128`).
    pub fn lookup(&self, addr: u128) -> Option<Leaf> {
        let slot = slot_of::<FIRST>(addr);
        let e = self.first(slot).load(Acquire);
        let (walk, mut x) = start::<FIRST>(e, addr, self.arena.base() as usize);
        let mut height = (walk & 63) as u32;
        if height == 0 {
            return Leaf::decode(self.default_of(slot));
        }
        let mut node = self.arena.at(walk & !63);
        let mut depth = window_of::<FIRST>(e);
        loop {
            for _ in 1..height {
                // SAFETY: a node of the tree just loaded (acquire: its lines are visible),
                // freed only after this reader's next quiescent state (the caller is a QSBR
                // reader or holds the writer).
                node = unsafe { child::<false>(node, x) };
            }
            // SAFETY: a leaf of the same tree.
            let r = unsafe { result::<false>(node, x) };
            if r & EXT != 0 {
                height = (r >> 28) & 7;
                node = node.wrapping_add((r & OFFSET) as usize);
                depth += 32;
                x = biased(window_key(addr, depth));
                continue;
            }
            let r = if r & HOSTS != 0 {
                self.hosts().and_then(|h| h.get(h.first(addr), addr)).unwrap_or(r & !HOSTS)
            } else {
                r
            };
            return Leaf::decode(if r != 0 { r } else { self.default_of(slot) });
        }
    }

    /// Longest-prefix match of `addr`.
    pub fn lookup_addr(&self, addr: Ipv6Addr) -> Option<Leaf> {
        self.lookup(u128::from(addr))
    }

    /// Starts loading the first-level entry of `addr` into the cache.
    #[inline(always)]
    pub fn prefetch(&self, addr: &[u8; 16]) {
        let top = u32::from_be_bytes([addr[0], addr[1], addr[2], addr[3]]);
        crate::runtime::prefetch(self.first((top >> (32 - FIRST)) as usize));
    }

    /// The leaf (decode it with [`Leaf::decode`]) of each address of `dst` (at most a vector's
    /// worth) into `out`, for a batch whose first-level entries [`Fib6::prefetch`] asked for.
    /// `isa` [`Isa::Scalar`] keeps to 128-bit compares; a wider one takes the AVX2 path when
    /// the CPU has it (and `bmi2`, `lzcnt`, `movbe`).
    #[inline]
    pub fn lookup_batch(&self, isa: Isa, dst: &[[u8; 16]], out: &mut [u32]) {
        assert!(dst.len() <= VECTOR_SIZE && out.len() == dst.len(), "a vector at most");
        match (self.cpu, isa) {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `Fib6::new` found all of its target features on this CPU.
            (Cpu::Avx2, Isa::Avx2 | Isa::Avx512) => unsafe { self.lookup_batch_avx2(dst, out) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above, for `popcnt`.
            (Cpu::Avx2 | Cpu::Popcnt, _) => unsafe { self.lookup_batch_popcnt(dst, out) },
            // SAFETY: no AVX2 asked.
            _ => unsafe { self.walk_batch::<false>(dst, out) },
        }
    }

    /// [`Fib6::walk_batch`] with each population count one instruction: every x86-64 CPU
    /// since 2008 has it, but the baseline target does not assume it.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn lookup_batch_popcnt(&self, dst: &[[u8; 16]], out: &mut [u32]) {
        // SAFETY: no AVX2 asked.
        unsafe { self.walk_batch::<false>(dst, out) };
    }

    /// [`Fib6::walk_batch`] comparing a node's keys in two 256-bit compares, not four of 128,
    /// loading and swapping the addresses in one instruction (`movbe`), shifting without the
    /// `cl` register (`bmi2`) and checking the region with one `lzcnt`: every x86-64 CPU since
    /// 2013 (Haswell, Zen).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi2,lzcnt,movbe,popcnt")]
    fn lookup_batch_avx2(&self, dst: &[[u8; 16]], out: &mut [u32]) {
        // SAFETY: this function's target features are the CPU's.
        unsafe { self.walk_batch::<true>(dst, out) };
    }

    /// [`Fib6::lookup_batch`]'s walks, level by level.
    ///
    /// # Safety
    /// With `AVX2`, the CPU has AVX2.
    #[inline(always)]
    unsafe fn walk_batch<const AVX2: bool>(&self, dst: &[[u8; 16]], out: &mut [u32]) {
        let n = dst.len();
        let out = &mut out[..n];
        let arena = self.arena.base() as usize;
        // Each walk's node (its address tagged with the tree's height), key window and
        // `d - FIRST` of its tree (escapes go on from there: the first level may have
        // changed since).
        let mut node = [0usize; VECTOR_SIZE];
        let mut x = [0i32; VECTOR_SIZE];
        let mut shift = [0u8; VECTOR_SIZE];
        let mut tallest = 0;
        // The walks with an internal node to step through.
        let mut tall = [0u8; VECTOR_SIZE];
        let mut nt = 0;
        let first = self.first_level();
        for (k, d) in dst.iter().enumerate() {
            let key = u128::from_be_bytes(*d);
            let e = first(slot_of::<FIRST>(key)).load(Acquire);
            let (walk, window) = start::<FIRST>(e, key, arena);
            crate::runtime::prefetch(self.arena.at(walk));
            node[k & (VECTOR_SIZE - 1)] = walk;
            x[k & (VECTOR_SIZE - 1)] = window;
            shift[k & (VECTOR_SIZE - 1)] = ((e >> 32) & 63) as u8;
            tallest = tallest.max(walk & 63);
            tall[nt & (VECTOR_SIZE - 1)] = k as u8;
            nt += usize::from(walk & 63 >= 2);
        }
        // SAFETY: the walks' roots, of trees loaded (acquire) from the first level in this
        // call, freed only after our next quiescent state; the caller's CPU.
        unsafe { self.descend::<AVX2>(&tall[..nt], tallest, &mut node, &x) };
        // The walks whose results are escapes or host probes, listed without a branch.
        let mut special = [0u8; VECTOR_SIZE];
        let mut ns = 0;
        for (k, o) in out.iter_mut().enumerate() {
            // SAFETY: a leaf of a live tree, or an empty leaf.
            let r =
                unsafe { result::<AVX2>(self.arena.at(node[k & (VECTOR_SIZE - 1)] & !63), x[k & (VECTOR_SIZE - 1)]) };
            *o = r;
            special[ns & (VECTOR_SIZE - 1)] = k as u8;
            ns += usize::from(r & (EXT | HOSTS) != 0);
        }
        if ns > 0 {
            self.finish_special(dst, out, &mut node, &shift, &special[..ns]);
        }
        for (o, d) in out.iter_mut().zip(dst) {
            if *o == 0 {
                *o = self.default_of(slot_of::<FIRST>(u128::from_be_bytes(*d)));
            }
        }
    }

    /// Steps each walk of `walks` down its tree, one pass a level from `tallest` to 2: then
    /// each is at the leaf for its key in `x`. A walk whose tree is shorter than a pass stays
    /// at its root, which `child` reads, and does not step.
    ///
    /// # Safety
    /// Each walk's node is the root of a live tree at least 2 high, tagged with its height;
    /// with `AVX2`, the CPU has AVX2.
    #[inline(always)]
    unsafe fn descend<const AVX2: bool>(
        &self,
        walks: &[u8],
        tallest: usize,
        node: &mut [usize; VECTOR_SIZE],
        x: &[i32; VECTOR_SIZE],
    ) {
        for p in (2..=tallest).rev() {
            for &k in walks {
                let (k, v) = (usize::from(k), node[usize::from(k)]);
                // SAFETY: the caller's; an internal node (a walk of height at least `p` is at
                // one, a shorter one at its root).
                let c = unsafe { child::<AVX2>(self.arena.at(v & !63), x[k]) }.addr() | (v & 63);
                // Every walk steps at the last pass: said outright, the compiler drops the
                // select from it.
                node[k] = if p == 2 || v & 63 >= p { c } else { v };
                crate::runtime::prefetch(self.arena.at(node[k]));
            }
        }
    }

    /// Finishes walks `special`, whose results in `out` are escapes (from the leaves in
    /// `node`, of trees whose windows start `shift` bits past the first level) or host probes:
    /// escape rounds first (level by level, as the main walk), then the probes (all
    /// prefetched, then read).
    #[cold]
    fn finish_special(
        &self,
        dst: &[[u8; 16]],
        out: &mut [u32],
        node: &mut [usize; VECTOR_SIZE],
        shift: &[u8; VECTOR_SIZE],
        special: &[u8],
    ) {
        let (mut esc, mut hst) = (Walks::default(), Walks::default());
        triage(out, special, &mut esc, &mut hst);
        let mut depth = [0u32; VECTOR_SIZE];
        let mut x = [0i32; VECTOR_SIZE];
        for &k in esc.list() {
            depth[usize::from(k)] = FIRST + u32::from(shift[usize::from(k)]);
        }
        while esc.n > 0 {
            let round = std::mem::take(&mut esc);
            let (mut tall, mut tallest) = (Walks::default(), 0);
            for &k in round.list() {
                let r = out[usize::from(k)];
                let h = ((r >> 28) & 7) as usize;
                if h >= 2 {
                    tall.push(k);
                }
                let k = usize::from(k);
                node[k] = ((node[k] & !63) + (r & OFFSET) as usize * 64) | h;
                crate::runtime::prefetch(self.arena.at(node[k]));
                tallest = tallest.max(h);
                depth[k] += 32;
                x[k] = biased(window_key(u128::from_be_bytes(dst[k]), depth[k]));
            }
            // SAFETY: escape roots (at least 2 high) of the live trees the walks were in;
            // `false`: no AVX2 asked.
            unsafe { self.descend::<false>(tall.list(), tallest, node, &x) };
            for &k in round.list() {
                let k = usize::from(k);
                // SAFETY: a leaf of a live tree.
                out[k] = unsafe { result::<false>(self.arena.at(node[k] & !63), x[k]) };
            }
            triage(out, round.list(), &mut esc, &mut hst);
        }
        let hst = hst.list();
        let Some(hosts) = self.hosts() else {
            for &k in hst {
                out[usize::from(k)] &= !HOSTS;
            }
            return;
        };
        let mut at = [0u32; VECTOR_SIZE];
        for (a, &k) in at.iter_mut().zip(hst) {
            *a = hosts.first(u128::from_be_bytes(dst[usize::from(k)]));
            hosts.prefetch(*a);
        }
        for (&a, &k) in at.iter().zip(hst) {
            let k = usize::from(k);
            out[k] = hosts.get(a, u128::from_be_bytes(dst[k])).unwrap_or(out[k] & !HOSTS);
        }
    }
}

/// A list of walks of a vector (their indices in it).
struct Walks {
    k: [u8; VECTOR_SIZE],
    n: usize,
}

impl Default for Walks {
    fn default() -> Self {
        Walks { k: [0; VECTOR_SIZE], n: 0 }
    }
}

impl Walks {
    /// Appends walk `k`.
    fn push(&mut self, k: u8) {
        self.k[self.n] = k;
        self.n += 1;
    }

    /// The walks listed.
    fn list(&self) -> &[u8] {
        &self.k[..self.n]
    }
}

/// Lists each walk of `from` whose result in `out` is an escape in `esc`, one whose result
/// is a host probe in `hst`.
fn triage(out: &[u32], from: &[u8], esc: &mut Walks, hst: &mut Walks) {
    for &k in from {
        let r = out[usize::from(k)];
        if r & EXT != 0 {
            esc.push(k);
        } else if r & HOSTS != 0 {
            hst.push(k);
        }
    }
}

// Walks are listed by `u8` indices.
const _: () = assert!(VECTOR_SIZE <= 256);

impl<const FIRST: u32> Drop for Fib6<FIRST> {
    fn drop(&mut self) {
        let hosts = *self.hosts.get_mut();
        if !hosts.is_null() {
            // SAFETY: `&mut self`: no reader is left; the table owns the published host table,
            // made by `Box::into_raw` in the writer.
            drop(unsafe { Box::from_raw(hosts) });
        }
    }
}
