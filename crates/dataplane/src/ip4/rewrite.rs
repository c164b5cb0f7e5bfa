//! `ip4-rewrite`: turns a routed packet into a frame for its next hop.
//!
//! First the checks that only forwarding needs: a TTL of 1 or less drops the packet as
//! `ttl-expired`, and a packet larger than the output interface's MTU with DF set as
//! `fragmentation-needed` — both through `icmp4-error`, which tells the source. Then, for the
//! packet's adjacency, it decrements the TTL with an incremental checksum update (RFC 1624),
//! pushes the route's out-labels if it has any (each with the new IP TTL, the last one bottom
//! of stack), writes the next hop's MAC as destination and the output interface's MAC as
//! source, sets the output interface and sends it to `interface-output` — or to `ip4-frag`
//! when it is larger than the MTU without DF (`no-headroom` when the frame has no room for
//! the out-labels). A connected (glean) adjacency finds the destination's own MAC in the
//! neighbor table. Without a MAC the packet goes to `ip4-arp` (dropped as `no-neighbor`
//! while ARP resolves it).

use crate::ip4::{drops, nodes};
use crate::l3::L3Tables;
use crate::l3::L3Worker;
use crate::l3::RouteMeta;
use crate::l3::{Adjacency, LabelStack};
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;
use wire::ipv4::{DONT_FRAGMENT, field};
use wire::{checksum, field_u16};

/// What forwarding made of a packet.
enum Verdict {
    /// Rewritten, to send whole.
    Fits,
    /// Rewritten, larger than the MTU with DF clear: to send in fragments.
    Fragment,
    /// Not rewritten: drop it for this reason (TTL and size drops also tell the source).
    Drop(DropReason),
}

/// Forwards the IPv4 packet at `l3` in buffer `i` toward an interface with `mtu`: checks its
/// TTL and size first (one read of the header serves both and the rewrite), then decrements
/// the TTL (incremental checksum), pushes `push` in front of it and writes the MACs.
#[inline(always)]
fn rewrite<F: L3Worker>(g: &mut Graph<F>, i: u32, macs: &[u8; 12], push: &LabelStack, mtu: u16) -> Verdict {
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    let frame = g.pool.frame_mut(i);
    let ip = &mut frame[l3..l3 + 12];
    let old = field_u16(ip, field::TTL_PROTOCOL);
    if old < 0x0200 {
        return Verdict::Drop(drops::TTL_EXPIRED); // TTL 0 or 1
    }
    // Pushed labels travel inside the MTU too.
    let big = usize::from(field_u16(ip, field::TOTAL_LEN)) + 4 * push.labels().len() > usize::from(mtu);
    if big && ip[field::FLAGS] & DONT_FRAGMENT != 0 {
        return Verdict::Drop(drops::FRAG_NEEDED);
    }
    let new = old - 0x0100; // TTL is the high byte
    let csum = checksum::update16(field_u16(ip, field::CHECKSUM), old, new);
    ip[field::TTL_PROTOCOL].copy_from_slice(&new.to_be_bytes());
    ip[field::CHECKSUM].copy_from_slice(&csum.to_be_bytes());
    let frame = if push.is_empty() {
        frame
    } else {
        let Some(f) = crate::l3::shared::push_labels(&mut g.pool, i, push, (new >> 8) as u8) else {
            return Verdict::Drop(drops::IP4_NO_HEADROOM);
        };
        f
    };
    frame[..12].copy_from_slice(macs);
    if big { Verdict::Fragment } else { Verdict::Fits }
}

/// Forwards packet `k` (buffer `i`) out of `tx_if` with `macs` and `push`: sets its next node
/// and returns whether it took the plain path (whole, to `interface-output`).
#[inline(always)]
fn forward<F: L3Worker>(g: &mut Graph<F>, k: usize, i: u32, tx_if: u16, macs: &[u8; 12], push: &LabelStack) -> bool {
    g.pool.meta_mut(i).tx_if = tx_if;
    match rewrite(g, i, macs, push, g.features.interfaces().get(tx_if).mtu) {
        Verdict::Fits => {
            g.nexts[k] = crate::interface::nodes::INTERFACE_OUTPUT;
            true
        }
        Verdict::Fragment => {
            g.nexts[k] = nodes::IP4_FRAG;
            false
        }
        Verdict::Drop(reason) => {
            g.mark_drop(k, i, reason);
            if reason != drops::IP4_NO_HEADROOM {
                g.nexts[k] = nodes::ICMP4_ERROR;
            }
            false
        }
    }
}

/// True when the TTL of the IPv4 packet in buffer `i` is too low to forward it.
fn ttl_expired<F: L3Worker>(g: &Graph<F>, i: u32) -> bool {
    crate::l3::ipv4(&g.pool, i).is_some_and(|ip| ip.ttl() <= 1)
}

/// The plain packets at the start of vector `v`: each one toward a resolved next hop without
/// out-labels, with a TTL above 1 and within the output MTU, rewritten in place (TTL,
/// checksum, MACs, output interface). Returns how many it took; the packet after them (if any)
/// needs [`forward`]'s full treatment. An adjacency is resolved once for a run of packets that
/// share it, so a vector toward one next hop reads it once.
#[inline(always)]
fn plain_prefix<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) -> usize {
    crate::l3::shared::plain_rewrite_prefix::<12, _>(g, v, |ip, mtu| {
        let old = field_u16(ip, field::TTL_PROTOCOL);
        if old < 0x0200 || usize::from(field_u16(ip, field::TOTAL_LEN)) > mtu {
            return false;
        }
        let new = old - 0x0100;
        let csum = checksum::update16(field_u16(ip, field::CHECKSUM), old, new);
        ip[field::TTL_PROTOCOL].copy_from_slice(&new.to_be_bytes());
        ip[field::CHECKSUM].copy_from_slice(&csum.to_be_bytes());
        true
    })
}

/// Processes one vector: the plain packets at its start in one tight pass
/// ([`plain_prefix`]), the rest one by one. Adjacencies are read in place (through a handle on
/// the tables taken once per vector), never copied per packet.
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    let plain = plain_prefix(g, v);
    if !crate::l3::shared::rest_after_plain(g, v, plain, crate::interface::nodes::INTERFACE_OUTPUT) {
        return;
    }
    let n = g.vectors[v].len();
    let tables = g.features.snapshot().clone();
    let mut all_ok = true;
    for k in plain..n {
        let i = g.vectors[v].indices()[k];
        let adj = g.pool.meta(i).adj();
        if let Some(Adjacency::Via { tx_if, rewrite: Some(macs), push, .. }) = tables.l3().adjs.get(adj as usize) {
            all_ok &= forward(g, k, i, *tx_if, macs, push);
            continue;
        }
        all_ok = false;
        match resolve_other(g, i) {
            Some((tx_if, macs)) => {
                forward(g, k, i, tx_if, &macs, &LabelStack::EMPTY);
            }
            None if ttl_expired(g, i) => {
                g.mark_drop(k, i, drops::TTL_EXPIRED);
                g.nexts[k] = nodes::ICMP4_ERROR;
            }
            None => {
                g.mark_drop(k, i, drops::NO_NEIGHBOR);
                g.nexts[k] = nodes::IP4_ARP;
            }
        }
    }
    if all_ok { g.forward(v, crate::interface::nodes::INTERFACE_OUTPUT) } else { g.split(v) }
}

/// A glean adjacency (the destination's own MAC from the neighbor table), or a next hop
/// without a neighbor: sets the output interface and returns it with the MACs to write,
/// `None` when there is no MAC.
#[cold]
fn resolve_other<F: L3Worker>(g: &mut Graph<F>, i: u32) -> Option<(u16, [u8; 12])> {
    let m = *g.pool.meta(i);
    match g.features.l3().adjs.get(m.adj() as usize) {
        Some(&Adjacency::Glean { tx_if }) => {
            g.pool.meta_mut(i).tx_if = tx_if;
            let dst = crate::l3::ipv4(&g.pool, i)?.dst();
            let mac = g.features.l3().neighbors.get(&(tx_if, dst))?;
            Some((tx_if, crate::l3::shared::macs_toward(g, tx_if, mac.0)))
        }
        Some(&Adjacency::Via { tx_if, .. }) => {
            g.pool.meta_mut(i).tx_if = tx_if;
            None
        }
        // ip4-lookup never sends drop or local adjacencies here.
        _ => None,
    }
}
