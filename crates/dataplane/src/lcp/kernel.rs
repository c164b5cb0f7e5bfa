//! The TAPs as Linux has them: what the netlink listener reported (addresses, MTUs, admin
//! states, routes) and the configuration's addresses set on the TAPs.

use super::LinuxCp;
use super::listener::{Change, LinkFacts};
use super::neighbors::{KernelNeighbor, Trust};
use super::nexthops::NextHopObject;
use super::routes::{KernelHop, KernelRoute, PROTOCOL_KERNEL, RouteKey};
use crate::l3::LabelStack;
use crate::l3::objects::{NextHop, Target};
use crate::net::IpPrefix;
use std::collections::BTreeSet;

/// What Linux changed on the TAPs since the last look.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct KernelUpdate {
    /// A TAP's link or addresses changed.
    pub taps: bool,
    /// TAPs whose admin state or MTU is not what vecflow last set: interface index and what
    /// the TAP has now.
    pub links: Vec<(u16, LinkFacts)>,
    /// Neighbor entries that changed on the TAPs: interface index, address, the entry.
    pub neighbors: Vec<(u16, std::net::IpAddr, Option<KernelNeighbor>)>,
    /// Prefixes whose routes in the mirrored table changed, or whose next-hop objects did
    /// (see [`LinuxCp::kernel_target`]).
    pub routes: Vec<IpPrefix>,
}

impl LinuxCp {
    /// Takes in what the netlink listener reported since the last call; `None` when nothing
    /// changed. Addresses are read with [`LinuxCp::kernel_owned`].
    pub fn take_kernel_changes(&mut self) -> Option<KernelUpdate> {
        let listener = self.listener.as_ref()?;
        let (mut changed, mut routes, mut objects, mut neighbors) =
            (false, BTreeSet::new(), BTreeSet::new(), Vec::new());
        while let Ok(change) = listener.changes.try_recv() {
            match &change {
                Change::Link(ifindex, _) | Change::Address(ifindex, _, _) => {
                    let ours = self.pairs.iter().any(|p| p.tap.ifindex == *ifindex);
                    changed |= self.view.change(change) && ours;
                }
                &Change::Neighbor(ifindex, address, entry) => {
                    let index = self.pairs.iter().find(|p| p.tap.ifindex == ifindex).map(|p| p.index);
                    if let (true, Some(index)) = (self.view.change(change), index) {
                        neighbors.push((index, address, entry));
                    }
                }
                &Change::NextHop(id, _) => {
                    if self.view.change(change) {
                        objects.insert(id);
                    }
                }
                &Change::Route(key, _) => {
                    if self.view.change(change) && key.table == self.table {
                        routes.insert(key.prefix);
                    }
                }
            }
        }
        routes.extend(self.routes_through(&objects));
        if !changed && routes.is_empty() && neighbors.is_empty() {
            return None;
        }
        let links = self
            .pairs
            .iter()
            .filter_map(|p| {
                let facts = *self.view.links.get(&p.tap.ifindex)?;
                (facts.up != p.set.up || facts.mtu != u32::from(p.set.mtu)).then_some((p.index, facts))
            })
            .collect();
        Some(KernelUpdate { taps: changed, links, neighbors, routes: routes.into_iter().collect() })
    }

    /// The prefixes of the mirrored table's routes through next-hop objects `ids`, directly
    /// or through a group holding one.
    fn routes_through(&self, ids: &BTreeSet<u32>) -> Vec<IpPrefix> {
        if ids.is_empty() {
            return Vec::new();
        }
        let mut all = ids.clone();
        for (&gid, object) in &self.view.nexthops {
            if let NextHopObject::Group(members) = object
                && members.iter().any(|(m, _)| ids.contains(m))
            {
                all.insert(gid);
            }
        }
        self.view
            .routes
            .iter()
            .filter(|(k, r)| k.table == self.table && matches!(r, KernelRoute::Object { id, .. } if all.contains(id)))
            .map(|(k, _)| k.prefix)
            .collect()
    }

    /// What vecflow makes of the kernel's route to `prefix` in the mirrored table (the one of
    /// lowest metric): its next hops on the TAPs' interfaces (its own or its next-hop
    /// object's), on the link for a device route, or a reject; `Err` with why for one vecflow
    /// cannot mirror (through a device it does not own, a gateway of the other family),
    /// `Ok(None)` when there is none or it is the kernel's own subnet route (vecflow has the
    /// address it comes from).
    pub fn kernel_target(&self, prefix: IpPrefix) -> Result<Option<Target>, &'static str> {
        let low = RouteKey { table: self.table, prefix, metric: 0 };
        let high = RouteKey { metric: u32::MAX, ..low };
        let Some((_, route)) = self.view.routes.range(low..=high).next() else { return Ok(None) };
        let object_hops;
        let hops = match route {
            KernelRoute::Unmirrored(why) => return Err(why),
            &KernelRoute::Reject(r) => return Ok(Some(Target::Reject(r))),
            // Skipped, not counted: vecflow has the address the subnet comes from.
            KernelRoute::Unicast { protocol: PROTOCOL_KERNEL, .. } => return Ok(None),
            KernelRoute::Unicast { hops, .. } => hops,
            KernelRoute::Object { id, .. } => match self.object_hops(*id)? {
                Some(hops) => {
                    object_hops = hops;
                    &object_hops
                }
                None => return Ok(Some(Target::Reject(crate::l3::Reject::Blackhole))),
            },
        };
        if hops.is_empty() {
            return Ok(None);
        }
        let index = |ifindex: u32| self.pairs.iter().find(|p| p.tap.ifindex == ifindex).map(|p| p.index);
        let mut next = Vec::new();
        for h in hops {
            let tx_if = index(h.ifindex).ok_or("through a device vecflow does not own")?;
            match h.gateway {
                None if hops.len() == 1 => return Ok(Some(Target::Glean { tx_if })),
                None => return Err("a multipath route with a device next hop"),
                Some(via) if via.is_ipv4() != prefix.addr.is_ipv4() => return Err("a gateway of the other family"),
                Some(via) => next.push(NextHop { via, tx_if, weight: u8::try_from(h.weight).unwrap_or(u8::MAX) }),
            }
        }
        if next.len() > crate::l3::config::MAX_PATHS {
            return Err("more next hops than a route takes");
        }
        Ok(Some(Target::Paths { hops: next, push: LabelStack::default() }))
    }

    /// The kernel's `PERMANENT` neighbor entries on the TAPs: interface index, address, MAC.
    pub fn permanent_neighbors(&self) -> Vec<(u16, std::net::IpAddr, wire::MacAddr)> {
        let index = |ifindex: u32| self.pairs.iter().find(|p| p.tap.ifindex == ifindex).map(|p| p.index);
        self.view
            .neighbors
            .iter()
            .filter(|(_, n)| n.trust == Trust::Permanent)
            .filter_map(|(&(ifindex, address), n)| Some((index(ifindex)?, address, wire::MacAddr(n.mac))))
            .collect()
    }

    /// The next hops of next-hop object `id` (a group's members that are single next hops,
    /// with the group's weights), `None` for a blackhole; `Err` for a kind vecflow does not
    /// forward through or an object it does not know.
    fn object_hops(&self, id: u32) -> Result<Option<Vec<KernelHop>>, &'static str> {
        let single = |object: Option<&NextHopObject>, weight: u32| match object {
            Some(&NextHopObject::Single { gateway, ifindex }) => {
                Some(KernelHop { gateway, ifindex, weight: u16::try_from(weight).unwrap_or(u16::MAX) })
            }
            _ => None,
        };
        match self.view.nexthops.get(&id) {
            None => Err("a next-hop object the kernel did not report"),
            Some(NextHopObject::Blackhole) => Ok(None),
            Some(NextHopObject::Unusable(why)) => Err(why),
            Some(o @ NextHopObject::Single { .. }) => Ok(Some(single(Some(o), 1).into_iter().collect())),
            Some(NextHopObject::Group(members)) => {
                let mut hops: Vec<KernelHop> =
                    members.iter().filter_map(|&(m, w)| single(self.view.nexthops.get(&m), w)).collect();
                hops.sort();
                Ok(Some(hops))
            }
        }
    }

    /// Has vecflow take the TAP of interface `index` as being at `facts`, so that the next
    /// [`LinuxCp::sync`] sets it to its interface's state again where the two differ.
    pub fn put_back(&mut self, index: u16, facts: LinkFacts) {
        if let Some(p) = self.pairs.iter_mut().find(|p| p.index == index) {
            p.set.up = facts.up;
            p.set.mtu = u16::try_from(facts.mtu).unwrap_or(u16::MAX);
        }
    }

    /// The addresses on the TAP of interface `index` that Linux owns: set there with `ip
    /// addr` (or by the kernel, as its IPv6 link-local address), not by vecflow for the
    /// configuration (neither one of `configured` nor one vecflow set before).
    pub fn kernel_owned(&self, index: u16, configured: &[IpPrefix]) -> Vec<IpPrefix> {
        let Some(p) = self.pairs.iter().find(|p| p.index == index) else { return Vec::new() };
        let on_tap = self.view.addresses.iter().filter(|&&(i, _)| i == p.tap.ifindex).map(|&(_, a)| a);
        on_tap.filter(|a| !configured.contains(a) && !p.asserted.contains(a)).collect()
    }

    /// Sets the configuration's addresses on the TAPs (`wanted`: the addresses of interface
    /// index): adds each one the TAP lacks (so an `ip addr del` holds until the next call)
    /// and removes each one set before and no longer wanted.
    pub fn assert_addresses(&mut self, wanted: impl Fn(u16) -> Vec<IpPrefix>) {
        for p in &mut self.pairs {
            let want = wanted(p.index);
            let ifindex = p.tap.ifindex;
            for &a in p.asserted.iter().filter(|a| !want.contains(a)) {
                match self.requests.del_address(ifindex, a) {
                    // Gone for vecflow at once: not taken for a kernel-owned address until
                    // the listener reports it removed.
                    Ok(()) => _ = self.view.change(Change::Address(ifindex, a, false)),
                    Err(e) => tracing::warn!("linux-cp: removing {a} from {}: {e}", p.tap.name),
                }
            }
            for &a in want.iter().filter(|&&a| !self.view.addresses.contains(&(ifindex, a))) {
                if let Err(e) = self.requests.add_address(ifindex, a) {
                    tracing::warn!("linux-cp: setting {a} on {}: {e}", p.tap.name);
                }
            }
            p.asserted = want;
        }
    }
}
