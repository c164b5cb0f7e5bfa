//! The TAPs as Linux has them: what the netlink listener reported (addresses, MTUs, admin
//! states, routes) and the configuration's addresses set on the TAPs.

use super::LinuxCp;
use super::listener::{Change, LinkFacts};
use super::routes::{KernelRoute, MAIN_TABLE, PROTOCOL_KERNEL, RouteKey};
use crate::config::IpPrefix;
use crate::l3::LabelStack;
use crate::l3::objects::{NextHop, Target};

/// What Linux changed on the TAPs since the last look.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct KernelUpdate {
    /// A TAP's link or addresses changed.
    pub taps: bool,
    /// TAPs whose admin state or MTU is not what vecflow last set: interface index and what
    /// the TAP has now.
    pub links: Vec<(u16, LinkFacts)>,
    /// Prefixes whose routes in the main table changed (see [`LinuxCp::kernel_target`]).
    pub routes: Vec<IpPrefix>,
}

impl LinuxCp {
    /// Takes in what the netlink listener reported since the last call; `None` when nothing
    /// changed. Addresses are read with [`LinuxCp::kernel_owned`].
    pub fn take_kernel_changes(&mut self) -> Option<KernelUpdate> {
        let listener = self.listener.as_ref()?;
        let (mut changed, mut routes) = (false, std::collections::BTreeSet::new());
        while let Ok(change) = listener.changes.try_recv() {
            match &change {
                Change::Link(ifindex, _) | Change::Address(ifindex, _, _) => {
                    let ours = self.pairs.iter().any(|p| p.tap.ifindex == *ifindex);
                    changed |= self.view.change(change) && ours;
                }
                Change::Route(key, _) => {
                    let key = *key;
                    if self.view.change(change) && key.table == MAIN_TABLE {
                        routes.insert(key.prefix);
                    }
                }
            }
        }
        if !changed && routes.is_empty() {
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
        Some(KernelUpdate { taps: changed, links, routes: routes.into_iter().collect() })
    }

    /// What vecflow makes of the kernel's route to `prefix` in the main table (the one of
    /// lowest metric): its next hops on the TAPs' interfaces, or on the link for a device
    /// route; `Err` with why for one vecflow does not mirror (a device it does not own, the
    /// kernel's own subnet routes: vecflow has its addresses), `Ok(None)` when there is none.
    pub fn kernel_target(&self, prefix: IpPrefix) -> Result<Option<Target>, &'static str> {
        let low = RouteKey { table: MAIN_TABLE, prefix, metric: 0 };
        let high = RouteKey { metric: u32::MAX, ..low };
        let Some((_, route)) = self.view.routes.range(low..=high).next() else { return Ok(None) };
        let hops = match route {
            KernelRoute::Unmirrored(why) => return Err(why),
            KernelRoute::Unicast { protocol: PROTOCOL_KERNEL, .. } => return Err("the kernel's own subnet route"),
            KernelRoute::Unicast { hops, .. } => hops,
        };
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
