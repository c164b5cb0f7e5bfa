//! What vecflow makes of the kernel's routes: the FIB target of a prefix's route in the
//! mirrored table, read from the one kernel view, and the routes a next-hop object's change
//! reaches.

use super::listener::KernelView;
use super::nexthops::NextHopObject;
use super::routes::{Hops, KernelHop, KernelRoute, PROTOCOL_KERNEL};
use crate::l3::LabelStack;
use crate::l3::objects::{NextHop, Target};
use crate::net::IpPrefix;
use std::collections::BTreeSet;

/// What the kernel's route to a prefix is for vecflow: `Ok(Some)` the target the FIB holds
/// from the kernel, `Ok(None)` none (no route, or the kernel's own subnet route: vecflow has
/// the address it comes from), `Err` why it is not mirrored.
pub type Mirrored = Result<Option<Target>, &'static str>;

impl KernelView {
    /// What vecflow makes of the kernel's route to `prefix` in `table` (the one of lowest
    /// metric): its next hops on the TAPs' interfaces (its own or its next-hop object's), on
    /// the link for a device route, or a reject; `Err` for one vecflow cannot mirror (through
    /// a device it does not own, a gateway of the other family). `index` gives the vecflow
    /// interface of a TAP's Linux ifindex.
    pub fn target(&self, table: u32, prefix: IpPrefix, index: &impl Fn(u32) -> Option<u16>) -> Mirrored {
        self.target_of(prefix, self.routes.used(table, prefix), index)
    }

    /// What vecflow makes of `route`, the kernel's route to `prefix` (none: no route), as
    /// [`KernelView::target`] does.
    pub fn target_of(
        &self,
        prefix: IpPrefix,
        route: Option<&KernelRoute>,
        index: &impl Fn(u32) -> Option<u16>,
    ) -> Mirrored {
        let Some(route) = route else { return Ok(None) };
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
        let mut next = Vec::with_capacity(hops.len());
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

    /// The next hops of next-hop object `id` (a group's members that are single next hops,
    /// with the group's weights), `None` for a blackhole; `Err` for a kind vecflow does not
    /// forward through or an object it does not know.
    fn object_hops(&self, id: u32) -> Result<Option<Hops>, &'static str> {
        let single = |object: Option<&NextHopObject>, weight: u32| match object {
            Some(&NextHopObject::Single { gateway, ifindex }) => {
                Some(KernelHop { gateway, ifindex, weight: u16::try_from(weight).unwrap_or(u16::MAX) })
            }
            _ => None,
        };
        match self.nexthops.get(&id) {
            None => Err("a next-hop object the kernel did not report"),
            Some(NextHopObject::Blackhole) => Ok(None),
            Some(NextHopObject::Unusable(why)) => Err(why),
            Some(o @ NextHopObject::Single { .. }) => Ok(Some(single(Some(o), 1).into_iter().collect())),
            Some(NextHopObject::Group(members)) => {
                let mut hops: Hops = members.iter().filter_map(|&(m, w)| single(self.nexthops.get(&m), w)).collect();
                hops.sort();
                Ok(Some(hops))
            }
        }
    }

    /// The prefixes of `table`'s routes through next-hop objects `ids`, directly or through
    /// a group holding one.
    pub fn routes_through(&self, table: u32, ids: &BTreeSet<u32>) -> Vec<IpPrefix> {
        if ids.is_empty() {
            return Vec::new();
        }
        let mut all = ids.clone();
        for (&gid, object) in &self.nexthops {
            if let NextHopObject::Group(members) = object
                && members.iter().any(|(m, _)| ids.contains(m))
            {
                all.insert(gid);
            }
        }
        self.routes
            .iter()
            .filter(|(k, r)| k.table == table && matches!(r, KernelRoute::Object { id, .. } if all.contains(id)))
            .map(|(k, _)| k.prefix)
            .collect()
    }
}
