//! `mpls-lookup`: looks the top label up in the local-label table. A swap or pop entry goes
//! to `mpls-rewrite`; no entry drops as `no-label`. The entry goes into the metadata's
//! `label_entry`.

use crate::l3::L3Worker;
use crate::l3::RouteMeta;
use crate::mpls::input::top_label;
use crate::mpls::{drops, nodes};
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;

/// The local-label entry of the top label `e` (a label stack entry) and whether the packet
/// goes on with it: it has an entry.
#[inline(always)]
fn verdict<F: L3Worker>(g: &Graph<F>, e: u32) -> (u16, Result<(), DropReason>) {
    let entry = g.features.l3().labels.get(e >> 12);
    let verdict = match g.features.l3().entry(entry) {
        Some(_) => Ok(()),
        None => Err(drops::NO_LABEL),
    };
    (entry, verdict)
}

/// The bits of a label stack entry an entry's verdict depends on: the label.
#[inline(always)]
fn key(e: u32) -> u32 {
    e >> 12
}

/// Processes one vector: one pass that stores each packet's entry and, when some packet
/// cannot go on, a second pass that drops it under its reason. The first packet's label is
/// looked up once for the packets that share it; from the first
/// packet with another (a vector over several paths), each packet's is looked up (a branch on
/// whether it is the last one looked up would mispredict there).
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    let Some(&first) = g.vectors[v].indices().first() else { return };
    // mpls-input checked the entry is there.
    let e = top_label(g, first).unwrap_or(0);
    let (entry, verdict0) = verdict(g, e);
    let one = (key(e), entry, verdict0.is_ok());
    let (same, mut all_ok) = store_entries(g, v, 0, |_, e| (key(e) == one.0).then_some((one.1, one.2)));
    if same < g.vectors[v].len() {
        let (_, ok) = store_entries(g, v, same, |g, e| {
            let (entry, verdict) = verdict(g, e);
            Some((entry, verdict.is_ok()))
        });
        all_ok &= ok;
    }
    if all_ok { g.forward(v, nodes::MPLS_REWRITE) } else { drop_the_rest(g, v) }
}

/// Stores the entry of each packet of vector `v` from `from` on while `lookup` gives it for
/// the packet's top label (with whether the packet goes on with it). Returns where it
/// stopped and whether every packet it stored goes on.
#[inline(always)]
fn store_entries<F: L3Worker>(
    g: &mut Graph<F>,
    v: VecHandle,
    from: usize,
    lookup: impl Fn(&Graph<F>, u32) -> Option<(u16, bool)>,
) -> (usize, bool) {
    let mut all_ok = true;
    let n = g.vectors[v].len();
    for k in from..n {
        let i = g.vectors[v].indices()[k];
        let Some((entry, ok)) = lookup(g, top_label(g, i).unwrap_or(0)) else { return (k, all_ok) };
        if ok {
            g.pool.meta_mut(i).set_label_entry(entry);
        }
        all_ok &= ok;
    }
    (n, all_ok)
}

/// The second pass of [`run`]: each packet to `mpls-rewrite` or dropped under its reason.
#[cold]
fn drop_the_rest<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let e = top_label(g, i).unwrap_or(0);
        match verdict(g, e).1 {
            Ok(()) => g.nexts[k] = nodes::MPLS_REWRITE,
            Err(reason) => g.mark_drop(k, i, reason),
        }
    }
    g.split(v);
}
