//! `ip6-lookup`: longest-prefix match of each packet's destination in the IPv6 FIB.
//!
//! A walk is one dependent load per level (the first level, then a fixed number of 64-byte
//! nodes of its slot's tree, usually a root and a leaf), so the walks of the whole
//! vector go level by level ([`crate::l3::fib::Fib6::lookup_batch`]): the cache misses of 256
//! walks overlap instead of adding up. With VRFs, the packets of each VRF are looked up as
//! one batch in its table ([`crate::l3::vrf::VrfTables::lookup6`]). The adjacency and the matched
//! prefix length go into the metadata; a multipath route's packets then take the adjacency of
//! their flow's bucket ([`crate::l3::shared::choose_paths`]). Adjacency 0 drops as `no-route` through `icmp6-error`,
//! adjacency 1 (our own address) goes to `ip6-local`; packets to forward are checked for what
//! is never forwarded (RFC 4291): a multicast destination (`multicast`), a link-local source or
//! destination (`link-local`), source `::` (`source-unspecified`). Of those, the ones for this
//! router go to `ip6-local` too: to a link-local address of the input interface, to
//! all-nodes, all-routers or a solicited-node group. The rest go to `ip6-rewrite`.

use crate::ip6::{drops, nodes};
use crate::l3::L3Worker;
use crate::l3::RouteMeta;
use crate::l3::fib::Leaf;
use crate::l3::multipath::{LB, hash6};
use crate::l3::vrf::{LOOKUP, looked_up};
use crate::l3::{ADJ_DROP, ADJ_FIRST_ROUTED, ADJ_LOCAL, Reject};
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::vector::{VECTOR_SIZE, VecHandle};
use std::net::Ipv6Addr;
use wire::icmpv6;

/// The drop reasons of the reject routes, in [`Reject`] order.
const REJECTS: [DropReason; 3] = [drops::IP6_BLACKHOLE, drops::IP6_ROUTE_UNREACHABLE, drops::IP6_ROUTE_PROHIBITED];

/// True for a link-local address (fe80::/10), as a big-endian `u128`.
fn link_local(a: u128) -> bool {
    a >> 118 == 0x3fa
}

/// What [`maybe_never_forwarded`] keeps of a packet's first address bytes, `src8` and
/// `dst8`: the largest destination byte, and the smallest source byte plus 2 (wrapping), over
/// the packets of a vector.
#[derive(Clone, Copy)]
struct FirstBytes {
    dst_max: u8,
    src_min: u8,
}

impl FirstBytes {
    /// Before any packet.
    const NONE: FirstBytes = FirstBytes { dst_max: 0, src_min: u8::MAX };

    /// Takes in a packet's first address bytes: two compares and moves.
    #[inline(always)]
    fn add(self, src8: u8, dst8: u8) -> FirstBytes {
        FirstBytes { dst_max: self.dst_max.max(dst8), src_min: self.src_min.min(src8.wrapping_add(2)) }
    }

    /// True when one of the packets may be one [`never_forwarded`] stops: a cheap superset
    /// (destinations in fe00::/7, which takes in link-local, site-local and multicast;
    /// sources in fe00::/7 or ::/8, which takes in link-local and `::`), which [`split`]
    /// checks exactly.
    #[inline(always)]
    fn maybe_never_forwarded(self) -> bool {
        (self.dst_max >= 0xfe) | (self.src_min < 3)
    }
}

/// Why a packet from `src` to `dst` (big-endian `u128`s) may not be forwarded whatever the
/// route, if it may not: a multicast or link-local destination, a link-local or unspecified
/// source.
fn never_forwarded(src: u128, dst: u128) -> Option<DropReason> {
    if dst >> 120 == 0xff {
        Some(drops::IP6_MULTICAST)
    } else if link_local(dst) || link_local(src) {
        Some(drops::IP6_LINK_LOCAL)
    } else if src == 0 {
        Some(drops::IP6_SOURCE_UNSPECIFIED)
    } else {
        None
    }
}

/// True when buffer `i`, to a multicast or link-local `dst`, is for this router: to a
/// link-local address of its input interface, to all-nodes, all-routers or a solicited-node
/// group (`ip6-local` checks whose); with linux-cp on, to any link-local scope group
/// (ff02::/16: OSPFv3, RIPng, MLD, …), which goes up the TAP.
#[cold]
fn for_us<F: L3Worker>(g: &Graph<F>, i: u32, dst: &[u8; 16]) -> bool {
    let dst = Ipv6Addr::from(*dst);
    (g.features.has_host() && dst.segments()[0] == 0xff02)
        || dst == icmpv6::ALL_NODES
        || dst == icmpv6::ALL_ROUTERS
        || icmpv6::is_solicited_node(dst)
        || g.features.interfaces().is_own_address6(g.pool.meta(i).rx_if, dst)
}

/// Processes one vector. The common case (every packet routed, none of them to check further)
/// costs a header read, a lookup and two metadata stores per packet; the rest is in
/// [`split`], which looks at each packet again.
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    let n = g.vectors[v].len();
    let fib = g.features.fibs().ip6.clone();
    let mut dst = [[0u8; 16]; VECTOR_SIZE];
    let mut first = FirstBytes::NONE;
    for (d, &i) in dst.iter_mut().zip(g.vectors[v].indices()) {
        let l3 = usize::from(g.pool.meta(i).l3_offset);
        // ip6-input guaranteed 40 header bytes at l3.
        let h: &[u8; 32] = g.pool.frame(i)[l3 + 8..l3 + 40].try_into().expect("32 bytes");
        *d = h[16..].try_into().expect("16 bytes");
        fib.prefetch(d);
        first = first.add(h[0], h[16]);
    }
    let odd = first.maybe_never_forwarded();
    let mut e = [0u32; VECTOR_SIZE];
    if g.features.l3().vrfs.is_empty() {
        fib.lookup_batch(g.isa, &dst[..n], &mut e[..n]);
    } else {
        lookup_in_vrfs(g, v, &dst[..n], &mut e[..n]);
    }
    // One compare per packet: an adjacency to rewrite toward, not a load-balance object.
    let mut plain = !odd;
    for (&e, &i) in e[..n].iter().zip(g.vectors[v].indices()) {
        let (adj, len) = Leaf::decode_or_drop(e);
        let m = g.pool.meta_mut(i);
        m.set_adj(adj);
        m.set_dst_prefix_len(len);
        plain &= adj.wrapping_sub(ADJ_FIRST_ROUTED) < LOOKUP - ADJ_FIRST_ROUTED;
    }
    if plain {
        g.forward(v, nodes::IP6_REWRITE);
        return;
    }
    // Leaks exist only where VRFs do.
    if !g.features.l3().vrfs.is_empty()
        && g.vectors[v].indices().iter().any(|&i| looked_up(g.pool.meta(i).adj()).is_some())
    {
        leak(g, v, &dst);
    }
    // A multipath value goes where its adjacency would (it is above ADJ_LOCAL): only the
    // adjacency changes.
    if g.vectors[v].indices().iter().any(|&i| g.pool.meta(i).adj() & LB != 0) {
        crate::l3::shared::choose_paths(g, v, hash6);
    }
    if !odd && g.vectors[v].indices().iter().all(|&i| g.pool.meta(i).adj() >= ADJ_FIRST_ROUTED) {
        g.forward(v, nodes::IP6_REWRITE);
    } else {
        split(g, v, &dst);
    }
}

/// The lookup of each packet of `v` (destinations `dst`, results into `e`) in the tables of
/// its VRF ([`crate::l3::vrf::VrfTables::lookup6`]).
#[inline(never)]
fn lookup_in_vrfs<F: L3Worker>(g: &Graph<F>, v: VecHandle, dst: &[[u8; 16]], e: &mut [u32]) {
    let vrfs = &g.features.l3().vrfs;
    let mut vrf = [0u16; VECTOR_SIZE];
    for (w, &i) in vrf.iter_mut().zip(g.vectors[v].indices()) {
        *w = vrfs.of_packet(g.pool.meta(i));
    }
    vrfs.lookup6(g.isa, &g.features.fibs().ip6, &vrf[..dst.len()], dst, e);
}

/// Looks each packet of `v` (destinations `dst`) whose route is a lookup in another VRF up
/// again, there.
#[cold]
fn leak<F: L3Worker>(g: &mut Graph<F>, v: VecHandle, dst: &[[u8; 16]; VECTOR_SIZE]) {
    for (k, d) in dst.iter().enumerate().take(g.vectors[v].len()) {
        let i = g.vectors[v].indices()[k];
        let Some(vrf) = looked_up(g.pool.meta(i).adj()) else { continue };
        let (adj, len) = g.features.l3().vrfs.second_lookup(g.features.fibs(), vrf, Ipv6Addr::from(*d).into());
        let m = g.pool.meta_mut(i);
        m.set_adj(adj);
        m.set_dst_prefix_len(len);
    }
}

/// Sends each packet of `v` (destinations `dst`, adjacencies in the metadata) where it goes:
/// our own address to `ip6-local`, what is never forwarded to `ip6-local` when it is for us
/// and to its drop otherwise, no route to `icmp6-error`, the rest to `ip6-rewrite`.
#[cold]
fn split<F: L3Worker>(g: &mut Graph<F>, v: VecHandle, dst: &[[u8; 16]; VECTOR_SIZE]) {
    for (k, d) in dst.iter().enumerate().take(g.vectors[v].len()) {
        let i = g.vectors[v].indices()[k];
        let l3 = usize::from(g.pool.meta(i).l3_offset);
        let s: [u8; 16] = g.pool.frame(i)[l3 + 8..l3 + 24].try_into().expect("16 bytes");
        match (g.pool.meta(i).adj(), never_forwarded(u128::from_be_bytes(s), u128::from_be_bytes(*d))) {
            (ADJ_LOCAL, _) => g.nexts[k] = nodes::IP6_LOCAL,
            (_, Some(reason)) => {
                if for_us(g, i, d) {
                    g.nexts[k] = nodes::IP6_LOCAL;
                } else {
                    g.mark_drop(k, i, reason);
                }
            }
            (ADJ_DROP, None) => {
                g.mark_drop(k, i, drops::IP6_NO_ROUTE);
                g.nexts[k] = nodes::ICMP6_ERROR;
            }
            (adj, None) => match Reject::of_adj(adj) {
                Some(r) => crate::l3::shared::mark_reject(g, k, i, r, &REJECTS, nodes::ICMP6_ERROR),
                None => g.nexts[k] = nodes::IP6_REWRITE,
            },
        }
    }
    g.split(v);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever the first 16 bits of either address and the rest, a packet never forwarded
    /// makes the fast check send its vector to `split`, alone or among routable packets.
    #[test]
    fn the_fast_check_takes_in_every_packet_never_forwarded() {
        let routable = u128::from(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
        let first = |src: u128, dst: u128| FirstBytes::NONE.add((src >> 120) as u8, (dst >> 120) as u8);
        let plain = first(routable, routable);
        assert!(!plain.maybe_never_forwarded(), "global unicast both ways is forwarded at once");
        for top in 0..=u16::MAX {
            for rest in [0, 1, u128::MAX >> 16] {
                let a = u128::from(top) << 112 | rest;
                for (src, dst) in [(a, routable), (routable, a)] {
                    if never_forwarded(src, dst).is_some() {
                        let alone = first(src, dst);
                        let among = plain.add((src >> 120) as u8, (dst >> 120) as u8);
                        assert!(alone.maybe_never_forwarded() && among.maybe_never_forwarded(), "{src:x} -> {dst:x}");
                    }
                }
            }
        }
    }
}
