//! The per-worker sample ring: a single-producer, single-consumer ring of fixed slots.
//!
//! The worker reserves a slot when its sampler chooses a packet and copies the header bytes
//! into it at once; the nodes that decide (output interface, next hop, VLANs) fill in the rest
//! before the buffer is freed; after the vector is done the worker publishes every slot it
//! reserved with one release store. The agent (main side) reads published slots and hands
//! them back with one release store per drain. A full ring refuses the reservation (the
//! sampler counts a drop and copies nothing).

use crate::counter::CacheAligned;
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering::*};

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
    /// IPv4 next hop (host order), 0 when none or unknown.
    pub next_hop: u32,
    /// Destination prefix length matched, 0 when not routed.
    pub dst_prefix_len: u8,
    /// True when the packet was routed by IPv4 (so `next_hop` and the prefix length apply).
    pub routed: bool,
    /// What happened to the packet.
    pub fate: Fate,
    /// For a discard: the sFlow discard reason code.
    pub reason: u32,
    /// The worker's buffer the packet was in (its metadata is read when the slot is
    /// published).
    pub buffer: u32,
}

impl Slot {
    const EMPTY: Slot = Slot {
        header: [0; MAX_HEADER],
        header_len: 0,
        frame_len: 0,
        port: 0,
        input: 0,
        output: 0,
        in_vlan: 0,
        out_vlan: 0,
        next_hop: 0,
        dst_prefix_len: 0,
        routed: false,
        fate: Fate::InFlight,
        reason: 0,
        buffer: 0,
    };
}

/// The ring shared by one worker (producer) and the agent (consumer).
pub struct Ring {
    slots: Box<[UnsafeCell<Slot>]>,
    mask: u64,
    /// Slots published by the producer (monotonic).
    head: CacheAligned<AtomicU64>,
    /// Slots released by the consumer (monotonic).
    tail: CacheAligned<AtomicU64>,
}

// SAFETY: slot `k` is written only by the producer while `k` is not yet published
// (`k >= head`), and read only by the consumer while it is published and not yet released
// (`tail <= k < head`); the release/acquire pairs on `head` and `tail` order those accesses.
unsafe impl Sync for Ring {}

impl Ring {
    /// A ring of `depth` slots (a power of two).
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
}

/// The worker's end: reserves slots, fills them, publishes them.
pub struct Producer {
    ring: std::sync::Arc<Ring>,
    /// Next slot to reserve (not yet visible to the consumer beyond `ring.head`).
    next: u64,
    /// The consumer's tail as last seen.
    tail: u64,
}

impl Producer {
    /// The producer end of `ring` (one per ring).
    pub fn new(ring: std::sync::Arc<Ring>) -> Self {
        let next = ring.head.load(Acquire);
        Producer { tail: ring.tail.load(Acquire), ring, next }
    }

    /// Reserves the next slot and returns its index, or `None` when the ring is full.
    #[inline]
    pub fn reserve(&mut self) -> Option<u32> {
        if self.next - self.tail > self.ring.mask {
            self.tail = self.ring.tail.load(Acquire);
            if self.next - self.tail > self.ring.mask {
                return None;
            }
        }
        let k = self.next;
        self.next += 1;
        Some((k & self.ring.mask) as u32)
    }

    /// Slot `i`, reserved and not yet published.
    #[inline]
    pub fn slot(&mut self, i: u32) -> &mut Slot {
        // SAFETY: `i` came from `reserve` and is not published yet (publish happens after the
        // vector is done), so the consumer does not read it; `&mut self` makes this the only
        // reference on the producer side.
        unsafe { &mut *self.ring.slots[i as usize].get() }
    }

    /// Calls `fill` on every reserved slot not yet published, in order.
    #[inline]
    pub fn for_each_unpublished(&mut self, mut fill: impl FnMut(&mut Slot)) {
        let published = self.ring.head.load(Relaxed);
        for k in published..self.next {
            // SAFETY: `k` is reserved and not published, so only this producer touches it.
            fill(unsafe { &mut *self.ring.slots[(k & self.ring.mask) as usize].get() });
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
    ring: std::sync::Arc<Ring>,
}

impl Consumer {
    /// The consumer end of `ring` (one per ring).
    pub fn new(ring: std::sync::Arc<Ring>) -> Self {
        Consumer { ring }
    }

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
            if !each(unsafe { &*self.ring.slots[(k & self.ring.mask) as usize].get() }) {
                break;
            }
            n += 1;
        }
        self.ring.tail.store(tail + n as u64, Release);
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn full_ring_refuses_and_drained_slots_come_back_in_order() {
        let ring = Arc::new(Ring::new(4));
        let (mut p, mut c) = (Producer::new(ring.clone()), Consumer::new(ring));
        for k in 0..4u16 {
            let i = p.reserve().unwrap();
            p.slot(i).port = k;
        }
        assert_eq!(p.reserve(), None, "full");
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
        assert!(p.reserve().is_some(), "room again");
    }

    #[test]
    fn concurrent_producer_and_consumer_lose_nothing() {
        let ring = Arc::new(Ring::new(64));
        let (mut p, mut c) = (Producer::new(ring.clone()), Consumer::new(ring));
        let producer = std::thread::spawn(move || {
            let (mut sent, mut full) = (0u32, 0u32);
            while sent < 100_000 {
                for _ in 0..8 {
                    match p.reserve() {
                        Some(i) => {
                            let s = p.slot(i);
                            s.next_hop = sent;
                            s.header[..4].copy_from_slice(&sent.to_be_bytes());
                            sent += 1;
                        }
                        None => full += 1,
                    }
                }
                p.publish();
            }
            full
        });
        let mut expect = 0u32;
        while expect < 100_000 {
            c.drain(32, |s| {
                assert_eq!((s.next_hop, u32::from_be_bytes(s.header[..4].try_into().unwrap())), (expect, expect));
                expect += 1;
                true
            });
        }
        producer.join().unwrap();
    }
}
