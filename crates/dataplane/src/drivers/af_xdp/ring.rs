//! The single-producer, single-consumer rings an AF_XDP socket shares with the kernel.
//!
//! Each ring is a power-of-two array of descriptors with a producer and a consumer index
//! (free-running `u32`s: they wrap around, and only their difference matters) and a flags
//! word (`XDP_RING_NEED_WAKEUP`). We produce into the fill and tx rings and consume from the
//! rx and completion rings. Both sides keep a cached copy of the other side's index and read
//! the shared one (with `Acquire`) only when the cached one says there is not enough, so a
//! batch costs one shared load and one shared store (`Release`, after the descriptors are
//! written or read).

use std::sync::atomic::{AtomicU32, Ordering};

/// Where one ring lives in memory shared with the kernel.
#[derive(Debug, Clone, Copy)]
pub struct RingPtrs<T> {
    /// The producer index.
    pub producer: *const AtomicU32,
    /// The consumer index.
    pub consumer: *const AtomicU32,
    /// The flags word.
    pub flags: *const AtomicU32,
    /// The descriptor array, `size` entries.
    pub descs: *mut T,
    /// Entries (a power of two).
    pub size: u32,
}

impl<T> RingPtrs<T> {
    fn producer(&self) -> &AtomicU32 {
        // SAFETY: the creator of `RingPtrs` guarantees the pointers stay valid (the ring's
        // mapping outlives every ring made from it) and aligned.
        unsafe { &*self.producer }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as in `producer`.
        unsafe { &*self.consumer }
    }

    fn needs_wakeup(&self) -> bool {
        // SAFETY: as in `producer`.
        unsafe { &*self.flags }.load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }
}

/// A ring we fill (fill ring: free buffers for the kernel; tx ring: frames to send).
pub struct Producer<T> {
    ring: RingPtrs<T>,
    /// Our producer index (published by [`Producer::submit`]).
    prod: u32,
    /// The consumer index as last read.
    cons: u32,
}

impl<T: Copy> Producer<T> {
    /// A producer over `ring`.
    ///
    /// # Safety
    /// The pointers of `ring` must be valid and aligned for as long as the producer lives,
    /// `descs` must have `size` entries, `size` must be a power of two, and nothing but the
    /// kernel's consumer may use the ring meanwhile.
    pub unsafe fn new(ring: RingPtrs<T>) -> Self {
        debug_assert!(ring.size.is_power_of_two());
        let prod = ring.producer().load(Ordering::Relaxed);
        let cons = ring.consumer().load(Ordering::Acquire);
        Producer { ring, prod, cons }
    }

    /// Entries free for writing, reading the consumer index again only when fewer than `want`
    /// are free by the cached one.
    #[inline]
    pub fn free(&mut self, want: u32) -> u32 {
        let free = self.ring.size - self.prod.wrapping_sub(self.cons);
        if free >= want {
            return free;
        }
        self.cons = self.ring.consumer().load(Ordering::Acquire);
        self.ring.size - self.prod.wrapping_sub(self.cons)
    }

    /// Free entries by the cached consumer index (at most what is really free).
    #[inline(always)]
    fn cached_free(&self) -> u32 {
        self.ring.size - self.prod.wrapping_sub(self.cons)
    }

    /// Writes `value` as the `k`-th entry after the ones submitted.
    ///
    /// # Panics
    /// When `k` is not below the free count [`Producer::free`] last saw (the entry may be the
    /// kernel's).
    #[inline(always)]
    pub fn write(&mut self, k: u32, value: T) {
        assert!(k < self.cached_free(), "ring entry {k} is not free");
        let at = self.prod.wrapping_add(k) & (self.ring.size - 1);
        // SAFETY: `at < size` (masked), and the entry is free (checked above against the
        // cached consumer index, which never runs ahead of the kernel's), so the kernel
        // neither reads nor writes it.
        unsafe { self.ring.descs.add(at as usize).write(value) };
    }

    /// Publishes the next `n` written entries to the kernel.
    ///
    /// # Panics
    /// When `n` is above the free count [`Producer::free`] last saw.
    #[inline]
    pub fn submit(&mut self, n: u32) {
        assert!(n <= self.cached_free(), "submitting {n} entries, more than are free");
        self.prod = self.prod.wrapping_add(n);
        self.ring.producer().store(self.prod, Ordering::Release);
    }

    /// Entries submitted that the kernel has not taken yet.
    #[inline]
    pub fn pending(&mut self) -> u32 {
        self.cons = self.ring.consumer().load(Ordering::Acquire);
        self.prod.wrapping_sub(self.cons)
    }

    /// The kernel asks to be woken (a system call) before it looks at this ring again.
    #[inline]
    pub fn needs_wakeup(&self) -> bool {
        self.ring.needs_wakeup()
    }
}

/// A ring we drain (rx ring: received frames; completion ring: buffers sent).
pub struct Consumer<T> {
    ring: RingPtrs<T>,
    /// The producer index as last read.
    prod: u32,
    /// Our consumer index (published by [`Consumer::release`]).
    cons: u32,
}

impl<T: Copy> Consumer<T> {
    /// A consumer over `ring`.
    ///
    /// # Safety
    /// As [`Producer::new`], with the kernel as the only producer.
    pub unsafe fn new(ring: RingPtrs<T>) -> Self {
        debug_assert!(ring.size.is_power_of_two());
        let cons = ring.consumer().load(Ordering::Relaxed);
        let prod = ring.producer().load(Ordering::Acquire);
        Consumer { ring, prod, cons }
    }

    /// Entries ready to read, at most `max`; reads the producer index again only when the
    /// cached one says there are none.
    #[inline]
    pub fn available(&mut self, max: u32) -> u32 {
        let mut n = self.prod.wrapping_sub(self.cons);
        if n == 0 {
            self.prod = self.ring.producer().load(Ordering::Acquire);
            n = self.prod.wrapping_sub(self.cons);
        }
        n.min(max)
    }

    /// The `k`-th entry after the ones released.
    ///
    /// # Panics
    /// When `k` is not below the count [`Consumer::available`] last saw (the kernel may be
    /// writing the entry).
    #[inline(always)]
    pub fn read(&self, k: u32) -> T {
        assert!(k < self.prod.wrapping_sub(self.cons), "ring entry {k} is not published");
        let at = self.cons.wrapping_add(k) & (self.ring.size - 1);
        // SAFETY: `at < size` (masked), and the entry was published by the kernel (below the
        // producer index loaded with Acquire, checked above) and is not handed back yet, so
        // the kernel leaves it alone.
        unsafe { self.ring.descs.add(at as usize).read() }
    }

    /// Hands the next `n` read entries back to the kernel.
    ///
    /// # Panics
    /// When `n` is above the count [`Consumer::available`] last saw.
    #[inline]
    pub fn release(&mut self, n: u32) {
        assert!(n <= self.prod.wrapping_sub(self.cons), "releasing {n} entries, more than were published");
        self.cons = self.cons.wrapping_add(n);
        self.ring.consumer().store(self.cons, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring in ordinary memory, with the test playing the kernel's side. The descriptors
    /// are reached only through one raw pointer (as the kernel's mapping is), so the
    /// producer or consumer under test and the fake kernel never hold references to them.
    struct FakeRing {
        producer: AtomicU32,
        consumer: AtomicU32,
        flags: AtomicU32,
        descs: *mut u64,
        size: u32,
    }

    impl FakeRing {
        fn new(size: u32, start: u32) -> Box<Self> {
            let descs = Box::into_raw(vec![0u64; size as usize].into_boxed_slice()).cast::<u64>();
            Box::new(FakeRing {
                producer: AtomicU32::new(start),
                consumer: AtomicU32::new(start),
                flags: AtomicU32::new(0),
                descs,
                size,
            })
        }

        fn ptrs(&self) -> RingPtrs<u64> {
            RingPtrs {
                producer: &self.producer,
                consumer: &self.consumer,
                flags: &self.flags,
                descs: self.descs,
                size: self.size,
            }
        }

        /// Entry `k` (any index: masked).
        fn at(&self, k: u32) -> *mut u64 {
            // SAFETY: masked into the `size` entries allocated in `new`.
            unsafe { self.descs.add((k & (self.size - 1)) as usize) }
        }

        /// The kernel takes up to `n` entries we produced; returns them.
        fn kernel_take(&self, n: u32) -> Vec<u64> {
            let (p, c) = (self.producer.load(Ordering::Acquire), self.consumer.load(Ordering::Relaxed));
            let n = n.min(p.wrapping_sub(c));
            // SAFETY: entries between the consumer and producer indices were published to us.
            let out = (0..n).map(|k| unsafe { self.at(c.wrapping_add(k)).read() }).collect();
            self.consumer.store(c.wrapping_add(n), Ordering::Release);
            out
        }

        /// The kernel produces `values` for us to consume.
        fn kernel_give(&self, values: &[u64]) {
            let p = self.producer.load(Ordering::Relaxed);
            for (k, &v) in values.iter().enumerate() {
                // SAFETY: entries past the producer index are the producer's (the test's) to write.
                unsafe { self.at(p.wrapping_add(k as u32)).write(v) };
            }
            self.producer.store(p.wrapping_add(values.len() as u32), Ordering::Release);
        }
    }

    impl Drop for FakeRing {
        fn drop(&mut self) {
            let slice = std::ptr::slice_from_raw_parts_mut(self.descs, self.size as usize);
            // SAFETY: the allocation made in `new`, freed once; nothing uses it any more.
            drop(unsafe { Box::from_raw(slice) });
        }
    }

    #[test]
    fn a_full_producer_ring_refuses_more_until_the_kernel_consumes() {
        let fake = FakeRing::new(8, 0);
        // SAFETY: the fake ring outlives the producer and is used only through it and the
        // test's kernel side, one at a time.
        let mut p = unsafe { Producer::new(fake.ptrs()) };
        assert_eq!(p.free(8), 8);
        for k in 0..8 {
            p.write(k, u64::from(k) + 100);
        }
        p.submit(8);
        assert_eq!(p.free(1), 0, "full");
        assert_eq!(fake.kernel_take(3), vec![100, 101, 102]);
        assert_eq!(p.free(1), 3, "the consumer index is read again when the cache says full");
        assert_eq!(p.pending(), 5);
    }

    #[test]
    fn indices_wrap_around_u32_and_entries_around_the_array() {
        let start = u32::MAX - 2;
        let fake = FakeRing::new(4, start);
        // SAFETY: as above.
        let mut p = unsafe { Producer::new(fake.ptrs()) };
        let mut seen = Vec::new();
        for round in 0..5u64 {
            let n = p.free(3).min(3);
            assert_eq!(n, 3, "round {round}");
            for k in 0..n {
                p.write(k, round * 10 + u64::from(k));
            }
            p.submit(n);
            seen.extend(fake.kernel_take(3));
        }
        let want: Vec<u64> = (0..5).flat_map(|r| (0..3).map(move |k| r * 10 + k)).collect();
        assert_eq!(seen, want);
        assert_eq!(fake.producer.load(Ordering::Relaxed), start.wrapping_add(15));
    }

    #[test]
    fn a_consumer_reads_partial_batches_in_order_across_the_wrap() {
        let fake = FakeRing::new(4, u32::MAX - 1);
        // SAFETY: as above.
        let mut c = unsafe { Consumer::new(fake.ptrs()) };
        assert_eq!(c.available(8), 0);
        fake.kernel_give(&[1, 2, 3]);
        assert_eq!(c.available(2), 2, "at most max");
        assert_eq!((c.read(0), c.read(1)), (1, 2));
        c.release(2);
        assert_eq!(c.available(8), 1);
        assert_eq!(c.read(0), 3);
        c.release(1);
        fake.kernel_give(&[4, 5, 6, 7]);
        assert_eq!(c.available(8), 4, "a full ring");
        assert_eq!((0..4).map(|k| c.read(k)).collect::<Vec<_>>(), vec![4, 5, 6, 7]);
        c.release(4);
        assert_eq!(fake.consumer.load(Ordering::Relaxed), (u32::MAX - 1).wrapping_add(7));
        assert_eq!(c.available(8), 0);
    }

    #[test]
    #[should_panic(expected = "is not published")]
    fn reading_past_what_the_kernel_published_panics() {
        let fake = FakeRing::new(4, 0);
        // SAFETY: as above.
        let mut c = unsafe { Consumer::new(fake.ptrs()) };
        fake.kernel_give(&[1]);
        assert_eq!(c.available(4), 1);
        c.read(1);
    }

    #[test]
    #[should_panic(expected = "is not free")]
    fn writing_an_entry_the_kernel_owns_panics() {
        let fake = FakeRing::new(4, 0);
        // SAFETY: as above.
        let mut p = unsafe { Producer::new(fake.ptrs()) };
        let n = p.free(4);
        p.submit(n);
        p.write(0, 1);
    }

    #[test]
    fn need_wakeup_is_read_from_the_flags() {
        let fake = FakeRing::new(4, 0);
        // SAFETY: as above.
        let p = unsafe { Producer::new(fake.ptrs()) };
        assert!(!p.needs_wakeup());
        fake.flags.store(libc::XDP_RING_NEED_WAKEUP, Ordering::Relaxed);
        assert!(p.needs_wakeup());
    }
}
