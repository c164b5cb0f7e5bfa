//! Graph nodes, one module each.

pub mod arp_input;
pub mod error_drop;
pub mod ethernet_input;
pub mod icmp4_error;
pub mod interface_output;
pub mod ip4_arp;
pub mod ip4_frag;
pub mod ip4_input;
pub mod ip4_local;
pub mod ip4_lookup;
pub mod ip4_rewrite;
pub mod ip6_input;
pub mod ip6_lookup;
pub mod ip6_rewrite;
pub mod l2_xconnect;
pub mod mpls_input;
pub mod mpls_lookup;
pub mod mpls_rewrite;

use crate::buffer::BufferPool;
use crate::errors::DropReason;
use crate::graph::{Graph, NodeId};
use crate::l3::LabelStack;
use crate::vector::VecHandle;
use wire::EtherType;

/// What `ip4-input` and `ip6-input` do with a vector: one branch-free pass with `fast_ok` over
/// each packet's network header (the bytes from `l3_offset` to the frame end); when every
/// packet passes, the vector goes to `next` unchanged, otherwise a second pass names each bad
/// packet's reason with `check`.
#[inline(always)]
pub(crate) fn validate(
    g: &mut Graph,
    v: VecHandle,
    fast_ok: impl Fn(&[u8]) -> bool,
    check: fn(&[u8]) -> Result<(), DropReason>,
    truncated: DropReason,
    next: NodeId,
) {
    let mut all_ok = true;
    for &i in g.vectors[v].indices() {
        let l3 = usize::from(g.pool.meta(i).l3_offset);
        all_ok &= g.pool.frame(i).get(l3..).is_some_and(&fast_ok);
    }
    if all_ok {
        g.forward(v, next);
    } else {
        classify_each(g, v, check, truncated, next);
    }
}

/// The second pass of [`validate`]: each packet to `next` or dropped for `check`'s reason
/// (`truncated` when the frame ends before its network header).
#[cold]
fn classify_each(
    g: &mut Graph,
    v: VecHandle,
    check: fn(&[u8]) -> Result<(), DropReason>,
    truncated: DropReason,
    next: NodeId,
) {
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let l3 = usize::from(g.pool.meta(i).l3_offset);
        match g.pool.frame(i).get(l3..).map_or(Err(truncated), check) {
            Ok(()) => g.nexts[k] = next,
            Err(reason) => g.mark_drop(k, i, reason),
        }
    }
    g.split(v);
}

/// Pushes `push` in front of the packet in buffer `i` (each label with `ttl`, the last one
/// bottom of stack), makes the ethertype MPLS and moves `l3_offset` past the labels. Returns
/// the frame, its MACs still to write; `None`, the frame unchanged, when the driver left too
/// little headroom (the generator leaves 64 bytes, 8 labels).
pub(crate) fn push_labels<'a>(pool: &'a mut BufferPool, i: u32, push: &LabelStack, ttl: u8) -> Option<&'a mut [u8]> {
    let n = push.labels().len();
    let f = pool.grow_head(i, 4 * n)?;
    for (j, &label) in push.labels().iter().enumerate() {
        let bos = if j + 1 == n { 0x100 } else { 0 };
        f[14 + 4 * j..18 + 4 * j].copy_from_slice(&((label << 12) | bos | u32::from(ttl)).to_be_bytes());
    }
    f[12..14].copy_from_slice(&EtherType::MPLS.to_be_bytes());
    pool.meta_mut(i).l3_offset += 4 * n as u16;
    Some(pool.frame_mut(i))
}

/// The rewrite toward a neighbor on `tx_if` with `mac`: its MAC as destination, the
/// interface's own as source.
pub(crate) fn macs_toward(g: &Graph, tx_if: u16, mac: [u8; 6]) -> [u8; 12] {
    let mut r = [0u8; 12];
    r[..6].copy_from_slice(&mac);
    r[6..].copy_from_slice(&g.tables.get(tx_if).mac.0);
    r
}
