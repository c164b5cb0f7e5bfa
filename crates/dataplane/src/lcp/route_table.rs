//! The kernel's routes as the one kernel view keeps them, compactly: a full table is a
//! million routes through a handful of next hops, so each route is a small fixed-size key
//! (one ordered map per family, the address as an integer) and the index of its
//! [`KernelRoute`], which is kept once however many routes share it (interned, counted by
//! reference). About 40 bytes an IPv4 route and 70 an IPv6 one, where a map of
//! [`RouteKey`] → [`KernelRoute`] took 100–130 bytes a route.
//!
//! Routes are listed IPv4 first, then IPv6; within a family by table, prefix and metric.

use super::routes::{KernelRoute, RouteKey};
use crate::net::IpPrefix;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::collections::btree_map::Entry;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::Bound::{self, Excluded, Included, Unbounded};

/// A route's key within one family: ordered as [`RouteKey`] is (table, prefix, metric).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Key<A> {
    table: u32,
    addr: A,
    len: u8,
    metric: u32,
}

/// An IPv6 address as two integers, high half first: 8-byte aligned (a `u128` would make
/// every key 48 bytes).
type Halves = [u64; 2];

fn key4(key: &RouteKey, addr: Ipv4Addr) -> Key<u32> {
    Key { table: key.table, addr: addr.to_bits(), len: key.prefix.len, metric: key.metric }
}

fn key6(key: &RouteKey, addr: Ipv6Addr) -> Key<Halves> {
    let bits = addr.to_bits();
    Key { table: key.table, addr: [(bits >> 64) as u64, bits as u64], len: key.prefix.len, metric: key.metric }
}

/// The address of an IPv6 key.
fn ip6(halves: Halves) -> Ipv6Addr {
    Ipv6Addr::from_bits((u128::from(halves[0]) << 64) | u128::from(halves[1]))
}

impl<A: PartialEq> Key<A> {
    /// True when `other` is a key of the same table and prefix (of any metric).
    fn same_prefix(&self, other: &Key<A>) -> bool {
        (self.table, self.len) == (other.table, other.len) && self.addr == other.addr
    }
}

impl<A> Key<A> {
    /// The [`RouteKey`] of this key, whose address is `addr`.
    fn route_key(&self, addr: IpAddr) -> RouteKey {
        RouteKey { table: self.table, prefix: IpPrefix { addr, len: self.len }, metric: self.metric }
    }
}

/// The bit of a route's entry that marks it named by the re-dump in progress (the rest is the
/// index of its [`KernelRoute`]).
const MARK: u32 = 1 << 31;

/// Each distinct [`KernelRoute`] once, with the number of routes that have it.
#[derive(Debug, Clone, Default)]
struct Interned {
    /// By index: the route and how many keys hold it (0: a free slot).
    slots: Vec<(KernelRoute, u32)>,
    /// The index of each route held.
    index: FxHashMap<KernelRoute, u32>,
    /// Free slots.
    free: Vec<u32>,
}

impl Interned {
    /// The index of `route`, taking a reference on it.
    fn acquire(&mut self, route: KernelRoute) -> u32 {
        if let Some(&i) = self.index.get(&route) {
            self.slots[i as usize].1 += 1;
            return i;
        }
        let i = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = (route.clone(), 1);
                i
            }
            None => {
                self.slots.push((route.clone(), 1));
                let i = u32::try_from(self.slots.len() - 1).ok().filter(|&i| i < MARK);
                i.expect("fewer than 2^31 distinct routes")
            }
        };
        self.index.insert(route, i);
        i
    }

    /// Drops a reference on route `i`; the last one frees its slot.
    fn release(&mut self, i: u32) {
        let i = i & !MARK;
        let slot = &mut self.slots[i as usize];
        slot.1 -= 1;
        if slot.1 == 0 {
            let route = std::mem::replace(&mut slot.0, KernelRoute::Unmirrored(""));
            self.index.remove(&route);
            self.free.push(i);
        }
    }

    fn get(&self, i: u32) -> &KernelRoute {
        &self.slots[(i & !MARK) as usize].0
    }
}

/// The kernel's unicast-table routes of every table, by [`RouteKey`].
#[derive(Debug, Clone, Default)]
pub struct RouteTable {
    v4: BTreeMap<Key<u32>, u32>,
    v6: BTreeMap<Key<Halves>, u32>,
    routes: Interned,
}

impl PartialEq for RouteTable {
    /// Equal when they hold the same routes (however they are numbered inside).
    fn eq(&self, other: &RouteTable) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for RouteTable {}

/// Sets `key`'s route in `map` to `route` (interned in `routes`); true when that changed it.
fn set<A: Ord>(map: &mut BTreeMap<Key<A>, u32>, key: Key<A>, route: KernelRoute, routes: &mut Interned) -> bool {
    match map.entry(key) {
        Entry::Vacant(e) => _ = e.insert(routes.acquire(route)),
        Entry::Occupied(e) if *routes.get(*e.get()) == route => return false,
        Entry::Occupied(mut e) => {
            // Taken before the old one goes: were they one slot, it would be freed between.
            let old = e.insert(routes.acquire(route));
            routes.release(old);
        }
    }
    true
}

/// The first key of each prefix of `table` in `map` from `from` on (its route of lowest
/// metric), with its route's index.
fn firsts<A: Ord + Copy>(
    map: &BTreeMap<Key<A>, u32>,
    table: u32,
    from: Bound<Key<A>>,
) -> impl Iterator<Item = (Key<A>, u32)> + '_ {
    let mut last: Option<Key<A>> = None;
    let of_table = map.range((from, Unbounded)).take_while(move |(k, _)| k.table == table);
    of_table.filter_map(move |(&k, &i)| {
        let first = !last.is_some_and(|l| l.same_prefix(&k));
        last = Some(k);
        first.then_some((k, i))
    })
}

impl RouteTable {
    /// The route of `key`.
    pub fn get(&self, key: &RouteKey) -> Option<&KernelRoute> {
        let i = match key.prefix.addr {
            IpAddr::V4(a) => self.v4.get(&key4(key, a)),
            IpAddr::V6(a) => self.v6.get(&key6(key, a)),
        };
        i.map(|&i| self.routes.get(i))
    }

    /// True when `key` has a route.
    pub fn contains(&self, key: &RouteKey) -> bool {
        self.get(key).is_some()
    }

    /// Sets the route of `key`; true when that changed it. One search of the map (a dump
    /// sets a million routes in a row).
    pub fn insert(&mut self, key: RouteKey, route: KernelRoute) -> bool {
        match key.prefix.addr {
            IpAddr::V4(a) => set(&mut self.v4, key4(&key, a), route, &mut self.routes),
            IpAddr::V6(a) => set(&mut self.v6, key6(&key, a), route, &mut self.routes),
        }
    }

    /// Removes the route of `key`; true when there was one.
    pub fn remove(&mut self, key: &RouteKey) -> bool {
        let old = match key.prefix.addr {
            IpAddr::V4(a) => self.v4.remove(&key4(key, a)),
            IpAddr::V6(a) => self.v6.remove(&key6(key, a)),
        };
        old.map(|i| self.routes.release(i)).is_some()
    }

    /// The route to `prefix` in `table` of the lowest metric (the one the kernel uses).
    pub fn used(&self, table: u32, prefix: IpPrefix) -> Option<&KernelRoute> {
        let key = RouteKey { table, prefix, metric: 0 };
        // The first key from metric 0 on, if it is `prefix`'s: one search of the map, where
        // a range closed at the highest metric costs two.
        let i = match prefix.addr {
            IpAddr::V4(a) => {
                let low = key4(&key, a);
                self.v4.range(low..).next().filter(|(k, _)| k.same_prefix(&low)).map(|(_, &i)| i)
            }
            IpAddr::V6(a) => {
                let low = key6(&key, a);
                self.v6.range(low..).next().filter(|(k, _)| k.same_prefix(&low)).map(|(_, &i)| i)
            }
        };
        i.map(|i| self.routes.get(i))
    }

    /// Each prefix of `table` after `after` (from the first when `None`) with the route it
    /// uses (of lowest metric), in [`IpPrefix`] order (IPv4 first, as [`RouteTable::iter`]):
    /// one search of the map, then a walk.
    pub fn used_after(&self, table: u32, after: Option<IpPrefix>) -> impl Iterator<Item = (IpPrefix, &KernelRoute)> {
        let start6 = Included(Key { table, addr: [0, 0], len: 0, metric: 0 });
        let (from4, from6) = match after.map(|prefix| (RouteKey { table, prefix, metric: u32::MAX }, prefix.addr)) {
            None => (Some(Included(Key { table, addr: 0, len: 0, metric: 0 })), start6),
            Some((past, IpAddr::V4(a))) => (Some(Excluded(key4(&past, a))), start6),
            Some((past, IpAddr::V6(a))) => (None, Excluded(key6(&past, a))),
        };
        let v4 = from4.into_iter().flat_map(move |from| firsts(&self.v4, table, from));
        let v4 = v4.map(|(k, i)| (IpPrefix { addr: Ipv4Addr::from_bits(k.addr).into(), len: k.len }, i));
        let v6 = firsts(&self.v6, table, from6).map(|(k, i)| (IpPrefix { addr: ip6(k.addr).into(), len: k.len }, i));
        v4.chain(v6).map(|(p, i)| (p, self.routes.get(i)))
    }

    /// Every route: IPv4 first, then IPv6.
    pub fn iter(&self) -> impl Iterator<Item = (RouteKey, &KernelRoute)> {
        let v4 = self.v4.iter().map(|(k, &i)| (k.route_key(Ipv4Addr::from_bits(k.addr).into()), i));
        let v6 = self.v6.iter().map(|(k, &i)| (k.route_key(ip6(k.addr).into()), i));
        v4.chain(v6).map(|(k, i)| (k, self.routes.get(i)))
    }

    /// Every key with a route, in [`RouteTable::iter`]'s order.
    pub fn keys(&self) -> impl Iterator<Item = RouteKey> + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// Marks the route of `key` (if it has one) as named by the re-dump in progress.
    pub fn mark(&mut self, key: &RouteKey) {
        let i = match key.prefix.addr {
            IpAddr::V4(a) => self.v4.get_mut(&key4(key, a)),
            IpAddr::V6(a) => self.v6.get_mut(&key6(key, a)),
        };
        if let Some(i) = i {
            *i |= MARK;
        }
    }

    /// True when the route of `key` is marked (a route set since is not).
    pub fn marked(&self, key: &RouteKey) -> bool {
        let i = match key.prefix.addr {
            IpAddr::V4(a) => self.v4.get(&key4(key, a)),
            IpAddr::V6(a) => self.v6.get(&key6(key, a)),
        };
        i.is_some_and(|i| i & MARK != 0)
    }

    /// Clears every mark; the keys of the routes that had none.
    pub fn unmark(&mut self) -> Vec<RouteKey> {
        let mut unmarked = Vec::new();
        for (k, i) in &mut self.v4 {
            if *i & MARK == 0 {
                unmarked.push(k.route_key(Ipv4Addr::from_bits(k.addr).into()));
            }
            *i &= !MARK;
        }
        for (k, i) in &mut self.v6 {
            if *i & MARK == 0 {
                unmarked.push(k.route_key(ip6(k.addr).into()));
            }
            *i &= !MARK;
        }
        unmarked
    }

    /// The number of routes.
    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// About the bytes it takes: its two trees (estimated from their lengths) and the
    /// distinct routes with their index.
    pub fn bytes(&self) -> usize {
        use crate::net::{hash_table_bytes, tree_bytes};
        let interned = &self.routes;
        tree_bytes::<Key<u32>, u32>(self.v4.len())
            + tree_bytes::<Key<Halves>, u32>(self.v6.len())
            + interned.slots.capacity() * std::mem::size_of::<(KernelRoute, u32)>()
            + hash_table_bytes::<KernelRoute, u32>(interned.index.capacity())
            + interned.free.capacity() * 4
    }

    /// The number of distinct routes (next hops and kind) the routes share.
    pub fn distinct(&self) -> usize {
        self.routes.index.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lcp::routes::KernelHop;

    fn key(prefix: &str, metric: u32) -> RouteKey {
        RouteKey { table: 254, prefix: prefix.parse().unwrap(), metric }
    }

    fn via(ifindex: u32) -> KernelRoute {
        let hop = KernelHop { gateway: Some("192.0.2.1".parse().unwrap()), ifindex, weight: 1 };
        KernelRoute::Unicast { hops: smallvec::smallvec![hop], protocol: 186 }
    }

    #[test]
    fn routes_sharing_next_hops_keep_them_once_and_free_them_with_the_last() {
        let mut t = RouteTable::default();
        assert!(t.insert(key("10.1.0.0/16", 0), via(3)));
        assert!(t.insert(key("2001:db8::/32", 0), via(3)));
        assert!(!t.insert(key("10.1.0.0/16", 0), via(3)), "the same route again changes nothing");
        assert!(t.insert(key("10.2.0.0/16", 0), via(4)));
        assert_eq!((t.len(), t.distinct()), (3, 2));
        assert!(t.insert(key("10.2.0.0/16", 0), via(3)), "replaced");
        assert_eq!(t.distinct(), 1, "via 4 is held by none");
        assert_eq!(t.get(&key("2001:db8::/32", 0)), Some(&via(3)));
        assert!(t.remove(&key("10.1.0.0/16", 0)) && !t.remove(&key("10.1.0.0/16", 0)));
        assert!(t.remove(&key("10.2.0.0/16", 0)) && t.remove(&key("2001:db8::/32", 0)));
        assert_eq!((t.len(), t.distinct()), (0, 0));
        assert!(t.insert(key("10.3.0.0/16", 0), via(5)));
        assert_eq!(t.routes.slots.len(), 2, "a freed slot is used again");
    }

    #[test]
    fn marks_are_kept_apart_from_the_route_and_cleared_listing_the_unmarked() {
        let mut t = RouteTable::default();
        let (a, b, c) = (key("10.1.0.0/16", 0), key("2001:db8::/32", 0), key("10.2.0.0/16", 0));
        for k in [a, b, c] {
            t.insert(k, via(3));
        }
        t.mark(&a);
        t.mark(&b);
        t.mark(&key("10.9.0.0/16", 0));
        assert!(t.marked(&a) && t.marked(&b) && !t.marked(&c));
        assert_eq!((t.get(&a), t.used(254, b.prefix)), (Some(&via(3)), Some(&via(3))), "a mark is not the route");
        assert!(t.insert(a, via(4)) && !t.marked(&a), "a route set anew is not marked");
        t.mark(&a);
        assert_eq!(t.unmark(), [c]);
        assert!(!t.marked(&a) && !t.marked(&b));
        assert_eq!(t.unmark(), [a, c, b], "nothing marked: every key");
        assert!(t.remove(&a) && t.remove(&b) && t.remove(&c));
        assert_eq!(t.distinct(), 0, "marked routes were released like the others");
    }

    #[test]
    fn the_route_used_is_the_lowest_metric_of_its_table_and_prefix() {
        let mut t = RouteTable::default();
        t.insert(key("2001:db8::/32", 20), via(2));
        t.insert(key("2001:db8::/32", 10), via(1));
        t.insert(key("2001:db8::/48", 0), via(3));
        t.insert(RouteKey { table: 100, ..key("2001:db8::/32", 0) }, via(4));
        assert_eq!(t.used(254, "2001:db8::/32".parse().unwrap()), Some(&via(1)));
        assert_eq!(t.used(254, "2001:db9::/32".parse().unwrap()), None);
        t.insert(key("10.0.0.0/8", 7), via(5));
        assert_eq!(t.used(254, "10.0.0.0/8".parse().unwrap()), Some(&via(5)));
        assert_eq!(t.used(254, "10.0.0.0/9".parse().unwrap()), None);
        // The key after the one asked for is another prefix's or another table's.
        assert_eq!(t.used(254, "2001:db8::/31".parse().unwrap()), None, "a longer prefix follows");
        assert_eq!(t.used(100, "2001:db7::/32".parse().unwrap()), None, "another address follows");
        assert_eq!(t.used(100, "2001:db8::/32".parse().unwrap()), Some(&via(4)));
        assert!(!t.insert(key("10.0.0.0/8", 7), via(5)), "the same route again changes nothing");
        assert!(t.insert(key("10.0.0.0/8", 7), via(6)));
        assert_eq!(t.used(254, "10.0.0.0/8".parse().unwrap()), Some(&via(6)));
    }

    #[test]
    fn keys_come_back_as_they_went_in_and_tables_compare_by_content() {
        let keys = [key("0.0.0.0/0", 0), key("255.255.255.255/32", u32::MAX), key("ffff::1/128", 1), key("::/0", 0)];
        let (mut a, mut b) = (RouteTable::default(), RouteTable::default());
        for (n, k) in keys.iter().enumerate() {
            a.insert(*k, via(n as u32));
        }
        for (n, k) in keys.iter().enumerate().rev() {
            b.insert(*k, via(9));
            b.insert(*k, via(n as u32));
        }
        let listed: Vec<RouteKey> = a.keys().collect();
        assert_eq!(listed, [keys[0], keys[1], keys[3], keys[2]], "IPv4 first, each family in order");
        assert_eq!(a, b, "the same routes, numbered differently inside");
        b.remove(&keys[2]);
        assert_ne!(a, b);
    }

    #[test]
    fn prefixes_after_one_are_walked_in_order_with_the_route_each_uses() {
        let mut t = RouteTable::default();
        t.insert(key("10.2.0.0/16", 9), via(2));
        t.insert(key("10.2.0.0/16", 1), via(1));
        t.insert(key("10.1.0.0/16", 0), via(3));
        t.insert(key("2001:db8::/32", 0), via(4));
        t.insert(key("2001:db8::/48", 0), via(5));
        t.insert(RouteKey { table: 100, ..key("10.0.0.0/8", 0) }, via(6));
        t.insert(RouteKey { table: 255, ..key("10.9.0.0/16", 0) }, via(7));
        let walk = |after: Option<&str>| -> Vec<(String, KernelRoute)> {
            let after = after.map(|a| a.parse().unwrap());
            t.used_after(254, after).map(|(p, r)| (p.to_string(), r.clone())).collect()
        };
        let all = walk(None);
        let names: Vec<&str> = all.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(names, ["10.1.0.0/16", "10.2.0.0/16", "2001:db8::/32", "2001:db8::/48"]);
        assert_eq!(all[1].1, via(1), "the route of lowest metric");
        assert_eq!(walk(Some("10.1.0.0/16")), all[1..], "after a prefix: every metric of it passed");
        assert_eq!(walk(Some("10.2.0.0/16")), all[2..], "from IPv4 on into IPv6");
        assert_eq!(walk(Some("10.1.5.0/24")), all[1..], "after a prefix the table lacks");
        assert_eq!(walk(Some("2001:db8::/32")), all[3..]);
        assert!(walk(Some("2001:db8::/48")).is_empty());
        assert_eq!(t.used_after(100, None).count(), 1, "another table's own");
    }
}
