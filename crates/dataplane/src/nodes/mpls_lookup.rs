//! `mpls-lookup`: looks the top label up in the local-label table. A swap entry goes to
//! `mpls-rewrite`; a pop entry too when the label is the bottom of the stack (the only pop
//! supported: `pop-not-eos` otherwise); no entry drops as `no-label`. The entry goes into the
//! metadata's `label_entry`.

use super::mpls_input::top_label;
use crate::errors::DropReason;
use crate::graph::{Graph, NodeId};
use crate::l3::LabelEntry;
use crate::vector::VecHandle;

/// Processes one vector.
pub fn run(g: &mut Graph, v: VecHandle) {
    let mut all_ok = true;
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        // mpls-input checked the entry is there.
        let e = top_label(g, i).unwrap_or(0);
        let label = e >> 12;
        let bos = e & 0x100 != 0;
        let entry = g.tables.l3.labels.get(label);
        let verdict = match g.tables.l3.entry(entry) {
            Some(LabelEntry::Swap { .. }) => Ok(()),
            Some(LabelEntry::Pop { .. }) if bos => Ok(()),
            Some(LabelEntry::Pop { .. }) => Err(DropReason::PopNotEos),
            None => Err(DropReason::NoLabel),
        };
        match verdict {
            Ok(()) => {
                g.pool.meta_mut(i).label_entry = entry;
                g.nexts[k] = NodeId::MplsRewrite;
            }
            Err(reason) => {
                g.mark_drop(k, i, reason);
                all_ok = false;
            }
        }
    }
    if all_ok { g.forward(v, NodeId::MplsRewrite) } else { g.split(v) }
}
