//! Layer 3 state built from the configuration: adjacencies (what to do with a packet once its
//! destination matched a prefix), label stacks and the label table, the static neighbor table,
//! and the FIB changes that install interface addresses and routes. Beside it: [`fib`] (the
//! IPv4 and IPv6 longest-prefix-match tables and their writer), [`shared`] (what the IPv4, IPv6
//! and MPLS nodes share) and [`config`] (the `fib` and `routes` sections).

pub mod config;
pub mod fib;
pub mod shared;

use crate::config::{Config, Payload};
use crate::interface::Interface;
pub use crate::l3::fib::FibInsert;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use wire::MacAddr;

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

/// What to do with an MPLS packet whose top label has a local-label entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum LabelEntry {
    /// Replace the top label with `out` and send through adjacency `adj` (a `Via`).
    Swap {
        /// Adjacency index.
        adj: u32,
        /// Labels replacing the top one, outermost first.
        out: LabelStack,
    },
    /// Remove the top label (end of stack only) and route the packet inside.
    Pop {
        /// What is under the label: IPv4 or IPv6.
        payload: Payload,
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

/// The layer 3 tables workers forward with (part of the immutable [`crate::interface::Tables`]).
#[derive(Debug, Clone, Default)]
pub struct L3 {
    /// Adjacencies by index.
    pub adjs: Vec<Adjacency>,
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
    /// The flow rules (`flow-classify`).
    pub flows: Arc<crate::flows::Flows>,
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
        l3
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

/// Builds adjacencies, neighbors and the FIB inserts of a validated configuration.
pub fn build(config: &Config, interfaces: &[Interface]) -> (L3, Vec<FibInsert>) {
    let index: BTreeMap<&str, u16> = interfaces.iter().map(|i| (i.name.as_str(), i.index)).collect();
    let mut l3 = L3 { adjs: vec![Adjacency::Drop, Adjacency::Local], ..L3::default() };
    for n in &config.neighbors {
        let i = index[n.interface.as_str()];
        match n.address {
            IpAddr::V4(a) => l3.neighbors.insert((i, a), n.mac.0),
            IpAddr::V6(a) => l3.neighbors6.insert((i, a), n.mac.0),
        };
    }
    let mut inserts = Vec::new();
    let mut via: HashMap<(u16, IpAddr, LabelStack), u32> = HashMap::new();
    let mut via_adj = |l3: &mut L3, tx_if: u16, next_hop: IpAddr, push: LabelStack| {
        *via.entry((tx_if, next_hop, push)).or_insert_with(|| {
            let rewrite = l3.rewrite_to(interfaces, tx_if, next_hop);
            l3.adjs.push(Adjacency::Via { tx_if, next_hop, rewrite, push });
            l3.adjs.len() as u32 - 1
        })
    };
    for i in interfaces {
        let tx_if = i.index;
        // Link-local addresses are the same prefix on every link: never in the FIB
        // (`ip6-lookup` finds its own ones per input interface).
        for a in i.addresses.iter().filter(|a| !crate::config::is_link_local(a.addr)) {
            l3.adjs.push(Adjacency::Glean { tx_if });
            inserts.push((a.addr, a.len, Some(l3.adjs.len() as u32 - 1)));
            inserts.push((a.addr, if a.addr.is_ipv4() { 32 } else { 128 }, Some(1)));
        }
    }
    for r in &config.routes {
        let tx_if = match &r.interface {
            Some(n) => index[n.as_str()],
            None => connected_interface(interfaces, r.via).expect("validated: via is on a connected subnet"),
        };
        let adj = via_adj(&mut l3, tx_if, r.via, LabelStack::new(&r.out_labels));
        inserts.push((r.prefix.addr, r.prefix.len, Some(adj)));
    }
    let mut labels = Vec::new();
    for l in &config.mpls.local_labels {
        let entry = match (l.via, &l.interface) {
            (Some(next_hop), Some(n)) => LabelEntry::Swap {
                adj: via_adj(&mut l3, index[n.as_str()], next_hop, LabelStack::default()),
                out: LabelStack::new(&l.out_labels),
            },
            _ => LabelEntry::Pop { payload: l.payload },
        };
        l3.label_entries.push(entry);
        l3.entry_labels.push(l.label);
        labels.push((l.label, l3.label_entries.len() as u16));
    }
    l3.labels = LabelTable::new(labels);
    l3.flows = Arc::new(crate::flows::build(&config.flows, &config.flow_cache, interfaces));
    (l3, inserts)
}

/// The interface whose address covers `addr`, the longest prefix first.
pub fn connected_interface(interfaces: &[Interface], addr: IpAddr) -> Option<u16> {
    interfaces
        .iter()
        .flat_map(|i| i.addresses.iter().map(move |a| (i.index, a)))
        .filter(|(_, a)| a.contains(addr))
        .max_by_key(|(_, a)| a.len)
        .map(|(i, _)| i)
}

/// What identifies an adjacency from one configuration to the next: everything but the
/// rewrite, which follows the neighbor table.
fn adjacency_key(a: &Adjacency) -> (u8, u16, IpAddr, LabelStack) {
    let none = IpAddr::V4(Ipv4Addr::UNSPECIFIED);
    match *a {
        Adjacency::Drop => (0, 0, none, LabelStack::EMPTY),
        Adjacency::Local => (1, 0, none, LabelStack::EMPTY),
        Adjacency::Glean { tx_if } => (2, tx_if, none, LabelStack::EMPTY),
        Adjacency::Via { tx_if, next_hop, push, .. } => (3, tx_if, next_hop, push),
    }
}

/// The tables of a changed configuration, numbered so that they can replace running ones
/// without a moment where a FIB entry names the wrong adjacency (see [`L3::renumbered`]).
#[derive(Debug)]
pub struct Renumbered {
    /// The new tables: every adjacency of the running ones still at its index (those the
    /// new configuration no longer uses too, until they are retired), the new ones at
    /// indices that were free.
    pub l3: L3,
    /// The new configuration's FIB inserts, in the new numbering.
    pub inserts: Vec<FibInsert>,
    /// Indices the new configuration no longer uses: to be turned into drops, and reused
    /// by a later change, once no FIB entry and no worker points at them.
    pub retired: Vec<u32>,
}

impl L3 {
    /// Renumbers `new` (built by [`build`] from a changed configuration, with its FIB
    /// `inserts`) against these running tables: an adjacency both have keeps its running
    /// index, a new one takes an index from `free` (retired by an earlier change) or one past
    /// the end. The label table is shared with the running one when the labels did not
    /// change.
    pub fn renumbered(&self, new: L3, inserts: Vec<FibInsert>, free: &mut Vec<u32>) -> Renumbered {
        let mut by_key: HashMap<_, Vec<u32>> = HashMap::new();
        for (i, a) in self.adjs.iter().enumerate().rev() {
            if i > 1 && !free.contains(&(i as u32)) {
                by_key.entry(adjacency_key(a)).or_default().push(i as u32);
            }
        }
        let mut adjs = self.adjs.clone();
        let mut map = vec![0u32; new.adjs.len()];
        for (k, a) in new.adjs.iter().enumerate() {
            map[k] = match k {
                0 | 1 => k as u32,
                _ => {
                    let i = by_key.get_mut(&adjacency_key(a)).and_then(Vec::pop).or_else(|| free.pop()).unwrap_or_else(
                        || {
                            adjs.push(Adjacency::Drop);
                            adjs.len() as u32 - 1
                        },
                    );
                    adjs[i as usize] = *a;
                    i
                }
            };
        }
        let retired: Vec<u32> = by_key.into_values().flatten().collect();
        let label_entries: Vec<LabelEntry> = new
            .label_entries
            .iter()
            .map(|e| match *e {
                LabelEntry::Swap { adj, out } => LabelEntry::Swap { adj: map[adj as usize], out },
                LabelEntry::Pop { payload } => LabelEntry::Pop { payload },
            })
            .collect();
        let same_labels = new.entry_labels == self.entry_labels;
        let l3 = L3 { adjs, labels: if same_labels { self.labels.clone() } else { new.labels }, label_entries, ..new };
        let inserts = inserts.into_iter().map(|(a, l, adj)| (a, l, adj.map(|k| map[k as usize]))).collect();
        Renumbered { l3, inserts, retired }
    }
}
