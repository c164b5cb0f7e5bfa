//! `mpls-lookup`: looks the top label up in the local-label table. A swap entry goes to
//! `mpls-rewrite`; a pop entry too when the label is the bottom of the stack (the only pop
//! supported: `pop-not-eos` otherwise); no entry drops as `no-label`. The entry goes into the
//! metadata's `label_entry`.

use super::mpls_input::top_label;
use crate::errors::DropReason;
use crate::graph::{Graph, NodeId};
use crate::l3::LabelEntry;
use crate::vector::VecHandle;

/// The local-label entry of the top label `e` (a label stack entry) and whether the packet
/// goes on with it: a swap, or a pop at the bottom of the stack.
#[inline(always)]
fn verdict(g: &Graph, e: u32) -> (u16, Result<(), DropReason>) {
    let entry = g.tables.l3.labels.get(e >> 12);
    let verdict = match g.tables.l3.entry(entry) {
        Some(LabelEntry::Swap { .. }) => Ok(()),
        Some(LabelEntry::Pop { .. }) if e & 0x100 != 0 => Ok(()),
        Some(LabelEntry::Pop { .. }) => Err(DropReason::PopNotEos),
        None => Err(DropReason::NoLabel),
    };
    (entry, verdict)
}

/// Processes one vector: one pass that stores each packet's entry (looked up once for a run of
/// packets with the same label and bottom-of-stack bit) and, when some packet cannot go on, a
/// second pass that drops it under its reason.
pub fn run(g: &mut Graph, v: VecHandle) {
    let mut all_ok = true;
    // The label and bottom-of-stack bit looked up last (bits 8–31 of the entry), its verdict.
    let mut cached: Option<(u32, u16, bool)> = None;
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        // mpls-input checked the entry is there.
        let e = top_label(g, i).unwrap_or(0);
        let (entry, ok) = match cached {
            Some((key, entry, ok)) if key == e >> 8 & !0xe => (entry, ok),
            _ => {
                let (entry, verdict) = verdict(g, e);
                cached = Some((e >> 8 & !0xe, entry, verdict.is_ok()));
                (entry, verdict.is_ok())
            }
        };
        if ok {
            g.pool.meta_mut(i).label_entry = entry;
        }
        all_ok &= ok;
    }
    if all_ok { g.forward(v, NodeId::MplsRewrite) } else { drop_the_rest(g, v) }
}

/// The second pass of [`run`]: each packet to `mpls-rewrite` or dropped under its reason.
#[cold]
fn drop_the_rest(g: &mut Graph, v: VecHandle) {
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let e = top_label(g, i).unwrap_or(0);
        match verdict(g, e).1 {
            Ok(()) => g.nexts[k] = NodeId::MplsRewrite,
            Err(reason) => g.mark_drop(k, i, reason),
        }
    }
    g.split(v);
}
