//! Layer 3 state: adjacencies (what to do with a packet once its destination matched a
//! prefix), label stacks and the label table, the static neighbor table, and the routes the
//! configuration's interfaces and `routes` give. Beside it: [`fib`] (the IPv4 and IPv6
//! longest-prefix-match tables and their writer), [`rib`] (every source's routes, and which
//! the FIB holds), [`objects`] (the adjacencies and load-balance objects routes share),
//! [`multipath`] (load-balance objects and the flow hash), [`shared`] (what the IPv4, IPv6 and
//! MPLS nodes share), [`vrf`] (the VRFs' indices) and [`config`] (the `fib`, `vrfs` and
//! `routes` sections).

pub mod config;
pub mod fib;
mod hooks;
mod meta;
pub mod multipath;
pub mod objects;
pub mod rib;
pub mod shared;
pub mod vrf;
mod worker;

use crate::interface::Interface;
use crate::l3::config::Route;
pub use crate::l3::fib::FibInsert;
use crate::l3::multipath::LoadBalance;
use crate::l3::objects::{NextHop, Objects, Target};
use crate::l3::rib::{RouteChange, Source};
use crate::net::Payload;
pub use hooks::HostCopy;
pub use meta::RouteMeta;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use wire::MacAddr;
pub use worker::{L3Tables, L3Worker, ipv4, ipv6};

/// Up to 8 MPLS labels (20-bit values), outermost first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub struct LabelStack {
    len: u8,
    labels: [u32; 8],
}

impl LabelStack {
    /// No labels.
    pub const EMPTY: LabelStack = LabelStack { len: 0, labels: [0; 8] };

    /// The stack of `labels` (validated: at most 8, each below 2^20).
    pub fn new(labels: &[u32]) -> Self {
        let mut s = LabelStack { len: labels.len() as u8, labels: [0; 8] };
        s.labels[..labels.len()].copy_from_slice(labels);
        s
    }

    /// The first 8 (at most) of `labels`.
    pub fn first<'a>(labels: impl Iterator<Item = &'a u32>) -> Self {
        let mut s = LabelStack::EMPTY;
        for (slot, &l) in s.labels.iter_mut().zip(labels) {
            *slot = l;
            s.len += 1;
        }
        s
    }

    /// The labels, outermost first.
    pub fn labels(&self) -> &[u32] {
        &self.labels[..self.len as usize]
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What to do with a packet whose destination matched a prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Adjacency {
    /// No route: drop (`no-route`). Always adjacency 0, so an empty FIB entry means it too.
    Drop,
    /// Addressed to one of this router's own addresses: to `ip4-local` or `ip6-local`.
    Local,
    /// A reject route's: its packets are dropped under the reject's reason (adjacencies 2–4,
    /// [`Reject::adj`]).
    Reject(Reject),
    /// A connected subnet: the destination itself is the next hop, resolved per packet in the
    /// neighbor table of its family.
    Glean {
        /// Output interface.
        tx_if: u16,
    },
    /// Through a next hop on an output interface.
    Via {
        /// Output interface.
        tx_if: u16,
        /// Next-hop address (IPv4 or IPv6).
        next_hop: IpAddr,
        /// Destination and source MAC to write, or `None` while the next hop has no neighbor
        /// entry (packets are dropped as `no-neighbor`).
        #[serde(skip)]
        rewrite: Option<[u8; 12]>,
        /// MPLS labels to push (routes with out-labels).
        push: LabelStack,
    },
}

/// A plain adjacency as the rewrite nodes' fast pass reads it; `mtu` 0 for an adjacency
/// that is not plain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[repr(C, align(16))]
pub struct PlainRewrite {
    /// Destination and source MAC, as the frame's first 12 bytes.
    pub macs: [u8; 12],
    /// Output interface.
    pub tx_if: u16,
    /// Its MTU; 0 when the adjacency is not plain.
    pub mtu: u16,
}

/// What to do with an MPLS packet whose top label has a local-label entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum LabelEntry {
    /// Replace the top label with `out` and send through adjacency `adj` (a `Via`); an empty
    /// `out` pops it (penultimate-hop popping: implicit null).
    Swap {
        /// Adjacency index.
        adj: u32,
        /// Labels replacing the top one, outermost first.
        out: LabelStack,
    },
    /// Remove the top label: with more under it, look the next one up; at the end of the
    /// stack, route the packet inside.
    Pop {
        /// What is under the label at the end of the stack: IPv4 or IPv6.
        payload: Payload,
        /// The VRF whose tables route it ([`RouteMeta::lookup_vrf`]); 0: the input
        /// interface's.
        vrf: u16,
    },
}

/// Number of MPLS label values.
pub const LABELS: usize = 1 << 20;

/// Label values per chunk of a [`LabelTable`].
const LABEL_CHUNK: usize = 1024;
/// Chunks of a [`LabelTable`].
const LABEL_CHUNKS: usize = LABELS / LABEL_CHUNK;

/// One chunk of a [`LabelTable`].
type LabelChunk = [u16; LABEL_CHUNK];

/// The local-label table: label value → entry index + 1 (0 = none), for all [`LABELS`]
/// values, as 1024 chunks of 1024 labels. Chunks without labels all share one chunk of
/// zeros, so the table costs 8 KiB plus 2 KiB per chunk in use, not 2 MiB, and a changed
/// label set is built from its entries alone. A lookup is two dependent loads, no branch.
#[derive(Debug, Clone)]
pub struct LabelTable {
    chunks: Arc<[Arc<LabelChunk>; LABEL_CHUNKS]>,
}

impl Default for LabelTable {
    fn default() -> Self {
        LabelTable::new([])
    }
}

impl LabelTable {
    /// The table of `(label, entry)` pairs (labels below [`LABELS`]).
    pub fn new(entries: impl IntoIterator<Item = (u32, u16)>) -> Self {
        let zeros = Arc::new([0u16; LABEL_CHUNK]);
        let mut chunks: Box<[Arc<LabelChunk>; LABEL_CHUNKS]> = Box::new(std::array::from_fn(|_| zeros.clone()));
        for (label, entry) in entries {
            let (c, k) = (label as usize / LABEL_CHUNK % LABEL_CHUNKS, label as usize % LABEL_CHUNK);
            if Arc::ptr_eq(&chunks[c], &zeros) {
                chunks[c] = Arc::new([0; LABEL_CHUNK]);
            }
            Arc::make_mut(&mut chunks[c])[k] = entry;
        }
        LabelTable { chunks: Arc::from(chunks) }
    }

    /// The entry of `label` (index + 1), 0 when none.
    #[inline(always)]
    pub fn get(&self, label: u32) -> u16 {
        let l = label as usize;
        self.chunks[l / LABEL_CHUNK % LABEL_CHUNKS][l % LABEL_CHUNK]
    }

    /// Every label with an entry, and its entry, by label.
    pub fn iter(&self) -> impl Iterator<Item = (u32, u16)> + '_ {
        self.chunks.iter().enumerate().flat_map(|(c, chunk)| {
            chunk.iter().enumerate().filter(|(_, e)| **e > 0).map(move |(k, &e)| ((c * LABEL_CHUNK + k) as u32, e))
        })
    }
}

/// Index of [`Adjacency::Drop`].
pub const ADJ_DROP: u32 = 0;

/// Index of [`Adjacency::Local`].
pub const ADJ_LOCAL: u32 = 1;

/// The first adjacency a packet is rewritten toward: those below (drop, local, the three
/// rejects) are pinned, so "is it routed" is one comparison.
pub const ADJ_FIRST_ROUTED: u32 = 5;

/// What a reject route does with the packets it matches (the kernel's `blackhole`,
/// `unreachable` and `prohibit` route types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reject {
    /// Dropped silently.
    Blackhole,
    /// Dropped with ICMP host unreachable (ICMPv6: no route).
    Unreachable,
    /// Dropped with ICMP communication administratively prohibited (ICMPv6: administratively
    /// prohibited).
    Prohibit,
}

impl Reject {
    /// Its adjacency, pinned at 2, 3 or 4.
    pub fn adj(self) -> u32 {
        2 + self as u32
    }

    /// The reject of pinned adjacency `adj`, if it is one.
    #[inline]
    pub fn of_adj(adj: u32) -> Option<Reject> {
        match adj {
            2 => Some(Reject::Blackhole),
            3 => Some(Reject::Unreachable),
            4 => Some(Reject::Prohibit),
            _ => None,
        }
    }

    /// Its name, as `show ip fib` prints it.
    pub fn name(self) -> &'static str {
        match self {
            Reject::Blackhole => "blackhole",
            Reject::Unreachable => "unreachable",
            Reject::Prohibit => "prohibit",
        }
    }
}

/// The layer 3 tables workers forward with (their part of the immutable snapshot, `datapath::Tables`).
#[derive(Debug, Clone, Default)]
pub struct L3 {
    /// Adjacencies by index.
    pub adjs: Vec<Adjacency>,
    /// Load-balance objects by index (FIB values with [`multipath::LB`] set).
    pub lbs: Vec<Arc<LoadBalance>>,
    /// Per adjacency, what the rewrite nodes' fast pass reads of a plain one (a resolved next
    /// hop without out-labels): 16 bytes in one array, not an enum and the output interface's
    /// facts. Kept by [`L3::with_neighbors`].
    pub plain: Vec<PlainRewrite>,
    /// IPv4 neighbors, static and learned (ARP): (interface, address) → MAC.
    pub neighbors: HashMap<(u16, Ipv4Addr), MacAddr>,
    /// IPv6 neighbors, static and learned (ND): (interface, address) → MAC.
    pub neighbors6: HashMap<(u16, Ipv6Addr), MacAddr>,
    /// Next hops whose resolution failed (no ARP reply, no advertisement): packets toward
    /// them get an ICMP host (ICMPv6 address) unreachable instead of another request.
    pub unreachable: HashSet<(u16, IpAddr)>,
    /// Label value → index into `label_entries` + 1 (0 = no entry). Shared between
    /// snapshots (it changes only with the configuration).
    pub labels: LabelTable,
    /// Local-label entries.
    pub label_entries: Vec<LabelEntry>,
    /// The incoming label of each of `label_entries`.
    pub entry_labels: Vec<u32>,
    /// Each interface's VRF and each VRF's tables (empty without VRFs).
    pub vrfs: vrf::VrfTables,
}

impl L3 {
    /// Entry `e` as kept in the metadata (index + 1; 0 = none).
    #[inline(always)]
    pub fn entry(&self, e: u16) -> Option<&LabelEntry> {
        self.label_entries.get(usize::from(e).wrapping_sub(1))
    }
}

impl L3 {
    /// These tables with `neighbors` (both families) as the neighbor tables and
    /// `unreachable` as the failed next hops: every next-hop adjacency's rewrite follows
    /// them.
    pub fn with_neighbors(
        &self,
        interfaces: &[Interface],
        neighbors: HashMap<(u16, IpAddr), MacAddr>,
        unreachable: HashSet<(u16, IpAddr)>,
    ) -> L3 {
        let mut l3 = L3 { neighbors: HashMap::new(), neighbors6: HashMap::new(), unreachable, ..self.clone() };
        for ((i, a), mac) in neighbors {
            match a {
                IpAddr::V4(a) => l3.neighbors.insert((i, a), mac),
                IpAddr::V6(a) => l3.neighbors6.insert((i, a), mac),
            };
        }
        for k in 0..l3.adjs.len() {
            if let Adjacency::Via { tx_if, next_hop, .. } = l3.adjs[k] {
                let new = l3.rewrite_to(interfaces, tx_if, next_hop);
                if let Adjacency::Via { rewrite, .. } = &mut l3.adjs[k] {
                    *rewrite = new;
                }
            }
        }
        let mtu = |tx_if: u16| interfaces.iter().find(|i| i.index == tx_if).map_or(0, |i| i.mtu);
        l3.plain = l3
            .adjs
            .iter()
            .map(|a| match *a {
                Adjacency::Via { tx_if, rewrite: Some(macs), push, .. } if push.is_empty() => {
                    PlainRewrite { macs, tx_if, mtu: mtu(tx_if) }
                }
                _ => PlainRewrite::default(),
            })
            .collect();
        l3
    }

    /// These tables with the adjacencies and load-balance objects of `objects`, each next
    /// hop's rewrite from these tables' neighbors.
    pub fn with_objects(&self, objects: &Objects, interfaces: &[Interface]) -> L3 {
        let l3 = L3 { adjs: objects.adjs().to_vec(), lbs: objects.lbs().to_vec(), ..self.clone() };
        let macs = l3.all_neighbors().map(|(i, a, m)| ((i, a), m)).collect();
        let unreachable = l3.unreachable.clone();
        l3.with_neighbors(interfaces, macs, unreachable)
    }

    /// Every neighbor with a MAC, both families: (interface, address, MAC).
    pub fn all_neighbors(&self) -> impl Iterator<Item = (u16, IpAddr, MacAddr)> + '_ {
        let v4 = self.neighbors.iter().map(|(&(i, a), &m)| (i, IpAddr::V4(a), m));
        v4.chain(self.neighbors6.iter().map(|(&(i, a), &m)| (i, IpAddr::V6(a), m)))
    }

    /// The MAC of neighbor `addr` on `tx_if`, if known.
    pub fn neighbor(&self, tx_if: u16, addr: IpAddr) -> Option<MacAddr> {
        match addr {
            IpAddr::V4(a) => self.neighbors.get(&(tx_if, a)).copied(),
            IpAddr::V6(a) => self.neighbors6.get(&(tx_if, a)).copied(),
        }
    }

    /// The rewrite bytes (destination MAC, source MAC) toward `dst` on `tx_if`, if its
    /// neighbor is known.
    pub fn rewrite_to(&self, interfaces: &[Interface], tx_if: u16, dst: IpAddr) -> Option<[u8; 12]> {
        let mac = self.neighbor(tx_if, dst)?;
        let src = interfaces.iter().find(|i| i.index == tx_if)?.mac;
        let mut r = [0u8; 12];
        r[..6].copy_from_slice(&mac.0);
        r[6..].copy_from_slice(&src.0);
        Some(r)
    }
}

/// A source's routes: (VRF index, network, length) → where they go.
pub type Routes = BTreeMap<(u16, IpAddr, u8), Target>;

/// The routes interface addresses give, each in its interface's VRF: each subnet to its
/// interface (glean), each address to this router (local). Link-local addresses are the same
/// prefix on every link: never in the FIB (`ip6-lookup` finds its own ones per input
/// interface).
pub fn connected(interfaces: &[Interface], linux_cp: bool) -> Routes {
    let mut out = Routes::new();
    if linux_cp {
        // Link-local multicast (OSPF, VRRP, RIP, …) is for the router: up the TAP.
        out.insert((vrf::DEFAULT_VRF, IpAddr::V4(std::net::Ipv4Addr::new(224, 0, 0, 0)), 24), Target::Local);
    }
    for i in interfaces {
        for a in i.addresses.iter().filter(|a| !crate::net::is_link_local(a.addr)) {
            out.insert((i.vrf, a.masked(), a.len), Target::Glean { tx_if: i.index });
        }
    }
    for i in interfaces {
        for a in i.addresses.iter().filter(|a| !crate::net::is_link_local(a.addr)) {
            out.insert((i.vrf, a.addr, if a.addr.is_ipv4() { 32 } else { 128 }), Target::Local);
        }
    }
    out
}

/// The routes of a validated configuration's `routes`, each in its VRF (`vrfs` numbers them),
/// their next hops resolved to interfaces.
pub fn configured(routes: &[Route], interfaces: &[Interface], vrfs: &vrf::VrfIds) -> Routes {
    routes
        .iter()
        .map(|r| {
            ((vrfs.index(r.vrf.as_deref()), r.prefix.masked(), r.prefix.len), configured_route(r, vrfs, interfaces))
        })
        .collect()
}

/// Where a validated configuration's route `r` goes: its next hops resolved to the interfaces
/// of their VRF ([`Route::next_hop_vrf`]), or a lookup in another VRF (`vrfs` numbers them).
pub fn configured_route(r: &Route, vrfs: &vrf::VrfIds, interfaces: &[Interface]) -> Target {
    if let Some(next) = &r.next_vrf {
        return Target::Lookup { vrf: vrfs.index(Some(next.as_str()).filter(|n| *n != "default")) };
    }
    let vrf = vrfs.index(r.next_hop_vrf());
    let hops = r
        .next_hops()
        .into_iter()
        .map(|p| NextHop {
            via: p.via,
            tx_if: match &p.interface {
                Some(n) => interfaces.iter().find(|i| &i.name == n).expect("validated: a configured interface").index,
                None => connected_interface(interfaces, vrf, p.via).expect("validated: via is on a connected subnet"),
            },
            weight: p.weight,
        })
        .collect();
    Target::Paths { hops, push: LabelStack::new(&r.out_labels) }
}

/// The changes of `source` that turn its routes `old` into `new`: removals first.
pub fn changes(old: &Routes, new: &Routes, source: Source) -> Vec<RouteChange> {
    let gone = old.keys().filter(|k| !new.contains_key(k)).map(|&(vrf, prefix, len)| RouteChange {
        vrf,
        prefix,
        len,
        source,
        target: None,
    });
    let set = new.iter().filter(|(k, t)| old.get(k) != Some(t)).map(|(&(vrf, prefix, len), t)| RouteChange {
        vrf,
        prefix,
        len,
        source,
        target: Some(t.clone()),
    });
    gone.chain(set).collect()
}

/// The interface of VRF `vrf` whose address covers `addr`, the longest prefix first.
pub fn connected_interface(interfaces: &[Interface], vrf: u16, addr: IpAddr) -> Option<u16> {
    interfaces
        .iter()
        .filter(|i| i.vrf == vrf)
        .flat_map(|i| i.addresses.iter().map(move |a| (i.index, a)))
        .filter(|(_, a)| a.contains(addr))
        .max_by_key(|(_, a)| a.len)
        .map(|(i, _)| i)
}
