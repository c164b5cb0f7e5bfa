//! The TAPs as Linux has them: what the netlink listener reported (addresses, MTUs, admin
//! states) and the configuration's addresses set on the TAPs.

use super::LinuxCp;
use super::listener::{Change, LinkFacts};
use crate::config::IpPrefix;

/// What Linux changed on the TAPs since the last look.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct KernelUpdate {
    /// TAPs whose admin state or MTU is not what vecflow last set: interface index and what
    /// the TAP has now.
    pub links: Vec<(u16, LinkFacts)>,
}

impl LinuxCp {
    /// Takes in what the netlink listener reported since the last call; `None` when nothing
    /// changed. Addresses are read with [`LinuxCp::kernel_owned`].
    pub fn take_kernel_changes(&mut self) -> Option<KernelUpdate> {
        let listener = self.listener.as_ref()?;
        let mut changed = false;
        while let Ok(change) = listener.changes.try_recv() {
            let (Change::Link(ifindex, _) | Change::Address(ifindex, _, _)) = change;
            changed |= self.view.change(change) && self.pairs.iter().any(|p| p.tap.ifindex == ifindex);
        }
        if !changed {
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
        Some(KernelUpdate { links })
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
