//! Everything one worker counts, shared read-only with the main thread: the runtime's per-node
//! counters and each feature's counters, side by side.

use super::registry::{N_NODES, N_REASONS};
use crate::drivers::generator::GenCounters;
use crate::flows::{FlowCacheCounters, MAX_FLOWS};
use crate::interface::IfCounters;
use crate::neighbor::punt::PuntCounters;
use crate::net::MAX_INTERFACES;
use crate::runtime::counter::Counter;
use crate::runtime::drops::DropReason;
use crate::runtime::graph::{CountsNodes, LoopCounters, NodeCounters, NodeId};
use crate::runtime::trace::TraceShared;
use crate::sflow::{PortCounters, SflowCounters};

/// Everything a worker counts, shared read-only with the main thread.
pub struct WorkerCounters {
    /// Per node, indexed by `NodeId as usize`.
    pub nodes: Vec<NodeCounters>,
    /// Per interface, indexed by interface index.
    pub ifs: Vec<IfCounters>,
    /// Per input interface and drop reason: `errors[if_index * N_REASONS + reason]`.
    pub errors: Vec<Counter>,
    /// Generator and sink totals.
    pub generator: GenCounters,
    /// sFlow samplers, per data source (physical port index).
    pub sflow: Vec<SflowCounters>,
    /// Packets the worker made itself and events it reported.
    pub punt: PuntCounters,
    /// Packets each flow rule matched, by rule id.
    pub flow_hits: Vec<Counter>,
    /// What the worker's megaflow cache did.
    pub flow_cache: FlowCacheCounters,
    /// Loop timing.
    pub looping: LoopCounters,
    /// Trace requests from the main thread and the traces finished.
    pub trace: TraceShared,
}

impl WorkerCounters {
    /// All counters at zero.
    pub fn new() -> Self {
        Self {
            nodes: (0..N_NODES).map(|_| NodeCounters::default()).collect(),
            ifs: (0..MAX_INTERFACES).map(|_| IfCounters::default()).collect(),
            errors: (0..MAX_INTERFACES * N_REASONS).map(|_| Counter::default()).collect(),
            generator: GenCounters::default(),
            sflow: (0..MAX_INTERFACES).map(|_| SflowCounters::default()).collect(),
            punt: Default::default(),
            flow_hits: (0..MAX_FLOWS).map(|_| Counter::default()).collect(),
            flow_cache: FlowCacheCounters::default(),
            looping: LoopCounters::default(),
            trace: Default::default(),
        }
    }

    /// The drop counter of `(input interface, reason)`.
    #[inline(always)]
    pub fn error(&self, rx_if: u16, reason: DropReason) -> &Counter {
        &self.errors[(rx_if as usize % MAX_INTERFACES) * N_REASONS + reason.index()]
    }

    /// The sFlow sampler counters of data source `port`.
    #[inline(always)]
    pub fn sflow(&self, port: u16) -> &SflowCounters {
        self.sflow.get(port as usize).unwrap_or(&self.sflow[0])
    }

    /// The counters of interface `index` (indices beyond the table share slot 0, "unknown").
    #[inline(always)]
    pub fn interface(&self, index: u16) -> &IfCounters {
        self.ifs.get(index as usize).unwrap_or(&self.ifs[0])
    }
}

impl Default for WorkerCounters {
    fn default() -> Self {
        Self::new()
    }
}

impl CountsNodes for WorkerCounters {
    #[inline(always)]
    fn node(&self, node: NodeId) -> &NodeCounters {
        &self.nodes[node.index()]
    }
}

impl PortCounters for WorkerCounters {
    #[inline(always)]
    fn sflow(&self, port: u16) -> &SflowCounters {
        WorkerCounters::sflow(self, port)
    }

    #[inline(always)]
    fn interface(&self, index: u16) -> &IfCounters {
        WorkerCounters::interface(self, index)
    }
}
