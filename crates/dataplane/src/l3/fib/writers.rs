//! The writers of every table: the default table's two and each VRF's two, taking changes of
//! any VRF and family in one batch.

use super::{Fib, Fib6, Fib6Writer, FibError, FibWriter, Fibs, VRF_FIRST4, VRF_FIRST6, VrfFibs};
use crate::runtime::qsbr::Qsbr;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

/// A FIB change: in VRF `vrf` (0: the default table), install `prefix/len` toward value
/// `Some(adj)`, or remove it (`None`).
pub type FibInsert = (u16, IpAddr, u8, Option<u32>);

/// A VRF's two writers.
struct VrfWriters {
    ip4: FibWriter<Ipv4Addr, VRF_FIRST4>,
    ip6: Fib6Writer<VRF_FIRST6>,
}

/// The writers of every table, taking changes of any VRF and family.
pub struct FibWriters {
    /// The default table's IPv4 writer.
    pub ip4: FibWriter<Ipv4Addr>,
    /// The default table's IPv6 writer.
    pub ip6: Fib6Writer,
    /// Each VRF's writers, by index − 1 (`None`: no VRF has that index now).
    vrfs: Vec<Option<VrfWriters>>,
    /// tbl8 groups of each VRF's IPv4 table.
    vrf_groups: u32,
    qsbr: Arc<Qsbr>,
}

impl FibWriters {
    /// Writers of `fibs` (the default table's), whose readers announce quiescent states
    /// through `qsbr`; each VRF's IPv4 table will have `vrf_groups` tbl8 groups.
    pub fn new(fibs: &Fibs, vrf_groups: u32, qsbr: Arc<Qsbr>) -> Self {
        FibWriters {
            ip4: FibWriter::new(fibs.ip4.clone(), qsbr.clone()),
            ip6: Fib6Writer::new(fibs.ip6.clone(), qsbr.clone()),
            vrfs: Vec::new(),
            vrf_groups,
            qsbr,
        }
    }

    /// The default table's tables, as workers hold them.
    pub fn fibs(&self) -> Fibs {
        Fibs { ip4: self.ip4.fib().clone(), ip6: self.ip6.fib().clone() }
    }

    /// Makes the VRFs `indices` (1 and up, each once or more) the ones with tables: a new one
    /// gets two empty tables, one not listed loses its own (its routes must be gone by then: the RIB removed
    /// them). Nothing changes when a table cannot be made.
    pub fn set_vrfs(&mut self, indices: &[u16]) -> std::io::Result<()> {
        let len = indices.iter().map(|&i| usize::from(i)).max().unwrap_or(0);
        let mut vrfs: Vec<Option<VrfWriters>> = (0..len).map(|_| None).collect();
        let mut indices = indices.to_vec();
        indices.sort_unstable();
        indices.dedup();
        for i in indices {
            let at = usize::from(i) - 1;
            vrfs[at] = match self.vrfs.get_mut(at).and_then(Option::take) {
                Some(kept) => Some(kept),
                None => Some(VrfWriters {
                    ip4: FibWriter::new(Arc::new(Fib::new(self.vrf_groups)?), self.qsbr.clone()),
                    ip6: Fib6Writer::new(Arc::new(Fib6::new()?), self.qsbr.clone()),
                }),
            };
        }
        self.vrfs = vrfs;
        Ok(())
    }

    /// Each VRF's tables, as workers hold them: by index − 1, `None` for an index no VRF has.
    pub fn vrf_fibs(&self) -> Vec<Option<VrfFibs>> {
        let fibs = |w: &VrfWriters| VrfFibs { ip4: w.ip4.fib().clone(), ip6: w.ip6.fib().clone() };
        self.vrfs.iter().map(|w| w.as_ref().map(fibs)).collect()
    }

    /// Applies changes of any VRF and family: the IPv4 ones in order (see
    /// [`FibWriter::apply`]), stopping at the first refused one, then each table's IPv6 ones
    /// (those before a refused IPv4 change) as one batch of [`Fib6Writer::apply`], all or
    /// none; then reclaims what they retired.
    pub fn apply(&mut self, changes: &[FibInsert]) -> Result<(), FibError> {
        let mut ip6: BTreeMap<u16, Vec<(Ipv6Addr, u8, Option<u32>)>> = BTreeMap::new();
        let mut touched = Vec::new();
        let r = changes.iter().try_for_each(|&(vrf, addr, len, adj)| match addr {
            IpAddr::V4(a) if vrf == 0 => self.ip4.change(a, len, adj),
            IpAddr::V4(a) => {
                touched.push(vrf);
                self.vrf(vrf)?.ip4.change(a, len, adj)
            }
            IpAddr::V6(a) => {
                ip6.entry(vrf).or_default().push((a, len, adj));
                Ok(())
            }
        });
        let mut r6 = Ok(());
        for (vrf, batch) in ip6 {
            let applied = match vrf {
                0 => self.ip6.apply(&batch),
                _ => self.vrf(vrf).and_then(|w| w.ip6.apply(&batch)),
            };
            r6 = r6.and(applied);
        }
        self.ip4.reclaim();
        touched.sort_unstable();
        touched.dedup();
        for vrf in touched {
            if let Ok(w) = self.vrf(vrf) {
                w.ip4.reclaim();
            }
        }
        r.and(r6)
    }

    /// The writers of VRF `vrf` (1 and up).
    fn vrf(&mut self, vrf: u16) -> Result<&mut VrfWriters, FibError> {
        let at = usize::from(vrf).wrapping_sub(1);
        self.vrfs.get_mut(at).and_then(Option::as_mut).ok_or(FibError::NoSuchVrf(vrf))
    }

    /// The routes and the bytes in use of every VRF's tables: IPv4 ([`FibWriter::used_bytes`]),
    /// then IPv6 ([`Fib6Writer::bytes`]).
    pub fn vrf_usage(&self) -> [(usize, usize); 2] {
        let vrfs = self.vrfs.iter().flatten();
        let ip4 = vrfs.clone().fold((0, 0), |(n, b), v| (n + v.ip4.len(), b + v.ip4.used_bytes()));
        let ip6 = vrfs.fold((0, 0), |(n, b), v| (n + v.ip6.len(), b + v.ip6.bytes()));
        [ip4, ip6]
    }

    /// The IPv4 writer of VRF `vrf` (1 and up), if it has tables.
    pub fn vrf_ip4(&self, vrf: u16) -> Option<&FibWriter<Ipv4Addr, VRF_FIRST4>> {
        Some(&self.vrfs.get(usize::from(vrf).wrapping_sub(1))?.as_ref()?.ip4)
    }

    /// The IPv6 writer of VRF `vrf` (1 and up), if it has tables.
    pub fn vrf_ip6(&self, vrf: u16) -> Option<&Fib6Writer<VRF_FIRST6>> {
        Some(&self.vrfs.get(usize::from(vrf).wrapping_sub(1))?.as_ref()?.ip6)
    }

    /// Waits for every reader to pass a quiescent point (see [`FibWriter::synchronize`]).
    pub fn synchronize(&self) {
        self.ip4.synchronize();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writers() -> FibWriters {
        let fibs = Fibs { ip4: Arc::new(Fib::new(16).unwrap()), ip6: Arc::new(Fib6::new().unwrap()) };
        FibWriters::new(&fibs, 16, Arc::new(Qsbr::new(1)))
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    // Safe code over the tables whose unsafe parts the other FIB tests take through Miri;
    // under Miri its five tables (a 64 MiB tbl24, three 256 MiB IPv6 arenas) would be slow.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn each_vrf_has_its_own_tables_which_live_as_long_as_it_is_listed() {
        let mut w = writers();
        w.set_vrfs(&[1, 2]).unwrap();
        let same =
            [(0, ip("10.0.0.0"), 24, Some(7)), (1, ip("10.0.0.0"), 24, Some(8)), (2, ip("10.0.0.0"), 24, Some(9))];
        w.apply(&same).unwrap();
        w.apply(&[(2, ip("2001:db8::"), 32, Some(10))]).unwrap();
        let leaf4 = |w: &FibWriters, vrf: u16| match vrf {
            0 => w.ip4.fib().lookup(0x0a00_0001).map(|l| l.adj),
            _ => w.vrf_ip4(vrf).and_then(|t| t.fib().lookup(0x0a00_0001)).map(|l| l.adj),
        };
        assert_eq!([leaf4(&w, 0), leaf4(&w, 1), leaf4(&w, 2)], [Some(7), Some(8), Some(9)]);
        assert_eq!(w.vrf_ip6(2).map(|t| t.len()), Some(1));
        assert_eq!(w.vrf_ip6(1).map(|t| t.len()), Some(0));
        // Listed twice (a live change lists the VRFs before and after it): kept, routes and all.
        w.set_vrfs(&[2, 1, 2]).unwrap();
        assert_eq!([leaf4(&w, 1), leaf4(&w, 2)], [Some(8), Some(9)]);
        // Not listed: its tables go, and a change for it is refused.
        w.set_vrfs(&[2]).unwrap();
        assert!(w.vrf_ip4(1).is_none() && w.vrf_fibs().len() == 2 && w.vrf_fibs()[0].is_none());
        assert_eq!(w.apply(&[(1, ip("10.1.0.0"), 16, Some(3))]), Err(FibError::NoSuchVrf(1)));
        assert_eq!(w.apply(&[(3, ip("2001:db8::"), 48, Some(3))]), Err(FibError::NoSuchVrf(3)));
        assert_eq!(leaf4(&w, 2), Some(9));
    }
}
