//! Live table updates: the main thread publishes a whole new immutable snapshot of a
//! table (the forwarding tables), and each worker picks it up between vectors.
//!
//! A worker checks for a new snapshot once per loop, before announcing its quiescent state
//! ([`crate::runtime::qsbr`]): one atomic load when nothing changed. It never frees a snapshot: the
//! publisher keeps every old snapshot and frees it only once it holds the last reference
//! (no worker can take a new one: it is no longer published). To make that prompt, `publish`
//! waits two grace periods — after the first, every worker has loaded the new snapshot at
//! its next check; after the second, every worker has dropped the old one. So a worker never
//! locks, allocates or deallocates for an update.

use crate::runtime::qsbr::Qsbr;
use arc_swap::{ArcSwap, Cache};
use std::sync::Arc;

/// The main thread's side: publishes snapshots.
pub struct TablePublisher<T> {
    current: Arc<ArcSwap<T>>,
    qsbr: Arc<Qsbr>,
    /// Unpublished snapshots a worker may still hold.
    retired: Vec<Arc<T>>,
}

impl<T> TablePublisher<T> {
    /// A publisher whose first snapshot is `initial`; `qsbr` knows every reader.
    pub fn new(initial: Arc<T>, qsbr: Arc<Qsbr>) -> Self {
        TablePublisher { current: Arc::new(ArcSwap::new(initial)), qsbr, retired: Vec::new() }
    }

    /// A reader for one worker.
    pub fn reader(&self) -> TableReader<T> {
        TableReader { cache: Cache::new(self.current.clone()) }
    }

    /// The snapshot workers forward with now.
    pub fn current(&self) -> Arc<T> {
        self.current.load_full()
    }

    /// Publishes `tables`, waits until every running worker has moved to it (two grace
    /// periods: about two worker loops) and frees the old snapshots no one holds any more.
    pub fn publish(&mut self, tables: T) {
        self.retired.push(self.current.swap(Arc::new(tables)));
        self.qsbr.synchronize();
        self.qsbr.synchronize();
        // A count of 1 is final: an unpublished snapshot can gain no new holder.
        self.retired.retain(|t| Arc::strong_count(t) > 1);
    }
}

/// A worker's side: swaps its snapshot for the newest one between vectors.
pub struct TableReader<T> {
    cache: Cache<Arc<ArcSwap<T>>, Arc<T>>,
}

impl<T> TableReader<T> {
    /// Replaces `tables` with the newest snapshot if there is one. Call between vectors,
    /// before announcing a quiescent state.
    #[inline]
    pub fn refresh(&mut self, tables: &mut Arc<T>) {
        let newest = self.cache.load();
        if !Arc::ptr_eq(newest, tables) {
            *tables = newest.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker thread sees each published snapshot; the publisher's `publish` returns only
    /// after the worker let go of the old one (it holds the only other reference).
    #[test]
    fn workers_pick_up_snapshots_and_the_publisher_frees_the_old_ones() {
        let qsbr = Arc::new(Qsbr::new(1));
        let first = Arc::new(Vec::<u32>::new());
        let mut publisher = TablePublisher::new(first.clone(), qsbr.clone());
        let mut reader = publisher.reader();
        let mut q = qsbr.register(0);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let (online, is_online) = std::sync::mpsc::channel();
        let seen = std::thread::spawn(move || {
            let mut tables = first;
            let mut seen = std::collections::BTreeSet::new();
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                reader.refresh(&mut tables);
                seen.insert(tables.len());
                q.quiescent();
                let _ = online.send(());
            }
            seen
        });
        is_online.recv().unwrap();
        for n in 1..=3 {
            let weak = Arc::downgrade(&publisher.current());
            publisher.publish(vec![0; n]);
            assert_eq!(weak.strong_count(), 0, "snapshot {} freed by publish", n - 1);
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let seen = seen.join().unwrap();
        assert!(seen.contains(&3), "the last snapshot reached the worker: {seen:?}");
    }
}
