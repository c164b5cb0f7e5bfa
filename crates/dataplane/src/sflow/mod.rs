//! The sFlow agent's dataplane side: samplers folded into `ethernet-input` (rx) and
//! `interface-output` (tx), per-worker sample rings, the discard budget, counter polling, the
//! agent thread that drains the rings into sFlow v5 datagrams, the settings that change live,
//! and the `sflow` section of the configuration.

pub mod agent;
mod budget;
pub mod config;
mod header;
mod if_index;
pub mod live;
mod poll;
pub mod ring;
mod sampler;
mod send;

pub use budget::{DropBudget, REFILL, Refill, WorkerBudget};
pub use if_index::{IfIndexSource, IfIndices};
pub use live::{DataSource, LiveSettings, Settings};
pub use poll::Polling;
pub use sampler::{RX, SflowCounters, SflowStats, SflowWorker, TX, worker_seed};

use crate::interface::IfCounters;

/// What sFlow reads of one worker's counters: its samplers' counters by port (a sample's pool
/// sums them over every worker) and each interface's counters (counter samples). The worker's
/// counters (`datapath::WorkerCounters`) implement it; the samplers are generic over it, so
/// the forwarding path calls it without indirection.
pub trait PortCounters: Send + Sync + 'static {
    /// The samplers' counters of port `port`.
    fn sflow(&self, port: u16) -> &SflowCounters;
    /// Interface `index`'s counters.
    fn interface(&self, index: u16) -> &IfCounters;
}
