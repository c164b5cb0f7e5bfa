//! `ip4-lookup`: longest-prefix match of each packet's destination in the FIB.
//!
//! The whole vector is looked up in passes: the first reads every destination and prefetches
//! its tbl24 entry, the next reads the tbl24 entries, and when some /24s are split into tbl8
//! groups their entries are prefetched and then read ([`crate::l3::fib::Fib::lookup_batch`]).
//! With VRFs, each packet is looked up in the table of its input interface's VRF
//! ([`crate::l3::vrf::VrfTables::lookup4`]); without, that costs one test per vector. The
//! adjacency and the matched prefix length go into the metadata.
//! A multipath route's value names a load-balance object: its packets take the adjacency of
//! their flow's bucket ([`crate::l3::shared::choose_paths`]) before they go on.
//! Adjacency 0 (no route) drops as `no-route` through `icmp4-error`, adjacency 1 (our own
//! address) goes to `ip4-local`, adjacencies 2–4 (reject routes) drop as `blackhole`, or as
//! `route-unreachable` and `route-prohibited` through `icmp4-error`; everything else goes to
//! `ip4-rewrite`.

use crate::ip4::{drops, nodes};
use crate::l3::L3Worker;
use crate::l3::RouteMeta;
use crate::l3::fib::Leaf;
use crate::l3::multipath::{LB, hash4};
use crate::l3::vrf::{LOOKUP, looked_up};
use crate::l3::{ADJ_DROP, ADJ_FIRST_ROUTED, ADJ_LOCAL, Reject};
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::vector::{VECTOR_SIZE, VecHandle};

/// The drop reasons of the reject routes, in [`Reject`] order.
const REJECTS: [DropReason; 3] = [drops::BLACKHOLE, drops::ROUTE_UNREACHABLE, drops::ROUTE_PROHIBITED];

/// Processes one vector.
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    let n = g.vectors[v].len();
    let mut dst = [0u32; VECTOR_SIZE];
    let mut entry = [0u32; VECTOR_SIZE];
    if g.features.l3().vrfs.is_empty() {
        for (d, &i) in dst.iter_mut().zip(g.vectors[v].indices()) {
            *d = destination(g, i);
            g.features.fibs().ip4.prefetch(*d);
        }
        g.features.fibs().ip4.lookup_batch(&dst[..n], &mut entry[..n]);
    } else {
        lookup_in_vrfs(g, v, &mut dst[..n], &mut entry[..n]);
    }
    // One compare per packet: an adjacency to rewrite toward, not a load-balance object.
    let mut plain = true;
    for (&e, &i) in entry[..n].iter().zip(g.vectors[v].indices()) {
        // A finished IPv4 walk ends on a leaf or on 0 (no route, `ADJ_DROP`).
        let (adj, prefix_len) = Leaf::decode_or_drop(e);
        let m = g.pool.meta_mut(i);
        m.set_adj(adj);
        m.set_dst_prefix_len(prefix_len);
        plain &= adj.wrapping_sub(ADJ_FIRST_ROUTED) < LOOKUP - ADJ_FIRST_ROUTED;
    }
    if plain {
        g.forward(v, nodes::IP4_REWRITE);
    } else {
        not_plain(g, v);
    }
}

/// The destination of each packet of `v` (into `dst`) and its lookup (into `entry`) in the
/// tables of its VRF ([`crate::l3::vrf::VrfTables::lookup4`]).
#[inline(never)]
fn lookup_in_vrfs<F: L3Worker>(g: &Graph<F>, v: VecHandle, dst: &mut [u32], entry: &mut [u32]) {
    let vrfs = &g.features.l3().vrfs;
    let mut vrf = [0u16; VECTOR_SIZE];
    for ((d, w), &i) in dst.iter_mut().zip(&mut vrf).zip(g.vectors[v].indices()) {
        *d = destination(g, i);
        *w = vrfs.of_packet(g.pool.meta(i));
    }
    vrfs.lookup4(&g.features.fibs().ip4, &vrf[..dst.len()], dst, entry);
}

/// The destination address of buffer `i` (host order), to which `ip4-input` guaranteed 20
/// header bytes at its `l3_offset`.
#[inline(always)]
fn destination<F: L3Worker>(g: &Graph<F>, i: u32) -> u32 {
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    let b = &g.pool.frame(i)[l3 + 16..l3 + 20];
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A vector with a multipath route, no route, a reject route or our own address: multipath packets take
/// their flow's path, then the vector goes on whole or split.
#[cold]
fn not_plain<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    // Leaks exist only where VRFs do.
    if !g.features.l3().vrfs.is_empty()
        && g.vectors[v].indices().iter().any(|&i| looked_up(g.pool.meta(i).adj()).is_some())
    {
        leak(g, v);
    }
    let (mut multipath, mut routed) = (false, true);
    for &i in g.vectors[v].indices() {
        let adj = g.pool.meta(i).adj();
        multipath |= adj & LB != 0;
        routed &= adj >= ADJ_FIRST_ROUTED;
    }
    if multipath {
        crate::l3::shared::choose_paths(g, v, hash4);
    }
    if routed {
        g.forward(v, nodes::IP4_REWRITE);
    } else {
        split_unrouted(g, v);
    }
}

/// Looks each packet of `v` whose route is a lookup in another VRF up again, there.
#[cold]
fn leak<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let Some(vrf) = looked_up(g.pool.meta(i).adj()) else { continue };
        let dst = std::net::Ipv4Addr::from(destination(g, i)).into();
        let (adj, len) = g.features.l3().vrfs.second_lookup(g.features.fibs(), vrf, dst);
        let m = g.pool.meta_mut(i);
        m.set_adj(adj);
        m.set_dst_prefix_len(len);
    }
}

/// Sends each packet of `v` where its adjacency says: no route drops as `no-route` through
/// `icmp4-error`, our own address to `ip4-local`, a reject route drops under its reason
/// (through `icmp4-error` when it answers), the rest to `ip4-rewrite`.
#[cold]
fn split_unrouted<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        match g.pool.meta(i).adj() {
            ADJ_DROP => {
                g.mark_drop(k, i, drops::NO_ROUTE);
                g.nexts[k] = nodes::ICMP4_ERROR;
            }
            ADJ_LOCAL => g.nexts[k] = nodes::IP4_LOCAL,
            adj => match Reject::of_adj(adj) {
                Some(r) => crate::l3::shared::mark_reject(g, k, i, r, &REJECTS, nodes::ICMP4_ERROR),
                None => g.nexts[k] = nodes::IP4_REWRITE,
            },
        }
    }
    g.split(v);
}
