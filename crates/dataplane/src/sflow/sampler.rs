//! The per-worker samplers: one countdown per sFlow data source (physical port).
//!
//! Skips are drawn uniformly on [1, 2N−1] (mean N) from a 64-bit PRNG. A vector shorter than
//! the remaining skip costs one compare and one subtraction, whatever its length. A chosen
//! packet reserves a ring slot, its header bytes are copied once and the slot remembers the
//! buffer. When the vector has left the graph (and before any buffer is reused), the slots are
//! completed from the buffers' metadata — output interface, next hop, prefix length, VLANs,
//! forwarded or dropped — and published with one store ([`SflowWorker::publish`]).

use super::PortCounters;
use super::budget::WorkerBudget;
use super::ring::{Fate, MAX_HEADER, Producer, Slot};
use crate::interface::InterfaceTable;
use crate::interface::{DropClass, DropInfo};
use crate::l3::L3;
use crate::l3::RouteMeta;
use crate::l3::{Adjacency, LabelEntry, LabelStack};
use crate::net::MAX_INTERFACES;
use crate::runtime::buffer::{BufferPool, NOT_DROPPED};
use crate::runtime::stats::counter_set;
use crate::runtime::vector::Vector;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

counter_set! {
    /// One worker's sFlow sampler counters for one data source (physical port).
    SflowCounters,
    /// sFlow sampler counters of one data source (one worker or summed).
    SflowStats {
        /// Packets the sampler saw.
        seen,
        /// Packets the receive sampler saw that the graph then dropped: `seen − dropped` is
        /// the data source's sample pool (forwarded packets) on this worker.
        dropped,
        /// Samples copied into the ring.
        taken,
        /// Samples lost because the ring was full.
        ring_full,
        /// Discard samples copied into the ring.
        discards,
        /// Drops not reported because of the rate limit or a full ring.
        discards_lost,
    }
}

/// One data source's sampler on one worker.
#[derive(Debug, Clone, Copy)]
pub struct Sampler {
    /// 1-in-N; 0 = off.
    pub rate: u32,
    /// Packets still to skip before the next sample.
    skip: u64,
    /// Which stages feed it: bit 0 receive, bit 1 transmit.
    stages: u8,
}

/// The receive stage (`ethernet-input`).
pub const RX: u8 = 1;
/// The transmit stage (`interface-output`).
pub const TX: u8 = 2;

/// Worker `worker`'s sampler seed: from `configured` (`sflow.seed`, for tests and benchmarks:
/// the same every run, different per worker) or else fresh from the operating system, so that
/// every worker of every start of every router draws its own skips.
pub fn worker_seed(configured: Option<u64>, worker: u16) -> u64 {
    match configured {
        Some(seed) => splitmix64(seed ^ u64::from(worker).wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        None => os_random_u64(),
    }
}

/// 64 random bits from getrandom(2) (the kernel's CSPRNG, which blocks only before it is
/// first seeded at boot). Should the call fail (a kernel without it, a seccomp filter), the
/// clock, the process id and an address the loader randomised are mixed instead: still
/// different per start, if not cryptographically.
fn os_random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into the buffer it is given, which
    // is ours and that long.
    let n = unsafe { libc::getrandom(bytes.as_mut_ptr().cast(), bytes.len(), 0) };
    if n == bytes.len() as isize {
        return u64::from_ne_bytes(bytes);
    }
    tracing::warn!("getrandom failed ({}): sFlow sampler seeded from the clock", std::io::Error::last_os_error());
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let local = 0u8;
    splitmix64(nanos ^ u64::from(std::process::id()) << 32 ^ (&raw const local) as u64)
}

/// One step of splitmix64: spreads a seed's bits over the whole word.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A worker's sFlow state: its samplers, PRNG, drop monitor and the producer end of its
/// sample ring.
pub struct SflowWorker<C> {
    samplers: Vec<Sampler>,
    rng: u64,
    header_bytes: usize,
    /// Ports whose drops become discard samples.
    monitored: Vec<bool>,
    /// This worker's share of the agent's discard budget.
    budget: WorkerBudget,
    /// Where chosen packets go.
    pub producer: Producer,
    /// Every worker's counters, this one's included: a sample's pool and drops are summed
    /// over them when it is published.
    peers: Vec<Arc<C>>,
    /// Settings changed while running, and the generation of them last taken.
    live: Option<(Arc<super::LiveSettings>, u64)>,
}

impl<C: PortCounters> SflowWorker<C> {
    /// Samplers for `sources`, seeded with `seed`;
    /// drops of `monitored` ports reported while `budget` has tokens. `peers` are the counters
    /// of every worker that samples these sources, this one's included.
    pub fn new(
        sources: &[super::DataSource],
        monitored: &[u16],
        budget: WorkerBudget,
        header_bytes: u16,
        seed: u64,
        producer: Producer,
        peers: Vec<Arc<C>>,
    ) -> Self {
        let mut w = SflowWorker {
            samplers: vec![Sampler { rate: 0, skip: 0, stages: 0 }; MAX_INTERFACES],
            rng: seed | 1,
            header_bytes: usize::from(header_bytes).min(MAX_HEADER),
            monitored: vec![false; MAX_INTERFACES],
            budget,
            producer,
            peers,
            live: None,
        };
        for &p in monitored {
            w.monitored[p as usize] = true;
        }
        for &super::DataSource { port, rate, stages } in sources {
            let skip = w.next_skip(rate);
            w.samplers[port as usize] = Sampler { rate, skip, stages };
        }
        w
    }

    /// This worker, following the settings `live` publishes from now on (see
    /// [`SflowWorker::refresh`]).
    pub fn following(mut self, live: Arc<super::LiveSettings>) -> Self {
        let mut seen = 0;
        if let Some(s) = live.changed_since(&mut seen) {
            self.take_settings(&s);
        }
        self.live = Some((live, seen));
        self
    }

    /// Takes settings published since the last look (one atomic load when there are none):
    /// a sampler whose rate or stages changed starts a fresh skip; the others go on.
    #[inline]
    pub fn refresh(&mut self) {
        let Some((live, seen)) = &mut self.live else { return };
        if let Some(s) = live.changed_since(seen) {
            self.take_settings(&s);
        }
    }

    #[cold]
    fn take_settings(&mut self, s: &super::Settings) {
        let mut wanted = vec![(0u32, 0u8); MAX_INTERFACES];
        for &super::DataSource { port, rate, stages } in &s.sources {
            wanted[usize::from(port) % MAX_INTERFACES] = (rate, stages);
        }
        for (port, (rate, stages)) in wanted.into_iter().enumerate() {
            let old = self.samplers[port];
            if (old.rate, old.stages) != (rate, stages) {
                let skip = if rate > 0 { self.next_skip(rate) } else { 0 };
                self.samplers[port] = Sampler { rate, skip, stages };
            }
        }
        self.monitored.fill(false);
        for &p in &s.monitored {
            self.monitored[usize::from(p) % MAX_INTERFACES] = true;
        }
        self.header_bytes = usize::from(s.header_bytes).min(MAX_HEADER);
    }

    /// The next skip for rate `n`: uniform on [1, 2n−1].
    #[inline]
    fn next_skip(&mut self, n: u32) -> u64 {
        // wyrand; Lemire's multiply-shift maps it onto the range without a division.
        self.rng = self.rng.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.rng) * u128::from(self.rng ^ 0xe703_7ed1_a0b4_28db);
        let r = (t >> 64) as u64 ^ t as u64;
        1 + ((u128::from(r) * u128::from(2 * u64::from(n) - 1)) >> 64) as u64
    }

    /// Runs the sampler of `port` over vector `v` at `stage` ([`RX`] or [`TX`]; each stage
    /// calls this once per vector). Counts the packets seen and copies the chosen ones into
    /// the ring.
    #[inline(always)]
    pub fn sample(&mut self, pool: &mut BufferPool, v: &mut Vector, port: u16, stage: u8, counters: &C) {
        let s = &mut self.samplers[port as usize % MAX_INTERFACES];
        if s.stages & stage == 0 {
            return;
        }
        let n = v.len() as u64;
        counters.sflow(port).seen.add(n);
        if s.skip > n {
            s.skip -= n;
            return;
        }
        self.take(pool, v, port, stage, counters);
    }

    /// The per-packet form of [`SflowWorker::sample`], for a stage whose packets of one
    /// vector leave through different ports. Returns true when the packet was chosen.
    #[inline]
    pub fn sample_one(&mut self, pool: &mut BufferPool, i: u32, port: u16, stage: u8, counters: &C) -> bool {
        let s = &mut self.samplers[port as usize % MAX_INTERFACES];
        if s.stages & stage == 0 {
            return false;
        }
        counters.sflow(port).seen.add(1);
        s.skip -= 1;
        if s.skip > 0 {
            return false;
        }
        let rate = s.rate;
        self.samplers[port as usize % MAX_INTERFACES].skip = self.next_skip(rate);
        self.copy(pool, i, port, stage, counters)
    }

    /// The slow path: at least one packet of the vector is chosen.
    #[cold]
    fn take(&mut self, pool: &mut BufferPool, v: &mut Vector, port: u16, stage: u8, counters: &C) {
        let rate = self.samplers[port as usize].rate;
        let mut at = self.samplers[port as usize].skip - 1;
        let n = v.len() as u64;
        while at < n {
            let i = v.indices()[at as usize];
            self.copy(pool, i, port, stage, counters);
            at += self.next_skip(rate);
        }
        self.samplers[port as usize].skip = at - n + 1;
    }

    /// Reserves a slot for buffer `i`, chosen at `stage`, and copies its header bytes; returns
    /// false (and counts a drop) when the ring is full.
    fn copy(&mut self, pool: &mut BufferPool, i: u32, port: u16, stage: u8, counters: &C) -> bool {
        let c = counters.sflow(port);
        let rate = self.samplers[usize::from(port) % MAX_INTERFACES].rate;
        let frame = pool.frame(i);
        let len = frame.len().min(self.header_bytes);
        let taken = self.producer.reserve(|s| {
            s.header[..len].copy_from_slice(&frame[..len]);
            s.header_len = len as u16;
            s.frame_len = frame.len() as u16;
            s.port = port;
            s.stage = stage;
            s.fate = Fate::InFlight;
            s.buffer = i;
            s.rate = rate;
        });
        if taken {
            pool.meta_mut(i).flags |=
                if stage == RX { crate::runtime::trace::SAMPLED_RX } else { crate::runtime::trace::SAMPLED_TX };
            c.taken.add(1)
        } else {
            c.ring_full.add(1)
        }
        taken
    }

    /// From `error-drop`, for the dropped packets of `v`: each one the receive sampler of its
    /// input port saw leaves that port's pool, and each one dropped on a monitored port (its
    /// input, or its output for drops on the way out) becomes a discard sample while the
    /// worker has discard tokens; the others are counted as lost.
    pub fn dropped(
        &mut self,
        pool: &BufferPool,
        v: &Vector,
        interfaces: &InterfaceTable,
        reasons: &[DropInfo],
        counters: &C,
    ) {
        for &i in v.indices() {
            let m = *pool.meta(i);
            let rx_port = interfaces.get(m.rx_if).port;
            let reason =
                reasons.get(usize::from(m.error)).unwrap_or(&reasons[crate::interface::drops::UNSPECIFIED.index()]);
            // A driver's rx node drops before the receive sampler saw the frame.
            let before_sampling = crate::drivers::nodes::INPUTS.contains(&reason.node);
            if self.samplers[usize::from(rx_port) % MAX_INTERFACES].stages & RX != 0 && !before_sampling {
                counters.sflow(rx_port).dropped.add(1);
            }
            let egress = matches!(reason.class, DropClass::OutDiscards | DropClass::OutErrors);
            if reason.class == DropClass::Punt {
                continue; // consumed by this router, not a discard
            }
            let port = if egress { interfaces.get(m.tx_if).port } else { rx_port };
            if !self.monitored.get(port as usize).copied().unwrap_or(false) {
                continue;
            }
            let c = counters.sflow(port);
            let frame = pool.frame(i);
            let len = frame.len().min(self.header_bytes);
            let reported = self.budget.take(reason.id.index())
                && self.producer.reserve(|s| {
                    s.header[..len].copy_from_slice(&frame[..len]);
                    s.header_len = len as u16;
                    s.frame_len = m.len();
                    s.port = port;
                    s.input = m.rx_if;
                    s.output = if egress { m.tx_if } else { 0 };
                    s.reason = reason.sflow_code;
                    s.fate = Fate::Discard;
                });
            if reported { c.discards.add(1) } else { c.discards_lost.add(1) }
        }
    }

    /// Counts a packet received on `rx_port` that this router consumed (answered in place)
    /// as not forwarded, as `dropped` does for drops: the data source's pool stays the
    /// packets it forwarded.
    pub fn consumed(&self, rx_port: u16, counters: &C) {
        if self.samplers[usize::from(rx_port) % MAX_INTERFACES].stages & RX != 0 {
            counters.sflow(rx_port).dropped.add(1);
        }
    }

    /// Completes every slot reserved since the last publication from its buffer's metadata
    /// and publishes them. Call once the vectors they came from have left the graph and
    /// before the worker reuses any buffer (the metadata of freed buffers is intact until then).
    pub fn publish(&mut self, pool: &BufferPool, interfaces: &InterfaceTable, l3: &L3) {
        let peers = &self.peers;
        self.producer.for_each_unpublished(|s| {
            if s.fate == Fate::Discard {
                return; // complete when reserved
            }
            let m = *pool.meta(s.buffer);
            // A received packet this router answered in place (an echo or ARP request turned
            // into the reply, which has no input interface) was consumed, not forwarded.
            let consumed = s.stage == RX && m.rx_if == 0;
            let forwarded = m.error == NOT_DROPPED && !consumed;
            s.fate = if forwarded { Fate::Forwarded } else { Fate::Dropped };
            if !forwarded {
                return; // not a flow sample
            }
            // This worker's part is exact (its vectors have left the graph, drops counted);
            // another worker's is at most the vector it is running ahead (seen, drops not yet
            // counted).
            (s.pool, s.drops) = peers.iter().fold((0, 0), |(pool, drops), w| {
                let c = w.sflow(s.port);
                (pool + c.seen.get().saturating_sub(c.dropped.get()), drops + c.ring_full.get())
            });
            let (via, push) = match l3.adjs.get(m.adj() as usize) {
                Some(Adjacency::Via { next_hop, push, .. }) => (Some(*next_hop), *push),
                // A connected destination is its own next hop.
                Some(Adjacency::Glean { .. }) => {
                    let header = &s.header[..usize::from(s.header_len)];
                    (super::header::ip_addresses(header).map(|(_, dst)| dst), LabelStack::EMPTY)
                }
                _ => (None, LabelStack::EMPTY),
            };
            s.routed = m.dst_prefix_len() > 0 || via.is_some();
            let swap_hop = label_stacks(s, l3, &m, push);
            s.input = m.rx_if;
            s.output = m.tx_if;
            s.in_vlan = interfaces.get(m.rx_if).vlan;
            s.out_vlan = interfaces.get(s.output).vlan;
            let dst = super::header::ip_addresses(&s.header[..usize::from(s.header_len)]).map(|(_, d)| d);
            s.dst_prefix_len =
                reported_prefix_len(interfaces, m.tx_if, via.filter(|&v| Some(v) == dst), m.dst_prefix_len());
            s.next_hop = via.or(swap_hop).unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        });
        self.producer.publish();
    }
}

/// The destination prefix length a sample reports for a packet that matched `len`: when the
/// packet went to `host` itself by its host route (a resolved neighbor, source `neighbor`),
/// the length of the connected subnet it is on, as collectors aggregate destinations by it.
/// Inlined into [`SflowWorker::publish`], its one caller, as it was before the sampler became
/// generic (then LLVM stopped inlining it, and publishing cost a call per sample).
#[inline(always)]
fn reported_prefix_len(interfaces: &InterfaceTable, tx_if: u16, host: Option<IpAddr>, len: u8) -> u8 {
    let subnet = match host {
        Some(IpAddr::V4(h)) if len == 32 => {
            interfaces.addresses.iter().find(|(i, a)| *i == tx_if && a.len < 32 && a.contains(h)).map(|(_, a)| a.len)
        }
        Some(IpAddr::V6(h)) if len == 128 => {
            interfaces.addresses6.iter().find(|(i, a)| *i == tx_if && a.len < 128 && a.contains(h)).map(|(_, a)| a.len)
        }
        _ => None,
    };
    subnet.unwrap_or(len)
}

/// Completes slot `s` with the MPLS label stacks its packet was received and sent with, and
/// returns a swap's next hop: from the packet's label entry (`mpls-lookup`, metadata `m`) or
/// its IPv4 adjacency's pushed labels (`push`), and the labels in the slot's header as the
/// sampler saw it: as received at [`RX`], as sent at [`TX`]. The stacks are written in place
/// (returned, they would be copied per sample), and a packet neither label-switched nor
/// popped leaves the header unread. Inlined into [`SflowWorker::publish`], its one caller.
#[inline(always)]
fn label_stacks(s: &mut Slot, l3: &L3, m: &crate::runtime::buffer::BufferMeta, push: LabelStack) -> Option<IpAddr> {
    let Some(entry) = l3.entry(m.label_entry()) else {
        (s.in_labels, s.out_labels) = (LabelStack::EMPTY, push);
        return None;
    };
    let (stage, seen) = (s.stage, super::header::labels(&s.header[..usize::from(s.header_len)]));
    let seen = seen.labels();
    let in_label = l3.entry_labels.get(usize::from(m.label_entry()) - 1).copied();
    match entry {
        LabelEntry::Swap { adj, out } => {
            let hop = match l3.adjs.get(*adj as usize) {
                Some(Adjacency::Via { next_hop, .. }) => Some(*next_hop),
                _ => None,
            };
            let out = out.labels();
            if stage == RX {
                (s.in_labels, s.out_labels) =
                    (LabelStack::first(seen.iter()), LabelStack::first(out.iter().chain(seen.iter().skip(1))));
            } else {
                let received = in_label.iter().chain(seen.iter().skip(out.len()));
                (s.in_labels, s.out_labels) = (LabelStack::first(received), LabelStack::first(seen.iter()));
            }
            hop
        }
        // Popped at the end of the stack, then routed (and maybe pushed onto again).
        LabelEntry::Pop { .. } => {
            s.in_labels = if stage == RX { LabelStack::first(seen.iter()) } else { LabelStack::first(in_label.iter()) };
            s.out_labels = push;
            None
        }
    }
}

#[cfg(test)]
mod tests;
