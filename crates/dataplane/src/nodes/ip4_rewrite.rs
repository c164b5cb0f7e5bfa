//! `ip4-rewrite`: turns a routed packet into a frame for its next hop.
//!
//! For the packet's adjacency it decrements the TTL with an incremental checksum update
//! (RFC 1624), pushes the route's out-labels if it has any (each with the new IP TTL, the
//! last one bottom of stack), writes the next hop's MAC as destination and the output
//! interface's MAC as source, sets the output interface and sends it to `interface-output`
//! (`no-headroom` when the frame has no room for the out-labels). A connected
//! (glean) adjacency finds the destination's own MAC in the neighbor table. Without a neighbor
//! entry the packet is dropped as `no-neighbor` (charged to the output interface).

use crate::errors::DropReason;
use crate::graph::{Graph, NodeId};
use crate::l3::{Adjacency, LabelStack};
use crate::vector::VecHandle;
use std::net::Ipv4Addr;
use wire::{EtherType, checksum};

/// Decrements the TTL of the IPv4 packet at `l3` in buffer `i` (incremental checksum), pushes
/// `push` in front of it and writes the MACs. Returns false, the frame unfit to send, when
/// the headroom cannot hold `push`.
#[inline(always)]
#[must_use]
fn rewrite(g: &mut Graph, i: u32, macs: &[u8; 12], push: &LabelStack) -> bool {
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    let frame = g.pool.frame_mut(i);
    let ip = &mut frame[l3..l3 + 12];
    let old = u16::from_be_bytes([ip[8], ip[9]]);
    let new = old - 0x0100; // TTL is the high byte; ip4-input ensured it is at least 2
    let csum = checksum::update16(u16::from_be_bytes([ip[10], ip[11]]), old, new);
    ip[8..10].copy_from_slice(&new.to_be_bytes());
    ip[10..12].copy_from_slice(&csum.to_be_bytes());
    let frame = if push.is_empty() {
        frame
    } else {
        let n = push.labels().len();
        let ttl = u32::from(new >> 8);
        // The generator leaves 64 bytes of headroom (8 labels); another driver may leave less.
        let Some(f) = g.pool.grow_head(i, 4 * n) else { return false };
        for (j, &label) in push.labels().iter().enumerate() {
            let bos = if j + 1 == n { 0x100 } else { 0 };
            f[14 + 4 * j..18 + 4 * j].copy_from_slice(&((label << 12) | bos | ttl).to_be_bytes());
        }
        f[12..14].copy_from_slice(&EtherType::MPLS.to_be_bytes());
        g.pool.meta_mut(i).l3_offset += 4 * n as u16;
        g.pool.frame_mut(i)
    };
    frame[..12].copy_from_slice(macs);
    true
}

/// Processes one vector. Adjacencies are read in place (through a handle on the tables taken
/// once per vector), never copied per packet.
pub fn run(g: &mut Graph, v: VecHandle) {
    let tables = g.tables.clone();
    let mut all_ok = true;
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let adj = g.pool.meta(i).adj;
        if let Some(Adjacency::Via { tx_if, rewrite: Some(macs), push, .. }) = tables.l3.adjs.get(adj as usize) {
            g.pool.meta_mut(i).tx_if = *tx_if;
            if rewrite(g, i, macs, push) {
                g.nexts[k] = NodeId::InterfaceOutput;
            } else {
                g.mark_drop(k, i, DropReason::Ip4NoHeadroom);
                all_ok = false;
            }
            continue;
        }
        match resolve_other(g, i) {
            Some((macs, push)) => {
                if rewrite(g, i, &macs, &push) {
                    g.nexts[k] = NodeId::InterfaceOutput;
                } else {
                    g.mark_drop(k, i, DropReason::Ip4NoHeadroom);
                    all_ok = false;
                }
            }
            None => {
                g.mark_drop(k, i, DropReason::NoNeighbor);
                all_ok = false;
            }
        }
    }
    if all_ok { g.forward(v, NodeId::InterfaceOutput) } else { g.split(v) }
}

/// A glean adjacency (the destination's own MAC from the neighbor table), or a next hop
/// without a neighbor: sets the output interface and returns what to write, `None` to drop.
#[cold]
fn resolve_other(g: &mut Graph, i: u32) -> Option<([u8; 12], LabelStack)> {
    let m = *g.pool.meta(i);
    let l3 = usize::from(m.l3_offset);
    match g.tables.l3.adjs.get(m.adj as usize) {
        Some(&Adjacency::Glean { tx_if }) => {
            g.pool.meta_mut(i).tx_if = tx_if;
            let b = &g.pool.frame(i)[l3 + 16..l3 + 20];
            let dst = Ipv4Addr::new(b[0], b[1], b[2], b[3]);
            let mac = g.tables.l3.neighbors.get(&(tx_if, dst))?;
            Some((glean_rewrite(g, tx_if, mac.0), LabelStack::default()))
        }
        Some(&Adjacency::Via { tx_if, .. }) => {
            g.pool.meta_mut(i).tx_if = tx_if;
            None
        }
        // ip4-lookup never sends drop or local adjacencies here.
        _ => None,
    }
}

/// Destination `mac` and the output interface's own MAC.
fn glean_rewrite(g: &Graph, tx_if: u16, mac: [u8; 6]) -> [u8; 12] {
    let mut r = [0u8; 12];
    r[..6].copy_from_slice(&mac);
    r[6..].copy_from_slice(&g.tables.get(tx_if).mac.0);
    r
}
