//! Quiescent-state-based reclamation (QSBR): lets the main thread know when every worker has
//! passed a vector boundary since a change, so memory the change retired can be reused.
//!
//! Each worker announces a quiescent state once per loop iteration (between vectors, holding
//! no references into shared tables) by copying the global generation into its own slot. The
//! writer bumps the generation and waits until every online worker has caught up. A stopped
//! worker goes offline and is not waited for. Readers pay one load and one store per loop.

use crate::counter::CacheAligned;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::time::Duration;

/// Slot value of a reader that is not running.
const OFFLINE: u64 = u64::MAX;

/// The generations of the readers (workers) of shared tables.
#[derive(Debug)]
pub struct Qsbr {
    generation: AtomicU64,
    readers: Vec<CacheAligned<AtomicU64>>,
}

impl Qsbr {
    /// QSBR for `readers` readers, all offline.
    pub fn new(readers: usize) -> Self {
        Qsbr {
            generation: AtomicU64::new(1),
            readers: (0..readers).map(|_| CacheAligned(AtomicU64::new(OFFLINE))).collect(),
        }
    }

    /// Reader `id` is running and holds no references into shared tables right now.
    #[inline(always)]
    pub fn quiescent(&self, id: usize) {
        self.readers[id].store(self.generation.load(Acquire), Release);
    }

    /// Reader `id` stops reading (it will not be waited for).
    pub fn offline(&self, id: usize) {
        self.readers[id].store(OFFLINE, Release);
    }

    /// Waits until every online reader has been quiescent since this call began. Anything
    /// unpublished before the call can then be reused.
    pub fn synchronize(&self) {
        let target = self.generation.fetch_add(1, AcqRel) + 1;
        for r in &self.readers {
            while r.load(Acquire) < target {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn synchronize_waits_for_a_running_reader_and_not_for_an_offline_one() {
        let q = Arc::new(Qsbr::new(2));
        q.synchronize(); // both offline: returns at once
        q.quiescent(0);
        let stop = Arc::new(AtomicBool::new(false));
        let (q2, s2) = (q.clone(), stop.clone());
        let reader = std::thread::spawn(move || {
            let mut passes = 0u64;
            while !s2.load(Relaxed) {
                q2.quiescent(0);
                passes += 1;
                std::thread::yield_now();
            }
            q2.offline(0);
            passes
        });
        for _ in 0..100 {
            q.synchronize();
        }
        stop.store(true, Relaxed);
        assert!(reader.join().unwrap() >= 100, "each synchronize saw a new quiescent state");
        q.synchronize();
    }
}
