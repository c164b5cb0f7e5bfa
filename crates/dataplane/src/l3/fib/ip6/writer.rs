//! Changing the IPv6 table: batches of changes, subtrees rebuilt copy-on-write and freed after
//! a quiescent period.

use super::build::{Builder, Entry};
use super::{FIRST_BITS, Fib6, SLOTS, slot_of};
use crate::l3::fib::{FibError, Leaf, MAX_INDEX, Route, key_mask};
use crate::runtime::qsbr::Qsbr;
use std::collections::{BTreeMap, HashMap};
use std::net::Ipv6Addr;
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, Release};

/// Bytes the route map takes per route: a `BTreeMap<(u128, u8), u32>` entry is a 32-byte key
/// and a 4-byte value, in nodes of up to 11 (a leaf node is 416 bytes, an internal one 96 more).
/// Measured with a counting global allocator over 230 000 entries: 57 bytes an entry after
/// inserts in random order, 72 after inserts in key order (which leave nodes half full); the
/// larger is counted.
pub const MAP_BYTES_PER_ROUTE: usize = 72;

/// A retired subtree: its allocation, freed after a quiescent period.
struct Retired(NonNull<u64>);

// SAFETY: a retired subtree is owned by the writer alone (unpublished); it is plain memory.
unsafe impl Send for Retired {}

/// The first-level entry of a leaf.
fn leaf_entry(leaf: u32) -> *mut u64 {
    std::ptr::without_provenance_mut((leaf as usize) << 1)
}

/// Frees the subtree a first-level entry (tagged pointer) points to.
///
/// # Safety
/// `e` was published by [`Fib6Writer`] from a `Box<[u64]>` whose first word is its length, no
/// reader can still reach it, and it is freed once.
pub(super) unsafe fn free(e: *mut u64) {
    let block = e.map_addr(|a| a & !1);
    // SAFETY: the caller's: `block` is the start of a live `Box<[u64]>` (from `Box::into_raw`,
    // so with its provenance) whose first word is its length.
    unsafe {
        let words = block.read() as usize;
        drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(block, words)));
    }
}

/// The main thread's handle for changing a [`Fib6`]. It keeps every route (for rebuilding
/// subtrees and deletes, which fall back to the covering route, and for `show ip6 fib`).
pub struct Fib6Writer {
    fib: Arc<Fib6>,
    qsbr: Arc<Qsbr>,
    routes: BTreeMap<(u128, u8), u32>,
    retired: Vec<Retired>,
    /// Words of the subtrees published in the table.
    live_words: usize,
    pub(super) builder: Builder,
    pub(super) scratch: Vec<Entry>,
}

impl Fib6Writer {
    /// A writer for `fib` (empty), whose readers announce quiescent states through `qsbr`.
    pub fn new(fib: Arc<Fib6>, qsbr: Arc<Qsbr>) -> Self {
        Fib6Writer {
            fib,
            qsbr,
            routes: BTreeMap::new(),
            retired: Vec::new(),
            live_words: 0,
            builder: Builder::default(),
            scratch: Vec::new(),
        }
    }

    /// The table workers read.
    pub fn fib(&self) -> &Arc<Fib6> {
        &self.fib
    }

    /// Every route, ordered by prefix then length.
    pub fn routes(&self) -> impl Iterator<Item = Route<Ipv6Addr>> + '_ {
        self.routes.iter().map(|(&(k, len), &adj)| Route { prefix: Ipv6Addr::from(k), len, adj })
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// True when there are no routes.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Subtrees in the table.
    pub fn subtrees(&self) -> usize {
        self.fib.live.load(Relaxed)
    }

    /// Bytes allocated for the table and its writer: the first level (its mapping), the
    /// defaults, every subtree by its length, the builder's buffers and the route map
    /// ([`MAP_BYTES_PER_ROUTE`] a route).
    pub fn bytes(&self) -> usize {
        self.fib.first.len()
            + std::mem::size_of_val(&*self.fib.defaults)
            + self.live_words * 8
            + self.builder.bytes()
            + self.scratch.capacity() * std::mem::size_of::<Entry>()
            + self.routes.len() * MAP_BYTES_PER_ROUTE
    }

    /// Applies a batch of changes (inserts or replaces with `Some(adj)`, deletes with `None`)
    /// in order, then waits for one quiescent period and frees the subtrees it replaced. Every
    /// change is checked first: on an error none is applied.
    pub fn apply(&mut self, changes: &[(Ipv6Addr, u8, Option<u32>)]) -> Result<(), FibError> {
        self.check(changes)?;
        let mut dirty = Vec::new();
        for &(addr, len, adj) in changes {
            let key = u128::from(addr) & key_mask(len);
            match adj {
                Some(adj) => self.routes.insert((key, len), adj),
                None => self.routes.remove(&(key, len)),
            };
            if u32::from(len) > FIRST_BITS {
                dirty.push(slot_of(key));
            } else {
                self.short(key, len, adj);
            }
        }
        dirty.sort_unstable();
        dirty.dedup();
        for slot in dirty {
            self.rebuild(slot);
        }
        self.reclaim();
        Ok(())
    }

    /// Refuses a batch with an invalid change or a delete of a route that is not there (not
    /// before, nor put there by the batch itself).
    fn check(&self, changes: &[(Ipv6Addr, u8, Option<u32>)]) -> Result<(), FibError> {
        let deletes = changes.iter().any(|c| c.2.is_none());
        let mut pending = HashMap::new();
        for &(addr, len, adj) in changes {
            if len > 128 || adj.is_some_and(|a| a > MAX_INDEX) {
                return Err(FibError::Invalid(addr.into(), len, adj.unwrap_or(0)));
            }
            if deletes {
                let k = (u128::from(addr) & key_mask(len), len);
                let there = pending.get(&k).copied().unwrap_or_else(|| self.routes.contains_key(&k));
                if adj.is_none() && !there {
                    return Err(FibError::NoSuchRoute(addr.into(), len));
                }
                pending.insert(k, adj.is_some());
            }
        }
        Ok(())
    }

    /// After the map took a change of a route `key/len` no longer than the first level: the
    /// defaults of the slots it covers, and their entries when they hold a leaf.
    fn short(&mut self, key: u128, len: u8, adj: Option<u32>) {
        let leaf = match adj {
            Some(adj) => Leaf { adj, prefix_len: len }.encode(),
            None => (0..len)
                .rev()
                .find_map(|l| {
                    let adj = self.routes.get(&(key & key_mask(l), l))?;
                    Some(Leaf { adj: *adj, prefix_len: l }.encode())
                })
                .unwrap_or(0),
        };
        // An insert takes the slots whose best route is not longer, a delete those it held.
        let replace = |old: u32| match (adj, Leaf::decode(old)) {
            (Some(_), old) => old.is_none_or(|l| l.prefix_len <= len),
            (None, old) => old.is_some_and(|l| l.prefix_len == len),
        };
        let start = slot_of(key);
        for slot in start..start + (1 << (FIRST_BITS - u32::from(len))) {
            if replace(self.fib.defaults[slot].load(Relaxed)) {
                self.fib.defaults[slot].store(leaf, Relaxed);
                let first = self.fib.first(slot);
                if first.load(Relaxed).addr() & 1 == 0 {
                    first.store(leaf_entry(leaf), Release);
                }
            }
        }
    }

    /// Builds the subtree of `slot` from the map and publishes it (or the slot's default leaf
    /// when no route longer than the first level is left there); retires the old subtree.
    fn rebuild(&mut self, slot: usize) {
        let lo = (slot as u128) << (128 - FIRST_BITS);
        let hi = lo | u128::MAX >> FIRST_BITS;
        self.scratch.clear();
        self.scratch.extend(self.routes.range((lo, FIRST_BITS as u8 + 1)..=(hi, 128)).map(|(&(k, l), &a)| (k, l, a)));
        let new = if self.scratch.is_empty() {
            leaf_entry(self.fib.default_of(slot))
        } else {
            let block = self.builder.build(&self.scratch);
            self.live_words += block.len();
            self.fib.live.fetch_add(1, Relaxed);
            // Tagged (| 1): the allocation is 8-aligned.
            Box::into_raw(block).cast::<u64>().map_addr(|a| a | 1)
        };
        // Publishes the filled subtree: a reader that loads the pointer sees its contents.
        let old = self.fib.first(slot).swap(new, Release);
        if old.addr() & 1 == 1 {
            let block = old.map_addr(|a| a & !1);
            // SAFETY: a subtree this writer published; only it writes the first level.
            self.live_words -= unsafe { block.read() } as usize;
            self.fib.live.fetch_sub(1, Relaxed);
            self.retired.push(Retired(NonNull::new(old).expect("tagged, not null")));
        }
        debug_assert!(slot < SLOTS);
    }

    /// Waits for every reader to pass a quiescent point (a worker: a vector boundary), so
    /// that none still uses what it looked up before this call.
    pub fn synchronize(&self) {
        self.qsbr.synchronize();
    }

    /// Waits for every worker to pass a vector boundary, then frees the retired subtrees.
    pub fn reclaim(&mut self) {
        if !self.retired.is_empty() {
            self.qsbr.synchronize();
            for r in self.retired.drain(..) {
                // SAFETY: unpublished before the synchronize that just returned: every reader
                // has been quiescent since, so none still holds a pointer into it; retired once.
                unsafe { free(r.0.as_ptr()) };
            }
        }
    }
}

impl Drop for Fib6Writer {
    fn drop(&mut self) {
        self.reclaim();
    }
}
