//! `mpls-input`: checks each MPLS frame has a label stack entry at `l3_offset` and that its
//! TTL is above 1 (`truncated`, `ttl-expired`), then sends it to `mpls-lookup`. A vector of
//! plain MPLS frames is checked for it inside `ethernet-input` ([`plain_frames`]).

use crate::ethernet::fused::{RxTally, plain_tally};
use crate::l3::L3Worker;
use crate::mpls::{drops, nodes};
use crate::runtime::buffer::BufferPool;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;
use wire::{EtherType, MacAddr};

/// The top label stack entry of buffer `i`, if the frame holds one.
#[inline(always)]
pub fn top_label<F: L3Worker>(g: &Graph<F>, i: u32) -> Option<u32> {
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    g.pool.frame(i).get(l3..l3 + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

/// True when `mpls` (the bytes from the label stack to the frame end) starts with a label
/// stack entry whose TTL is above 1: what `mpls-input` hands to `mpls-lookup`.
#[inline(always)]
fn fast_ok(mpls: &[u8]) -> bool {
    mpls.first_chunk::<4>().is_some_and(|e| e[3] > 1)
}

/// The fused `ethernet-input` → `mpls-input` pass, for frames received on an L3 interface with
/// MPLS and MAC `mac` that accepts frames of 14 to `max_frame` bytes: when every frame of
/// `indices` has such a size, `mac` or a group as its destination, the MPLS ethertype (no tag)
/// and a label stack entry at offset 14 that passes [`fast_ok`], returns what
/// `ethernet-input` counts of them; `None` as soon as one does not (the nodes then run one
/// after the other). One pass over the frames instead of one per node.
pub fn plain_frames(pool: &BufferPool, indices: &[u32], max_frame: u16, mac: MacAddr) -> Option<RxTally> {
    plain_tally(pool, indices, max_frame, mac, EtherType::MPLS, fast_ok)
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
