//! `error-drop`: the end of every dropped frame. Counts it under its reason (set by the node that
//! dropped it) per input interface, charges the interface counter the reason maps to (ifInDiscards,
//! ifInErrors, ifInUnknownProtos on the input interface; ifOutDiscards or ifOutErrors on the output
//! interface), reports it as an sFlow discard sample when its interface has drop monitoring on, and
//! frees the buffer.

use crate::interface::DropClass;
use crate::interface::InterfaceCounters;
use crate::interface::InterfaceWorker;
use crate::interface::drops;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;

/// Processes one vector.
#[inline(never)]
pub fn run<F: InterfaceWorker>(g: &mut Graph<F>, v: VecHandle) {
    let c = &g.counters;
    for &i in g.vectors[v].indices() {
        let m = g.pool.meta(i);
        let reason = F::DROPS.get(usize::from(m.error)).unwrap_or(&F::DROPS[drops::UNSPECIFIED.index()]);
        c.error(m.rx_if, reason.id).add(1);
        match reason.class {
            DropClass::InDiscards => c.interface(m.rx_if).in_discards.add(1),
            DropClass::InErrors => c.interface(m.rx_if).in_errors.add(1),
            DropClass::InUnknownProtos => c.interface(m.rx_if).in_unknown_protos.add(1),
            DropClass::OutDiscards => c.interface(m.tx_if).out_discards.add(1),
            DropClass::OutErrors => c.interface(m.tx_if).out_errors.add(1),
            DropClass::Punt => {}
        }
    }
    g.features.sample_drops(&g.pool, &g.vectors[v], &g.counters);
    g.pool.free(g.vectors[v].indices());
    g.vectors.free(v);
}
