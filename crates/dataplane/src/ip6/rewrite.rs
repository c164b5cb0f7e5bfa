//! `ip6-rewrite`: turns a routed IPv6 packet into a frame for its next hop.
//!
//! First the checks that only forwarding needs: a hop limit of 1 or less drops the packet as
//! `hop-limit-expired`, and a packet larger than the output interface's MTU (pushed labels
//! included) as `packet-too-big` (routers never fragment IPv6) — both through `icmp6-error`,
//! which tells the source. Then, for the packet's
//! adjacency, it decrements the hop limit (IPv6 has no header checksum), pushes the route's
//! out-labels if it has any (each with the new hop limit as TTL, the last one bottom of
//! stack), writes the next hop's MAC as destination and the output interface's MAC as source,
//! sets the output interface and sends it to `interface-output`. A connected (glean) adjacency
//! finds the destination's own MAC in the IPv6 neighbor table. Without a MAC the packet goes
//! to `ip6-nd` (dropped as `no-neighbor` while neighbor discovery resolves it).

use crate::ip6::{drops, nodes};
use crate::l3::L3Tables;
use crate::l3::L3Worker;
use crate::l3::RouteMeta;
use crate::l3::{Adjacency, LabelStack};
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;
use wire::field_u16;
use wire::ipv6::{HEADER_LEN, field};

/// Forwards the IPv6 packet in buffer `i` out of `tx_if` with `macs` and `push`: checks its
/// hop limit and size (one read of the header serves both and the rewrite), then decrements
/// the hop limit, pushes `push` in front of it and writes the MACs. `Err` names why it could
/// not be forwarded, the frame then unchanged but for the output interface.
#[inline(always)]
fn rewrite<F: L3Worker>(
    g: &mut Graph<F>,
    i: u32,
    tx_if: u16,
    macs: &[u8; 12],
    push: &LabelStack,
) -> Result<(), DropReason> {
    let mtu = usize::from(g.features.interfaces().get(tx_if).mtu);
    let m = g.pool.meta_mut(i);
    m.tx_if = tx_if;
    let l3 = usize::from(m.l3_offset);
    let ip = &mut g.pool.frame_mut(i)[l3..l3 + 8];
    let hop_limit = ip[field::HOP_LIMIT];
    if hop_limit <= 1 {
        return Err(drops::HOP_LIMIT_EXPIRED);
    }
    if HEADER_LEN + usize::from(field_u16(ip, field::PAYLOAD_LEN)) + 4 * push.labels().len() > mtu {
        return Err(drops::PACKET_TOO_BIG);
    }
    ip[field::HOP_LIMIT] = hop_limit - 1;
    let frame = if push.is_empty() {
        g.pool.frame_mut(i)
    } else {
        crate::l3::shared::push_labels(&mut g.pool, i, push, hop_limit - 1).ok_or(drops::IP6_NO_HEADROOM)?
    };
    frame[..12].copy_from_slice(macs);
    Ok(())
}

/// The plain packets at the start of vector `v`: each one toward a resolved next hop without
/// out-labels, with a hop limit above 1 and within the output MTU, rewritten in place (hop
/// limit, MACs, output interface). Returns how many it took; the packet after them (if any)
/// needs [`rewrite`]'s full treatment. An adjacency is resolved once for a run of packets that
/// share it.
#[inline(always)]
fn plain_prefix<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) -> usize {
    crate::l3::shared::plain_rewrite_prefix::<8, _>(g, v, |ip, mtu| {
        if ip[field::HOP_LIMIT] <= 1 || HEADER_LEN + usize::from(field_u16(ip, field::PAYLOAD_LEN)) > mtu {
            return false;
        }
        ip[field::HOP_LIMIT] -= 1;
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
        let result = match tables.l3().adjs.get(adj as usize) {
            Some(Adjacency::Via { tx_if, rewrite: Some(macs), push, .. }) => rewrite(g, i, *tx_if, macs, push),
            Some(&Adjacency::Glean { tx_if }) => match glean_rewrite(g, i, tx_if) {
                Some(macs) => rewrite(g, i, tx_if, &macs, &LabelStack::EMPTY),
                None => no_neighbor(g, i, tx_if),
            },
            Some(&Adjacency::Via { tx_if, rewrite: None, .. }) => no_neighbor(g, i, tx_if),
            // ip6-lookup never sends drop or local adjacencies here.
            _ => Err(drops::IP6_NO_ROUTE),
        };
        match result {
            Ok(()) => g.nexts[k] = crate::interface::nodes::INTERFACE_OUTPUT,
            Err(reason) => {
                g.mark_drop(k, i, reason);
                g.nexts[k] = match reason {
                    drops::IP6_NO_NEIGHBOR => nodes::IP6_ND,
                    drops::IP6_NO_HEADROOM => crate::interface::nodes::ERROR_DROP,
                    _ => nodes::ICMP6_ERROR,
                };
                all_ok = false;
            }
        }
    }
    if all_ok { g.forward(v, crate::interface::nodes::INTERFACE_OUTPUT) } else { g.split(v) }
}

/// A next hop without a MAC: the packet leaves from `tx_if` (as the discard sample reports),
/// dropped as `no-neighbor` unless its hop limit would have dropped it first.
#[cold]
fn no_neighbor<F: L3Worker>(g: &mut Graph<F>, i: u32, tx_if: u16) -> Result<(), DropReason> {
    g.pool.meta_mut(i).tx_if = tx_if;
    match crate::l3::ipv6(&g.pool, i) {
        Some(ip) if ip.hop_limit() <= 1 => Err(drops::HOP_LIMIT_EXPIRED),
        _ => Err(drops::IP6_NO_NEIGHBOR),
    }
}

/// The rewrite toward a connected destination: its own MAC from the IPv6 neighbor table and
/// the output interface's.
#[cold]
fn glean_rewrite<F: L3Worker>(g: &Graph<F>, i: u32, tx_if: u16) -> Option<[u8; 12]> {
    let dst = crate::l3::ipv6(&g.pool, i)?.dst();
    let mac = g.features.l3().neighbors6.get(&(tx_if, dst))?;
    Some(crate::l3::shared::macs_toward(g, tx_if, mac.0))
}
