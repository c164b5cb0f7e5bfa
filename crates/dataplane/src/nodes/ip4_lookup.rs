//! `ip4-lookup`: longest-prefix match of each packet's destination in the FIB.
//!
//! The whole vector is looked up in two passes: the first reads every destination and
//! prefetches its tbl24 entry, the second resolves the entries (a second load for /24s split
//! into tbl8 groups). The adjacency and the matched prefix length go into the metadata.
//! Adjacency 0 (no route) drops as `no-route` through `icmp4-error`, adjacency 1 (our own
//! address) goes to `ip4-local`; everything else to `ip4-rewrite`.

use crate::errors::DropReason;
use crate::graph::{Graph, NodeId};
use crate::l3::ADJ_DROP;
use crate::vector::{VECTOR_SIZE, VecHandle};

/// Adjacency index of [`crate::l3::Adjacency::Local`].
const ADJ_LOCAL: u32 = 1;

/// Processes one vector.
pub fn run(g: &mut Graph, v: VecHandle) {
    let n = g.vectors[v].len();
    let mut dst = [0u32; VECTOR_SIZE];
    for (d, &i) in dst.iter_mut().zip(g.vectors[v].indices()) {
        let l3 = usize::from(g.pool.meta(i).l3_offset);
        // ip4-input guaranteed 20 header bytes at l3.
        let b = &g.pool.frame(i)[l3 + 16..l3 + 20];
        *d = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        g.fib.ip4.prefetch(*d);
    }
    let mut all_routed = true;
    for (k, &d) in dst[..n].iter().enumerate() {
        let i = g.vectors[v].indices()[k];
        let leaf = g.fib.ip4.lookup(d);
        let (adj, len) = leaf.map_or((ADJ_DROP, 0), |l| (l.adj, l.prefix_len));
        let m = g.pool.meta_mut(i);
        m.adj = adj;
        m.dst_prefix_len = len;
        match adj {
            ADJ_DROP => {
                g.mark_drop(k, i, DropReason::NoRoute);
                g.nexts[k] = NodeId::Icmp4Error;
            }
            ADJ_LOCAL => g.nexts[k] = NodeId::Ip4Local,
            _ => g.nexts[k] = NodeId::Ip4Rewrite,
        }
        all_routed &= adj > ADJ_LOCAL;
    }
    if all_routed { g.forward(v, NodeId::Ip4Rewrite) } else { g.split(v) }
}
