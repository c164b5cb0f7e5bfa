//! Counters a worker writes and the main thread reads.
//!
//! The owning worker is the only writer, so an increment is a relaxed load plus a relaxed store
//! (a plain `mov`, never a locked `fetch_add`); readers on other threads use relaxed loads.
//! Using atomics (instead of plain integers) keeps the cross-thread reads free of data races.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A single-writer 64-bit counter.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`. Only the owning worker may call this (single writer).
    #[inline(always)]
    pub fn add(&self, n: u64) {
        self.0.store(self.0.load(Relaxed).wrapping_add(n), Relaxed);
    }

    /// Reads the current value (any thread).
    #[inline(always)]
    pub fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }

    /// Overwrites the value. Only the owning worker, or anyone while the worker is stopped.
    pub fn set(&self, v: u64) {
        self.0.store(v, Relaxed);
    }
}

/// Aligns `T` to its own cache lines so that two workers' data never share a line.
#[derive(Debug, Default)]
#[repr(align(64))]
pub struct CacheAligned<T>(pub T);

impl<T> std::ops::Deref for CacheAligned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}
