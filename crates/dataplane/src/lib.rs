//! vecflow's forwarding engine.
//!
//! Packets move through a graph of small nodes in vectors of up to 256 buffer indices. One
//! folder per job:
//! - [`runtime`]: buffers, vectors, the graph scheduler, counters, QSBR, snapshots, the TSC
//!   and ISA dispatch; it knows no protocol.
//! - [`datapath`]: each feature's per-worker state, the one `match` that runs a node, the
//!   workers' counters, and the worker threads, which poll the drivers and run vectors to
//!   completion.
//! - The features, each with its nodes: [`ethernet`], [`interface`], [`ip4`], [`ip6`],
//!   [`mpls`], [`l3`] (adjacencies and the FIB), [`neighbor`], [`flows`], [`sflow`], and
//!   [`drivers`] (one per kind of port).
//! - [`lcp`]: the Linux control plane, a TAP in a network namespace per interface.
//! - [`net`]: the vocabulary every feature shares (prefixes, MACs, the configuration error,
//!   table limits), below them all.
//! - [`config`]: the configuration model ([`Config`]) and its validation.
//! - [`control`]: the main thread's handle ([`Dataplane`]) and the command registry.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod config;
pub mod control;
pub mod datapath;
pub mod drivers;
pub mod ethernet;
pub mod flows;
pub mod interface;
pub mod ip4;
pub mod ip6;
pub mod l3;
pub mod lcp;
pub mod mpls;
pub mod neighbor;
pub mod net;
pub mod runtime;
pub mod sflow;

pub use config::Config;
pub use control::engine::Dataplane;
