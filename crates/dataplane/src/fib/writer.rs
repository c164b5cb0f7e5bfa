//! Changing the FIB in place: inserts and deletes with atomic entry stores, tbl8 groups
//! reclaimed after a quiescent period.

use super::{EXT, Entries, Fib, INDEX, Leaf, MAX_INDEX};
use crate::qsbr::Qsbr;
use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::Ordering::{Acquire, Release};

/// A route: prefix (host order, host bits zero), length and adjacency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Route {
    /// Network address, host order.
    pub prefix: u32,
    /// Prefix length, 0–32.
    pub len: u8,
    /// Adjacency index, below [`MAX_INDEX`].
    pub adj: u32,
}

impl Route {
    /// A route for `addr/len` (host bits are cleared) to adjacency `adj`.
    pub fn new(addr: Ipv4Addr, len: u8, adj: u32) -> Self {
        Route { prefix: u32::from(addr) & mask(len), len, adj }
    }
}

/// The netmask of a prefix length.
pub fn mask(len: u8) -> u32 {
    if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len.min(32))) }
}

/// Why a change was refused. The table is unchanged when one is returned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FibError {
    /// Every tbl8 group is in use.
    #[error("fib: all {0} tbl8 groups are in use (raise fib.tbl8-groups)")]
    Tbl8Exhausted(u32),
    /// A delete of a route that is not there.
    #[error("fib: no route {0}/{1}")]
    NoSuchRoute(Ipv4Addr, u8),
    /// A prefix length above 32 or an adjacency index out of range.
    #[error("fib: invalid route {0}/{1} adjacency {2}")]
    Invalid(Ipv4Addr, u8, u32),
}

/// The main thread's handle for changing a [`Fib`]. It keeps every route (for deletes, which
/// must fall back to the covering route, and for `show ip fib`).
pub struct FibWriter {
    fib: Arc<Fib>,
    qsbr: Arc<Qsbr>,
    routes: BTreeMap<(u32, u8), u32>,
    free: Vec<u32>,
    retired: Vec<u32>,
}

impl FibWriter {
    /// A writer for `fib`, whose readers announce quiescent states through `qsbr`.
    pub fn new(fib: Arc<Fib>, qsbr: Arc<Qsbr>) -> Self {
        let free = (0..fib.tbl8_groups()).rev().collect();
        FibWriter { fib, qsbr, routes: BTreeMap::new(), free, retired: Vec::new() }
    }

    /// The table workers read.
    pub fn fib(&self) -> &Arc<Fib> {
        &self.fib
    }

    /// Every route, ordered by prefix then length.
    pub fn routes(&self) -> impl Iterator<Item = Route> + '_ {
        self.routes.iter().map(|(&(prefix, len), &adj)| Route { prefix, len, adj })
    }

    /// Number of routes.
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    /// True when there are no routes.
    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// tbl8 groups in use.
    pub fn tbl8_in_use(&self) -> u32 {
        self.fib.tbl8_groups() - self.free.len() as u32 - self.retired.len() as u32
    }

    /// Applies a batch of changes (inserts or replaces with `Some(adj)`, deletes with `None`),
    /// then waits for one quiescent period and reuses the tbl8 groups the batch retired.
    /// Stops at the first refused change and returns its error; earlier changes stay applied.
    pub fn apply(&mut self, changes: &[(Ipv4Addr, u8, Option<u32>)]) -> Result<(), FibError> {
        let r = changes.iter().try_for_each(|&(addr, len, adj)| match adj {
            Some(adj) => self.insert(Route::new(addr, len, adj)),
            None => self.delete(addr, len),
        });
        self.reclaim();
        r
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
    pub fn insert(&mut self, r: Route) -> Result<(), FibError> {
        if r.len > 32 || r.adj > MAX_INDEX {
            return Err(FibError::Invalid(r.prefix.into(), r.len, r.adj));
        }
        if r.len > 24 && self.fib.tbl24.get((r.prefix >> 8) as usize).load(Acquire) & EXT == 0 && self.free.is_empty() {
            return Err(FibError::Tbl8Exhausted(self.fib.tbl8_groups()));
        }
        self.routes.insert((r.prefix, r.len), r.adj);
        let leaf = Leaf { adj: r.adj, prefix_len: r.len }.encode();
        self.fill(r.prefix, r.len, leaf, |old| old == 0 || Leaf::decode(old).is_some_and(|l| l.prefix_len <= r.len));
        Ok(())
    }

    /// Removes a route; the addresses it covered fall back to the longest covering route.
    pub fn delete(&mut self, addr: Ipv4Addr, len: u8) -> Result<(), FibError> {
        let prefix = u32::from(addr) & mask(len);
        if self.routes.remove(&(prefix, len)).is_none() {
            return Err(FibError::NoSuchRoute(addr, len));
        }
        let cover = (0..len)
            .rev()
            .find_map(|l| self.routes.get(&(prefix & mask(l), l)).map(|&adj| Leaf { adj, prefix_len: l }.encode()))
            .unwrap_or(0);
        self.fill(prefix, len, cover, |old| Leaf::decode(old).is_some_and(|l| l.prefix_len == len));
        Ok(())
    }

    /// Stores `leaf` in every entry of `prefix/len` for which `replace(old)` holds, splitting
    /// a /24 into a tbl8 group for longer prefixes and folding groups back when they no longer
    /// hold anything longer than /24.
    fn fill(&mut self, prefix: u32, len: u8, leaf: u32, replace: impl Fn(u32) -> bool) {
        let fib = self.fib.clone();
        let (t24, t8) = (&fib.tbl24, &fib.tbl8);
        if len <= 24 {
            let start = (prefix >> 8) as usize;
            for i in start..start + (1usize << (24 - len)) {
                let e = t24.get(i).load(Acquire);
                if e & EXT != 0 {
                    let g = (e & INDEX) as usize;
                    store_where(t8, g << 8, 256, leaf, &replace);
                    self.try_fold(i, g);
                } else if replace(e) {
                    t24.get(i).store(leaf, Release);
                }
            }
        } else {
            let i = (prefix >> 8) as usize;
            let e = t24.get(i).load(Acquire);
            let g = if e & EXT != 0 {
                (e & INDEX) as usize
            } else {
                let g = self.free.pop().expect("checked by insert; deletes never split") as usize;
                for j in 0..256 {
                    t8.get(g << 8 | j).store(e, Release);
                }
                // Publishes the filled group: a reader that sees EXT sees its entries.
                t24.get(i).store(EXT | g as u32, Release);
                g
            };
            store_where(t8, g << 8 | (prefix & 0xff) as usize, 1 << (32 - len), leaf, &replace);
            self.try_fold(i, g);
        }
    }

    /// Folds group `g` of tbl24 entry `i` back into the entry when all its entries are equal
    /// and none is longer than /24; the group is retired until the next quiescent period.
    fn try_fold(&mut self, i: usize, g: usize) {
        let t8 = &self.fib.tbl8;
        let first = t8.get(g << 8).load(Acquire);
        let uniform = (1..256).all(|j| t8.get(g << 8 | j).load(Acquire) == first);
        if uniform && Leaf::decode(first).is_none_or(|l| l.prefix_len <= 24) {
            self.fib.tbl24.get(i).store(first, Release);
            self.retired.push(g as u32);
        }
    }
}

/// Stores `leaf` in `n` entries from `start` wherever `replace(old)` holds.
fn store_where(t: &Entries, start: usize, n: usize, leaf: u32, replace: &impl Fn(u32) -> bool) {
    for j in start..start + n {
        let e = t.get(j);
        if replace(e.load(Acquire)) {
            e.store(leaf, Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn writer(groups: u32) -> FibWriter {
        FibWriter::new(Arc::new(Fib::new(groups).unwrap()), Arc::new(Qsbr::new(1)))
    }

    /// The naive longest-prefix match over a list of routes.
    fn oracle(routes: &BTreeMap<(u32, u8), u32>, addr: u32) -> Option<Leaf> {
        routes
            .iter()
            .filter(|((p, l), _)| addr & mask(*l) == *p)
            .max_by_key(|((_, l), _)| *l)
            .map(|(&(_, l), &adj)| Leaf { adj, prefix_len: l })
    }

    #[test]
    #[cfg_attr(miri, ignore = "the /0 route writes all 2^24 tbl24 entries: hours under Miri")]
    fn lab_routes_and_fallback_on_delete() {
        let mut w = writer(16);
        let a = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        w.apply(&[
            (a("0.0.0.0"), 0, Some(1)),
            (a("48.0.0.0"), 24, Some(2)),
            (a("48.0.0.128"), 25, Some(3)),
            (a("48.0.0.7"), 32, Some(4)),
        ])
        .unwrap();
        let f = w.fib().clone();
        let look = |s: &str| f.lookup(u32::from(a(s)));
        assert_eq!(look("9.9.9.9"), Some(Leaf { adj: 1, prefix_len: 0 }));
        assert_eq!(look("48.0.0.1"), Some(Leaf { adj: 2, prefix_len: 24 }));
        assert_eq!(look("48.0.0.200"), Some(Leaf { adj: 3, prefix_len: 25 }));
        assert_eq!(look("48.0.0.7"), Some(Leaf { adj: 4, prefix_len: 32 }));
        assert_eq!(w.tbl8_in_use(), 1);
        w.apply(&[(a("48.0.0.7"), 32, None), (a("48.0.0.128"), 25, None)]).unwrap();
        assert_eq!(look("48.0.0.7"), Some(Leaf { adj: 2, prefix_len: 24 }));
        assert_eq!(look("48.0.0.200"), Some(Leaf { adj: 2, prefix_len: 24 }));
        assert_eq!(w.tbl8_in_use(), 0, "the group folded back and was reclaimed");
        assert_eq!(w.apply(&[(a("1.2.3.0"), 24, None)]), Err(FibError::NoSuchRoute(a("1.2.3.0"), 24)));
        w.apply(&[(a("0.0.0.0"), 0, None)]).unwrap();
        assert_eq!(look("9.9.9.9"), None);
    }

    #[test]
    fn running_out_of_tbl8_groups_is_an_error_not_a_corruption() {
        let mut w = writer(1);
        let a = |s: &str| s.parse::<Ipv4Addr>().unwrap();
        w.apply(&[(a("10.0.0.1"), 32, Some(1))]).unwrap();
        assert_eq!(w.apply(&[(a("10.0.1.1"), 32, Some(2))]), Err(FibError::Tbl8Exhausted(1)));
        assert_eq!(w.fib().lookup(u32::from(a("10.0.1.1"))), None);
        assert_eq!(w.len(), 1);
        w.apply(&[(a("10.0.0.2"), 32, Some(3))]).unwrap(); // same /24: no new group
    }

    fn arb_route() -> impl Strategy<Value = (u32, u8, u32)> {
        // Few distinct /8s so that prefixes overlap often. Lengths from /12 (shorter ones are
        // covered by the lab test: each /n writes 2^(24-n) entries, slow in debug builds).
        (0u32..4, any::<u32>(), prop_oneof![1 => 12u8..=16, 3 => 16u8..=24, 3 => 20u8..=32, 3 => 25u8..=32], 1u32..100)
            .prop_map(|(top, rest, len, adj)| (((10 + top) << 24 | rest >> 8) & mask(len), len, adj))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 2 } else { 64 }, rng_seed: proptest::test_runner::RngSeed::Fixed(248), ..ProptestConfig::default() })]

        /// Random inserts, replaces and deletes, then lookups (random and at every prefix's
        /// edges) against the naive oracle.
        #[test]
        fn matches_a_naive_lpm(ops in proptest::collection::vec((arb_route(), any::<bool>()), 1..120), probes in proptest::collection::vec(any::<u32>(), 64)) {
            let mut w = writer(256);
            let mut model = BTreeMap::new();
            for ((prefix, len, adj), delete) in ops {
                let addr = Ipv4Addr::from(prefix);
                if delete && model.contains_key(&(prefix, len)) {
                    w.apply(&[(addr, len, None)]).unwrap();
                    model.remove(&(prefix, len));
                } else {
                    w.apply(&[(addr, len, Some(adj))]).unwrap();
                    model.insert((prefix, len), adj);
                }
            }
            let fib = w.fib().clone();
            let edges = model.keys().flat_map(|&(p, l)| [p, p | !mask(l), p.wrapping_sub(1), (p | !mask(l)).wrapping_add(1)]);
            for addr in probes.into_iter().map(|x| (10 + x % 4) << 24 | x >> 8).chain(edges) {
                prop_assert_eq!(fib.lookup(addr), oracle(&model, addr), "addr {}", Ipv4Addr::from(addr));
            }
            let groups_needed = model.keys().filter(|(_, l)| *l > 24).map(|(p, _)| p >> 8).collect::<std::collections::BTreeSet<_>>().len() as u32;
            prop_assert_eq!(w.tbl8_in_use(), groups_needed, "no tbl8 group leaks");
        }
    }

    /// A reclaimed group is reused only after an online reader has been quiescent: the
    /// batch that retires it does not return while the reader sits between two quiescent
    /// states. (Deleting `synchronize()` from `reclaim` makes this fail.)
    #[test]
    fn reclaim_waits_for_an_online_reader() {
        let q = Arc::new(Qsbr::new(1));
        let mut w = FibWriter::new(Arc::new(Fib::new(4).unwrap()), q.clone());
        let host = Ipv4Addr::new(10, 0, 0, 1);
        w.apply(&[(host, 32, Some(2))]).unwrap();
        let mut reader = q.register(0);
        reader.quiescent(); // online, holding (as far as QSBR knows) the group of 10.0.0.0/24
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let d = done.clone();
        let writer = std::thread::spawn(move || {
            w.apply(&[(host, 32, None)]).unwrap(); // folds the group and reclaims it
            d.store(true, std::sync::atomic::Ordering::Release);
            w
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!done.load(std::sync::atomic::Ordering::Acquire), "reclaimed while a reader could still hold it");
        // Quiescent until the writer is through, as a worker is once per loop: one
        // announcement could carry a generation read before the writer's increment was visible.
        while !done.load(std::sync::atomic::Ordering::Acquire) {
            reader.quiescent();
            std::thread::yield_now();
        }
        let w = writer.join().unwrap();
        assert!(done.load(std::sync::atomic::Ordering::Acquire));
        assert_eq!(w.tbl8_in_use(), 0);
    }

    /// A reader looking up continuously while groups are split, folded and reused for
    /// another /24 sees each address's old or new answer, never another /24's.
    #[test]
    fn readers_see_old_or_new_never_garbage_during_updates() {
        let q = Arc::new(Qsbr::new(1));
        let mut w = FibWriter::new(Arc::new(Fib::new(2).unwrap()), q.clone());
        w.apply(&[(Ipv4Addr::new(10, 0, 0, 0), 8, Some(1))]).unwrap();
        let fib = w.fib().clone();
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        // Online before the writer starts, so every synchronize waits for the reader.
        let mut qr = q.register(0);
        qr.quiescent();
        let reader = std::thread::spawn(move || {
            let mut seen = 0u64;
            loop {
                for x in 0..512u32 {
                    let addr = 0x0a00_0000 | x;
                    // 10.0.0.0/24 hosts have adjacency 2, 10.0.1.0/24 hosts adjacency 3.
                    let host_adj = 2 + (x >> 8);
                    match fib.lookup(addr) {
                        None => panic!("10.0.0.0/8 covers {addr:#x}"),
                        Some(l) => assert!(
                            (l.adj, l.prefix_len) == (1, 8) || (l.adj, l.prefix_len) == (host_adj, 32),
                            "garbage for {addr:#x}: {l:?}"
                        ),
                    }
                    seen += 1;
                }
                qr.quiescent();
                if s.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
            }
            seen
        });
        for round in 0..if cfg!(miri) { 16 } else { 2000u32 } {
            // Alternate between two /24s so that a reclaimed group is reused for the other.
            let (net, adj) = if round % 2 == 0 { (0, 2) } else { (1, 3) };
            let host = Ipv4Addr::new(10, 0, net, (round / 2 % 256) as u8);
            w.apply(&[(host, 32, Some(adj))]).unwrap();
            w.apply(&[(host, 32, None)]).unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
        assert_eq!(w.tbl8_in_use(), 0);
    }
}
