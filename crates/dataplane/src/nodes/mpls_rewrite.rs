//! `mpls-rewrite`: carries out the local-label entry chosen by `mpls-lookup`.
//!
//! - Swap: the top label is replaced by the entry's out-labels (more than one grows the frame
//!   into the headroom). Each new label takes the old top label's traffic class and TTL − 1;
//!   the last one keeps its bottom-of-stack bit. Then the next hop's and the output interface's
//!   MACs are written and the frame goes to `interface-output` (`no-neighbor` without a MAC).
//! - Pop (bottom of stack): the label is removed, the ethertype becomes IPv4, the IPv4 TTL is
//!   lowered to the label's TTL − 1 if that is smaller (uniform TTL model, with an
//!   incremental checksum update), and the packet goes to `ip4-input` to be validated and routed.

use crate::errors::DropReason;
use crate::graph::{Graph, NodeId};
use crate::l3::{Adjacency, LabelEntry, LabelStack};
use crate::vector::VecHandle;
use wire::{EtherType, checksum};

/// Processes one vector. Consecutive packets with the same entry (the usual case) share one
/// entry and adjacency lookup.
pub fn run(g: &mut Graph, v: VecHandle) {
    let mut first = None;
    let mut same = true;
    // The last entry seen (0 = none yet) and what it resolved to (`None` for a pop).
    let (mut last_entry, mut resolved): (u32, Option<Resolved>) = (0, None);
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let e = g.pool.meta(i).adj;
        if e != last_entry {
            resolved = match g.tables.l3.label_entries.get(e as usize - 1) {
                Some(&LabelEntry::Swap { adj, out }) => Some(resolve(g, adj, out)),
                _ => None,
            };
            last_entry = e;
        }
        let next = match &resolved {
            Some(Ok(s)) => Ok(swap(g, i, s)),
            Some(Err(tx_if)) => {
                g.pool.meta_mut(i).tx_if = *tx_if;
                Err(DropReason::MplsNoNeighbor)
            }
            None => pop(g, i),
        };
        match next {
            Ok(node) => g.nexts[k] = node,
            Err(reason) => g.mark_drop(k, i, reason),
        }
        let n = g.nexts[k];
        same &= *first.get_or_insert(n) == n;
    }
    match first {
        Some(n) if same => g.forward(v, n),
        _ => g.split(v),
    }
}

/// A swap with its adjacency resolved: output interface, MACs, out-labels.
#[derive(Clone, Copy)]
struct Swap {
    tx_if: u16,
    macs: [u8; 12],
    out: LabelStack,
}

/// A swap entry resolved: ready to apply, or the output interface to charge a `no-neighbor`
/// drop to.
type Resolved = Result<Swap, u16>;

/// Resolves a swap entry's adjacency (`Err` while its next hop has no MAC).
fn resolve(g: &Graph, adj: u32, out: LabelStack) -> Resolved {
    match g.tables.l3.adjs.get(adj as usize) {
        Some(&Adjacency::Via { tx_if, rewrite: Some(macs), .. }) => Ok(Swap { tx_if, macs, out }),
        Some(&Adjacency::Via { tx_if, .. }) => Err(tx_if),
        _ => Err(0),
    }
}

/// Replaces the top label of buffer `i` with the swap's out-labels and writes the MACs.
fn swap(g: &mut Graph, i: u32, s: &Swap) -> NodeId {
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    let f = g.pool.frame(i);
    let old = u32::from_be_bytes([f[l3], f[l3 + 1], f[l3 + 2], f[l3 + 3]]);
    let keep = (old & 0xe00) | ((old & 0xff) - 1); // traffic class and TTL − 1
    let n = s.out.labels().len();
    let f = if n == 1 {
        g.pool.frame_mut(i)
    } else {
        // Frames enter the graph at the full 64-byte headroom, which holds 7 extra labels.
        g.pool.grow_head(i, 4 * (n - 1)).expect("headroom for the out-labels")
    };
    for (j, &label) in s.out.labels().iter().enumerate() {
        let bos = if j + 1 == n { old & 0x100 } else { 0 };
        f[l3 + 4 * j..l3 + 4 * j + 4].copy_from_slice(&((label << 12) | keep | bos).to_be_bytes());
    }
    f[..12].copy_from_slice(&s.macs);
    f[12..14].copy_from_slice(&EtherType::MPLS.to_be_bytes());
    g.pool.meta_mut(i).tx_if = s.tx_if;
    NodeId::InterfaceOutput
}

/// Removes the bottom-of-stack label of buffer `i` and hands the IPv4 packet to `ip4-input`.
fn pop(g: &mut Graph, i: u32) -> Result<NodeId, DropReason> {
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    let f = g.pool.frame_mut(i);
    let ttl = f[l3 + 3] - 1;
    f.copy_within(0..12, 4);
    let f = g.pool.shrink_head(i, 4).expect("the frame holds the label it pops");
    f[12..14].copy_from_slice(&EtherType::IPV4.to_be_bytes());
    if let Some(ip) = f.get_mut(l3..l3 + 20).filter(|ip| ip[0] >> 4 == 4 && ip[8] > ttl) {
        let old = u16::from_be_bytes([ip[8], ip[9]]);
        let new = (u16::from(ttl) << 8) | u16::from(ip[9]);
        let csum = checksum::update16(u16::from_be_bytes([ip[10], ip[11]]), old, new);
        ip[8] = ttl;
        ip[10..12].copy_from_slice(&csum.to_be_bytes());
    }
    Ok(NodeId::Ip4Input)
}
