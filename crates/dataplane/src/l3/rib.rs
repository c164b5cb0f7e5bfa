//! The routes every source gives, and which of them the FIB holds.
//!
//! A prefix may have a route from each [`Source`]; the FIB holds the one of the most
//! preferred source (connected beats config beats kernel beats neighbor). Changes arrive in
//! batches ([`Rib::apply`]), each change naming its source: the configuration, the kernel (the
//! Linux control plane) or the neighbor table (a host route for every resolved neighbor). A
//! batch turns into the FIB changes it implies, and nothing else is rebuilt.

use super::fib::FibInsert;
use super::objects::{Liveness, Objects, Target};
use crate::l3::config::MAX_PATHS;
use crate::net::PrefixMap;
use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Where a route came from; at one prefix the FIB holds the first of these that has one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    /// An interface address: its subnet (glean) and the address itself (local).
    Connected,
    /// The configuration (`routes`, `ip route add`).
    Config,
    /// The kernel's table (the Linux control plane).
    Kernel,
    /// A host route to a resolved neighbor on a connected subnet.
    Neighbor,
}

impl Source {
    /// Every source, most preferred first.
    pub const ALL: [Source; 4] = [Source::Connected, Source::Config, Source::Kernel, Source::Neighbor];

    /// Its name, as `show ip fib` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Source::Connected => "connected",
            Source::Config => "config",
            Source::Kernel => "kernel",
            Source::Neighbor => "neighbor",
        }
    }
}

/// One change of a batch: the route of `source` to `prefix/len` in VRF `vrf` becomes
/// `target`, or goes (`None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteChange {
    /// The VRF's index (0: the default table, [`crate::l3::vrf::DEFAULT_VRF`]).
    pub vrf: u16,
    /// The prefix (host bits are ignored).
    pub prefix: IpAddr,
    /// Its length.
    pub len: u8,
    /// Whose route it is.
    pub source: Source,
    /// Where it goes; `None` removes it.
    pub target: Option<Target>,
}

/// Why a batch was refused; nothing of it was applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RouteError {
    /// A change that cannot be a route.
    #[error("route {prefix}/{len} ({from}): {why}")]
    Invalid {
        /// The prefix.
        prefix: IpAddr,
        /// Its length.
        len: u8,
        /// Its source's name.
        from: &'static str,
        /// What is wrong.
        why: String,
    },
    /// An adjacency or load-balance object a route needs cannot be made.
    #[error("{0}")]
    Full(#[from] crate::l3::objects::ObjectsFull),
}

/// No route from this source.
const NONE: u32 = u32::MAX;

/// The FIB values a prefix has from each source ([`NONE`] for none), in [`Source::ALL`] order.
type Candidates = [u32; 4];

/// The best of `c`: its source and value.
fn best(c: &Candidates) -> Option<(Source, u32)> {
    Source::ALL.iter().zip(c).find(|(_, v)| **v != NONE).map(|(s, v)| (*s, *v))
}

/// The masked prefix of `addr/len`.
fn network(addr: IpAddr, len: u8) -> IpAddr {
    crate::net::IpPrefix { addr, len }.masked()
}

/// The candidates of every prefix, one [`PrefixMap`] per family.
#[derive(Debug, Clone, Default)]
struct Prefixes {
    v4: PrefixMap<Ipv4Addr, Candidates>,
    v6: PrefixMap<Ipv6Addr, Candidates>,
}

impl Prefixes {
    fn get(&self, (addr, len): (IpAddr, u8)) -> Option<&Candidates> {
        match addr {
            IpAddr::V4(a) => self.v4.get(a, len),
            IpAddr::V6(a) => self.v6.get(a, len),
        }
    }

    /// The candidates of `key`, none yet when it has no entry.
    fn slot(&mut self, (addr, len): (IpAddr, u8)) -> &mut Candidates {
        match addr {
            IpAddr::V4(a) => self.v4.get_or_insert(a, len, [NONE; 4]),
            IpAddr::V6(a) => self.v6.get_or_insert(a, len, [NONE; 4]),
        }
    }

    fn remove(&mut self, (addr, len): (IpAddr, u8)) {
        match addr {
            IpAddr::V4(a) => _ = self.v4.remove(a, len),
            IpAddr::V6(a) => _ = self.v6.remove(a, len),
        }
    }

    /// Every prefix, IPv4 first.
    fn iter(&self) -> impl Iterator<Item = ((IpAddr, u8), &Candidates)> {
        let v4 = self.v4.iter().map(|(a, l, c)| ((IpAddr::V4(a), l), c));
        v4.chain(self.v6.iter().map(|(a, l, c)| ((IpAddr::V6(a), l), c)))
    }

    fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    fn bytes(&self) -> usize {
        self.v4.bytes() + self.v6.bytes()
    }
}

/// A prefix of a VRF: (VRF index, network, length).
type Key = (u16, IpAddr, u8);

/// The prefixes of VRF `vrf` among `vrfs`, made when it has none yet.
fn table(vrfs: &mut Vec<Prefixes>, vrf: u16) -> &mut Prefixes {
    let at = usize::from(vrf);
    if vrfs.len() <= at {
        vrfs.resize_with(at + 1, Prefixes::default);
    }
    &mut vrfs[at]
}

/// What a batch changed, to undo it if the FIB refuses it.
#[derive(Debug, Default)]
pub struct Applied {
    /// The FIB changes it implies, in order.
    pub fib: Vec<FibInsert>,
    /// Per change: the key, the source's index, the value before and after.
    undo: Vec<(Key, usize, u32, u32)>,
}

/// The routes of every source, the objects they point at, and which route the FIB holds, per
/// VRF.
#[derive(Debug, Clone, Default)]
pub struct Rib {
    /// Each VRF's prefixes, by index (those of a VRF with no route yet may be missing).
    vrfs: Vec<Prefixes>,
    /// The adjacencies and load-balance objects routes point at.
    pub objects: Objects,
}

impl Rib {
    /// Checks every change of `batch`, then applies them in order: returns the FIB changes
    /// they imply, or an error and none applied when an object a route needs cannot be made. The references of replaced routes are kept until [`Rib::commit`] (or put
    /// back by [`Rib::rollback`]).
    pub fn apply(&mut self, batch: &[RouteChange], live: Liveness) -> Result<Applied, RouteError> {
        batch.iter().try_for_each(check)?;
        let mut out = Applied { fib: Vec::with_capacity(batch.len()), undo: Vec::with_capacity(batch.len()) };
        for c in batch {
            let key = (c.vrf, network(c.prefix, c.len), c.len);
            let s = c.source as usize;
            let slot = table(&mut self.vrfs, c.vrf).slot((key.1, key.2));
            let before = best(slot);
            let old = slot[s];
            let new = match c.target.as_ref().map(|t| self.objects.acquire(t, (old != NONE).then_some(old), live)) {
                Some(Ok(value)) => value,
                Some(Err(full)) => {
                    // Nothing of the batch reached the FIB: the routes only are put back (and
                    // this prefix's slot, made for it, goes when it holds no other route).
                    if best(slot).is_none() {
                        table(&mut self.vrfs, c.vrf).remove((key.1, key.2));
                    }
                    self.rollback(out);
                    return Err(full.into());
                }
                None => NONE,
            };
            slot[s] = new;
            let after = best(slot);
            if after.is_none() {
                table(&mut self.vrfs, c.vrf).remove((key.1, key.2));
            }
            if before.map(|b| b.1) != after.map(|a| a.1) {
                out.fib.push((key.0, key.1, key.2, after.map(|a| a.1)));
            }
            out.undo.push((key, s, old, new));
        }
        Ok(out)
    }

    /// Makes a batch final: drops the references of the routes it replaced (their objects die
    /// if nothing else holds them).
    pub fn commit(&mut self, applied: Applied) {
        for (_, _, old, _) in applied.undo {
            if old != NONE {
                self.objects.release(old);
            }
        }
    }

    /// Undoes a batch the FIB refused: every route is as before, and the FIB changes that put
    /// its touched prefixes back are returned.
    pub fn rollback(&mut self, applied: Applied) -> Vec<FibInsert> {
        let mut touched = Vec::new();
        for (key, s, old, new) in applied.undo.into_iter().rev() {
            let slot = table(&mut self.vrfs, key.0).slot((key.1, key.2));
            slot[s] = old;
            let gone = best(slot).is_none();
            if new != NONE {
                self.objects.release(new);
            }
            if gone {
                table(&mut self.vrfs, key.0).remove((key.1, key.2));
            }
            touched.push(key);
        }
        touched.sort();
        touched.dedup();
        touched.into_iter().map(|(v, p, l)| (v, p, l, self.installed(v, p, l).map(|b| b.1))).collect()
    }

    /// The candidates of `prefix/len` in VRF `vrf`, if it has a route.
    fn candidates(&self, vrf: u16, prefix: IpAddr, len: u8) -> Option<&Candidates> {
        self.vrfs.get(usize::from(vrf))?.get((network(prefix, len), len))
    }

    /// The route the FIB of VRF `vrf` holds for `prefix/len`: its source and FIB value.
    pub fn installed(&self, vrf: u16, prefix: IpAddr, len: u8) -> Option<(Source, u32)> {
        self.candidates(vrf, prefix, len).and_then(best)
    }

    /// The FIB value of the route `source` has for `prefix/len` in VRF `vrf`, if it has one.
    pub fn value_of(&self, vrf: u16, prefix: IpAddr, len: u8, source: Source) -> Option<u32> {
        Some(self.candidates(vrf, prefix, len)?[source as usize]).filter(|&v| v != NONE)
    }

    /// The routes `source` has in every VRF, as (VRF index, prefix, length, FIB value).
    pub fn routes_of(&self, source: Source) -> impl Iterator<Item = (u16, IpAddr, u8, u32)> + '_ {
        self.vrfs.iter().enumerate().flat_map(move |(vrf, table)| {
            table
                .iter()
                .filter(move |(_, c)| c[source as usize] != NONE)
                .map(move |((p, l), c)| (vrf as u16, p, l, c[source as usize]))
        })
    }

    /// Number of prefixes with a route, in every VRF.
    pub fn len(&self) -> usize {
        self.vrfs.iter().map(Prefixes::len).sum()
    }

    /// Number of prefixes with a route in VRF `vrf`.
    pub fn len_of(&self, vrf: u16) -> usize {
        self.vrfs.get(usize::from(vrf)).map_or(0, Prefixes::len)
    }

    /// The bytes its prefixes take (the objects not included: [`Objects::bytes`]).
    pub fn bytes(&self) -> usize {
        self.vrfs.iter().map(Prefixes::bytes).sum()
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Checks one change: a prefix length within its family, and next hops of its family, 1 to
/// [`MAX_PATHS`] of them, weights 1–255.
fn check(c: &RouteChange) -> Result<(), RouteError> {
    let invalid = |why: String| RouteError::Invalid { prefix: c.prefix, len: c.len, from: c.source.name(), why };
    let bits = if c.prefix.is_ipv4() { 32 } else { 128 };
    if c.len > bits {
        return Err(invalid(format!("length {} is not 0 to {bits}", c.len)));
    }
    if let Some(Target::Paths { hops, .. }) = &c.target {
        if !(1..=MAX_PATHS).contains(&hops.len()) {
            return Err(invalid(format!("{} paths, not 1 to {MAX_PATHS}", hops.len())));
        }
        if let Some(h) = hops.iter().find(|h| h.via.is_ipv4() != c.prefix.is_ipv4()) {
            return Err(invalid(format!("next hop {} is not of the prefix's family", h.via)));
        }
        if hops.iter().any(|h| h.weight == 0) {
            return Err(invalid("a weight of 0 (weights are 1 to 255)".into()));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::l3::LabelStack;
    use crate::l3::objects::{NextHop, Objects};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn to(via: &str) -> Option<Target> {
        Some(Target::Paths { hops: vec![NextHop { via: ip(via), tx_if: 2, weight: 1 }], push: LabelStack::EMPTY })
    }

    fn change(p: &str, len: u8, source: Source, target: Option<Target>) -> RouteChange {
        RouteChange { vrf: 0, prefix: ip(p), len, source, target }
    }

    #[test]
    fn the_preferred_source_is_installed_and_the_next_takes_over() {
        let mut rib = Rib::default();
        let up: Liveness = &|_, _| true;
        let a = rib.apply(&[change("10.1.0.0", 16, Source::Kernel, to("10.0.0.1"))], up).unwrap();
        assert_eq!(a.fib.len(), 1);
        rib.commit(a);
        let b = rib.apply(&[change("10.1.0.0", 16, Source::Config, to("10.0.0.2"))], up).unwrap();
        let config = b.fib[0].3.unwrap();
        rib.commit(b);
        assert_eq!(rib.installed(0, ip("10.1.0.0"), 16), Some((Source::Config, config)));
        let c = rib.apply(&[change("10.1.0.0", 16, Source::Kernel, to("10.0.0.3"))], up).unwrap();
        assert!(c.fib.is_empty(), "a kernel change under a config route changes nothing in the FIB");
        rib.commit(c);
        let d = rib.apply(&[change("10.1.0.0", 16, Source::Config, None)], up).unwrap();
        assert_eq!(d.fib.len(), 1, "the kernel's route comes back");
        rib.commit(d);
        assert_eq!(rib.installed(0, ip("10.1.0.0"), 16).unwrap().0, Source::Kernel);
        let e = rib.apply(&[change("10.1.0.0", 16, Source::Kernel, None)], up).unwrap();
        assert_eq!(e.fib, vec![(0, ip("10.1.0.0"), 16, None)]);
        rib.commit(e);
        rib.objects.settle();
        assert!(rib.is_empty());
        assert_eq!(rib.objects.in_use(), (2, 0), "nothing leaked");
    }

    #[test]
    fn one_prefix_in_two_vrfs_is_two_routes() {
        let mut rib = Rib::default();
        let up: Liveness = &|_, _| true;
        let red = RouteChange { vrf: 1, ..change("10.1.0.0", 16, Source::Config, to("10.0.0.1")) };
        let blue = RouteChange { vrf: 2, ..change("10.1.0.0", 16, Source::Config, to("10.0.0.2")) };
        let a = rib.apply(&[red.clone(), blue], up).unwrap();
        assert_eq!(a.fib.iter().map(|c| (c.0, c.2)).collect::<Vec<_>>(), [(1, 16), (2, 16)]);
        rib.commit(a);
        assert_eq!((rib.len(), rib.len_of(1), rib.len_of(2), rib.len_of(0)), (2, 1, 1, 0));
        assert!(rib.installed(0, ip("10.1.0.0"), 16).is_none(), "not in the default table");
        assert_ne!(rib.installed(1, ip("10.1.0.0"), 16), rib.installed(2, ip("10.1.0.0"), 16));
        let gone = rib.apply(&[RouteChange { target: None, ..red }], up).unwrap();
        assert_eq!(gone.fib, vec![(1, ip("10.1.0.0"), 16, None)]);
        rib.commit(gone);
        assert_eq!(rib.routes_of(Source::Config).map(|r| r.0).collect::<Vec<_>>(), [2]);
    }

    #[test]
    fn a_batch_whose_next_hop_has_no_object_left_applies_nothing() {
        // Room for one next hop beside drop, local and the three rejects.
        let mut rib = Rib { objects: Objects::with_limit(6), ..Rib::default() };
        let up: Liveness = &|_, _| true;
        let batch = [
            change("10.1.0.0", 16, Source::Config, to("10.0.0.1")),
            change("10.2.0.0", 16, Source::Config, to("10.0.0.2")),
        ];
        let refused = rib.apply(&batch, up).unwrap_err();
        assert_eq!(refused.to_string(), "all 1048576 adjacencies a FIB value can name are in use");
        rib.objects.settle();
        assert!(rib.is_empty(), "the first route is put back too");
        assert_eq!(rib.objects.in_use(), (2, 0), "its next hop is given back");
        // One of them fits.
        let a = rib.apply(&batch[..1], up).unwrap();
        rib.commit(a);
        assert_eq!(rib.len(), 1);
    }

    #[test]
    fn a_refused_batch_is_checked_first_and_a_rolled_back_one_leaves_nothing() {
        let mut rib = Rib::default();
        let up: Liveness = &|_, _| true;
        let bad =
            [change("10.1.0.0", 16, Source::Config, to("10.0.0.1")), change("10.2.0.0", 33, Source::Config, None)];
        assert!(matches!(rib.apply(&bad, up), Err(RouteError::Invalid { len: 33, .. })));
        assert!(rib.is_empty());
        let v6 = [change("2001:db8::", 32, Source::Config, to("10.0.0.1"))];
        assert!(rib.apply(&v6, up).is_err(), "an IPv4 next hop for an IPv6 prefix");
        let a = rib.apply(&[change("10.1.0.0", 16, Source::Config, to("10.0.0.1"))], up).unwrap();
        rib.commit(a);
        let b = rib.apply(&[change("10.1.0.0", 16, Source::Config, to("10.0.0.9"))], up).unwrap();
        let back = rib.rollback(b);
        let installed = rib.installed(0, ip("10.1.0.0"), 16).unwrap().1;
        assert_eq!(back, vec![(0, ip("10.1.0.0"), 16, Some(installed))]);
        rib.objects.settle();
        assert_eq!(rib.objects.in_use(), (3, 0), "the refused next hop's adjacency is gone");
    }
}
