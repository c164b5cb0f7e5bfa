//! A view's difference from another, and a re-dump after an overrun made into the one view
//! as the dump is read, without a second copy of it: each route the dump names is marked in
//! its entry, and at the end of a whole dump the unmarked ones go.

use super::listener::{Change, KernelView, LOCKED_MESSAGES};
use super::netlink::{Message, Netlink};
use super::pending::SharedKernel;
use super::route_bytes::RouteUpdate;
use std::sync::atomic::AtomicBool;

impl KernelView {
    /// The changes that turn this view into `newer`.
    pub fn diff(&self, newer: &KernelView) -> Vec<Change> {
        let mut out = self.diff_but_routes(newer);
        for key in self.routes.keys().filter(|k| !newer.routes.contains(k)) {
            out.push(Change::Route(key, None));
        }
        for (key, route) in newer.routes.iter() {
            if self.routes.get(&key) != Some(route) {
                out.push(Change::Route(key, Some(route.clone())));
            }
        }
        out
    }

    /// Takes in a route message of a re-dump ([`KernelView::end_redump`] ends it): the
    /// first message of a key in the dump gives the route the kernel uses (whatever the view
    /// had for it, alternatives included, is replaced), the next ones its alternatives; each
    /// key the dump names is marked. The change made, if any.
    pub fn apply_redumped(&mut self, update: RouteUpdate) -> Option<Change> {
        let RouteUpdate { key, route, new, flags } = update;
        let first = !self.routes.marked(&key);
        let current = if first {
            self.alternatives.forget(&key);
            None
        } else {
            self.routes.get(&key)
        };
        let now = self.alternatives.route_message(key, route, new, flags, current)?;
        let change = Change::Route(key, now);
        let made = self.change(change.clone());
        self.routes.mark(&key);
        made.then_some(change)
    }

    /// Ends a re-dump: when it was `whole`, the routes it did not name go (the changes made),
    /// and so do the alternatives of keys left without a route (a route the kernel removed
    /// silently left its own); the marks are cleared either way (an interrupted dump is done
    /// again).
    pub fn end_redump(&mut self, whole: bool) -> Vec<Change> {
        let unnamed = self.routes.unmark();
        if !whole {
            return Vec::new();
        }
        for key in &unnamed {
            self.routes.remove(key);
        }
        let routes = &self.routes;
        self.alternatives.keep(|key| routes.contains(key));
        unnamed.into_iter().map(|key| Change::Route(key, None)).collect()
    }

    /// The changes that turn this view's links, addresses, neighbor entries and next-hop
    /// objects into `newer`'s (its routes are left as they are).
    pub fn diff_but_routes(&self, newer: &KernelView) -> Vec<Change> {
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
        for &(index, address) in self.neighbors.keys().filter(|k| !newer.neighbors.contains_key(k)) {
            out.push(Change::Neighbor(index, address, None));
        }
        for (&(index, address), &n) in &newer.neighbors {
            if self.neighbors.get(&(index, address)) != Some(&n) {
                out.push(Change::Neighbor(index, address, Some(n)));
            }
        }
        for &id in self.nexthops.keys().filter(|i| !newer.nexthops.contains_key(i)) {
            out.push(Change::NextHop(id, None));
        }
        for (&id, object) in &newer.nexthops {
            if self.nexthops.get(&id) != Some(object) {
                out.push(Change::NextHop(id, Some(object.clone())));
            }
        }
        out
    }
}

/// A dump after an overrun, into the one view as it is read, without a second copy of it.
/// The links, addresses, neighbor entries and next-hop objects (few) are dumped first, and
/// their difference made only when that dump was whole (else the re-dump ends there, to be
/// done again). Then each route message is taken in as the dump has it
/// ([`KernelView::apply_redumped`], [`LOCKED_MESSAGES`] under one hold of the lock), and at
/// the end of a whole dump the routes it did not name go ([`KernelView::end_redump`]). True
/// when the kernel marked no part of it interrupted, with the number of changes it found.
/// Once `stop` is set it ends between two reads ([`Netlink::dump_each`]).
pub(super) fn redump(dumps: &mut Netlink, kernel: &SharedKernel, stop: &AtomicBool) -> std::io::Result<(bool, u64)> {
    let mut objects = KernelView::default();
    if !dumps.dump_objects(stop, &mut |m| _ = objects.apply(m))? {
        return Ok((false, 0));
    }
    let mut found = {
        let mut k = kernel.lock();
        let diff = k.view.diff_but_routes(&objects);
        for change in &diff {
            k.view.change(change.clone());
        }
        let n = diff.len() as u64;
        k.note(diff);
        n
    };
    let mut routes = Vec::with_capacity(LOCKED_MESSAGES);
    let take_routes = |routes: &mut Vec<RouteUpdate>| {
        let mut k = kernel.lock();
        let made: Vec<Change> = routes.drain(..).filter_map(|r| k.view.apply_redumped(r)).collect();
        let n = made.len() as u64;
        k.note(made);
        n
    };
    let sent = dumps.dump_routes(stop, &mut |m| match m {
        Message::Route(update) => {
            routes.push(update);
            if routes.len() == LOCKED_MESSAGES {
                found += take_routes(&mut routes);
            }
        }
        other => tracing::debug!("linux-cp netlink: a route dump gave {other:?}"),
    });
    found += take_routes(&mut routes);
    let mut k = kernel.lock();
    let whole = sent.as_ref().is_ok_and(|&whole| whole);
    let gone = k.view.end_redump(whole);
    found += gone.len() as u64;
    k.note(gone);
    sent.map(|whole| (whole, found))
}
