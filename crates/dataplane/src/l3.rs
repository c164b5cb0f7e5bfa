//! Layer 3 state built from the configuration: adjacencies (what to do with a packet once its
//! destination matched a prefix), the static neighbor table, and the FIB changes that install
//! interface addresses and routes.

use crate::config::{Config, Ipv4Prefix};
use crate::fib::mask;
use crate::interface::Interface;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use wire::MacAddr;

/// What to do with a packet whose destination matched a prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum Adjacency {
    /// No route: drop (`no-route`). Always adjacency 0, so an empty FIB entry means it too.
    Drop,
    /// Addressed to one of this router's own addresses: dropped (`ip4-local`), as vecflow has
    /// no host stack.
    Local,
    /// A connected subnet: the destination itself is the next hop, resolved per packet in the
    /// neighbor table.
    Glean {
        /// Output interface.
        tx_if: u16,
    },
    /// Through a next hop on an output interface.
    Via {
        /// Output interface.
        tx_if: u16,
        /// Next-hop address.
        next_hop: Ipv4Addr,
        /// Destination and source MAC to write, or `None` while the next hop has no neighbor
        /// entry (packets are dropped as `no-neighbor`).
        #[serde(skip)]
        rewrite: Option<[u8; 12]>,
    },
}

/// Index of [`Adjacency::Drop`].
pub const ADJ_DROP: u32 = 0;

/// The layer 3 tables workers forward with (part of the immutable [`crate::interface::Tables`]).
#[derive(Debug, Clone, Default)]
pub struct L3 {
    /// Adjacencies by index.
    pub adjs: Vec<Adjacency>,
    /// Static neighbors: (interface, address) → MAC.
    pub neighbors: HashMap<(u16, Ipv4Addr), MacAddr>,
}

impl L3 {
    /// The rewrite bytes (destination MAC, source MAC) toward `dst` on `tx_if`, if its
    /// neighbor is known.
    pub fn rewrite_to(&self, interfaces: &[Interface], tx_if: u16, dst: Ipv4Addr) -> Option<[u8; 12]> {
        let mac = self.neighbors.get(&(tx_if, dst))?;
        let src = interfaces.iter().find(|i| i.index == tx_if)?.mac;
        let mut r = [0u8; 12];
        r[..6].copy_from_slice(&mac.0);
        r[6..].copy_from_slice(&src.0);
        Some(r)
    }
}

/// A FIB change: install `prefix` toward adjacency `adj`.
pub type FibInsert = (Ipv4Addr, u8, Option<u32>);

/// Builds adjacencies, neighbors and the FIB inserts of a validated configuration.
pub fn build(config: &Config, interfaces: &[Interface]) -> (L3, Vec<FibInsert>) {
    let index: BTreeMap<&str, u16> = interfaces.iter().map(|i| (i.name.as_str(), i.index)).collect();
    let mut l3 = L3 { adjs: vec![Adjacency::Drop, Adjacency::Local], neighbors: HashMap::new() };
    for n in &config.neighbors {
        l3.neighbors.insert((index[n.interface.as_str()], n.address), n.mac.0);
    }
    let mut inserts = Vec::new();
    let mut via: HashMap<(u16, Ipv4Addr), u32> = HashMap::new();
    for (name, i) in &config.interfaces {
        let tx_if = index[name.as_str()];
        for a in &i.addresses {
            l3.adjs.push(Adjacency::Glean { tx_if });
            inserts.push((a.addr, a.len, Some(l3.adjs.len() as u32 - 1)));
            inserts.push((a.addr, 32, Some(1)));
        }
    }
    for r in &config.routes {
        let tx_if = match &r.interface {
            Some(n) => index[n.as_str()],
            None => connected_interface(config, &index, r.via).expect("validated: via is on a connected subnet"),
        };
        let adj = *via.entry((tx_if, r.via)).or_insert_with(|| {
            let rewrite = l3.rewrite_to(interfaces, tx_if, r.via);
            l3.adjs.push(Adjacency::Via { tx_if, next_hop: r.via, rewrite });
            l3.adjs.len() as u32 - 1
        });
        inserts.push((r.prefix.addr, r.prefix.len, Some(adj)));
    }
    (l3, inserts)
}

/// The interface whose address covers `addr`, the longest prefix first.
pub fn connected_interface(config: &Config, index: &BTreeMap<&str, u16>, addr: Ipv4Addr) -> Option<u16> {
    config
        .interfaces
        .iter()
        .flat_map(|(n, i)| i.addresses.iter().map(move |a| (n, a)))
        .filter(|(_, a)| covers(a, addr))
        .max_by_key(|(_, a)| a.len)
        .map(|(n, _)| index[n.as_str()])
}

/// True when `p` covers `addr`.
pub fn covers(p: &Ipv4Prefix, addr: Ipv4Addr) -> bool {
    u32::from(addr) & mask(p.len) == u32::from(p.addr) & mask(p.len)
}
