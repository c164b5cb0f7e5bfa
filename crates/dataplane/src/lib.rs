//! vecflow's forwarding engine.
//!
//! Packets move through a graph of small nodes in vectors of up to 256 buffer indices. Each
//! worker thread owns its buffers ([`buffer`]), vectors ([`vector`]) and rx queues, and runs
//! every vector to completion ([`graph`], [`worker`]). Nodes live in [`nodes`], drivers in
//! [`drivers`]. The main thread builds and reads it all through [`engine::Dataplane`] and shows
//! it through the command registry ([`cli`]). Configuration is [`config::Config`].

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod buffer;
pub mod change;
pub mod cli;
pub mod config;
pub mod counter;
pub mod drivers;
pub mod engine;
pub mod errors;
pub mod fib;
pub mod graph;
pub mod hugemem;
pub mod interface;
pub mod l3;
pub mod neighbor;
pub mod nodes;
pub mod published;
pub mod punt;
pub mod qsbr;
pub mod sflow;
pub mod snapshot;
mod stats;
mod sync;
pub mod trace;
pub mod tsc;
pub mod vector;
pub mod worker;

pub use config::Config;
pub use engine::Dataplane;
