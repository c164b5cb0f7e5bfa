//! The netlink listener: a thread that follows the linux-cp namespace's links, addresses,
//! next-hop objects and routes (a dump, then the notifications after it) in the one kernel
//! view ([`SharedKernel`]), where the main thread takes what changed.
//! When the kernel drops notifications for want of room (`ENOBUFS`), it throws away what is
//! still queued (older than what follows), dumps again on its second socket and notes only
//! the difference from what it knew.

use super::neighbors::{KernelNeighbor, neighbor_of};
pub use super::netlink::{EVENT_BUFFER, Netlink};
use super::netlink::{Message, Received};
use super::nexthops::{NextHopMessage, NextHopObject};
use super::pending::SharedKernel;
use super::route_bytes::RouteUpdate;
use super::route_table::RouteTable;
use super::routes::{Alternatives, KernelRoute, RouteKey};
use crate::net::IpPrefix;
use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed, Ordering::Release};
use std::time::Duration;

/// A link's admin state, carrier and MTU, as the kernel has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkFacts {
    /// Administratively up (`IFF_UP`).
    pub up: bool,
    /// Has carrier (`IFF_LOWER_UP`): without it the kernel flushes the link's next-hop
    /// objects.
    pub carrier: bool,
    /// The MTU.
    pub mtu: u32,
}

impl LinkFacts {
    /// Up with carrier: the kernel keeps next-hop objects on it.
    fn usable(self) -> bool {
        self.up && self.carrier
    }
}

/// The namespace's links and addresses, by Linux ifindex, its next-hop objects and routes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelView {
    /// Every link.
    pub links: BTreeMap<u32, LinkFacts>,
    /// Every address, with the ifindex of its link.
    pub addresses: BTreeSet<(u32, IpPrefix)>,
    /// Every neighbor entry vecflow takes in, by link and address.
    pub neighbors: BTreeMap<(u32, IpAddr), KernelNeighbor>,
    /// Every next-hop object, by id.
    pub nexthops: BTreeMap<u32, NextHopObject>,
    /// Every unicast-table route (of every table): the one the kernel uses for its key.
    pub routes: RouteTable,
    /// The IPv4 routes of a key after the one used.
    pub alternatives: Alternatives,
}

/// One change in the kernel's links, addresses and routes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A link appeared or changed (`Some`), or went away (`None`).
    Link(u32, Option<LinkFacts>),
    /// An address was added to (`true`) or removed from (`false`) a link.
    Address(u32, IpPrefix, bool),
    /// A neighbor entry on a link was added or changed (`Some`), or removed or became one
    /// vecflow does not take (`None`).
    Neighbor(u32, IpAddr, Option<KernelNeighbor>),
    /// A next-hop object was added or replaced (`Some`), or removed (`None`).
    NextHop(u32, Option<NextHopObject>),
    /// A route was added or replaced (`Some`), or removed (`None`).
    Route(RouteKey, Option<KernelRoute>),
}

impl KernelView {
    /// Takes in one message; the changes it made: the message's own and, before it, what
    /// the kernel removes silently with it ([`KernelView::silently_removed`]).
    pub fn apply(&mut self, message: Message) -> Vec<Change> {
        match self.change_of(message) {
            Some(change) => self.apply_all(change),
            None => Vec::new(),
        }
    }

    /// Makes `change` and what the kernel removes silently with it; the changes made.
    fn apply_all(&mut self, change: Change) -> Vec<Change> {
        let mut out = self.silently_removed(&change);
        for c in &out {
            self.change(c.clone());
        }
        if self.change(change.clone()) {
            out.push(change);
        }
        out
    }

    /// What the kernel removes without a message when `change` happens (checked on this
    /// kernel; zebra and BIRD withdraw routes the same way): the IPv4 routes whose every next
    /// hop is on a link that is set down or deleted, or whose last IPv4 address is removed
    /// ([`KernelView::routes_removed`]); and the next-hop objects on a link set down, deleted
    /// or losing its carrier, with what uses them ([`KernelView::objects_removed`]).
    pub fn silently_removed(&self, change: &Change) -> Vec<Change> {
        let mut out: Vec<Change> =
            self.routes_removed(change).into_iter().map(|key| Change::Route(key, None)).collect();
        let objects: BTreeSet<u32> = match change {
            Change::Link(index, facts) => {
                let was = self.links.get(index).is_some_and(|f| f.usable());
                if was && !facts.is_some_and(|f| f.usable()) {
                    self.nexthops
                        .iter()
                        .filter(|(_, o)| matches!(o, NextHopObject::Single { ifindex, .. } if ifindex == index))
                        .map(|(id, _)| *id)
                        .collect()
                } else {
                    BTreeSet::new()
                }
            }
            Change::NextHop(id, None) if self.nexthops.contains_key(id) => BTreeSet::from([*id]),
            _ => BTreeSet::new(),
        };
        // Disjoint: the first are routes with next hops of their own, these through objects.
        out.extend(self.objects_removed(&objects, change));
        out
    }

    /// The changes removing next-hop objects `ids` makes: each one removed (but the one
    /// `cause` removes itself), groups losing them as members (removed when none is left:
    /// Linux has no groups of groups), and the routes using a removed object.
    fn objects_removed(&self, ids: &BTreeSet<u32>, cause: &Change) -> Vec<Change> {
        if ids.is_empty() {
            return Vec::new();
        }
        let mut gone = ids.clone();
        let mut out = Vec::new();
        for (&gid, object) in &self.nexthops {
            let NextHopObject::Group(members) = object else { continue };
            let left: Vec<(u32, u32)> = members.iter().filter(|(m, _)| !ids.contains(m)).copied().collect();
            if left.is_empty() {
                gone.insert(gid);
            } else if left.len() != members.len() {
                out.push(Change::NextHop(gid, Some(NextHopObject::Group(left))));
            }
        }
        for &id in &gone {
            if !matches!(cause, Change::NextHop(c, None) if *c == id) {
                out.push(Change::NextHop(id, None));
            }
        }
        for (key, route) in self.routes.iter() {
            if matches!(route, KernelRoute::Object { id, .. } if gone.contains(id)) {
                out.push(Change::Route(key, None));
            }
        }
        out
    }

    /// The IPv4 routes with next hops of their own the kernel removes silently with
    /// `change` (see [`KernelView::silently_removed`]).
    fn routes_removed(&self, change: &Change) -> Vec<RouteKey> {
        // Most changes remove nothing: no walk over (a full table of) routes for them.
        let may_remove = match change {
            Change::Link(index, facts) => self.links.get(index).is_some_and(|f| f.up) && !facts.is_some_and(|f| f.up),
            Change::Address(_, prefix, false) => prefix.addr.is_ipv4(),
            _ => false,
        };
        if !may_remove {
            return Vec::new();
        }
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
            .map(|(key, _)| key)
            .collect()
    }

    /// Makes `change`; true when it changed anything.
    pub fn change(&mut self, change: Change) -> bool {
        match change {
            Change::Link(index, Some(facts)) => self.links.insert(index, facts) != Some(facts),
            Change::Link(index, None) => {
                self.addresses.retain(|&(i, _)| i != index);
                self.neighbors.retain(|&(i, _), _| i != index);
                self.links.remove(&index).is_some()
            }
            Change::Neighbor(index, address, Some(n)) => self.neighbors.insert((index, address), n) != Some(n),
            Change::Neighbor(index, address, None) => self.neighbors.remove(&(index, address)).is_some(),
            Change::Address(index, prefix, true) => self.addresses.insert((index, prefix)),
            Change::Address(index, prefix, false) => self.addresses.remove(&(index, prefix)),
            Change::NextHop(id, Some(object)) => self.nexthops.insert(id, object.clone()) != Some(object),
            Change::NextHop(id, None) => self.nexthops.remove(&id).is_some(),
            Change::Route(key, Some(route)) => self.routes.insert(key, route),
            Change::Route(key, None) => self.routes.remove(&key),
        }
    }
}

impl KernelView {
    /// The change a message describes, if it is one the view keeps.
    fn change_of(&mut self, message: Message) -> Option<Change> {
        match message {
            Message::NextHop(NextHopMessage { id, object }) => Some(Change::NextHop(id, object)),
            Message::Route(RouteUpdate { key, route, new, flags }) => {
                let now = self.alternatives.route_message(key, route, new, flags, self.routes.get(&key))?;
                Some(Change::Route(key, now))
            }
            Message::Rtnetlink { message, .. } => change_of(&message),
        }
    }
}

/// The change a message (not a route's) describes, if it is one the view keeps.
fn change_of(message: &RouteNetlinkMessage) -> Option<Change> {
    Some(match message {
        RouteNetlinkMessage::NewLink(l) => Change::Link(l.header.index, Some(link_facts(l))),
        RouteNetlinkMessage::DelLink(l) => Change::Link(l.header.index, None),
        RouteNetlinkMessage::NewAddress(a) => Change::Address(a.header.index, address_prefix(a)?, true),
        RouteNetlinkMessage::DelAddress(a) => Change::Address(a.header.index, address_prefix(a)?, false),
        RouteNetlinkMessage::NewNeighbour(_) | RouteNetlinkMessage::DelNeighbour(_) => {
            let (index, address, entry) = neighbor_of(message)?;
            Change::Neighbor(index, address, entry)
        }
        _ => return None,
    })
}

fn link_facts(l: &LinkMessage) -> LinkFacts {
    let mtu = l.attributes.iter().find_map(|a| if let LinkAttribute::Mtu(m) = a { Some(*m) } else { None });
    let flags = l.header.flags;
    LinkFacts { up: flags.contains(LinkFlags::Up), carrier: flags.contains(LinkFlags::LowerUp), mtu: mtu.unwrap_or(0) }
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

/// The running listener: its thread and counters.
#[derive(Debug)]
pub struct Listener {
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

    /// Starts the thread (`vecflow-netlink`) on `sockets`, keeping `kernel`; it runs until
    /// `stop` is set.
    pub fn spawn(
        (events, dumps): (Netlink, Netlink),
        kernel: SharedKernel,
        stop: Arc<AtomicBool>,
    ) -> std::io::Result<Listener> {
        let counters = Arc::new(ListenerCounters::default());
        let c = counters.clone();
        let thread = std::thread::Builder::new().name("vecflow-netlink".into()).spawn(move || {
            crate::runtime::privileges::thread_start();
            listen(events, dumps, &kernel, &c, &stop)
        })?;
        Ok(Listener { counters, thread })
    }

    /// Waits for the thread to end (after `stop` was set).
    pub fn join(self) {
        let _ = self.thread.join();
    }
}

/// Messages of a dump taken into the view under one hold of its lock.
pub(super) const LOCKED_MESSAGES: usize = 256;

/// Makes the changes `messages` describe in the view, and notes them; empties `messages`.
fn take_in(kernel: &SharedKernel, messages: &mut Vec<Message>) {
    if messages.is_empty() {
        return;
    }
    let mut k = kernel.lock();
    for m in messages.drain(..) {
        let changes = k.view.apply(m);
        k.note(changes);
    }
}

fn listen(mut events: Netlink, mut dumps: Netlink, kernel: &SharedKernel, c: &ListenerCounters, stop: &AtomicBool) {
    let mut dump_due = true;
    while !stop.load(Relaxed) {
        if dump_due && c.dumps.load(Relaxed) == 0 {
            // The first dump: each change is noted as it is read, so that the main thread
            // mirrors a full table while the rest of it is still being read. An interrupted
            // one is followed by a dump whose difference is noted.
            let started = std::time::Instant::now();
            let mut read = Vec::with_capacity(LOCKED_MESSAGES);
            let sent = dumps.dump_each(stop, &mut |m| {
                read.push(m);
                if read.len() == LOCKED_MESSAGES {
                    take_in(kernel, &mut read);
                }
            });
            take_in(kernel, &mut read);
            match sent {
                Ok(consistent) => {
                    let routes = {
                        let mut k = kernel.lock();
                        k.first_dump_read();
                        k.view.routes.len()
                    };
                    tracing::info!(
                        "linux-cp netlink: dumped {routes} routes in {:.3} s",
                        started.elapsed().as_secs_f64()
                    );
                    c.dumps.fetch_add(1, Release);
                    dump_due = !consistent;
                }
                Err(e) if stop.load(Relaxed) => tracing::debug!("linux-cp netlink: dump: {e}"),
                Err(e) => {
                    tracing::warn!("linux-cp netlink: dump: {e}");
                    std::thread::sleep(POLL);
                    continue;
                }
            }
            continue;
        }
        if dump_due {
            match super::redump::redump(&mut dumps, kernel, stop) {
                Ok((whole, found)) => {
                    // Counted once noted: whoever sees the count finds the changes.
                    c.resync_changes.fetch_add(found, Release);
                    c.dumps.fetch_add(1, Release);
                    dump_due = !whole;
                }
                Err(e) if stop.load(Relaxed) => tracing::debug!("linux-cp netlink: dump: {e}"),
                Err(e) => {
                    tracing::warn!("linux-cp netlink: dump: {e}");
                    std::thread::sleep(POLL);
                    continue;
                }
            }
        }
        match events.recv() {
            Ok(Received::Messages(mut messages)) => {
                c.messages.fetch_add(messages.len() as u64, Relaxed);
                take_in(kernel, &mut messages);
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
mod tests;
