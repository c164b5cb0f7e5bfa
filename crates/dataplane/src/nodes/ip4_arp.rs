//! `ip4-arp`: packets whose next hop has no MAC yet.
//!
//! vecflow does not hold such packets (as VPP, unlike Linux): each is dropped as
//! `no-neighbor`, and an ARP request for its next hop goes out of the output interface —
//! at most one per next hop per second ([`crate::punt::Punt::arp_allowed`]) — while the
//! main thread is told a resolution started. A next hop whose resolution already failed gets
//! no more requests for a while: IPv4 packets toward it go to `icmp4-error` for an ICMP host
//! unreachable instead.

use crate::config::Payload;
use crate::graph::{Graph, NodeId, Outbox};
use crate::l3::{Adjacency, LabelEntry};
use crate::punt::Event;
use crate::vector::VecHandle;
use std::net::Ipv4Addr;
use wire::arp::{self, Arp};
use wire::{EtherType, MacAddr};

/// The next hop buffer `i` waits for: an MPLS swap's, a route's, or (connected subnet) the
/// packet's own destination.
fn next_hop(g: &Graph, i: u32) -> Option<Ipv4Addr> {
    let m = g.pool.meta(i);
    let l3 = &g.tables.l3;
    let adj = match l3.entry(m.label_entry) {
        Some(LabelEntry::Swap { adj, .. }) => *adj,
        _ => m.adj,
    };
    match l3.adjs.get(adj as usize)? {
        Adjacency::Via { next_hop: std::net::IpAddr::V4(hop), .. } => Some(*hop),
        Adjacency::Glean { .. } => Some(g.ipv4(i)?.dst()),
        _ => None,
    }
}

/// Processes one vector: every packet is dropped (or, toward a failed next hop, handed to
/// `icmp4-error`); requests go out for the next hops that may be asked again.
pub fn run(g: &mut Graph, v: VecHandle) {
    let now = crate::tsc::now();
    let mut requests = Outbox::new(NodeId::InterfaceOutput);
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let (tx_if, is_ip4) = {
            let m = g.pool.meta(i);
            (
                m.tx_if,
                g.tables.l3.entry(m.label_entry).is_none_or(|e| matches!(e, LabelEntry::Pop { payload: Payload::Ip4 })),
            )
        };
        g.nexts[k] = NodeId::ErrorDrop;
        // A subnet's network or broadcast address is nobody's: no ARP for it.
        let Some(hop) = next_hop(g, i).filter(|&h| !g.tables.is_subnet_edge(h)) else { continue };
        if g.tables.l3.unreachable.contains(&(tx_if, hop)) {
            if is_ip4 {
                g.nexts[k] = NodeId::Icmp4Error;
            }
            continue;
        }
        if g.punt.arp_allowed(tx_if, hop, now)
            && let Some(r) = request(g, tx_if, hop, None)
        {
            requests.push(g, r);
            g.punt.report(Event::Resolving { interface: tx_if, address: hop }, &g.counters.punt);
        }
    }
    requests.finish(g);
    g.split(v);
}

/// Makes an ARP request for `target` out of interface `tx_if` in a fresh buffer, broadcast or
/// to `dst`; `None` when no buffer is free.
pub fn request(g: &mut Graph, tx_if: u16, target: Ipv4Addr, dst: Option<MacAddr>) -> Option<u32> {
    let i = g.alloc_buffer()?;
    let mac = g.tables.get(tx_if).mac;
    let spa = g.tables.source_toward(tx_if, target).unwrap_or(Ipv4Addr::UNSPECIFIED);
    let mut frame = [0u8; 60]; // the Ethernet minimum, zero padded
    frame[..6].copy_from_slice(&dst.unwrap_or(MacAddr::BROADCAST).0);
    frame[6..12].copy_from_slice(&mac.0);
    frame[12..14].copy_from_slice(&EtherType::ARP.to_be_bytes());
    Arp { op: arp::REQUEST, sha: mac, spa, tha: MacAddr([0; 6]), tpa: target }.write(&mut frame[14..]);
    g.pool.write_frame(i, &frame);
    g.pool.meta_mut(i).tx_if = tx_if;
    g.counters.punt.arp_requests.add(1);
    Some(i)
}
