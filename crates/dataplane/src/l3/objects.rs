//! The forwarding objects routes point at: adjacencies and load-balance objects, each made
//! once for all the routes that share it and counted by reference.
//!
//! Routes with the same next hop share one adjacency, routes with the same paths one
//! load-balance object, so a path that goes down is one change for every route through it
//! (prefix-independent convergence). An object no route holds any more is *dying*: its index
//! is reused only after [`Objects::settle`], which the caller runs once the FIB no longer
//! names it and every worker has passed a vector boundary.

use super::multipath::{LB, LoadBalance, Path};
use super::{Adjacency, LabelStack, Reject};
use rustc_hash::FxHashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

/// What a route resolves to, as its source gives it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// One of this router's own addresses.
    Local,
    /// A connected subnet on `tx_if`: the destination is its own next hop.
    Glean {
        /// Output interface.
        tx_if: u16,
    },
    /// A route that forwards nothing: its packets are dropped (blackhole) or answered
    /// with an ICMP error (unreachable, prohibit).
    Reject(Reject),
    /// A lookup of the destination in another VRF's tables (route leaking): its index.
    Lookup {
        /// The VRF's index (0: the default table).
        vrf: u16,
    },
    /// One or more next hops (1 to 64), `push` pushed on every one.
    Paths {
        /// The next hops.
        hops: Vec<NextHop>,
        /// MPLS labels to push.
        push: LabelStack,
    },
}

/// A next hop of a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NextHop {
    /// Its address.
    pub via: IpAddr,
    /// Its interface.
    pub tx_if: u16,
    /// Its weight among the route's next hops, 1–255.
    pub weight: u8,
}

/// Whether the next hop `via` on `tx_if` takes traffic (its link is up, its neighbor did not
/// fail to resolve).
pub type Liveness<'a> = &'a dyn Fn(u16, IpAddr) -> bool;

/// What identifies an adjacency: kind, interface, next hop, labels.
type AdjKey = (u8, u16, IpAddr, LabelStack);

/// Reference count of the objects that are never freed (drop, local and the rejects).
const PINNED: u32 = u32::MAX;

/// Most adjacencies, and most load-balance objects: a FIB value names one by an index below
/// its lookup bit ([`crate::l3::vrf::LOOKUP`]).
pub const MAX_OBJECTS: u32 = crate::l3::vrf::LOOKUP;

/// An object a route needs cannot be made: every index of its kind is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("all {MAX_OBJECTS} {0} a FIB value can name are in use")]
pub struct ObjectsFull(pub &'static str);

/// Every adjacency and load-balance object, with what uses them.
#[derive(Debug, Clone)]
pub struct Objects {
    adjs: Vec<Adjacency>,
    adj_refs: Vec<u32>,
    adj_index: FxHashMap<AdjKey, u32>,
    free_adjs: Vec<u32>,
    dying_adjs: Vec<u32>,
    lbs: Vec<Arc<LoadBalance>>,
    lb_refs: Vec<u32>,
    lb_index: FxHashMap<Vec<Path>, u32>,
    free_lbs: Vec<u32>,
    dying_lbs: Vec<u32>,
    /// Set when an object was made or changed since [`Objects::take_changed`].
    changed: bool,
    /// Most objects of each kind: [`MAX_OBJECTS`] (fewer in tests).
    limit: u32,
}

impl Default for Objects {
    fn default() -> Self {
        Objects {
            adjs: vec![
                Adjacency::Drop,
                Adjacency::Local,
                Adjacency::Reject(Reject::Blackhole),
                Adjacency::Reject(Reject::Unreachable),
                Adjacency::Reject(Reject::Prohibit),
            ],
            adj_refs: vec![PINNED; super::ADJ_FIRST_ROUTED as usize],
            adj_index: FxHashMap::default(),
            free_adjs: Vec::new(),
            dying_adjs: Vec::new(),
            lbs: Vec::new(),
            lb_refs: Vec::new(),
            lb_index: FxHashMap::default(),
            free_lbs: Vec::new(),
            dying_lbs: Vec::new(),
            changed: true,
            limit: MAX_OBJECTS,
        }
    }
}

/// The key of adjacency `a`.
fn key_of(a: &Adjacency) -> AdjKey {
    let none = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    match *a {
        Adjacency::Drop => (0, 0, none, LabelStack::EMPTY),
        Adjacency::Local => (1, 0, none, LabelStack::EMPTY),
        Adjacency::Reject(r) => (2, r as u16, none, LabelStack::EMPTY),
        Adjacency::Glean { tx_if } => (3, tx_if, none, LabelStack::EMPTY),
        Adjacency::Via { tx_if, next_hop, push, .. } => (4, tx_if, next_hop, push),
    }
}

impl Objects {
    /// Objects with room for `limit` of each kind (drop, local and the rejects included), so
    /// that a test reaches the limit.
    #[cfg(test)]
    pub(crate) fn with_limit(limit: u32) -> Objects {
        Objects { limit, ..Objects::default() }
    }

    /// Adjacencies by index (next hops' rewrites unset: [`super::L3::with_neighbors`] fills
    /// them).
    pub fn adjs(&self) -> &[Adjacency] {
        &self.adjs
    }

    /// Load-balance objects by index.
    pub fn lbs(&self) -> &[Arc<LoadBalance>] {
        &self.lbs
    }

    /// The bytes the adjacencies and load-balance objects take, with their indexes.
    pub fn bytes(&self) -> usize {
        use crate::net::hash_table_bytes;
        use std::mem::size_of;
        let paths = |p: &Vec<Path>| p.capacity() * size_of::<Path>();
        let lbs: usize =
            self.lbs.iter().map(|lb| size_of::<LoadBalance>() + 16 + paths(&lb.paths) + lb.live.capacity()).sum();
        self.adjs.capacity() * size_of::<Adjacency>()
            + (self.adj_refs.capacity() + self.free_adjs.capacity() + self.dying_adjs.capacity()) * 4
            + hash_table_bytes::<AdjKey, u32>(self.adj_index.capacity())
            + lbs
            + self.lbs.capacity() * size_of::<Arc<LoadBalance>>()
            + (self.lb_refs.capacity() + self.free_lbs.capacity() + self.dying_lbs.capacity()) * 4
            + hash_table_bytes::<Vec<Path>, u32>(self.lb_index.capacity())
            + self.lb_index.keys().map(paths).sum::<usize>()
    }

    /// True (once) when an object was made or changed since the last call: the workers'
    /// tables need them before the FIB may name them.
    pub fn take_changed(&mut self) -> bool {
        std::mem::take(&mut self.changed)
    }

    /// The FIB value of `target`, taking a reference on it (made if new). `from` is the value
    /// the route had before, if any: a new load-balance object starts from its buckets.
    /// Nothing is taken when an object it needs cannot be made.
    pub fn acquire(&mut self, target: &Target, from: Option<u32>, live: Liveness) -> Result<u32, ObjectsFull> {
        Ok(match target {
            Target::Local => 1,
            &Target::Reject(r) => r.adj(),
            &Target::Lookup { vrf } => crate::l3::vrf::lookup_value(vrf),
            &Target::Glean { tx_if } => self.acquire_adj(Adjacency::Glean { tx_if })?,
            Target::Paths { hops, push } if hops.len() == 1 => self.acquire_adj(via(hops[0], *push))?,
            Target::Paths { hops, push } => {
                let mut paths: Vec<Path> = Vec::with_capacity(hops.len());
                for &h in hops {
                    let adj = match self.acquire_adj(via(h, *push)) {
                        Ok(adj) => adj,
                        Err(e) => {
                            paths.iter().for_each(|p| self.release(p.adj));
                            return Err(e);
                        }
                    };
                    match paths.iter_mut().find(|p| p.adj == adj) {
                        // The same next hop twice: one path with both weights.
                        Some(p) => {
                            p.weight = p.weight.saturating_add(h.weight);
                            self.release(adj);
                        }
                        None => paths.push(Path { adj, weight: h.weight }),
                    }
                }
                paths.sort();
                if let Some(&i) = self.lb_index.get(&paths) {
                    // The object holds its paths already.
                    for p in &paths {
                        self.release(p.adj);
                    }
                    self.lb_refs[i as usize] += 1;
                    return Ok(LB | i);
                }
                if self.free_lbs.is_empty() && self.lbs.len() as u32 >= self.limit {
                    paths.iter().for_each(|p| self.release(p.adj));
                    return Err(ObjectsFull("load-balance objects"));
                }
                let old = from.filter(|v| v & LB != 0).map(|v| self.lbs[(v & !LB) as usize].clone());
                let alive = paths.iter().map(|p| self.adj_live(p.adj, live)).collect();
                let lb = Arc::new(LoadBalance::new(paths.clone(), alive, old.as_deref()));
                let i = match self.free_lbs.pop() {
                    Some(i) => {
                        self.lbs[i as usize] = lb;
                        self.lb_refs[i as usize] = 1;
                        i
                    }
                    None => {
                        self.lbs.push(lb);
                        self.lb_refs.push(1);
                        self.lbs.len() as u32 - 1
                    }
                };
                self.lb_index.insert(paths, i);
                self.changed = true;
                LB | i
            }
        })
    }

    /// Takes a reference on adjacency `a`, made if new.
    fn acquire_adj(&mut self, a: Adjacency) -> Result<u32, ObjectsFull> {
        let key = key_of(&a);
        if let Some(&i) = self.adj_index.get(&key) {
            self.adj_refs[i as usize] += 1;
            return Ok(i);
        }
        let i = match self.free_adjs.pop() {
            Some(i) => {
                self.adjs[i as usize] = a;
                self.adj_refs[i as usize] = 1;
                i
            }
            None if self.adjs.len() as u32 >= self.limit => return Err(ObjectsFull("adjacencies")),
            None => {
                self.adjs.push(a);
                self.adj_refs.push(1);
                self.adjs.len() as u32 - 1
            }
        };
        self.adj_index.insert(key, i);
        self.changed = true;
        Ok(i)
    }

    /// Drops a reference on FIB value `value` (an adjacency or a load-balance object); one
    /// no route holds any more is dying until [`Objects::settle`].
    pub fn release(&mut self, value: u32) {
        let i = (value & !LB) as usize;
        if crate::l3::vrf::looked_up(value).is_some() {
            // Nothing to count: a lookup names a VRF, not an object.
        } else if value & LB != 0 {
            self.lb_refs[i] -= 1;
            if self.lb_refs[i] == 0 {
                self.dying_lbs.push(i as u32);
            }
        } else if self.adj_refs[i] != PINNED {
            self.adj_refs[i] -= 1;
            if self.adj_refs[i] == 0 {
                self.dying_adjs.push(i as u32);
            }
        }
    }

    /// Frees the dying objects nothing took back: call once no FIB entry names them and every
    /// worker has passed a vector boundary since. A load-balance object releases its paths.
    pub fn settle(&mut self) {
        for i in std::mem::take(&mut self.dying_lbs) {
            let lb = self.lbs[i as usize].clone();
            if self.lb_refs[i as usize] == 0 && self.lb_index.get(&lb.paths) == Some(&i) {
                self.lb_index.remove(&lb.paths);
                self.free_lbs.push(i);
                for p in &lb.paths {
                    self.release(p.adj);
                }
            }
        }
        for i in std::mem::take(&mut self.dying_adjs) {
            let key = key_of(&self.adjs[i as usize]);
            if self.adj_refs[i as usize] == 0 && self.adj_index.get(&key) == Some(&i) {
                self.adj_index.remove(&key);
                self.free_adjs.push(i);
            }
        }
    }

    /// Whether adjacency `adj` (a next hop) takes traffic.
    fn adj_live(&self, adj: u32, live: Liveness) -> bool {
        match self.adjs[adj as usize] {
            Adjacency::Via { tx_if, next_hop, .. } => live(tx_if, next_hop),
            _ => true,
        }
    }

    /// Takes which next hops are up: the buckets of every load-balance object with a path
    /// that went down or came back move ([`LoadBalance::set_live`]). True when one changed.
    pub fn set_live(&mut self, live: Liveness) -> bool {
        let mut changed = false;
        for i in 0..self.lbs.len() {
            if self.lb_refs[i] == 0 {
                continue;
            }
            let alive: Vec<bool> = self.lbs[i].paths.iter().map(|p| self.adj_live(p.adj, live)).collect();
            if alive != self.lbs[i].live {
                Arc::make_mut(&mut self.lbs[i]).set_live(alive);
                changed = true;
            }
        }
        self.changed |= changed;
        changed
    }

    /// Objects in use: adjacencies (drop and local included) and load-balance objects.
    pub fn in_use(&self) -> (usize, usize) {
        (self.adj_index.len() + 2, self.lb_index.len())
    }
}

/// The adjacency of next hop `h` pushing `push`.
fn via(h: NextHop, push: LabelStack) -> Adjacency {
    Adjacency::Via { tx_if: h.tx_if, next_hop: h.via, rewrite: None, push }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hop(last: u8, tx_if: u16) -> NextHop {
        NextHop { via: IpAddr::V4(Ipv4Addr::new(10, 0, 0, last)), tx_if, weight: 1 }
    }

    #[test]
    fn shared_objects_are_counted_and_freed_only_when_settled() {
        let mut o = Objects::default();
        let up: Liveness = &|_, _| true;
        let two = Target::Paths { hops: vec![hop(1, 2), hop(2, 3)], push: LabelStack::EMPTY };
        let a = o.acquire(&two, None, up).unwrap();
        let b = o.acquire(&two, None, up).unwrap();
        assert_eq!(a, b, "same paths, same object");
        assert!(a & LB != 0);
        let one = o.acquire(&Target::Paths { hops: vec![hop(1, 2)], push: LabelStack::EMPTY }, None, up).unwrap();
        assert_eq!(o.in_use(), (4, 1), "drop, local and the two next hops");
        o.release(a);
        o.release(b);
        o.settle();
        assert_eq!(o.in_use(), (3, 0), "the object went, the next hop a route still uses stayed");
        o.release(one);
        let again = o.acquire(&Target::Glean { tx_if: 2 }, None, up).unwrap();
        assert_ne!(again, one, "a dying index is not reused before settle");
        o.settle();
        assert_eq!(o.in_use(), (3, 0));
    }

    #[test]
    fn a_path_going_down_rebalances_every_object_through_it_once() {
        let mut o = Objects::default();
        let up: Liveness = &|_, _| true;
        let lb =
            o.acquire(&Target::Paths { hops: vec![hop(1, 2), hop(2, 3)], push: LabelStack::EMPTY }, None, up).unwrap();
        o.take_changed();
        let down: Liveness = &|tx_if, _| tx_if != 3;
        assert!(o.set_live(down));
        assert!(o.take_changed());
        let obj = &o.lbs()[(lb & !LB) as usize];
        assert_eq!(obj.counts(), vec![512, 0]);
        assert!(!o.set_live(down), "nothing more to move");
    }

    #[test]
    fn past_the_most_objects_a_fib_value_names_nothing_is_taken() {
        // Room for drop, local, the three rejects and two next hops.
        let mut o = Objects::with_limit(7);
        let up: Liveness = &|_, _| true;
        let paths = |hops: Vec<NextHop>| Target::Paths { hops, push: LabelStack::EMPTY };
        let two = o.acquire(&paths(vec![hop(1, 2), hop(2, 2)]), None, up).unwrap();
        assert_eq!(o.in_use(), (4, 1));
        // A third next hop has no index: its path's first hop is given back, and no object made.
        let three = o.acquire(&paths(vec![hop(1, 2), hop(3, 2)]), None, up);
        assert_eq!(three, Err(ObjectsFull("adjacencies")));
        assert_eq!(o.acquire(&Target::Glean { tx_if: 9 }, None, up), Err(ObjectsFull("adjacencies")));
        assert_eq!(o.in_use(), (4, 1), "nothing more taken");
        assert_eq!(
            o.acquire(&paths(vec![hop(2, 2)]), None, up).map(|v| v & LB),
            Ok(0),
            "a shared next hop is no new index"
        );
        // As many load-balance objects (the same two next hops, weighed differently), then none.
        let weighed = |w: u8| paths(vec![hop(1, 2), NextHop { weight: w, ..hop(2, 2) }]);
        for w in 2..=7 {
            assert!(o.acquire(&weighed(w), None, up).is_ok_and(|v| v & LB != 0));
        }
        assert_eq!(o.in_use(), (4, 7));
        assert_eq!(o.acquire(&weighed(8), None, up), Err(ObjectsFull("load-balance objects")));
        assert_eq!(o.in_use(), (4, 7));
        assert_eq!(two & LB, LB);
    }
}
