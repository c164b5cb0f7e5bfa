//! The sFlow agent's dataplane side: samplers folded into the rx stage, per-worker sample
//! rings, and the agent that drains them into sFlow v5 datagrams.

pub mod config;

pub mod agent;
mod budget;
mod header;
pub mod live;
mod poll;
pub mod ring;
mod sampler;
mod send;

pub use budget::{DropBudget, REFILL, Refill, WorkerBudget};
pub use live::{LiveSettings, Settings};
pub use poll::Polling;
pub use sampler::{RX, SflowCounters, SflowStats, SflowWorker, TX, worker_seed};
