//! The per-worker sample ring: a single-producer, single-consumer ring of fixed slots.
//!
//! The worker reserves a slot when its sampler chooses a packet and copies the header bytes
//! into it at once; after the vector is done the worker publishes every slot it
//! reserved, completing each from its buffer's metadata (output interface, next hop, VLANs),
//! with one release store. The agent (main side) reads published slots and hands
//! them back with one release store per drain. A full ring refuses the reservation (the
//! sampler counts a drop and copies nothing).
//!
//! [`Ring::split`] consumes the ring and returns its only [`Producer`] and only
//! [`Consumer`], so there can never be two of either. The producer reaches a slot only while
//! it owns it (reserved, not yet published) and the consumer only while it owns it
//! (published, not yet released); both hand the slot to a closure, so no reference to it
//! outlives the ownership.

use crate::l3::LabelStack;
use crate::runtime::counter::CacheAligned;
use crate::runtime::sync::{Arc, AtomicU64, UnsafeCell};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::Ordering::*;

/// Most header bytes a slot holds.
pub const MAX_HEADER: usize = 256;

/// What became of a sampled packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Fate {
    /// Still in the graph (a slot is published only once its packet left the graph).
    InFlight,
    /// Sent out of an interface: a flow sample.
    Forwarded,
    /// Dropped: not a flow sample (drop monitoring reports it instead).
    Dropped,
    /// A drop reported by drop monitoring: a discard sample.
    Discard,
}

/// One sampled packet.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
pub struct Slot {
    /// The first `header_len` bytes of the frame as received.
    pub header: [u8; MAX_HEADER],
    /// Bytes of `header` in use.
    pub header_len: u16,
    /// Frame length as received (without FCS).
    pub frame_len: u16,
    /// Data source: the physical port whose sampler chose it.
    pub port: u16,
    /// Input interface (a sub-interface when the frame was tagged for one).
    pub input: u16,
    /// Output interface, 0 when unknown.
    pub output: u16,
    /// VLAN id of the input sub-interface, 0 for none.
    pub in_vlan: u16,
    /// VLAN id of the output sub-interface, 0 for none.
    pub out_vlan: u16,
    /// Next hop (IPv4 or IPv6), 0.0.0.0 when none or unknown: the route's, or for a
    /// label-switched packet the swap's.
    pub next_hop: IpAddr,
    /// Destination prefix length matched, 0 when not routed.
    pub dst_prefix_len: u8,
    /// True when the packet was routed by IPv4 or IPv6 (so `next_hop` and the prefix length
    /// apply).
    pub routed: bool,
    /// The stage that chose it: [`crate::sflow::RX`] (the header as received) or
    /// [`crate::sflow::TX`] (as sent).
    pub stage: u8,
    /// MPLS labels received, outermost first (empty when not label-switched).
    pub in_labels: LabelStack,
    /// MPLS labels sent, outermost first (empty when none were sent).
    pub out_labels: LabelStack,
    /// What happened to the packet.
    pub fate: Fate,
    /// For a discard: the sFlow discard reason code.
    pub reason: u32,
    /// For a flow sample: the data source's sample pool (packets forwarded, on every worker)
    /// when the sample was published.
    pub pool: u64,
    /// For a flow sample: the data source's samples lost to full rings (on every worker)
    /// when the sample was published.
    pub drops: u64,
    /// The worker's buffer the packet was in (its metadata is read when the slot is
    /// published).
    pub buffer: u32,
    /// The sampler's 1-in-N when it chose the packet (rates change while running).
    pub rate: u32,
}

impl Slot {
    /// A slot with nothing in it.
    pub(crate) const EMPTY: Slot = Slot {
        header: [0; MAX_HEADER],
        header_len: 0,
        frame_len: 0,
        port: 0,
        input: 0,
        output: 0,
        in_vlan: 0,
        out_vlan: 0,
        next_hop: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        dst_prefix_len: 0,
        routed: false,
        stage: 0,
        in_labels: LabelStack::EMPTY,
        out_labels: LabelStack::EMPTY,
        fate: Fate::InFlight,
        reason: 0,
        pool: 0,
        drops: 0,
        buffer: 0,
        rate: 0,
    };
}

/// The ring shared by one worker (producer) and the agent (consumer). Made with
/// [`Ring::new`] and used only through the two ends [`Ring::split`] returns.
pub struct Ring {
    slots: Box<[UnsafeCell<Slot>]>,
    mask: u64,
    /// Slots published by the producer (monotonic).
    head: CacheAligned<AtomicU64>,
    /// Slots released by the consumer (monotonic).
    tail: CacheAligned<AtomicU64>,
}

// SAFETY: the ring is reachable only through its one `Producer` and one `Consumer`
// (`split`). Slot `k` is accessed only by the producer while `k >= head` (reserved, not
// published: `reserve`, `for_each_unpublished`) and only by the consumer while
// `tail <= k < head` (published, not released: `drain`); the release store of `head` in
// `publish` and its acquire load in `drain`, and the release store of `tail` in `drain` and
// its acquire load in `reserve`, order those accesses, so no slot is ever accessed by both.
unsafe impl Sync for Ring {}
// SAFETY: a `Slot` is plain data; moving the ring moves it.
unsafe impl Send for Ring {}

impl Ring {
    /// A ring of `depth` slots (a power of two, at least 1).
    ///
    /// # Panics
    /// When `depth` is not a power of two (configuration validation rules that out).
    pub fn new(depth: u32) -> Self {
        assert!(depth.is_power_of_two(), "ring depth is a power of two");
        Ring {
            slots: (0..depth).map(|_| UnsafeCell::new(Slot::EMPTY)).collect(),
            mask: u64::from(depth) - 1,
            head: CacheAligned(AtomicU64::new(0)),
            tail: CacheAligned(AtomicU64::new(0)),
        }
    }

    /// Number of slots.
    pub fn depth(&self) -> u64 {
        self.mask + 1
    }

    /// The ring's only producer and only consumer.
    pub fn split(self) -> (Producer, Consumer) {
        let ring = Arc::new(self);
        (Producer { ring: ring.clone(), next: 0, tail: 0 }, Consumer { ring })
    }
}

/// The worker's end: reserves slots, fills them, publishes them.
pub struct Producer {
    ring: Arc<Ring>,
    /// Next slot to reserve (not yet visible to the consumer beyond `ring.head`).
    next: u64,
    /// The consumer's tail as last seen.
    tail: u64,
}

impl Producer {
    /// Reserves the next slot and lets `fill` write it; returns false (and calls nothing)
    /// when the ring is full. The slot becomes visible to the consumer at the next
    /// [`Producer::publish`].
    #[inline]
    pub fn reserve(&mut self, fill: impl FnOnce(&mut Slot)) -> bool {
        if self.next - self.tail > self.ring.mask {
            self.tail = self.ring.tail.load(Acquire);
            if self.next - self.tail > self.ring.mask {
                return false;
            }
        }
        let k = self.next;
        self.next += 1;
        // SAFETY: `k >= head` (not published) and `k - tail <= mask` with `tail` acquired
        // from the consumer (released by it), so only this producer may touch slot `k`; `fill`
        // cannot keep the reference past this call.
        self.ring.slots[(k & self.ring.mask) as usize].with_mut(|p| fill(unsafe { &mut *p }));
        true
    }

    /// Calls `fill` on every reserved slot not yet published, in order.
    #[inline]
    pub fn for_each_unpublished(&mut self, mut fill: impl FnMut(&mut Slot)) {
        let published = self.ring.head.load(Relaxed);
        for k in published..self.next {
            // SAFETY: `k` is reserved and not published, so only this producer touches it.
            self.ring.slots[(k & self.ring.mask) as usize].with_mut(|p| fill(unsafe { &mut *p }));
        }
    }

    /// Publishes every reserved slot (one release store). Call between vectors, after every
    /// reserved slot's packet has left the graph.
    #[inline]
    pub fn publish(&mut self) {
        self.ring.head.store(self.next, Release);
    }
}

/// The agent's end: reads published slots in order and releases them.
pub struct Consumer {
    ring: Arc<Ring>,
}

impl Consumer {
    /// Published slots not yet drained.
    pub fn available(&self) -> u64 {
        self.ring.head.load(Acquire) - self.ring.tail.load(Relaxed)
    }

    /// Calls `each` on up to `max` published slots in order until it returns `false` (that
    /// slot stays for the next drain), releases the slots taken and returns how many.
    pub fn drain(&mut self, max: usize, mut each: impl FnMut(&Slot) -> bool) -> usize {
        let tail = self.ring.tail.load(Relaxed);
        let head = self.ring.head.load(Acquire);
        let mut n = 0;
        while n < max && tail + (n as u64) < head {
            let k = tail + n as u64;
            // SAFETY: `tail <= k < head`: published by the producer (acquire above) and not
            // released yet, so the producer does not write it.
            if !self.ring.slots[(k & self.ring.mask) as usize].with(|p| each(unsafe { &*p })) {
                break;
            }
            n += 1;
        }
        self.ring.tail.store(tail + n as u64, Release);
        n
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The memory cost `sflow.ring-depth` documents: 448 bytes a slot (14 MiB per worker at
    /// the default 32768 slots).
    #[test]
    fn a_slot_is_448_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 448);
    }

    #[test]
    fn full_ring_refuses_and_drained_slots_come_back_in_order() {
        let (mut p, mut c) = Ring::new(4).split();
        for k in 0..4u16 {
            assert!(p.reserve(|s| s.port = k));
        }
        assert!(!p.reserve(|_| panic!("full: nothing to fill")), "full");
        assert_eq!(c.drain(10, |_| panic!("nothing published yet")), 0);
        p.publish();
        assert_eq!(c.available(), 4);
        let mut seen = vec![];
        assert_eq!(
            c.drain(3, |s| {
                seen.push(s.port);
                true
            }),
            3
        );
        assert_eq!(seen, [0, 1, 2]);
        assert_eq!(c.drain(3, |_| false), 0, "refused slots stay");
        assert_eq!(c.available(), 1);
        assert!(p.reserve(|_| {}), "room again");
    }

    #[test]
    fn unpublished_slots_are_completed_once_and_in_order() {
        let (mut p, mut c) = Ring::new(8).split();
        for k in 0..3u16 {
            p.reserve(|s| s.port = k);
        }
        let mut order = vec![];
        p.for_each_unpublished(|s| {
            order.push(s.port);
            s.output = s.port + 10;
        });
        p.publish();
        p.for_each_unpublished(|_| panic!("published slots are not the producer's any more"));
        assert_eq!(order, [0, 1, 2]);
        let mut outs = vec![];
        c.drain(8, |s| {
            outs.push(s.output);
            true
        });
        assert_eq!(outs, [10, 11, 12]);
    }

    #[test]
    fn concurrent_producer_and_consumer_lose_nothing() {
        let (mut p, mut c) = Ring::new(64).split();
        let total: u32 = if cfg!(miri) { 300 } else { 100_000 };
        let producer = std::thread::spawn(move || {
            let mut sent = 0u32;
            while sent < total {
                for _ in 0..8 {
                    if sent < total
                        && p.reserve(|s| {
                            s.rate = sent;
                            s.header[..4].copy_from_slice(&sent.to_be_bytes());
                        })
                    {
                        sent += 1;
                    }
                }
                p.publish();
                std::thread::yield_now();
            }
        });
        let mut expect = 0u32;
        while expect < total {
            c.drain(32, |s| {
                assert_eq!((s.rate, u32::from_be_bytes(s.header[..4].try_into().unwrap())), (expect, expect));
                expect += 1;
                true
            });
            std::thread::yield_now();
        }
        producer.join().unwrap();
    }
}

/// Loom models: every interleaving of one producer and one consumer on a tiny ring.
/// Run with `RUSTFLAGS="--cfg loom" cargo test -p dataplane --lib --release loom`.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;

    /// Reserve, write, publish on one thread; consume on another; with a ring of 2 slots
    /// and 3 samples, the producer must find the ring full at least in some interleavings,
    /// and must never overwrite a slot the consumer has not released: every sample arrives
    /// intact and in order.
    #[test]
    fn loom_ring_reserve_write_publish_consume_full() {
        loom::model(|| {
            let (mut p, mut c) = Ring::new(2).split();
            let producer = loom::thread::spawn(move || {
                let mut sent = 0u32;
                let mut refused = 0;
                while sent < 3 && refused < 3 {
                    if p.reserve(|s| {
                        s.rate = sent;
                        s.header[0] = sent as u8;
                    }) {
                        sent += 1;
                    } else {
                        refused += 1;
                    }
                    p.publish();
                }
                sent
            });
            let mut got = Vec::new();
            for _ in 0..3 {
                c.drain(2, |s| {
                    assert_eq!(u32::from(s.header[0]), s.rate, "a slot is read whole");
                    got.push(s.rate);
                    true
                });
                loom::thread::yield_now();
            }
            let sent = producer.join().unwrap();
            c.drain(usize::MAX, |s| {
                got.push(s.rate);
                true
            });
            assert_eq!(got, (0..sent).collect::<Vec<_>>(), "in order, nothing lost or repeated");
        });
    }
}
