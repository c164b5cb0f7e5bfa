//! The kernel's routes as the FIB holds them (source `kernel`), and the ones it does not,
//! with why: what `show lcp` and Prometheus count by kind.

use crate::config::IpPrefix;
use crate::l3::Routes;
use crate::l3::objects::Target;
use std::collections::BTreeMap;

/// The kinds of mirrored route, as counted.
pub const KINDS: [&str; 6] = ["unicast", "multipath", "device", "blackhole", "unreachable", "prohibit"];

/// The mirrored routes by prefix, the unmirrored ones with why, and counts of both.
#[derive(Debug, Default)]
pub struct KernelRoutes {
    mirrored: Routes,
    unmirrored: BTreeMap<(std::net::IpAddr, u8), &'static str>,
    by_kind: [u64; KINDS.len()],
}

/// The [`KINDS`] index of `target`.
fn kind(target: &Target) -> usize {
    match target {
        // Local never comes from the kernel (its addresses are vecflow's).
        Target::Local => 0,
        Target::Paths { hops, .. } if hops.len() == 1 => 0,
        Target::Paths { .. } => 1,
        Target::Glean { .. } => 2,
        Target::Reject(r) => 3 + *r as usize,
    }
}

impl KernelRoutes {
    /// What the FIB holds for `prefix` from the kernel.
    pub fn get(&self, prefix: IpPrefix) -> Option<&Target> {
        self.mirrored.get(&(prefix.addr, prefix.len))
    }

    /// Records that the FIB now holds `target` (or nothing) for `prefix` from the kernel.
    pub fn set(&mut self, prefix: IpPrefix, target: Option<Target>) {
        let key = (prefix.addr, prefix.len);
        if let Some(t) = &target {
            self.by_kind[kind(t)] += 1;
        }
        let old = match target {
            Some(t) => self.mirrored.insert(key, t),
            None => self.mirrored.remove(&key),
        };
        if let Some(t) = old {
            self.by_kind[kind(&t)] -= 1;
        }
    }

    /// Records that the kernel's route to `prefix` is not mirrored, and why (`None`: it is,
    /// or there is none).
    pub fn set_unmirrored(&mut self, prefix: IpPrefix, why: Option<&'static str>) {
        let key = (prefix.addr, prefix.len);
        match why {
            Some(why) => self.unmirrored.insert(key, why),
            None => self.unmirrored.remove(&key),
        };
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
mod tests {
    use super::*;
    use crate::l3::objects::NextHop;

    #[test]
    fn counts_follow_replacements_and_removals() {
        let p: IpPrefix = "10.1.0.0/16".parse().unwrap();
        let hop = |via: &str| NextHop { via: via.parse().unwrap(), tx_if: 1, weight: 1 };
        let paths = |hops| Target::Paths { hops, push: Default::default() };
        let mut k = KernelRoutes::default();
        k.set(p, Some(paths(vec![hop("10.0.0.1")])));
        k.set(p, Some(paths(vec![hop("10.0.0.1"), hop("10.0.0.2")])));
        let counts = |k: &KernelRoutes| k.by_kind().filter(|(_, n)| *n > 0).collect::<Vec<_>>();
        assert_eq!(counts(&k), [("multipath", 1)]);
        k.set(p, None);
        assert_eq!(counts(&k), []);
        k.set_unmirrored(p, Some("through a device vecflow does not own"));
        k.set_unmirrored("10.2.0.0/16".parse().unwrap(), Some("through a device vecflow does not own"));
        assert_eq!(k.unmirrored().into_iter().collect::<Vec<_>>(), [("through a device vecflow does not own", 2)]);
        k.set_unmirrored(p, None);
        assert_eq!(k.unmirrored().values().sum::<u64>(), 1);
    }
}
