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
