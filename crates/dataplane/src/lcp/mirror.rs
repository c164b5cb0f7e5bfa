//! The kernel's routes mirrored into the FIB (source `kernel`), the main thread's half of
//! linux-cp's routes: each batch the listener's view gives ([`super::LinuxCp::take_kernel_changes`])
//! goes to the RIB through the narrow [`RouteSink`] the dataplane implements, and what the FIB
//! holds from the kernel is counted by kind, what it does not by why, for `show lcp` and
//! Prometheus. The routes themselves are kept only by the listener's view, the RIB and the
//! FIB.

use super::targets::Mirrored;
use crate::l3::Adjacency;
use crate::l3::multipath::LB;
use crate::l3::objects::Target;
use crate::l3::rib::{Rib, RouteChange, Source};
use crate::net::IpPrefix;
use std::collections::BTreeMap;

/// The kinds of mirrored route, as counted.
pub const KINDS: [&str; 6] = ["unicast", "multipath", "device", "blackhole", "unreachable", "prohibit"];

/// What mirroring the kernel's routes needs of the dataplane.
pub trait RouteSink {
    /// Applies a batch of route changes, all or nothing; why not when refused.
    fn apply_routes(&mut self, batch: &[RouteChange]) -> Result<(), String>;
    /// The [`KINDS`] index of the route the RIB has from the kernel for `prefix` in VRF `vrf`
    /// ([`kernel_route_kind`]), if it has one.
    fn kernel_route_kind(&self, vrf: u16, prefix: IpPrefix) -> Option<usize>;
    /// Has the next hops of `targets` resolved before their first packet: asks for the MAC
    /// of each one the neighbor table does not know.
    fn resolve_next_hops(&mut self, targets: &[&Target]);
}

/// Counts of the kernel's routes the FIB holds, by kind, and of those it does not, by why
/// (with the VRFs and prefixes of the latter: few, and each must be counted once).
#[derive(Debug, Default)]
pub struct KernelRoutes {
    unmirrored: BTreeMap<(u16, IpPrefix), &'static str>,
    by_kind: [u64; KINDS.len()],
    /// The most routes taken in one batch.
    largest_batch: usize,
    /// The longest the main thread mirrored routes without answering API calls.
    longest_slice: std::time::Duration,
}

/// The [`KINDS`] index of `target`.
fn kind(target: &Target) -> usize {
    match target {
        // Local never comes from the kernel (its addresses are vecflow's).
        Target::Local | Target::Lookup { .. } => 0,
        Target::Paths { hops, .. } if hops.len() == 1 => 0,
        Target::Paths { .. } => 1,
        Target::Glean { .. } => 2,
        Target::Reject(r) => 3 + *r as usize,
    }
}

/// The [`KINDS`] index of the route `rib` has from the kernel for `prefix` in VRF `vrf`,
/// read from its FIB value (a load-balance object, or an adjacency), if it has one.
pub fn kernel_route_kind(rib: &Rib, vrf: u16, prefix: IpPrefix) -> Option<usize> {
    let value = rib.value_of(vrf, prefix.addr, prefix.len, Source::Kernel)?;
    if value & LB != 0 {
        return Some(1);
    }
    Some(match rib.objects.adjs().get(value as usize) {
        Some(Adjacency::Glean { .. }) => 2,
        Some(&Adjacency::Reject(r)) => 3 + r as usize,
        _ => 0,
    })
}

impl KernelRoutes {
    /// Mirrors `routes` into VRF `vrf`'s tables through `sink`, in one batch; when the batch
    /// is refused, route by route, leaving out (and logging) the ones the FIB refuses. Those
    /// not mirrored are counted by why.
    pub fn mirror(&mut self, sink: &mut impl RouteSink, vrf: u16, routes: Vec<(IpPrefix, Mirrored)>) {
        self.largest_batch = self.largest_batch.max(routes.len());
        let mut batch = Vec::with_capacity(routes.len());
        let mut before = Vec::with_capacity(routes.len());
        for (prefix, mirrored) in routes {
            let target = match mirrored {
                Ok(target) => {
                    self.set_unmirrored(vrf, prefix, None);
                    target
                }
                Err(why) => {
                    tracing::debug!("linux-cp: not mirroring the kernel's route to {prefix}: {why}");
                    self.set_unmirrored(vrf, prefix, Some(why));
                    None
                }
            };
            let old = sink.kernel_route_kind(vrf, prefix);
            if old.is_none() && target.is_none() {
                continue;
            }
            batch.push(RouteChange { vrf, prefix: prefix.addr, len: prefix.len, source: Source::Kernel, target });
            before.push(old);
        }
        if batch.is_empty() {
            return;
        }
        let done: Vec<bool> = match sink.apply_routes(&batch) {
            Ok(()) => vec![true; batch.len()],
            Err(_) => batch
                .iter()
                .map(|c| match sink.apply_routes(std::slice::from_ref(c)) {
                    Ok(()) => true,
                    Err(e) => {
                        tracing::warn!("linux-cp: the kernel's route is not mirrored: {e}");
                        let prefix = IpPrefix { addr: c.prefix, len: c.len };
                        self.set_unmirrored(vrf, prefix, Some("refused by the FIB"));
                        false
                    }
                })
                .collect(),
        };
        let mut targets = Vec::new();
        for ((c, old), done) in batch.iter().zip(before).zip(done) {
            if !done {
                continue;
            }
            if let Some(old) = old {
                self.by_kind[old] -= 1;
            }
            if let Some(t) = &c.target {
                self.by_kind[kind(t)] += 1;
                targets.push(t);
            }
        }
        sink.resolve_next_hops(&targets);
    }

    /// Records that the kernel's route to `prefix` in VRF `vrf` is not mirrored, and why
    /// (`None`: it is, or there is none).
    fn set_unmirrored(&mut self, vrf: u16, prefix: IpPrefix, why: Option<&'static str>) {
        match why {
            Some(why) => self.unmirrored.insert((vrf, prefix), why),
            None => self.unmirrored.remove(&(vrf, prefix)),
        };
    }

    /// Records that the main thread mirrored routes for `slice` without answering API calls.
    pub fn note_slice(&mut self, slice: std::time::Duration) {
        self.longest_slice = self.longest_slice.max(slice);
    }

    /// The most routes taken in one batch, and the longest slice of mirroring.
    pub fn largest(&self) -> (usize, std::time::Duration) {
        (self.largest_batch, self.longest_slice)
    }

    /// Mirrored routes by kind, in [`KINDS`] order.
    pub fn by_kind(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        KINDS.iter().copied().zip(self.by_kind.iter().copied())
    }

    /// Routes not mirrored, counted by why.
    pub fn unmirrored(&self) -> BTreeMap<&'static str, u64> {
        let mut out = BTreeMap::new();
        for why in self.unmirrored.values() {
            *out.entry(*why).or_default() += 1;
        }
        out
    }
}

#[cfg(test)]
mod tests;
