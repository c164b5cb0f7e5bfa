//! `ip6-lookup`: longest-prefix match of each packet's destination in the IPv6 FIB.
//!
//! A walk is one dependent load per level (tbl24, then one per 8 bits beyond /24 of the
//! longest prefix on the path), so the walks of the whole vector go level by level: each
//! pass resolves one level of every walk still going and prefetches the next one, and the
//! cache misses of 256 walks overlap instead of adding up. The adjacency and the matched
//! prefix length go into the metadata. Adjacency 0 drops as `no-route`, adjacency 1 (our own
//! address) as `ip6-local`; packets to forward are checked for what is never forwarded
//! (RFC 4291): a multicast destination (`multicast`), a link-local source or destination
//! (`link-local`), source `::` (`source-unspecified`). The rest go to `ip6-rewrite`.

use crate::errors::DropReason;
use crate::fib::{Leaf, is_ext};
use crate::graph::{Graph, NodeId};
use crate::l3::ADJ_DROP;
use crate::vector::{VECTOR_SIZE, VecHandle};

/// Adjacency index of [`crate::l3::Adjacency::Local`].
const ADJ_LOCAL: u32 = 1;

/// True when a packet from `src` to `dst` (big-endian `u128`s) may not be forwarded whatever
/// the route: multicast or link-local destination, link-local or unspecified source.
#[inline(always)]
fn never_forwarded(src: u128, dst: u128) -> bool {
    let link_local = |a: u128| (a >> 118) == 0x3fa; // fe80::/10
    (dst >> 120 == 0xff) | link_local(dst) | link_local(src) | (src == 0)
}

/// Why a packet to forward (with [`never_forwarded`] true) is dropped.
#[cold]
fn never_forwarded_reason(src: u128, dst: u128) -> DropReason {
    let link_local = |a: u128| (a >> 118) == 0x3fa;
    if dst >> 120 == 0xff {
        DropReason::Ip6Multicast
    } else if link_local(dst) || link_local(src) {
        DropReason::Ip6LinkLocal
    } else {
        DropReason::Ip6SourceUnspecified
    }
}

/// Processes one vector.
pub fn run(g: &mut Graph, v: VecHandle) {
    let n = g.vectors[v].len();
    let fib = g.fib.ip6.clone();
    let (mut src, mut dst, mut e) = ([0u128; VECTOR_SIZE], [0u128; VECTOR_SIZE], [0u32; VECTOR_SIZE]);
    for (k, &i) in g.vectors[v].indices().iter().enumerate() {
        let l3 = usize::from(g.pool.meta(i).l3_offset);
        // ip6-input guaranteed 40 header bytes at l3.
        let h = &g.pool.frame(i)[l3 + 8..l3 + 40];
        src[k] = u128::from_be_bytes(h[..16].try_into().expect("16 bytes"));
        dst[k] = u128::from_be_bytes(h[16..].try_into().expect("16 bytes"));
        fib.prefetch(dst[k]);
    }
    let mut going = false;
    for k in 0..n {
        e[k] = fib.entry24(dst[k]);
        if is_ext(e[k]) {
            fib.prefetch_step(e[k], dst[k], 24);
            going = true;
        }
    }
    let mut depth = 24;
    while going && depth < 128 {
        going = false;
        for k in 0..n {
            if is_ext(e[k]) {
                e[k] = fib.step(e[k], dst[k], depth);
                if is_ext(e[k]) && depth + 8 < 128 {
                    fib.prefetch_step(e[k], dst[k], depth + 8);
                    going = true;
                }
            }
        }
        depth += 8;
    }
    let mut all_routed = true;
    for k in 0..n {
        let i = g.vectors[v].indices()[k];
        let (adj, len) = Leaf::decode(e[k]).map_or((ADJ_DROP, 0), |l| (l.adj, l.prefix_len));
        let m = g.pool.meta_mut(i);
        m.adj = adj;
        m.dst_prefix_len = len;
        let odd = never_forwarded(src[k], dst[k]);
        match adj {
            ADJ_DROP => g.mark_drop(k, i, DropReason::Ip6NoRoute),
            ADJ_LOCAL => g.mark_drop(k, i, DropReason::Ip6Local),
            _ if odd => g.mark_drop(k, i, never_forwarded_reason(src[k], dst[k])),
            _ => g.nexts[k] = NodeId::Ip6Rewrite,
        }
        all_routed &= (adj > ADJ_LOCAL) & !odd;
    }
    if all_routed { g.forward(v, NodeId::Ip6Rewrite) } else { g.split(v) }
}
