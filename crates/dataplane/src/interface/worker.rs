//! What the nodes that read interfaces need of a worker, as traits the composition of the
//! features (`datapath`) implements: the snapshot's interface table and the per-interface
//! and per-reason counters. Every node that forwards builds on [`InterfaceWorker`].

use super::{DropInfo, IfCounters, InterfaceTable, TxSampling};
use crate::runtime::counter::Counter;
use crate::runtime::drops::DropReason;
use crate::runtime::graph::{CountsNodes, Features, Graph};
use std::sync::Arc;

/// The part of the workers' snapshot every node reads: the interfaces.
pub trait InterfaceTables {
    /// Each interface's facts, the VLANs and the addresses.
    fn interfaces(&self) -> &InterfaceTable;
}

/// The counters kept per interface and per (input interface, drop reason).
pub trait InterfaceCounters: CountsNodes {
    /// The counters of interface `index` (indices beyond the table share slot 0, "unknown").
    fn interface(&self, index: u16) -> &IfCounters;

    /// The drop counter of `(input interface, reason)`.
    fn error(&self, rx_if: u16, reason: DropReason) -> &Counter;
}

/// A worker's state as the nodes that read interfaces see it.
pub trait InterfaceWorker: Features<Counters: InterfaceCounters> + TxSampling {
    /// The snapshot the worker forwards with (taken between vectors).
    type Snapshot: InterfaceTables;

    /// Every drop reason the features declare, at its index (`error-drop` counts by them).
    const DROPS: &'static [DropInfo];

    /// The current snapshot; a node clones the `Arc` to read it while it changes buffers.
    fn snapshot(&self) -> &Arc<Self::Snapshot>;

    /// The current snapshot's interface table.
    #[inline(always)]
    fn interfaces(&self) -> &InterfaceTable {
        self.snapshot().interfaces()
    }
}

/// Counts the packet in buffer `i` as taken by this router (answered in place): `rx_local`
/// of its input interface, and not forwarded for sFlow's sample pool. Call it while the
/// buffer's metadata still names the input interface.
#[inline]
pub fn consumed<F: InterfaceWorker>(g: &Graph<F>, i: u32) {
    let rx_if = g.pool.meta(i).rx_if;
    g.counters.interface(rx_if).rx_local.add(1);
    g.features.not_forwarded(rx_if, &g.counters);
}
