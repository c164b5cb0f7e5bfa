//! The TAPs as Linux has them, read from each namespace's kernel view: what its netlink
//! listener found changed (links, addresses, neighbor entries, routes), and the
//! configuration's addresses set on the TAPs.

use super::LinuxCp;
use super::listener::{Change, LinkFacts};
use super::neighbors::{KernelNeighbor, Trust};
use super::targets::Mirrored;
use crate::net::IpPrefix;

/// What Linux changed in one namespace, on its TAPs and in its mirrored table, since the last
/// look.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct KernelUpdate {
    /// The VRF of the namespace: its routes go into that VRF's tables.
    pub vrf: u16,
    /// A TAP's link or addresses changed.
    pub taps: bool,
    /// TAPs whose admin state or MTU is not what vecflow last set: interface index and what
    /// the TAP has now (none before the view has shown the TAP as vecflow set it up).
    pub links: Vec<(u16, LinkFacts)>,
    /// Neighbor entries that changed on the TAPs: interface index, address, the entry.
    pub neighbors: Vec<(u16, std::net::IpAddr, Option<KernelNeighbor>)>,
    /// Prefixes whose route in the mirrored table changed (or whose next-hop objects did),
    /// each with what vecflow makes of it now; at most the number asked for.
    pub routes: Vec<(IpPrefix, Mirrored)>,
}

/// How big the kernel view is and what waits in it, for `show lcp` and Prometheus.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewCounts {
    /// Routes of every table in the view.
    pub routes: usize,
    /// Prefixes of the mirrored table whose change the main thread has not taken yet.
    pub waiting: usize,
    /// The most that ever waited at once.
    pub most_waiting: usize,
    /// About the bytes of the view's routes and of the prefixes waiting.
    pub bytes: usize,
}

impl LinuxCp {
    /// Takes what a netlink listener found changed since the last call, in the first
    /// namespace with a change, with at most `max_routes` of the routes waiting (the rest wait
    /// for the next call); `None` when nothing changed anywhere. The namespaces take turns
    /// being looked at first, so that one with constant changes (the default table's churn)
    /// keeps none of the others waiting. Addresses are read with [`LinuxCp::kernel_owned`].
    pub fn take_kernel_changes(&self, max_routes: usize) -> Option<KernelUpdate> {
        let n = self.spaces.len();
        let first = self.next_space.get() % n.max(1);
        let (space, update) =
            (0..n).map(|k| (first + k) % n).find_map(|s| Some((s, self.take_space_changes(s, max_routes)?)))?;
        self.next_space.set(space + 1);
        Some(update)
    }

    /// [`LinuxCp::take_kernel_changes`] of namespace `space`.
    fn take_space_changes(&self, space: usize, max_routes: usize) -> Option<KernelUpdate> {
        let here = &self.spaces[space];
        here.listener.as_ref()?;
        let mut k = here.kernel.lock();
        let (mut taps, mut neighbors) = (false, Vec::new());
        for change in k.take_taps() {
            match change {
                Change::Link(ifindex, _) | Change::Address(ifindex, _, _) => taps |= k.interface_of(ifindex).is_some(),
                Change::Neighbor(ifindex, address, entry) => {
                    if let Some(index) = k.interface_of(ifindex) {
                        neighbors.push((index, address, entry));
                    }
                }
                Change::NextHop(..) | Change::Route(..) => {}
            }
        }
        let routes = k.take_routes(max_routes);
        if !taps && routes.is_empty() && neighbors.is_empty() {
            return None;
        }
        let links = self
            .pairs
            .iter()
            .filter(|p| p.space == space)
            .filter_map(|p| {
                let facts = *k.view.links.get(&p.tap.ifindex)?;
                let as_set = facts.up == p.set.up && facts.mtu == u32::from(p.set.mtu);
                p.settled.set(p.settled.get() || as_set);
                (p.settled.get() && !as_set).then_some((p.index, facts))
            })
            .collect();
        Some(KernelUpdate { vrf: here.vrf, taps, links, neighbors, routes })
    }

    /// How big the kernel views are and what waits in them, all namespaces together (the most
    /// that ever waited: in one namespace).
    pub fn view_counts(&self) -> ViewCounts {
        let mut all = ViewCounts { routes: 0, waiting: 0, most_waiting: 0, bytes: 0 };
        for space in &self.spaces {
            let k = space.kernel.lock();
            let (waiting, most_waiting) = k.waiting();
            all.routes += k.view.routes.len();
            all.waiting += waiting;
            all.most_waiting = all.most_waiting.max(most_waiting);
            all.bytes += k.bytes();
        }
        all
    }

    /// The kernel's `PERMANENT` neighbor entries on the TAPs: interface index, address, MAC.
    pub fn permanent_neighbors(&self) -> Vec<(u16, std::net::IpAddr, wire::MacAddr)> {
        let mut out = Vec::new();
        for space in &self.spaces {
            let k = space.kernel.lock();
            let permanent = k.view.neighbors.iter().filter(|(_, n)| n.trust == Trust::Permanent);
            out.extend(permanent.filter_map(|(&(ifindex, address), n)| {
                Some((k.interface_of(ifindex)?, address, wire::MacAddr(n.mac)))
            }));
        }
        out
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
        let k = self.spaces[p.space].kernel.lock();
        let on_tap = k.view.addresses.iter().filter(|&&(i, _)| i == p.tap.ifindex).map(|&(_, a)| a);
        on_tap.filter(|a| !configured.contains(a) && !p.asserted.contains(a)).collect()
    }

    /// Sets the configuration's addresses on the TAPs (`wanted`: the addresses of interface
    /// index): adds each one the TAP lacks (so an `ip addr del` holds until the next call)
    /// and removes each one set before and no longer wanted.
    pub fn assert_addresses(&mut self, wanted: impl Fn(u16) -> Vec<IpPrefix>) {
        for p in &mut self.pairs {
            let space = &mut self.spaces[p.space];
            let kernel = space.kernel.clone();
            let mut k = kernel.lock();
            let want = wanted(p.index);
            let ifindex = p.tap.ifindex;
            for &a in p.asserted.iter().filter(|a| !want.contains(a)) {
                match space.requests.del_address(ifindex, a) {
                    // Gone for vecflow at once: not taken for a kernel-owned address until
                    // the listener reports it removed.
                    Ok(()) => _ = k.view.change(Change::Address(ifindex, a, false)),
                    Err(e) => tracing::warn!("linux-cp: removing {a} from {}: {e}", p.tap.name),
                }
            }
            for &a in want.iter().filter(|&&a| !k.view.addresses.contains(&(ifindex, a))) {
                if let Err(e) = space.requests.add_address(ifindex, a) {
                    tracing::warn!("linux-cp: setting {a} on {}: {e}", p.tap.name);
                }
            }
            p.asserted = want;
        }
    }
}
