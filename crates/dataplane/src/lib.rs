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
pub mod flows;
pub mod graph;
pub mod hugemem;
pub mod interface;
pub mod isa;
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

/// Starts loading the cache line holding `p` into the cache: a hint with no effect on memory,
/// which never faults whatever `p` is.
#[inline(always)]
pub(crate) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch has no memory effects and does not fault on any address.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
