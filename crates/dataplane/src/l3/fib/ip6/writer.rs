//! Changing the IPv6 table: batches of changes, trees rebuilt copy-on-write into free arena
//! lines, old lines and host tables freed after a quiescent period.

use super::arena::Alloc;
use super::build::{Entry, build_slot};
use super::hosts::Hosts;
use super::{Fib6, REGION_BITS, slot_of};
use crate::l3::fib::{FibError, Leaf, MAX_INDEX, Route, key_mask};
use crate::runtime::qsbr::Qsbr;
use std::collections::{BTreeMap, HashMap};
use std::net::Ipv6Addr;
use std::sync::Arc;
use std::sync::atomic::Ordering::{Relaxed, Release};

/// Bytes the route map takes per route: a `BTreeMap<(u128, u8), u32>` entry is a 32-byte key
/// and a 4-byte value, in nodes of up to 11 (a leaf node is 416 bytes, an internal one 96 more).
/// Measured with a counting global allocator over 230 000 entries: 57 bytes an entry after
/// inserts in random order, 72 after inserts in key order (which leave nodes half full); the
/// larger is counted.
pub const MAP_BYTES_PER_ROUTE: usize = 72;

/// The encoded leaf of a route of length `len` toward `adj`.
fn leaf(adj: u32, len: u8) -> u32 {
    Leaf { adj, prefix_len: len }.encode()
}

/// A published host table no longer published, freed after a quiescent period.
struct RetiredHosts(*mut Hosts);

// SAFETY: a retired table is owned by the writer alone (unpublished); it is plain memory.
unsafe impl Send for RetiredHosts {}

/// The main thread's handle for changing a [`Fib6`]. It keeps every route (for rebuilding
/// trees and deletes, which fall back to the covering route, and for `show ip6 fib`).
pub struct Fib6Writer<const FIRST: u32 = 18> {
    fib: Arc<Fib6<FIRST>>,
    qsbr: Arc<Qsbr>,
    routes: BTreeMap<(u128, u8), u32>,
    /// The /128s of `routes` (the host table is built from them).
    host_routes: HashMap<u128, u32>,
    /// Each slot's tree: its first line and its number of lines.
    trees: HashMap<usize, (u32, u32)>,
    lines: Alloc,
    /// Lines of replaced trees, given back after a quiescent period.
    retired: Vec<(u32, u32)>,
    retired_hosts: Vec<RetiredHosts>,
}

impl<const FIRST: u32> Fib6Writer<FIRST> {
    /// A writer for `fib` (empty), whose readers announce quiescent states through `qsbr`.
    pub fn new(fib: Arc<Fib6<FIRST>>, qsbr: Arc<Qsbr>) -> Self {
        Fib6Writer {
            fib,
            qsbr,
            routes: BTreeMap::new(),
            host_routes: HashMap::new(),
            trees: HashMap::new(),
            lines: Alloc::default(),
            retired: Vec::new(),
            retired_hosts: Vec::new(),
        }
    }

    /// The table workers read.
    pub fn fib(&self) -> &Arc<Fib6<FIRST>> {
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

    /// Slots with a tree.
    pub fn subtrees(&self) -> usize {
        self.trees.len()
    }

    /// Bytes allocated for the table and its writer: the first level (its mapping), the
    /// defaults, the arena lines ever used (the mapping's touched part), the host table and
    /// the route map ([`MAP_BYTES_PER_ROUTE`] a route) and its index of /128s (a bucket and a
    /// control byte for each entry it has room for).
    pub fn bytes(&self) -> usize {
        self.fib.first.len()
            + std::mem::size_of_val(&*self.fib.defaults)
            + self.lines.touched() as usize * 64
            + self.fib.hosts().map_or(0, Hosts::bytes)
            + self.routes.len() * MAP_BYTES_PER_ROUTE
            + self.host_routes.capacity() * (std::mem::size_of::<(u128, u32)>() + 1)
    }

    /// Applies a batch of changes (inserts or replaces with `Some(adj)`, deletes with `None`)
    /// in order, then waits for one quiescent period and frees what it replaced. Every change
    /// is checked first, and the trees are built before any is published: on an error none of
    /// the batch is applied.
    pub fn apply(&mut self, changes: &[(Ipv6Addr, u8, Option<u32>)]) -> Result<(), FibError> {
        self.check(changes)?;
        // What the map held before, to put back if the trees do not fit.
        let mut undo = Vec::with_capacity(changes.len());
        let (mut dirty, mut hosts, mut short) = (Vec::new(), false, Vec::new());
        for &(addr, len, adj) in changes {
            let key = u128::from(addr) & key_mask(len);
            let old = match adj {
                Some(adj) => self.routes.insert((key, len), adj),
                None => self.routes.remove(&(key, len)),
            };
            undo.push(((key, len), old));
            if len == 128 {
                self.set_host(key, adj);
                hosts = true;
            }
            if u32::from(len) > FIRST {
                dirty.push(slot_of::<FIRST>(key));
            } else {
                short.push((key, len, adj));
            }
        }
        dirty.sort_unstable();
        dirty.dedup();
        let built = match self.build(&dirty) {
            Ok(built) => built,
            Err(e) => {
                for (k, old) in undo.into_iter().rev() {
                    match old {
                        Some(adj) => self.routes.insert(k, adj),
                        None => self.routes.remove(&k),
                    };
                    if k.1 == 128 {
                        self.set_host(k.0, old);
                    }
                }
                return Err(e);
            }
        };
        for (key, len, adj) in short {
            self.short(key, len, adj);
        }
        if hosts {
            self.publish_hosts();
        }
        for (slot, entry, lines) in built {
            self.publish(slot, entry, lines);
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

    /// Builds the tree of each slot of `dirty` from the map into free lines (unpublished), and
    /// returns the first-level entry of each (0: no route longer than the first level is left
    /// there) and its number of lines. When the lines run out, gives back those it took and
    /// refuses.
    fn build(&mut self, dirty: &[usize]) -> Result<Vec<(usize, u64, u32)>, FibError> {
        let mut built = Vec::with_capacity(dirty.len());
        let mut routes: Vec<Entry> = Vec::new();
        for &slot in dirty {
            let lo = (slot as u128) << (128 - FIRST);
            let hi = lo | u128::MAX >> FIRST;
            routes.clear();
            routes.extend(
                self.routes.range((lo, FIRST as u8 + 1)..=(hi, 128)).map(|(&(k, l), &adj)| (k, l, leaf(adj, l))),
            );
            if routes.is_empty() {
                built.push((slot, 0, 0));
                continue;
            }
            let t = build_slot(FIRST, &routes);
            let n = u32::try_from(t.tree.lines.len()).unwrap_or(u32::MAX);
            let Some(at) = self.lines.take(n) else {
                for &(_, e, lines) in &built {
                    if e != 0 {
                        self.lines.give(e as u32 >> 6, lines);
                    }
                }
                return Err(FibError::Full(super::arena::BYTES >> 20));
            };
            // SAFETY: lines just taken from the free ones: no reader can reach them.
            unsafe { self.fib.arena.write(at, &t.tree.lines) };
            let e = u64::from(t.region) << (64 - REGION_BITS)
                | u64::from(t.d - FIRST) << 32
                | u64::from(at) << 6
                | u64::from(t.tree.height);
            built.push((slot, e, n));
        }
        Ok(built)
    }

    /// Publishes `entry` (a tree of `lines` lines, or 0) in `slot`'s first-level entry and
    /// retires the tree it replaces.
    fn publish(&mut self, slot: usize, entry: u64, lines: u32) {
        debug_assert!(slot < 1 << FIRST);
        // A reader that loads the entry sees the tree's lines (written before).
        self.fib.first(slot).store(entry, Release);
        if let Some(old) = self.trees.remove(&slot) {
            self.retired.push(old);
        }
        if entry != 0 {
            self.trees.insert(slot, (entry as u32 >> 6, lines));
        }
    }

    /// Records host route `key` with `adj`, or its removal (`None`), in the index of /128s.
    fn set_host(&mut self, key: u128, adj: Option<u32>) {
        match adj {
            Some(adj) => self.host_routes.insert(key, adj),
            None => self.host_routes.remove(&key),
        };
    }

    /// Builds the host table from the /128s and publishes it (before the trees that mark
    /// them), retiring the one it replaces.
    fn publish_hosts(&mut self) {
        let new = if self.host_routes.is_empty() {
            std::ptr::null_mut()
        } else {
            let hosts = self.host_routes.iter().map(|(&k, &adj)| (k, leaf(adj, 128)));
            Box::into_raw(Box::new(Hosts::new(hosts)))
        };
        let old = self.fib.hosts.swap(new, Release);
        if !old.is_null() {
            self.retired_hosts.push(RetiredHosts(old));
        }
    }

    /// After the map took a change of a route `key/len` no longer than the first level: the
    /// defaults of the slots it covers.
    fn short(&mut self, key: u128, len: u8, adj: Option<u32>) {
        let leaf = match adj {
            Some(adj) => leaf(adj, len),
            None => (0..len)
                .rev()
                .find_map(|l| {
                    let adj = self.routes.get(&(key & key_mask(l), l))?;
                    Some(leaf(*adj, l))
                })
                .unwrap_or(0),
        };
        // An insert takes the slots whose best route is not longer, a delete those it held.
        let replace = |old: u32| match (adj, Leaf::decode(old)) {
            (Some(_), old) => old.is_none_or(|l| l.prefix_len <= len),
            (None, old) => old.is_some_and(|l| l.prefix_len == len),
        };
        let start = slot_of::<FIRST>(key);
        for slot in start..start + (1 << (FIRST - u32::from(len))) {
            if replace(self.fib.defaults[slot].load(Relaxed)) {
                self.fib.defaults[slot].store(leaf, Relaxed);
            }
        }
    }

    /// Waits for every reader to pass a quiescent point (a worker: a vector boundary), so
    /// that none still uses what it looked up before this call.
    pub fn synchronize(&self) {
        self.qsbr.synchronize();
    }

    /// Waits for every worker to pass a vector boundary, then frees the retired trees' lines
    /// and host tables.
    pub fn reclaim(&mut self) {
        if self.retired.is_empty() && self.retired_hosts.is_empty() {
            return;
        }
        self.qsbr.synchronize();
        for (at, n) in self.retired.drain(..) {
            self.lines.give(at, n);
        }
        for r in self.retired_hosts.drain(..) {
            // SAFETY: unpublished before the synchronize that just returned, made by
            // `Box::into_raw`, retired once.
            drop(unsafe { Box::from_raw(r.0) });
        }
    }

    /// Lines the trees use.
    #[cfg(test)]
    pub(super) fn lines_used(&self) -> u32 {
        self.trees.values().map(|t| t.1).sum()
    }

    /// Lets the trees have `more` lines than they ever had, and no more.
    #[cfg(test)]
    pub(super) fn limit_lines(&mut self, more: u32) {
        self.lines.limit(self.lines.touched() + more);
    }
}

impl<const FIRST: u32> Drop for Fib6Writer<FIRST> {
    fn drop(&mut self) {
        self.reclaim();
    }
}
