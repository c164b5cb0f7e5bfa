//! The runtime: buffers, vectors, the graph scheduler, counters, drop reasons, QSBR, snapshots,
//! published values, the packet tracer, huge pages, the TSC, token buckets, ISA dispatch and CPU
//! placement.
//! It knows the closed lists of node ids and drop reasons and the buffer metadata every node
//! shares, and nothing of any protocol, route or sample (`tests/layout.rs` checks its imports).

pub mod buffer;
pub mod counter;
pub mod cpu;
pub mod drops;
pub mod graph;
pub mod hugemem;
pub mod isa;
pub mod privileges;
pub mod published;
pub mod qsbr;
pub mod rate;
pub mod snapshot;
pub(crate) mod stats;
pub(crate) mod sync;
pub mod trace;
pub mod tsc;
pub mod vector;

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
