//! The netlink listener: a thread that follows the linux-cp namespace's links, addresses and
//! routes (a dump, then the notifications after it) and hands each change to the control plane.
//! When the kernel drops notifications for want of room (`ENOBUFS`), it throws away what is
//! still queued (older than what follows), dumps again on its second socket and hands over
//! only the difference from what it knew.

use super::netlink::Received;
pub use super::netlink::{EVENT_BUFFER, Netlink};
use super::routes::{KernelRoute, RouteKey, route_of};
use crate::config::IpPrefix;
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::Release};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::Duration;

/// A link's admin state and MTU, as the kernel has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkFacts {
    /// Administratively up (`IFF_UP`).
    pub up: bool,
    /// The MTU.
    pub mtu: u32,
}

/// The namespace's links and addresses, by Linux ifindex, and its routes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelView {
    /// Every link.
    pub links: BTreeMap<u32, LinkFacts>,
    /// Every address, with the ifindex of its link.
    pub addresses: BTreeSet<(u32, IpPrefix)>,
    /// Every unicast-table route (of every table).
    pub routes: BTreeMap<RouteKey, KernelRoute>,
}

/// One change in the kernel's links, addresses and routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A link appeared or changed (`Some`), or went away (`None`).
    Link(u32, Option<LinkFacts>),
    /// An address was added to (`true`) or removed from (`false`) a link.
    Address(u32, IpPrefix, bool),
    /// A route was added or replaced (`Some`), or removed (`None`).
    Route(RouteKey, Option<KernelRoute>),
}

impl KernelView {
    /// The view a dump's messages describe.
    pub fn from_dump(messages: &[RouteNetlinkMessage]) -> KernelView {
        let mut view = KernelView::default();
        for m in messages {
            view.apply(m);
        }
        view
    }

    /// Takes in one message; the changes it made: the message's own and, before it, the
    /// IPv4 routes the kernel removes silently with it ([`KernelView::silently_removed`]).
    pub fn apply(&mut self, message: &RouteNetlinkMessage) -> Vec<Change> {
        let Some(change) = change_of(message) else { return Vec::new() };
        let mut out: Vec<Change> =
            self.silently_removed(&change).into_iter().map(|key| Change::Route(key, None)).collect();
        for c in &out {
            self.change(c.clone());
        }
        if self.change(change.clone()) {
            out.push(change);
        }
        out
    }

    /// The IPv4 routes the kernel removes without a message when `change` happens (checked
    /// on this kernel; zebra and BIRD withdraw them the same way): those whose every next hop
    /// is on a link that is set down or deleted, or whose last IPv4 address is removed.
    pub fn silently_removed(&self, change: &Change) -> Vec<RouteKey> {
        let gone = |hop: &super::routes::KernelHop| match change {
            Change::Link(index, facts) => {
                let was_up = self.links.get(index).is_some_and(|f| f.up);
                hop.ifindex == *index && was_up && !facts.is_some_and(|f| f.up)
            }
            Change::Address(index, prefix, false) if prefix.addr.is_ipv4() => {
                let others = self.addresses.iter().any(|(i, p)| i == index && p != prefix && p.addr.is_ipv4());
                hop.ifindex == *index && !others && self.addresses.contains(&(*index, *prefix))
            }
            _ => false,
        };
        self.routes
            .iter()
            .filter(|(key, route)| {
                key.prefix.addr.is_ipv4() && matches!(route, KernelRoute::Unicast { hops, .. } if hops.iter().all(gone))
            })
            .map(|(key, _)| *key)
            .collect()
    }
    /// Makes `change`; true when it changed anything.
    pub fn change(&mut self, change: Change) -> bool {
        match change {
            Change::Link(index, Some(facts)) => self.links.insert(index, facts) != Some(facts),
            Change::Link(index, None) => {
                self.addresses.retain(|&(i, _)| i != index);
                self.links.remove(&index).is_some()
            }
            Change::Address(index, prefix, true) => self.addresses.insert((index, prefix)),
            Change::Address(index, prefix, false) => self.addresses.remove(&(index, prefix)),
            Change::Route(key, Some(route)) => self.routes.insert(key, route.clone()) != Some(route),
            Change::Route(key, None) => self.routes.remove(&key).is_some(),
        }
    }

    /// The changes that turn this view into `newer`.
    pub fn diff(&self, newer: &KernelView) -> Vec<Change> {
        let mut out = Vec::new();
        for &(index, prefix) in self.addresses.difference(&newer.addresses) {
            out.push(Change::Address(index, prefix, false));
        }
        for &index in self.links.keys().filter(|i| !newer.links.contains_key(i)) {
            out.push(Change::Link(index, None));
        }
        for (&index, &facts) in &newer.links {
            if self.links.get(&index) != Some(&facts) {
                out.push(Change::Link(index, Some(facts)));
            }
        }
        for &(index, prefix) in newer.addresses.difference(&self.addresses) {
            out.push(Change::Address(index, prefix, true));
        }
        for &key in self.routes.keys().filter(|k| !newer.routes.contains_key(k)) {
            out.push(Change::Route(key, None));
        }
        for (&key, route) in &newer.routes {
            if self.routes.get(&key) != Some(route) {
                out.push(Change::Route(key, Some(route.clone())));
            }
        }
        out
    }
}

/// The change a message describes, if it is one the view keeps.
fn change_of(message: &RouteNetlinkMessage) -> Option<Change> {
    Some(match message {
        RouteNetlinkMessage::NewLink(l) => Change::Link(l.header.index, Some(link_facts(l))),
        RouteNetlinkMessage::DelLink(l) => Change::Link(l.header.index, None),
        RouteNetlinkMessage::NewAddress(a) => Change::Address(a.header.index, address_prefix(a)?, true),
        RouteNetlinkMessage::DelAddress(a) => Change::Address(a.header.index, address_prefix(a)?, false),
        RouteNetlinkMessage::NewRoute(_) => {
            let (key, route) = route_of(message)?;
            Change::Route(key, Some(route))
        }
        RouteNetlinkMessage::DelRoute(_) => Change::Route(route_of(message)?.0, None),
        _ => return None,
    })
}

fn link_facts(l: &LinkMessage) -> LinkFacts {
    let mtu = l.attributes.iter().find_map(|a| if let LinkAttribute::Mtu(m) = a { Some(*m) } else { None });
    LinkFacts { up: l.header.flags.contains(LinkFlags::Up), mtu: mtu.unwrap_or(0) }
}

/// The address of an address message: `IFA_LOCAL` (IPv4's own address; on a point-to-point
/// link `IFA_ADDRESS` is the peer's), else `IFA_ADDRESS` (all IPv6 has).
fn address_prefix(a: &AddressMessage) -> Option<IpPrefix> {
    let find = |local: bool| {
        a.attributes.iter().find_map(|x| match x {
            AddressAttribute::Local(ip) if local => Some(*ip),
            AddressAttribute::Address(ip) if !local => Some(*ip),
            _ => None,
        })
    };
    let addr = find(true).or_else(|| find(false))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    (a.header.prefix_len <= max).then_some(IpPrefix { addr, len: a.header.prefix_len })
}

/// What the listener did, for `show lcp` and Prometheus.
#[derive(Debug, Default)]
pub struct ListenerCounters {
    /// Notifications received.
    pub messages: AtomicU64,
    /// Dumps taken (the first one and every resync).
    pub dumps: AtomicU64,
    /// Times the kernel dropped notifications for want of buffer room (`ENOBUFS`).
    pub overruns: AtomicU64,
    /// Changes only a dump after an overrun found (the notifications of them were lost).
    pub resync_changes: AtomicU64,
}

/// How often the listener looks at its stop flag while no notification comes.
const POLL: Duration = Duration::from_millis(100);

/// The running listener: its thread, its changes and counters.
#[derive(Debug)]
pub struct Listener {
    /// Changes, in the order the kernel made them.
    pub changes: Receiver<Change>,
    /// What it did.
    pub counters: Arc<ListenerCounters>,
    thread: std::thread::JoinHandle<()>,
}

impl Listener {
    /// Opens the listener's two sockets in the current thread's namespace (call it in the
    /// linux-cp namespace: a socket stays in the namespace it was made in), the event
    /// socket with a receive buffer of `buffer` bytes ([`EVENT_BUFFER`] in vecflow).
    pub fn sockets(buffer: usize) -> std::io::Result<(Netlink, Netlink)> {
        Ok((Netlink::events(POLL, buffer)?, Netlink::requests()?))
    }

    /// Starts the thread (`vecflow-netlink`) on `sockets`; it runs until `stop` is set.
    pub fn spawn((events, dumps): (Netlink, Netlink), stop: Arc<AtomicBool>) -> std::io::Result<Listener> {
        let (tx, changes) = channel();
        let counters = Arc::new(ListenerCounters::default());
        let c = counters.clone();
        let thread = std::thread::Builder::new()
            .name("vecflow-netlink".into())
            .spawn(move || listen(events, dumps, &tx, &c, &stop))?;
        Ok(Listener { changes, counters, thread })
    }

    /// Waits for the thread to end (after `stop` was set).
    pub fn join(self) {
        let _ = self.thread.join();
    }
}

fn listen(mut events: Netlink, mut dumps: Netlink, tx: &Sender<Change>, c: &ListenerCounters, stop: &AtomicBool) {
    let mut view = KernelView::default();
    let mut dump_due = true;
    while !stop.load(Relaxed) {
        if dump_due {
            match dumps.dump_all() {
                Ok(messages) => {
                    let newer = KernelView::from_dump(&messages);
                    let diff = view.diff(&newer);
                    let found = if c.dumps.load(Relaxed) > 0 { diff.len() as u64 } else { 0 };
                    view = newer;
                    if diff.into_iter().any(|d| tx.send(d).is_err()) {
                        return;
                    }
                    // Counted once handed over: whoever sees the count finds the changes.
                    c.resync_changes.fetch_add(found, Release);
                    c.dumps.fetch_add(1, Release);
                    dump_due = false;
                }
                Err(e) => {
                    tracing::warn!("linux-cp netlink: dump: {e}");
                    std::thread::sleep(POLL);
                    continue;
                }
            }
        }
        match events.recv() {
            Ok(Received::Messages(messages)) => {
                for m in &messages {
                    c.messages.fetch_add(1, Relaxed);
                    if view.apply(m).into_iter().any(|change| tx.send(change).is_err()) {
                        return;
                    }
                }
            }
            Ok(Received::Idle) => {}
            Ok(Received::Overrun) => {
                tracing::warn!("linux-cp netlink: the kernel dropped notifications (ENOBUFS); dumping again");
                c.overruns.fetch_add(1, Relaxed);
                if let Err(e) = events.discard_queued() {
                    tracing::warn!("linux-cp netlink: {e}");
                }
                dump_due = true;
            }
            Err(e) => {
                tracing::warn!("linux-cp netlink: {e}");
                std::thread::sleep(POLL);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> IpPrefix {
        s.parse().unwrap()
    }

    #[test]
    fn a_view_diffs_into_the_changes_that_make_the_other() {
        let mut old = KernelView::default();
        old.change(Change::Link(2, Some(LinkFacts { up: true, mtu: 1500 })));
        old.change(Change::Link(3, Some(LinkFacts { up: true, mtu: 1500 })));
        old.change(Change::Address(2, p("10.0.0.1/24"), true));
        old.change(Change::Address(3, p("10.0.1.1/24"), true));
        let mut new = KernelView::default();
        new.change(Change::Link(2, Some(LinkFacts { up: true, mtu: 1400 })));
        new.change(Change::Address(2, p("10.0.0.1/24"), true));
        new.change(Change::Address(2, p("2001:db8::1/64"), true));
        let diff = old.diff(&new);
        assert_eq!(
            diff,
            [
                Change::Address(3, p("10.0.1.1/24"), false),
                Change::Link(3, None),
                Change::Link(2, Some(LinkFacts { up: true, mtu: 1400 })),
                Change::Address(2, p("2001:db8::1/64"), true),
            ]
        );
        for d in diff {
            assert!(old.change(d.clone()), "{d:?} changes something");
        }
        assert_eq!(old, new);
        assert!(old.diff(&new).is_empty());
        // A link that goes takes its addresses.
        assert!(old.change(Change::Link(2, None)));
        assert!(old.addresses.is_empty());
    }

    #[test]
    fn messages_give_links_and_own_addresses() {
        let mut link = LinkMessage::default();
        link.header.index = 7;
        link.header.flags = LinkFlags::Up | LinkFlags::LowerUp;
        link.attributes.push(LinkAttribute::Mtu(1400));
        let mut addr = AddressMessage::default();
        addr.header.index = 7;
        addr.header.prefix_len = 24;
        // Point to point: the peer in IFA_ADDRESS, the own address in IFA_LOCAL.
        addr.attributes.push(AddressAttribute::Address("10.9.9.9".parse().unwrap()));
        addr.attributes.push(AddressAttribute::Local("10.0.0.1".parse().unwrap()));
        let mut view = KernelView::default();
        let up = Some(LinkFacts { up: true, mtu: 1400 });
        assert_eq!(view.apply(&RouteNetlinkMessage::NewLink(link.clone())), [Change::Link(7, up)]);
        assert_eq!(view.apply(&RouteNetlinkMessage::NewLink(link.clone())), [], "nothing new");
        let added = view.apply(&RouteNetlinkMessage::NewAddress(addr.clone()));
        assert_eq!(added, [Change::Address(7, p("10.0.0.1/24"), true)]);
        addr.header.prefix_len = 33;
        assert_eq!(view.apply(&RouteNetlinkMessage::NewAddress(addr)), [], "a bad length is ignored");
        assert_eq!(view.apply(&RouteNetlinkMessage::DelLink(link)), [Change::Link(7, None)]);
        assert!(view.addresses.is_empty());
    }

    #[test]
    fn ipv4_routes_the_kernel_drops_silently_are_withdrawn() {
        use crate::lcp::routes::{KernelHop, RouteKey};
        let mut view = KernelView::default();
        view.change(Change::Link(3, Some(LinkFacts { up: true, mtu: 1500 })));
        view.change(Change::Address(3, p("192.0.2.1/24"), true));
        view.change(Change::Address(3, p("198.51.100.1/24"), true));
        let route = |gw: &str, ifindex| KernelRoute::Unicast {
            hops: vec![KernelHop { gateway: Some(gw.parse().unwrap()), ifindex, weight: 1 }],
            protocol: 186,
        };
        let key = |prefix: &str| RouteKey { table: 254, prefix: p(prefix), metric: 0 };
        view.change(Change::Route(key("203.0.113.0/24"), Some(route("192.0.2.9", 3))));
        view.change(Change::Route(key("203.0.114.0/24"), Some(route("198.51.100.9", 3))));
        view.change(Change::Route(key("2001:db8::/32"), Some(route("fe80::1", 3))));
        // One of two IPv4 addresses goes: the routes stay; the last one goes: they go.
        assert!(view.silently_removed(&Change::Address(3, p("192.0.2.1/24"), false)).is_empty());
        view.change(Change::Address(3, p("192.0.2.1/24"), false));
        let removed = view.silently_removed(&Change::Address(3, p("198.51.100.1/24"), false));
        assert_eq!(removed, [key("203.0.113.0/24"), key("203.0.114.0/24")]);
        // The link goes down: every IPv4 route on it (IPv6 ones the kernel reports itself).
        let removed = view.silently_removed(&Change::Link(3, Some(LinkFacts { up: false, mtu: 1500 })));
        assert_eq!(removed, [key("203.0.113.0/24"), key("203.0.114.0/24")]);
        assert!(view.silently_removed(&Change::Link(3, Some(LinkFacts { up: true, mtu: 1400 }))).is_empty());
    }
}
