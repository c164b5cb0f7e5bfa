//! The one kernel view, which the netlink listener writes and the main thread reads, and what
//! changed in it that the main thread has not taken yet: the link, address and neighbor
//! changes in order, and the prefixes of the mirrored table whose route changed (what vecflow
//! makes of each is worked out when the main thread takes it: a change noted costs the
//! listener one set insertion). A prefix that changes again before it is taken is taken
//! once, as it is then, so what waits is bounded by the size of the table however slow the
//! main thread is, and the listener never stops reading its socket for it (a slow reader is
//! what makes the kernel drop notifications).
//!
//! The first dump is taken by a sweep instead: the main thread walks the mirrored table's
//! prefixes in order in the view itself, from the last one it took, and the listener notes
//! only the changes behind that point (a prefix ahead of it has never been taken, and is
//! read as it is when the sweep reaches it). A full table's dump then costs the listener no
//! set insertion and the main thread no search per route.

use super::listener::{Change, KernelView};
use super::targets::Mirrored;
use crate::net::IpPrefix;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The kernel view and what waits in it for the main thread.
#[derive(Debug)]
pub struct Kernel {
    /// The namespace's links, addresses, neighbor entries, next-hop objects and routes.
    pub view: KernelView,
    /// The routing table mirrored (`linux-cp.table`).
    table: u32,
    /// The vecflow interface of each TAP, by Linux ifindex.
    interfaces: BTreeMap<u32, u16>,
    /// Link, address and neighbor changes not taken yet, in the order they came.
    taps: Vec<Change>,
    /// Prefixes of the mirrored table whose route changed since they were last taken.
    routes: BTreeSet<IpPrefix>,
    /// The most prefixes that ever waited at once (seen when noted and when taken).
    most_waiting: usize,
    /// The first dump's sweep, until it has passed the last route of a dump read whole.
    sweep: Option<Sweep>,
}

/// How far the main thread has walked the mirrored table in the view since it was empty.
#[derive(Debug, Default)]
struct Sweep {
    /// The last prefix taken (none yet: the sweep is before the first).
    after: Option<IpPrefix>,
    /// Prefixes taken.
    taken: usize,
    /// The listener has read the first dump to its end.
    dumped: bool,
}

/// The kernel view behind the lock the listener and the main thread share; each holds it
/// for one batch of messages or one batch of routes.
#[derive(Debug, Clone)]
pub struct SharedKernel(Arc<Mutex<Kernel>>);

impl SharedKernel {
    /// An empty view, mirroring routing table `table` (through no TAP until
    /// [`Kernel::set_interfaces`]).
    pub fn new(table: u32) -> SharedKernel {
        let (view, interfaces, taps, routes) = (KernelView::default(), BTreeMap::new(), Vec::new(), BTreeSet::new());
        let sweep = Some(Sweep::default());
        SharedKernel(Arc::new(Mutex::new(Kernel { view, table, interfaces, taps, routes, most_waiting: 0, sweep })))
    }

    /// The view, locked. A thread that panicked holding it left every map whole (each change
    /// is one map operation), so a poisoned lock is taken as it is.
    pub fn lock(&self) -> MutexGuard<'_, Kernel> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Kernel {
    /// Takes note of `changes`, which the view has made: the mirrored table's routes they
    /// change (next-hop objects: the routes through them) wait to be taken, and so do the
    /// link, address and neighbor changes. A prefix ahead of the sweep does not wait: the
    /// sweep takes it.
    pub fn note(&mut self, changes: impl IntoIterator<Item = Change>) {
        let mut objects = BTreeSet::new();
        for change in changes {
            match change {
                Change::Route(key, _) if key.table == self.table && !self.ahead(key.prefix) => {
                    _ = self.routes.insert(key.prefix)
                }
                Change::Route(..) => {}
                Change::NextHop(id, _) => _ = objects.insert(id),
                Change::Link(..) | Change::Address(..) | Change::Neighbor(..) => self.taps.push(change),
            }
        }
        let through = self.view.routes_through(self.table, &objects);
        let behind: Vec<IpPrefix> = through.into_iter().filter(|&p| !self.ahead(p)).collect();
        self.routes.extend(behind);
        self.most_waiting = self.most_waiting.max(self.routes.len());
    }

    /// True when the sweep has yet to reach `prefix`.
    fn ahead(&self, prefix: IpPrefix) -> bool {
        self.sweep.as_ref().is_some_and(|s| s.after.is_none_or(|after| prefix > after))
    }

    /// Has the sweep end once it passes the last route: the first dump has been read.
    pub fn first_dump_read(&mut self) {
        if let Some(sweep) = &mut self.sweep {
            sweep.dumped = true;
        }
    }

    /// The link, address and neighbor changes waiting, in order.
    pub fn take_taps(&mut self) -> Vec<Change> {
        std::mem::take(&mut self.taps)
    }

    /// Takes the TAPs `interfaces` (Linux ifindex, vecflow interface index) for the view's
    /// interfaces, in place of those it had.
    pub fn set_interfaces(&mut self, interfaces: impl IntoIterator<Item = (u32, u16)>) {
        self.interfaces = interfaces.into_iter().collect();
    }

    /// The vecflow interface of the TAP of Linux ifindex `ifindex`.
    pub fn interface_of(&self, ifindex: u32) -> Option<u16> {
        self.interfaces.get(&ifindex).copied()
    }

    /// Up to `max` of the prefixes waiting, then of those the sweep reaches, each with what
    /// vecflow makes of its route now.
    pub fn take_routes(&mut self, max: usize) -> Vec<(IpPrefix, Mirrored)> {
        self.most_waiting = self.waiting().1;
        let mut out = Vec::with_capacity(if self.sweep.is_some() { max } else { max.min(self.routes.len()) });
        let interfaces = &self.interfaces;
        let index = |ifindex| interfaces.get(&ifindex).copied();
        while out.len() < max {
            let Some(prefix) = self.routes.pop_first() else { break };
            out.push((prefix, self.view.target(self.table, prefix, &index)));
        }
        let Some(sweep) = &mut self.sweep else { return out };
        let left = max - out.len();
        let mut walked = 0;
        for (prefix, route) in self.view.routes.used_after(self.table, sweep.after).take(left) {
            out.push((prefix, self.view.target_of(prefix, Some(route), &index)));
            sweep.after = Some(prefix);
            walked += 1;
        }
        sweep.taken += walked;
        if walked < left && sweep.dumped {
            self.sweep = None;
        }
        out
    }

    /// About the bytes of the view's routes and of the set of prefixes waiting.
    pub fn bytes(&self) -> usize {
        self.view.routes.bytes() + crate::net::tree_bytes::<IpPrefix, ()>(self.routes.len())
    }

    /// Prefixes waiting now, and the most that ever waited at once. While the sweep has
    /// routes ahead, they count as waiting, about: the view's routes of every table and
    /// metric less the prefixes taken, and at least one.
    pub fn waiting(&self) -> (usize, usize) {
        let ahead = match &self.sweep {
            Some(s) if self.view.routes.used_after(self.table, s.after).next().is_some() => {
                self.view.routes.len().saturating_sub(s.taken).max(1)
            }
            _ => 0,
        };
        (self.routes.len() + ahead, self.most_waiting.max(self.routes.len() + ahead))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::l3::objects::{NextHop, Target};
    use crate::lcp::routes::{KernelHop, KernelRoute, RouteKey};

    fn p(s: &str) -> IpPrefix {
        s.parse().unwrap()
    }

    fn via(gateway: &str, ifindex: u32) -> KernelRoute {
        KernelRoute::Unicast {
            hops: smallvec::smallvec![KernelHop { gateway: Some(gateway.parse().unwrap()), ifindex, weight: 1 }],
            protocol: 186,
        }
    }

    /// Makes `change` in the view and takes note of it, as the listener does.
    fn make(k: &mut Kernel, change: Change) {
        let made = k.view.change(change.clone());
        assert!(made, "{change:?} changes the view");
        k.note([change]);
    }

    /// Ends the sweep of an empty view: what changes from then on waits in the set.
    fn past_first_dump(k: &mut Kernel) {
        k.first_dump_read();
        assert!(k.take_routes(10).is_empty() && k.sweep.is_none());
    }

    #[test]
    fn a_prefix_changed_twice_waits_once_and_is_taken_as_it_is_then() {
        let shared = SharedKernel::new(254);
        let mut k = shared.lock();
        k.set_interfaces([(7, 3)]);
        past_first_dump(&mut k);
        let key = |table| RouteKey { table, prefix: p("203.0.113.0/24"), metric: 0 };
        make(&mut k, Change::Route(key(254), Some(via("192.0.2.9", 7))));
        make(&mut k, Change::Route(key(254), Some(via("192.0.2.10", 7))));
        make(&mut k, Change::Route(key(100), Some(via("192.0.2.11", 7))));
        make(&mut k, Change::Address(7, p("192.0.2.1/24"), true));
        assert_eq!(k.waiting(), (1, 1), "another table's route does not wait");
        let taken = k.take_routes(10);
        let hop = NextHop { via: "192.0.2.10".parse().unwrap(), tx_if: 3, weight: 1 };
        assert_eq!(
            taken,
            [(p("203.0.113.0/24"), Ok(Some(Target::Paths { hops: vec![hop], push: Default::default() })))]
        );
        assert_eq!(k.take_taps(), [Change::Address(7, p("192.0.2.1/24"), true)]);
        assert!(k.take_routes(10).is_empty() && k.take_taps().is_empty(), "taken once");
        assert_eq!(k.waiting(), (0, 1));
    }

    #[test]
    fn routes_are_taken_in_batches_of_at_most_the_size_asked() {
        let shared = SharedKernel::new(254);
        let mut k = shared.lock();
        past_first_dump(&mut k);
        for i in 0..10u8 {
            let prefix = IpPrefix { addr: std::net::Ipv4Addr::new(10, i, 0, 0).into(), len: 16 };
            make(&mut k, Change::Route(RouteKey { table: 254, prefix, metric: 0 }, Some(via("192.0.2.9", 8))));
        }
        let first = k.take_routes(4);
        assert_eq!(first.len(), 4);
        assert!(first.iter().all(|(_, m)| *m == Err("through a device vecflow does not own")));
        assert_eq!(k.take_routes(4).len(), 4);
        assert_eq!(k.take_routes(4).len(), 2);
        assert_eq!(k.waiting(), (0, 10));
    }

    #[test]
    fn a_next_hop_object_that_changes_makes_its_routes_wait() {
        use crate::lcp::nexthops::NextHopObject::{Group, Single};
        let shared = SharedKernel::new(254);
        let mut k = shared.lock();
        k.set_interfaces([(3, 1)]);
        past_first_dump(&mut k);
        let gw = |a: &str| Some(a.parse().unwrap());
        make(&mut k, Change::NextHop(1, Some(Single { gateway: gw("192.0.2.2"), ifindex: 3 })));
        make(&mut k, Change::NextHop(10, Some(Group(vec![(1, 1)]))));
        let object = |id| Some(KernelRoute::Object { id, protocol: 186 });
        make(&mut k, Change::Route(RouteKey { table: 254, prefix: p("10.1.0.0/16"), metric: 0 }, object(10)));
        make(&mut k, Change::Route(RouteKey { table: 254, prefix: p("10.2.0.0/16"), metric: 0 }, object(1)));
        assert_eq!(k.take_routes(10).len(), 2);
        make(&mut k, Change::NextHop(1, Some(Single { gateway: gw("192.0.2.3"), ifindex: 3 })));
        let again: Vec<IpPrefix> = k.take_routes(10).into_iter().map(|(p, _)| p).collect();
        assert_eq!(again, [p("10.1.0.0/16"), p("10.2.0.0/16")], "directly and through the group");
    }

    #[test]
    fn the_first_dump_is_swept_in_order_and_changes_behind_the_sweep_wait() {
        let shared = SharedKernel::new(254);
        let mut k = shared.lock();
        k.set_interfaces([(7, 3)]);
        let key = |prefix: &str, metric| RouteKey { table: 254, prefix: p(prefix), metric };
        for prefix in ["10.3.0.0/16", "2001:db8::/32", "10.1.0.0/16", "10.2.0.0/16"] {
            make(&mut k, Change::Route(key(prefix, 0), Some(via("192.0.2.9", 7))));
        }
        make(&mut k, Change::Route(key("10.1.0.0/16", 5), Some(via("192.0.2.8", 7))));
        make(&mut k, Change::Route(RouteKey { table: 100, ..key("10.0.0.0/8", 0) }, Some(via("192.0.2.9", 7))));
        assert_eq!(k.routes.len(), 0, "ahead of the sweep, nothing waits in the set");
        assert_eq!(k.waiting().0, 6, "the view's routes count as waiting, about");
        let taken: Vec<IpPrefix> = k.take_routes(2).into_iter().map(|(p, _)| p).collect();
        assert_eq!(taken, [p("10.1.0.0/16"), p("10.2.0.0/16")], "in order, each prefix once");
        // Behind the sweep: waits. Ahead of it: read when the sweep gets there.
        make(&mut k, Change::Route(key("10.1.0.0/16", 0), None));
        make(&mut k, Change::Route(key("10.2.0.0/24", 0), Some(via("192.0.2.10", 7))));
        make(&mut k, Change::Route(key("10.3.0.0/16", 0), Some(via("192.0.2.10", 7))));
        assert_eq!(k.routes.len(), 1);
        let hop = |via: &str| NextHop { via: via.parse().unwrap(), tx_if: 3, weight: 1 };
        let paths = |via| Ok(Some(Target::Paths { hops: vec![hop(via)], push: Default::default() }));
        let taken = k.take_routes(3);
        let expected = [
            (p("10.1.0.0/16"), paths("192.0.2.8")),
            (p("10.2.0.0/24"), paths("192.0.2.10")),
            (p("10.3.0.0/16"), paths("192.0.2.10")),
        ];
        assert_eq!(taken, expected, "the waiting prefix first, as the view has it now (metric 5)");
        assert_eq!(k.take_routes(3).len(), 1, "the IPv6 route");
        assert!(k.sweep.is_some() && k.waiting().0 == 0, "the dump may have more");
        k.first_dump_read();
        assert_eq!(k.take_routes(3).len(), 0);
        assert!(k.sweep.is_none(), "past the end of a dump read whole");
        make(&mut k, Change::Route(key("10.9.0.0/16", 0), Some(via("192.0.2.9", 7))));
        assert_eq!(k.waiting().0, 1, "past the sweep, every change waits in the set");
    }
}
