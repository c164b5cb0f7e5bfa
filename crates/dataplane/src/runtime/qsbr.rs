//! Quiescent-state-based reclamation (QSBR): lets the main thread know when every worker has
//! passed a vector boundary since a change, so memory the change retired can be reused.
//!
//! Each reader (a worker, the sFlow agent) holds a [`QsbrReader`] and announces a quiescent
//! state once per loop iteration (between vectors, holding no references into shared tables)
//! by copying the global generation into its own slot. The writer bumps the generation and
//! waits until every online reader has caught up. An offline reader is not waited for.
//!
//! Ordering, as in liburcu's QSBR flavour:
//! - A reader that is online: its acquire load of the generation synchronises with the
//!   writer's bump, so after announcing the new generation it can no longer load what the
//!   writer unpublished before the bump; its release store orders its earlier reads before
//!   the writer's reuse.
//! - A reader coming online stores its slot and then reads tables, while the writer stores
//!   to the tables and then reads the slot: a store→load pattern that x86 (and the C++ model)
//!   reorders. A `SeqCst` fence on each side (after the reader's store, after the writer's
//!   bump) makes at least one of them see the other: either the writer sees the reader online
//!   and waits for it, or the reader sees the new tables.
//! - A [`QsbrReader`] goes offline when dropped, also while its thread unwinds from a panic,
//!   so a writer never waits for a thread that is gone.
//!
//! Readers pay one load and one store per loop; the fence only when coming online.

use crate::runtime::counter::CacheAligned;
use crate::runtime::sync::{AtomicU64, fence, wait_a_little};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::*};

/// Slot value of a reader that is not running.
const OFFLINE: u64 = u64::MAX;

/// The generations of the readers (workers, the sFlow agent) of shared tables.
#[derive(Debug)]
pub struct Qsbr {
    generation: AtomicU64,
    readers: Vec<CacheAligned<AtomicU64>>,
    registered: Vec<AtomicBool>,
}

impl Qsbr {
    /// QSBR for `readers` readers, all offline and none registered.
    pub fn new(readers: usize) -> Self {
        Qsbr {
            generation: AtomicU64::new(1),
            readers: (0..readers).map(|_| CacheAligned(AtomicU64::new(OFFLINE))).collect(),
            registered: (0..readers).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// The handle of reader `id` (offline until its first [`QsbrReader::quiescent`]).
    ///
    /// # Panics
    /// When `id` is out of range or already has a handle (a reader is one thread).
    pub fn register(self: &Arc<Self>, id: usize) -> QsbrReader {
        let taken = self.registered.get(id).map(|r| r.swap(true, AcqRel));
        assert_eq!(taken, Some(false), "QSBR reader {id} is out of range or registered twice");
        QsbrReader { qsbr: self.clone(), id, online: false }
    }

    /// Waits until every online reader has been quiescent since this call began. Anything
    /// unpublished before the call can then be reused.
    pub fn synchronize(&self) {
        let target = self.generation.fetch_add(1, AcqRel) + 1;
        // Pairs with the fence of a reader coming online (see the module doc).
        fence(SeqCst);
        for r in &self.readers {
            while r.load(Acquire) < target {
                wait_a_little();
            }
        }
    }
}

/// One reader's handle: announces its quiescent states; offline when dropped.
#[derive(Debug)]
pub struct QsbrReader {
    qsbr: Arc<Qsbr>,
    id: usize,
    online: bool,
}

impl QsbrReader {
    /// This reader is running and holds no references into shared tables right now (it
    /// comes online if it was not).
    #[inline(always)]
    pub fn quiescent(&mut self) {
        if !self.online {
            self.come_online();
            return;
        }
        let slot = &self.qsbr.readers[self.id];
        slot.store(self.qsbr.generation.load(Acquire), Release);
    }

    #[cold]
    fn come_online(&mut self) {
        let slot = &self.qsbr.readers[self.id];
        slot.store(self.qsbr.generation.load(Acquire), Release);
        // Orders the store before every table read that follows (see the module doc).
        fence(SeqCst);
        self.online = true;
    }

    /// This reader stops reading shared tables (it will not be waited for) until its next
    /// [`QsbrReader::quiescent`].
    pub fn offline(&mut self) {
        self.qsbr.readers[self.id].store(OFFLINE, Release);
        self.online = false;
    }
}

impl Drop for QsbrReader {
    fn drop(&mut self) {
        self.offline();
        self.qsbr.registered[self.id].store(false, Release);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64 as StdAtomicU64;

    #[test]
    fn synchronize_waits_for_a_running_reader_and_not_for_an_offline_one() {
        let q = Arc::new(Qsbr::new(2));
        q.synchronize(); // both offline: returns at once
        let mut reader = q.register(0);
        reader.quiescent(); // online, and never quiescent again until told
        let passes = Arc::new(StdAtomicU64::new(0));
        let go = Arc::new(AtomicBool::new(false));
        let done = Arc::new(AtomicBool::new(false));
        let (p2, g2, d2) = (passes.clone(), go.clone(), done.clone());
        let t = std::thread::spawn(move || {
            while !g2.load(Relaxed) {
                std::thread::yield_now();
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            p2.store(1, Relaxed);
            // Quiescent again and again, as a worker is once per loop: one announcement could
            // carry a generation read before the writer's increment was visible.
            while !d2.load(Relaxed) {
                reader.quiescent();
                std::thread::yield_now();
            }
            reader // dropped by the caller: offline
        });
        go.store(true, Relaxed);
        q.synchronize();
        assert_eq!(passes.load(Relaxed), 1, "synchronize returned before the reader was quiescent");
        done.store(true, Relaxed);
        drop(t.join().unwrap());
        q.synchronize(); // offline after the drop: returns at once
    }

    #[test]
    fn a_reader_that_panics_goes_offline() {
        let q = Arc::new(Qsbr::new(1));
        let mut reader = q.register(0);
        let t = std::thread::spawn(move || {
            reader.quiescent();
            panic!("a worker dies");
        });
        assert!(t.join().is_err());
        q.synchronize(); // would spin forever if the dead reader stayed online
        drop(q.register(0)); // and its id is free again
    }

    #[test]
    #[should_panic(expected = "registered twice")]
    fn one_handle_per_reader() {
        let q = Arc::new(Qsbr::new(1));
        let _a = q.register(0);
        let _b = q.register(0);
    }
}

/// Loom models of QSBR: every interleaving (and every reordering the memory model allows) of
/// a writer that unpublishes a table, synchronizes and reuses it, against a reader that comes
/// online, reads through the published table, is quiescent and goes offline.
/// Run with `RUSTFLAGS="--cfg loom" cargo test -p dataplane --lib --release loom`. Deleting
/// the reader's fence, the writer's fence or the `synchronize()` call makes it fail.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;

    /// Table contents a reader may see: the live value; `GARBAGE` once reused.
    const LIVE: u64 = 42;
    const GARBAGE: u64 = 666;

    #[test]
    fn loom_qsbr_online_quiescent_offline_synchronize_reuse() {
        loom::model(|| {
            let q = Arc::new(Qsbr::new(1));
            // Two "groups" and a pointer to the published one, as the FIB's tbl8 groups.
            let groups = Arc::new([AtomicU64::new(LIVE), AtomicU64::new(LIVE)]);
            let published = Arc::new(AtomicU64::new(0));
            let mut reader = q.register(0);
            let (g2, p2) = (groups.clone(), published.clone());
            let t = loom::thread::spawn(move || {
                reader.quiescent(); // comes online
                let g = p2.load(Acquire) as usize;
                assert_eq!(g2[g].load(Relaxed), LIVE, "read a group that was reused under it");
                reader.quiescent();
                reader.offline();
            });
            published.store(1, Release); // unpublish group 0
            q.synchronize();
            groups[0].store(GARBAGE, Relaxed); // reuse it
            t.join().unwrap();
        });
    }
}
