//! VRFs as the data path numbers them: a dense index per VRF (0 is the default table), kept
//! for as long as the VRF exists, so a live change that adds or removes one leaves every
//! other VRF's tables, routes and interfaces where they are.

use crate::interface::Interface;
use crate::l3::RouteMeta;
use crate::l3::config::VrfConfig;
use crate::l3::fib::{Fib, Fib6, Fibs, Leaf, VrfFib4, VrfFibs};
use crate::net::MAX_INTERFACES;
use crate::runtime::buffer::BufferMeta;
use crate::runtime::isa::Isa;
use crate::runtime::vector::VECTOR_SIZE;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

/// The default table's index.
pub const DEFAULT_VRF: u16 = 0;

/// Set in a FIB value that names a lookup in another VRF (route leaking), whose index is in
/// the bits below: adjacency and load-balance indices stay below it.
pub const LOOKUP: u32 = 1 << 20;

/// The FIB value of a lookup in VRF `vrf`.
pub fn lookup_value(vrf: u16) -> u32 {
    LOOKUP | u32::from(vrf)
}

/// The VRF FIB value `value` names a lookup in, if it is one.
#[inline(always)]
pub fn looked_up(value: u32) -> Option<u16> {
    (value & (LOOKUP | crate::l3::multipath::LB) == LOOKUP).then_some(value as u16)
}

/// Each configured VRF's index (1 and up) and table id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VrfIds {
    by_name: BTreeMap<String, (u16, u32)>,
}

impl VrfIds {
    /// The indices of the VRFs `vrfs` (a validated configuration's): a VRF these ids already
    /// have keeps its index, a new one takes the lowest free one.
    pub fn assign(&self, vrfs: &BTreeMap<String, VrfConfig>) -> VrfIds {
        let kept: BTreeMap<String, (u16, u32)> =
            vrfs.iter().filter_map(|(name, v)| Some((name.clone(), (self.by_name.get(name)?.0, v.table)))).collect();
        let mut taken: Vec<u16> = kept.values().map(|&(i, _)| i).collect();
        taken.sort_unstable();
        let mut free = (1..=u16::MAX).filter(|i| taken.binary_search(i).is_err());
        let mut by_name = kept;
        for (name, v) in vrfs {
            if !by_name.contains_key(name) {
                by_name.insert(name.clone(), (free.next().expect("validated: at most MAX_VRFS VRFs"), v.table));
            }
        }
        VrfIds { by_name }
    }

    /// The index of VRF `name` (`None`: the default table's, [`DEFAULT_VRF`]); the default
    /// table's too for a name these ids do not have (a validated configuration names none).
    pub fn index(&self, name: Option<&str>) -> u16 {
        name.and_then(|n| self.by_name.get(n)).map_or(DEFAULT_VRF, |&(i, _)| i)
    }

    /// The name of VRF `index`, `None` for the default table or an index no VRF has.
    pub fn name(&self, index: u16) -> Option<&str> {
        self.by_name.iter().find(|(_, (i, _))| *i == index).map(|(n, _)| n.as_str())
    }

    /// Every VRF, by name: (name, index, table id).
    pub fn iter(&self) -> impl Iterator<Item = (&str, u16, u32)> + '_ {
        self.by_name.iter().map(|(n, &(i, t))| (n.as_str(), i, t))
    }
}

/// The VRFs as workers see them (a part of the snapshot's layer 3 tables): each interface's
/// VRF and each VRF's tables. Empty without VRFs, so the lookup nodes test one length per
/// vector and go the default table's way.
#[derive(Clone, Default)]
pub struct VrfTables {
    /// Per interface index, its VRF's index (empty without VRFs).
    of_interface: Arc<[u16]>,
    /// Each VRF's tables, by index − 1 (`None` for an index no VRF has).
    fibs: Arc<[Option<VrfFibs>]>,
}

impl std::fmt::Debug for VrfTables {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VrfTables").field("vrfs", &self.fibs.iter().flatten().count()).finish()
    }
}

/// The VRFs' tables as the main thread publishes them to a thread that is not a worker (the
/// sFlow agent).
pub type PublishedVrfs = crate::runtime::published::Published<VrfTables>;

const _: () = assert!(MAX_INTERFACES.is_power_of_two(), "an interface index is masked to the table");

impl VrfTables {
    /// The tables of `interfaces` (each with its VRF) and of VRFs `fibs` (by index − 1); empty
    /// when there is no VRF.
    pub fn new(interfaces: &[Interface], fibs: Vec<Option<VrfFibs>>) -> Self {
        if fibs.iter().all(Option::is_none) {
            return VrfTables::default();
        }
        let mut of_interface = vec![DEFAULT_VRF; MAX_INTERFACES];
        for i in interfaces {
            of_interface[usize::from(i.index) % MAX_INTERFACES] = i.vrf;
        }
        VrfTables { of_interface: of_interface.into(), fibs: fibs.into() }
    }

    /// True when there is no VRF: every packet is looked up in the default table.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.of_interface.is_empty()
    }

    /// The VRF of interface `index` (the default table's without VRFs).
    #[inline(always)]
    pub fn of(&self, index: u16) -> u16 {
        self.of_interface.get(usize::from(index) & (MAX_INTERFACES - 1)).copied().unwrap_or(DEFAULT_VRF)
    }

    /// The VRF packet `m` is looked up in: its [`RouteMeta::lookup_vrf`] when it has one, else
    /// its input interface's.
    #[inline(always)]
    pub fn of_packet(&self, m: &BufferMeta) -> u16 {
        match m.lookup_vrf() {
            DEFAULT_VRF => self.of(m.rx_if),
            vrf => vrf,
        }
    }

    /// The longest match of `addr` in the tables of VRF `vrf`: `default`'s for the default
    /// table, none for a VRF without tables. For the main thread and the sFlow agent.
    pub fn longest(&self, default: &Fibs, vrf: u16, addr: IpAddr) -> Option<Leaf> {
        match (vrf, addr) {
            (DEFAULT_VRF, IpAddr::V4(a)) => default.ip4.lookup(u32::from(a)),
            (DEFAULT_VRF, IpAddr::V6(a)) => default.ip6.lookup(u128::from(a)),
            (v, IpAddr::V4(a)) => self.fibs(v)?.ip4.lookup(u32::from(a)),
            (v, IpAddr::V6(a)) => self.fibs(v)?.ip6.lookup(u128::from(a)),
        }
    }

    /// The adjacency and prefix length of a leaked packet's second lookup, of `addr` in VRF
    /// `vrf` (which its first lookup named): no route (adjacency 0) when that finds nothing or
    /// names a lookup again (a packet takes one lookup after its first at most; `check`
    /// refuses routes that would lead to a second).
    pub fn second_lookup(&self, default: &Fibs, vrf: u16, addr: IpAddr) -> (u32, u8) {
        match self.longest(default, vrf, addr) {
            Some(l) if looked_up(l.adj).is_none() => (l.adj, l.prefix_len),
            _ => (crate::l3::ADJ_DROP, 0),
        }
    }

    /// The tables of VRF `vrf` (1 and up), if it has them.
    #[inline(always)]
    fn fibs(&self, vrf: u16) -> Option<&VrfFibs> {
        self.fibs.get(usize::from(vrf).wrapping_sub(1))?.as_ref()
    }

    /// The final entry (as [`Fib::lookup_batch`] gives it) of each IPv4 address `dst[k]` in the
    /// table of VRF `vrf[k]`: the default table's (`default`) for 0, none (0) for a VRF without
    /// tables. A vector of one VRF is one batch in its table; otherwise the default table's
    /// addresses are looked up as one batch, the VRFs' as another, each address in its own
    /// table.
    #[inline(never)]
    pub fn lookup4(&self, default: &Fib<Ipv4Addr>, vrf: &[u16], dst: &[u32], out: &mut [u32]) {
        // The common case: a vector of one VRF (one sub-interface's, one port's).
        if let Some(&one) = vrf.first()
            && vrf.iter().all(|&v| v == one)
        {
            match (one, self.fibs(one)) {
                (DEFAULT_VRF, _) => {
                    dst.iter().for_each(|&d| default.prefetch(d));
                    default.lookup_batch(dst, out);
                }
                (_, Some(f)) => {
                    dst.iter().for_each(|&d| f.ip4.prefetch(d));
                    f.ip4.lookup_batch(dst, out);
                }
                (_, None) => out.fill(0),
            }
            return;
        }
        out.fill(0);
        // Of the addresses of one table kind: each one's place in `dst`, and the address.
        let (mut at, mut addrs, mut found) = ([0u8; VECTOR_SIZE], [0u32; VECTOR_SIZE], [0u32; VECTOR_SIZE]);
        let mut n = 0;
        for (k, (&v, &d)) in vrf.iter().zip(dst).enumerate() {
            if v == DEFAULT_VRF {
                (at[n], addrs[n]) = (k as u8, d);
                n += 1;
            }
        }
        if n > 0 {
            addrs[..n].iter().for_each(|&d| default.prefetch(d));
            default.lookup_batch(&addrs[..n], &mut found[..n]);
            at[..n].iter().zip(&found).for_each(|(&k, &e)| out[usize::from(k)] = e);
        }
        let Some(any) = self.fibs.iter().flatten().next() else { return };
        let mut tables = [&*any.ip4; VECTOR_SIZE];
        n = 0;
        for (k, (&v, &d)) in vrf.iter().zip(dst).enumerate() {
            if let Some(f) = self.fibs(v).filter(|_| v != DEFAULT_VRF) {
                (at[n], addrs[n], tables[n]) = (k as u8, d, &*f.ip4);
                n += 1;
            }
        }
        if n > 0 {
            VrfFib4::lookup_batch_in(&tables[..n], &addrs[..n], &mut found[..n]);
            at[..n].iter().zip(&found).for_each(|(&k, &e)| out[usize::from(k)] = e);
        }
    }

    /// As [`VrfTables::lookup4`] for IPv6 destinations: the addresses of each table are looked
    /// up as one batch ([`crate::l3::fib::Fib6::lookup_batch`]), the default table's first.
    #[inline(never)]
    pub fn lookup6(&self, isa: Isa, default: &Fib6, vrf: &[u16], dst: &[[u8; 16]], out: &mut [u32]) {
        out.fill(0);
        let (mut at, mut addrs, mut found) = ([0u8; VECTOR_SIZE], [[0u8; 16]; VECTOR_SIZE], [0u32; VECTOR_SIZE]);
        // Each VRF of the vector once, in the order of its first packet.
        let mut done = [false; VECTOR_SIZE];
        for first in 0..vrf.len() {
            if done[first] {
                continue;
            }
            let v = vrf[first];
            let mut n = 0;
            for k in first..vrf.len() {
                if vrf[k] == v {
                    (at[n], addrs[n], done[k]) = (k as u8, dst[k], true);
                    n += 1;
                }
            }
            match (v, self.fibs(v)) {
                (DEFAULT_VRF, _) => default.lookup_batch(isa, &addrs[..n], &mut found[..n]),
                (_, Some(f)) => f.ip6.lookup_batch(isa, &addrs[..n], &mut found[..n]),
                (_, None) => found[..n].fill(0),
            }
            at[..n].iter().zip(&found).for_each(|(&k, &e)| out[usize::from(k)] = e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vrfs(names: &[(&str, u32)]) -> BTreeMap<String, VrfConfig> {
        names.iter().map(|&(n, table)| (n.to_string(), VrfConfig { table })).collect()
    }

    #[test]
    fn a_vrf_keeps_its_index_while_others_come_and_go() {
        let ids = VrfIds::default().assign(&vrfs(&[("blue", 10), ("red", 20)]));
        assert_eq!((ids.index(Some("blue")), ids.index(Some("red")), ids.index(None)), (1, 2, 0));
        let ids = ids.assign(&vrfs(&[("aaa", 5), ("red", 21)]));
        assert_eq!(ids.index(Some("red")), 2, "red keeps its index (and takes its new table id)");
        assert_eq!(ids.index(Some("aaa")), 1, "the new VRF takes the lowest free index, blue's");
        assert_eq!(ids.iter().collect::<Vec<_>>(), [("aaa", 1, 5), ("red", 2, 21)]);
        assert_eq!((ids.name(2), ids.name(0)), (Some("red"), None));
        assert_eq!(ids.assign(&BTreeMap::new()), VrfIds::default());
    }
}
