//! The sFlow agent: drains the workers' sample rings round-robin, turns each forwarded
//! sample into an sFlow v5 flow sample, packs samples into datagrams of at most
//! `max-datagram-size` bytes and sends them to every collector, batched, never blocking.
//!
//! Each data source (port) has its own sample sequence numbers, assigned here, so several
//! workers feeding one port make one gap-free sequence. `sample_pool` is counted, not
//! estimated: the packets the port's samplers saw on every worker minus those the graph
//! dropped (a dropped packet is not a flow sample), as of the moment the worker published the
//! sample (see [`super::SflowWorker::publish`]); `drops` is the count of samples lost to full
//! rings as of that moment. Both never step back from one sample of a port to the next.
//! Samples are sent when a datagram fills, or within [`FLUSH`] of the oldest waiting sample.

mod encoder;
mod routes;

use super::PortCounters;
use super::ring::Consumer;
use super::send::Sender;
use crate::net::MAX_INTERFACES;
use crate::runtime::counter::Counter;
use crate::runtime::qsbr::QsbrReader;
use crate::runtime::stats::counter_set;
use encoder::{Encoder, Source};
pub use routes::SourceRoutes;
use sflow::{
    CounterRecord, CountersSample, DataSource, DatagramBuilder, DiscardSample, EthernetCounters, ExtendedMpls,
    ExtendedRouter, ExtendedSwitch, FlowRecord, FlowSample, IfCounters, Interface, RawHeader, Sample,
};
use std::borrow::Cow;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Longest a sample waits for its datagram to fill.
pub const FLUSH: Duration = Duration::from_millis(250);
/// How long the agent sleeps when there is nothing to send.
const IDLE: Duration = Duration::from_millis(1);
/// Datagrams packed per round before they are sent.
const BATCH: usize = 32;

counter_set! {
    /// The agent's counters (written by the agent thread only).
    AgentCounters,
    /// The agent's counters.
    AgentStats {
        /// Flow samples encoded into datagrams.
        samples_encoded,
        /// Sampled packets the graph dropped (left to drop monitoring).
        samples_of_drops,
        /// Datagrams built.
        datagrams,
        /// Datagrams handed to the kernel, summed over collectors.
        datagrams_sent,
        /// Datagrams not handed to the kernel (socket full, collector unreachable).
        send_failures,
        /// Datagrams a collector refused, as the kernel reported (ICMP unreachable).
        refused,
        /// Counter samples sent.
        counter_samples,
        /// Discard samples sent.
        discard_samples,
        /// The most published samples the agent found waiting in one ring (a gauge, not a
        /// count): how close the rings came to full (`sflow.ring-depth`).
        ring_high_water,
        /// The longest the agent took to come back to the rings, in microseconds, beyond the
        /// sleep it asked for (a gauge): how long the scheduler kept it waiting, plus one round
        /// of work.
        longest_pause_us,
    }
}

/// What the agent shares with the main thread.
pub struct AgentShared {
    /// Totals.
    pub counters: AgentCounters,
    /// Flow samples encoded per data source (port index).
    pub sent_by_port: Vec<Counter>,
}

/// Everything the agent starts with.
pub struct AgentSetup {
    /// The consumer ends of the workers' rings.
    pub rings: Vec<Consumer>,
    /// The workers' counters (sampler totals, drops).
    pub workers: Vec<Arc<dyn PortCounters>>,
    /// For the source prefix length.
    pub routes: SourceRoutes,
    /// Where the agent announces quiescent states; offline when the agent ends, also by a
    /// panic.
    pub qsbr: QsbrReader,
    /// Agent address in datagrams.
    pub agent: IpAddr,
    /// Sub-agent id in datagrams.
    pub sub_agent_id: u32,
    /// Largest datagram.
    pub max_datagram: usize,
    /// Collectors.
    pub collectors: Vec<SocketAddr>,
    /// Counter polling of the data sources.
    pub polling: super::Polling,
    /// The ifIndex each interface is reported as in samples.
    pub if_indices: super::IfIndices,
    /// Settings changed while running (rates, sources, polling interval).
    pub live: Arc<super::LiveSettings>,
    /// Counters shared with the main thread.
    pub shared: Arc<AgentShared>,
    /// Set to stop (after a last flush).
    pub stop: Arc<AtomicBool>,
    /// The workers' discard tokens, granted here.
    pub drop_budget: Arc<super::DropBudget>,
    /// How the discard budget (`drop-limit`) is handed out.
    pub refill: super::Refill,
    /// CPUs the workers are pinned to: the agent runs on the others it may use (so that it
    /// never waits behind a polling worker), when there are any.
    pub avoid_cpus: Vec<u16>,
    /// The agent thread's nice value (`sflow.agent-nice`), taken when it runs apart from the
    /// workers (see `avoid_cpus`); 0 leaves it as it is.
    pub nice: i32,
}

impl AgentShared {
    /// All zero.
    pub fn new() -> Self {
        AgentShared {
            counters: AgentCounters::default(),
            sent_by_port: (0..MAX_INTERFACES).map(|_| Counter::default()).collect(),
        }
    }
}

impl Default for AgentShared {
    fn default() -> Self {
        Self::new()
    }
}

/// Starts the agent thread `vecflow-sflow`.
pub fn spawn(setup: AgentSetup) -> std::io::Result<std::thread::JoinHandle<std::io::Result<()>>> {
    let sender = Sender::new(&setup.collectors);
    std::thread::Builder::new().name("vecflow-sflow".into()).spawn(move || run(setup, sender))
}

/// Keeps the agent off the workers' CPUs (`avoid_cpus`) and, only where that worked, sets
/// its nice value: a busy agent (1:1 at full rate) sharing CPUs with unpinned workers would
/// slow them.
fn keep_off_workers(s: &AgentSetup) {
    let apart = !s.avoid_cpus.is_empty()
        && match crate::runtime::cpu::avoid_cpus(&s.avoid_cpus) {
            Ok(apart) => apart,
            Err(e) => {
                tracing::warn!("sFlow agent: cannot keep off the workers' CPUs: {e}");
                false
            }
        };
    if !apart {
        tracing::debug!(cpus = ?s.avoid_cpus, "sFlow agent: may run on the workers' CPUs; its nice stays");
    } else if s.nice != 0 {
        // SAFETY: gettid and setpriority take and return plain integers; `who` is this thread.
        let set = unsafe { libc::setpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t, s.nice) };
        if set != 0 {
            let e = std::io::Error::last_os_error();
            tracing::info!("sFlow agent: cannot set nice {} ({e}); it keeps the process's", s.nice);
        }
    }
}

/// Samples waiting in `s`'s rings; keeps the rings' high-water mark.
fn waiting(s: &AgentSetup, high_water: &mut u64) -> u64 {
    let mut available = 0;
    for r in &s.rings {
        let waiting = r.available();
        available += waiting;
        if waiting > *high_water {
            *high_water = waiting;
            s.shared.counters.ring_high_water.set(*high_water);
        }
    }
    available
}

fn run(mut s: AgentSetup, sender: Sender) -> std::io::Result<()> {
    keep_off_workers(&s);
    crate::runtime::privileges::thread_start();
    let started = Instant::now();
    let mut high_water = 0;
    let mut enc = Encoder {
        sources: Box::new([Source::default(); MAX_INTERFACES]),
        bufs: vec![vec![0u8; s.max_datagram]; BATCH],
        datagram_seq: 0,
        discards: Vec::new(),
        next_ring: 0,
    };
    let mut waiting_since: Option<Instant> = None;
    let mut last_refill = Instant::now();
    let mut seen = 0;
    let (mut last_round, mut asleep, mut longest_pause) = (Instant::now(), Duration::ZERO, Duration::ZERO);
    loop {
        let now = Instant::now();
        let pause = now.saturating_duration_since(last_round).saturating_sub(asleep);
        (last_round, asleep) = (now, Duration::ZERO);
        if pause > longest_pause {
            longest_pause = pause;
            s.shared.counters.longest_pause_us.set(pause.as_micros() as u64);
        }
        s.qsbr.quiescent();
        s.routes.refresh();
        if let Some(live) = s.live.changed_since(&mut seen) {
            let ports: Vec<u16> = live.sources.iter().map(|s| s.port).collect();
            s.polling.reconfigure(live.polling_interval, &ports);
        }
        let since_refill = last_refill.elapsed();
        if since_refill >= super::REFILL {
            last_refill += since_refill;
            s.refill.step(since_refill, &s.drop_budget);
        }
        let stopping = s.stop.load(Relaxed);
        let available = waiting(&s, &mut high_water);
        // Counter samples that are due go out at once; at stop, every source's final counters.
        let polled = s.polling.due(Instant::now(), stopping && available == 0);
        if !polled.is_empty() {
            s.shared.counters.counter_samples.add(polled.len() as u64);
            let uptime = started.elapsed().as_millis() as u32;
            enc.datagram_seq = pack_and_send(&s, &sender, &mut enc.bufs, enc.datagram_seq, uptime, &polled);
        }
        if available == 0 {
            waiting_since = None;
            if stopping {
                break;
            }
            std::thread::sleep(IDLE);
            asleep = IDLE;
            continue;
        }
        let since = *waiting_since.get_or_insert_with(Instant::now);
        // A datagram's worth is about max_datagram / 200 samples of 128-byte headers.
        let worth = (s.max_datagram / 200).max(1) as u64;
        if available < worth && since.elapsed() < FLUSH && !stopping {
            std::thread::sleep(IDLE);
            asleep = IDLE;
            continue;
        }
        let lens = enc.flow_datagrams(&mut s, started.elapsed().as_millis() as u32);
        send(&s, &sender, &enc.bufs, &lens);
        // Discard samples travel in datagrams of their own (some collectors stop reading a
        // datagram at a discard sample).
        if !enc.discards.is_empty() {
            s.shared.counters.discard_samples.add(enc.discards.len() as u64);
            let uptime = started.elapsed().as_millis() as u32;
            enc.datagram_seq = pack_and_send(&s, &sender, &mut enc.bufs, enc.datagram_seq, uptime, &enc.discards);
            enc.discards.clear();
        }
        waiting_since = None;
    }
    s.qsbr.offline();
    Ok(())
}

/// Packs `samples` into as many datagrams as they need (numbered from `seq`), sends them and
/// returns the next datagram sequence number.
fn pack_and_send(
    s: &AgentSetup,
    sender: &Sender,
    bufs: &mut [Vec<u8>],
    mut seq: u32,
    uptime: u32,
    samples: &[Sample<'_>],
) -> u32 {
    let mut queue = samples.iter().peekable();
    while queue.peek().is_some() {
        let mut lens = Vec::new();
        for buf in bufs.iter_mut() {
            let Some(first) = queue.next() else { break };
            let mut b =
                DatagramBuilder::new(buf, s.agent, s.sub_agent_id, seq, uptime).expect("max-datagram-size ≥ 200");
            // Counter samples and discard samples (headers of at most 256 bytes) always fit an
            // empty datagram of 200 bytes or more.
            b.push(first).expect("a counter or discard sample fits an empty datagram");
            while let Some(next) = queue.peek() {
                if b.push(next).is_err() {
                    break;
                }
                queue.next();
            }
            lens.push(b.finish());
            seq = seq.wrapping_add(1);
        }
        send(s, sender, bufs, &lens);
    }
    seq
}

/// Sends the first `lens.len()` datagrams of `bufs` (of those lengths) to every collector.
fn send(s: &AgentSetup, sender: &Sender, bufs: &[Vec<u8>], lens: &[usize]) {
    s.shared.counters.datagrams.add(lens.len() as u64);
    let batch: Vec<&[u8]> = bufs.iter().zip(lens).map(|(b, &n)| &b[..n]).collect();
    for k in 0..s.collectors.len() {
        let out = sender.send_batch(k, &batch);
        s.shared.counters.datagrams_sent.add(out.sent as u64);
        s.shared.counters.send_failures.add((batch.len() - out.sent) as u64);
        s.shared.counters.refused.add(out.refused as u64);
    }
}

/// The smallest `max-datagram-size` that holds any sample the agent builds, alone: the
/// datagram header for the agent's address family plus the longest of a flow sample (a raw
/// header of `header_bytes`, switch, router and MPLS records with IPv6 next hops and 8 labels
/// each way), a discard
/// sample and a port's counter sample (generic, Ethernet and a name of `name_len` bytes). A
/// smaller datagram would leave the agent a sample it can never send.
pub fn min_datagram_size(agent_v6: bool, header_bytes: u16, name_len: usize) -> usize {
    let header = vec![0u8; usize::from(header_bytes)];
    let name = vec![0u8; name_len];
    let raw = FlowRecord::RawHeader(RawHeader {
        protocol: sflow::HEADER_PROTOCOL_ETHERNET,
        frame_length: 0,
        stripped: 4,
        header: Cow::Borrowed(&header),
    });
    let flow = Sample::Flow(FlowSample {
        sequence: 0,
        source: DataSource::interface(0),
        sampling_rate: 0,
        sample_pool: 0,
        drops: 0,
        input: Interface::Index(0),
        output: Interface::Index(0),
        records: vec![
            raw.clone(),
            FlowRecord::Switch(ExtendedSwitch { src_vlan: 0, src_priority: 0, dst_vlan: 0, dst_priority: 0 }),
            // IPv6 next hops: the longer address.
            FlowRecord::Router(ExtendedRouter {
                next_hop: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                src_mask_len: 0,
                dst_mask_len: 0,
            }),
            FlowRecord::Mpls(ExtendedMpls {
                next_hop: IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                in_stack: vec![0; 8],
                out_stack: vec![0; 8],
            }),
        ],
    });
    let discard = Sample::Discard(DiscardSample {
        sequence: 0,
        source: DataSource::interface(0),
        drops: 0,
        input: 0,
        output: 0,
        reason: 0,
        records: vec![raw],
    });
    let counters = Sample::Counters(CountersSample {
        sequence: 0,
        source: DataSource::interface(0),
        records: vec![
            CounterRecord::Generic(IfCounters::default()),
            CounterRecord::Ethernet(EthernetCounters::UNKNOWN),
            CounterRecord::PortName(Cow::Borrowed(&name)),
        ],
    });
    let datagram_header = if agent_v6 { 40 } else { 28 };
    datagram_header + [flow, discard, counters].iter().map(sflow::sample_len).max().unwrap_or(0)
}
