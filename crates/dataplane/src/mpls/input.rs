//! `mpls-input`: checks each MPLS frame has a label stack entry at `l3_offset` and that its
//! TTL is above 1 (`truncated`, `ttl-expired`), then sends it to `mpls-lookup`.

use crate::l3::L3Worker;
use crate::mpls::{drops, nodes};
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;

/// The top label stack entry of buffer `i`, if the frame holds one.
#[inline(always)]
pub fn top_label<F: L3Worker>(g: &Graph<F>, i: u32) -> Option<u32> {
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    g.pool.frame(i).get(l3..l3 + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// Processes one vector.
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    let mut all_ok = true;
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        match top_label(g, i) {
            Some(e) if e & 0xff > 1 => g.nexts[k] = nodes::MPLS_LOOKUP,
            Some(_) => {
                g.mark_drop(k, i, drops::MPLS_TTL_EXPIRED);
                all_ok = false;
            }
            None => {
                g.mark_drop(k, i, drops::MPLS_TRUNCATED);
                all_ok = false;
            }
        }
    }
    if all_ok { g.forward(v, nodes::MPLS_LOOKUP) } else { g.split(v) }
}
