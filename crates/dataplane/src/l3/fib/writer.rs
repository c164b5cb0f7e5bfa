//! Changing the IPv4 FIB in place: inserts and deletes with atomic entry stores, tbl8 groups
//! reclaimed after a quiescent period.

use super::{EXT, Entries, Fib, GROUP, Leaf, MAX_INDEX, is_ext};
use crate::net::{AddrKey, PrefixMap, key_mask};
use crate::runtime::qsbr::Qsbr;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;
use std::sync::atomic::Ordering::{Acquire, Release};

/// A route: prefix (host bits zero), length and adjacency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Route<A: AddrKey = Ipv4Addr> {
    /// Network address.
    pub prefix: A,
    /// Prefix length, 0 to the address length.
    pub len: u8,
    /// Adjacency index, below [`MAX_INDEX`].
    pub adj: u32,
}

impl<A: AddrKey> Route<A> {
    /// A route for `addr/len` (host bits are cleared) to adjacency `adj`.
    pub fn new(addr: A, len: u8, adj: u32) -> Self {
        Route { prefix: A::from_key(addr.key() & key_mask(len)), len, adj }
    }
}

/// Why a change was refused. The table is unchanged when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FibError {
    /// Every tbl8 group is in use.
    #[error("fib: all {0} tbl8 groups of the {1} table are in use (raise fib.{2})")]
    Tbl8Exhausted(u32, &'static str, &'static str),
    /// A delete of a route that is not there.
    #[error("fib: no route {0}/{1}")]
    NoSuchRoute(IpAddr, u8),
    /// A change for a VRF index that has no tables.
    #[error("fib: no VRF has index {0}")]
    NoSuchVrf(u16),
    /// A prefix length beyond the address or an adjacency index out of range.
    #[error("fib: invalid route {0}/{1} adjacency {2}")]
    Invalid(IpAddr, u8, u32),
    /// The IPv6 table's node memory is all in use.
    #[error("fib: the IPv6 table is full (its {0} MiB of nodes are in use)")]
    Full(usize),
}

/// The main thread's handle for changing a [`Fib`]. It keeps every route (for deletes, which
/// must fall back to the covering route, and for `show ip fib`).
pub struct FibWriter<A: AddrKey = Ipv4Addr, const FIRST: u8 = 24> {
    fib: Arc<Fib<A, FIRST>>,
    qsbr: Arc<Qsbr>,
    /// Every route (a delete looks up each shorter length for the covering route: a hash
    /// probe each).
    routes: PrefixMap<A, u32>,
    free: Vec<u32>,
    retired: Vec<u32>,
}

impl<A: AddrKey, const FIRST: u8> FibWriter<A, FIRST> {
    /// A writer for `fib`, whose readers announce quiescent states through `qsbr`.
    pub fn new(fib: Arc<Fib<A, FIRST>>, qsbr: Arc<Qsbr>) -> Self {
        let free = (0..fib.tbl8_groups()).rev().collect();
        FibWriter { fib, qsbr, routes: PrefixMap::default(), free, retired: Vec::new() }
    }

    /// The table workers read.
    pub fn fib(&self) -> &Arc<Fib<A, FIRST>> {
        &self.fib
    }

    /// Every route, ordered by prefix then length.
    pub fn routes(&self) -> impl Iterator<Item = Route<A>> + '_ {
        let mut all: Vec<Route<A>> = self.routes.iter().map(|(prefix, len, &adj)| Route { prefix, len, adj }).collect();
        all.sort_unstable();
        all.into_iter()
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// True when there are no routes.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Bytes allocated for the table (its first level and every tbl8 group, touched or not)
    /// and its writer's map of routes.
    pub fn bytes(&self) -> usize {
        ((1 << FIRST) + self.fib.tbl8_groups() as usize * 256) * 4 + self.routes.bytes()
    }

    /// Bytes of the table in use: its first level, the tbl8 groups in use and its writer's
    /// map of routes. Less than [`FibWriter::bytes`] where the groups are on small pages,
    /// resident only once used (a VRF's table).
    pub fn used_bytes(&self) -> usize {
        ((1 << FIRST) + self.tbl8_in_use() as usize * 256) * 4 + self.routes.bytes()
    }

    /// tbl8 groups in use.
    pub fn tbl8_in_use(&self) -> u32 {
        self.fib.tbl8_groups() - self.free.len() as u32 - self.retired.len() as u32
    }

    /// Applies a batch of changes (inserts or replaces with `Some(adj)`, deletes with `None`),
    /// then waits for one quiescent period and reuses the tbl8 groups the batch retired.
    /// Stops at the first refused change and returns its error; earlier changes stay applied.
    pub fn apply(&mut self, changes: &[(A, u8, Option<u32>)]) -> Result<(), FibError> {
        let r = changes.iter().try_for_each(|&(addr, len, adj)| self.change(addr, len, adj));
        self.reclaim();
        r
    }

    /// One change of a batch: insert or replace with `Some(adj)`, delete with `None`.
    pub(super) fn change(&mut self, addr: A, len: u8, adj: Option<u32>) -> Result<(), FibError> {
        match adj {
            Some(adj) => self.insert(Route::new(addr, len, adj)),
            None => self.delete(addr, len),
        }
    }

    /// Waits for every reader to pass a quiescent point (a worker: a vector boundary), so
    /// that none still uses what it looked up before this call.
    pub fn synchronize(&self) {
        self.qsbr.synchronize();
    }

    /// Waits for every worker to pass a vector boundary, then makes retired groups reusable.
    pub fn reclaim(&mut self) {
        if !self.retired.is_empty() {
            self.qsbr.synchronize();
            self.free.append(&mut self.retired);
        }
    }

    /// Adds or replaces a route.
    pub fn insert(&mut self, r: Route<A>) -> Result<(), FibError> {
        if r.len > A::BITS || r.adj > MAX_INDEX {
            return Err(FibError::Invalid(r.prefix.into(), r.len, r.adj));
        }
        if self.groups_needed(r.prefix.key(), r.len) > self.free.len() {
            return Err(FibError::Tbl8Exhausted(self.fib.tbl8_groups(), "IPv4", "tbl8-groups"));
        }
        self.routes.insert(r.prefix, r.len, r.adj);
        let leaf = Leaf { adj: r.adj, prefix_len: r.len }.encode();
        self.fill(r.prefix.key(), r.len, leaf, |old| {
            old == 0 || Leaf::decode(old).is_some_and(|l| l.prefix_len <= r.len)
        });
        Ok(())
    }

    /// Removes a route; the addresses it covered fall back to the longest covering route.
    pub fn delete(&mut self, addr: A, len: u8) -> Result<(), FibError> {
        let key = addr.key() & key_mask(len);
        if self.routes.remove(A::from_key(key), len).is_none() {
            return Err(FibError::NoSuchRoute(addr.into(), len));
        }
        let cover = (0..len)
            .rev()
            .filter(|&l| self.routes.has_length(l))
            .find_map(|l| {
                let covering = A::from_key(key & key_mask(l));
                self.routes.get(covering, l).map(|&adj| Leaf { adj, prefix_len: l }.encode())
            })
            .unwrap_or(0);
        self.fill(key, len, cover, |old| Leaf::decode(old).is_some_and(|l| l.prefix_len == len));
        Ok(())
    }

    /// The groups an insert of `key/len` takes: one per 8 bits beyond the deepest group
    /// already on its path.
    fn groups_needed(&self, key: u128, len: u8) -> usize {
        let mut e = self.fib.first(key).load(Acquire);
        let mut depth = FIRST;
        while len > depth {
            if !is_ext(e) {
                return usize::from(len - depth).div_ceil(8);
            }
            e = self.fib.below(e, key, depth).load(Acquire);
            depth += 8;
        }
        0
    }

    /// Stores `leaf` in every entry of `key/len` for which `replace(old)` holds, splitting an
    /// entry into a group for longer prefixes and folding groups back when they no longer
    /// hold anything longer than their parent entry.
    fn fill(&mut self, key: u128, len: u8, leaf: u32, replace: impl Fn(u32) -> bool) {
        let fib = self.fib.clone();
        self.fill_level(&fib, &fib.first_level, 0, FIRST, key, len, leaf, &replace);
    }

    /// [`FibWriter::fill`] in table `t` from entry `base`, a level of `width` bits that ends
    /// `end` bits into the address.
    #[allow(clippy::too_many_arguments)] // one recursive step of `fill`, its state spelled out
    fn fill_level(
        &mut self,
        fib: &Fib<A, FIRST>,
        t: &Entries,
        base: usize,
        end: u8,
        key: u128,
        len: u8,
        leaf: u32,
        replace: &impl Fn(u32) -> bool,
    ) {
        let width = if end == FIRST { FIRST } else { 8 };
        let idx = ((key << (end - width)) >> (128 - u32::from(width))) as usize;
        if len <= end {
            // The prefix covers 2^(end - len) aligned entries of this level.
            self.fill_range(fib, t, base + idx, 1 << (end - len), end, leaf, replace);
            return;
        }
        let slot = base + idx;
        let e = t.get(slot).load(Acquire);
        let g = if is_ext(e) {
            (e & GROUP) as usize
        } else {
            let g = self.free.pop().expect("checked by insert; deletes never split") as usize;
            for j in 0..256 {
                fib.tbl8.get(g << 8 | j).store(e, Release);
            }
            // Publishes the filled group: a reader that sees EXT sees its entries.
            t.get(slot).store(EXT | g as u32, Release);
            g
        };
        self.fill_level(fib, &fib.tbl8, g << 8, end + 8, key, len, leaf, replace);
        self.try_fold(fib, t, slot, g, end);
    }

    /// Stores `leaf` in the `n` entries of `t` from `start` (ending `end` bits into the
    /// address) where `replace(old)` holds, and in every group below them.
    #[allow(clippy::too_many_arguments)] // as fill_level
    fn fill_range(
        &mut self,
        fib: &Fib<A, FIRST>,
        t: &Entries,
        start: usize,
        n: usize,
        end: u8,
        leaf: u32,
        replace: &impl Fn(u32) -> bool,
    ) {
        for i in start..start + n {
            let e = t.get(i).load(Acquire);
            if is_ext(e) {
                let g = (e & GROUP) as usize;
                self.fill_range(fib, &fib.tbl8, g << 8, 256, end + 8, leaf, replace);
                self.try_fold(fib, t, i, g, end);
            } else if replace(e) {
                t.get(i).store(leaf, Release);
            }
        }
    }

    /// Folds group `g`, below entry `slot` of `t` (`depth` bits into the address), back into
    /// the entry when its entries are all the same leaf, none longer than `depth`; the group
    /// is retired until the next quiescent period.
    fn try_fold(&mut self, fib: &Fib<A, FIRST>, t: &Entries, slot: usize, g: usize, depth: u8) {
        let first = fib.tbl8.get(g << 8).load(Acquire);
        let uniform = (1..256).all(|j| fib.tbl8.get(g << 8 | j).load(Acquire) == first);
        if uniform && !is_ext(first) && Leaf::decode(first).is_none_or(|l| l.prefix_len <= depth) {
            t.get(slot).store(first, Release);
            self.retired.push(g as u32);
        }
    }
}

#[cfg(test)]
mod tests;
