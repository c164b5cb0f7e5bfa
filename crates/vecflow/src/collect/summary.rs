//! `collect --summary`: what the samples say about the traffic, with the error they carry.
//!
//! Estimates follow sFlow's packet sampling theory (sflow.org, "Packet Sampling Basics"): a
//! class seen in `c` samples taken at rate N is estimated at Σ N packets and Σ N × frame
//! length bytes, with a relative error at 95 % confidence of at most 196·√(1/c) %. A packet
//! is counted once: when an agent sends ingress samples (see `direction`), its other
//! samples are left out of the flow totals, since they see the same packets again on egress.
//!
//! Sequence numbers are compared in serial-number arithmetic: a number behind the highest seen
//! is late (out of order), never a gap. Sample pools and drops are accumulated sample by sample
//! in sequence order, modulo 2³², so they survive any number of wraps; a late sample adds to the
//! estimates but not to the pool. After an agent restart every count starts a new baseline.

use super::accumulate::Accumulated;
use super::capped::Capped;
use super::direction::{Direction, Ports};
use super::limits::{MAX_AGENTS, MAX_FLOWS, MAX_INTERFACES, MAX_REASONS, MAX_SOURCES};
use super::packet::{NO_IP, decode_ethernet};
use super::polled::Polled;
use super::reasons::reason_name;
pub use super::report::Report;
use super::report::{AgentRow, CounterRow, FlowRow, InterfaceRow, Overflow};
use super::sequence::{Sequence, Step};
use serde::Serialize;
use sflow::*;
use std::collections::BTreeSet;
use std::net::IpAddr;

/// Packets and bytes estimated from samples.
#[derive(Debug, Default, Clone, Copy, Serialize)]
pub struct Estimate {
    /// Samples in the class (c).
    pub samples: u64,
    /// Estimated packets: Σ sampling rate.
    pub packets: f64,
    /// Estimated bytes: Σ sampling rate × frame length.
    pub bytes: f64,
}

impl Estimate {
    fn add(&mut self, rate: u32, frame_length: u32) {
        self.samples += 1;
        self.packets += f64::from(rate);
        self.bytes += f64::from(rate) * f64::from(frame_length);
    }

    /// Relative error bound at 95 % confidence, in percent: 196·√(1/c).
    pub fn error_pct(&self) -> f64 {
        if self.samples == 0 { f64::INFINITY } else { 196.0 / (self.samples as f64).sqrt() }
    }
}

/// A flow: agent and 5-tuple (ports 0 when absent, addresses 0.0.0.0 for non-IP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct FlowKey {
    /// Agent that sampled it.
    pub agent: IpAddr,
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IP protocol (0 for non-IP).
    pub protocol: u8,
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
}

/// An uptime that goes back by more than this means the agent restarted (reordering is
/// never that late).
const RESTART_UPTIME_MS: u32 = 10_000;
/// An uptime that goes back but is less than this ahead modulo 2³² wrapped (every 49.7 days).
const UPTIME_WRAP_MS: u32 = 3_600_000;

/// True when the agent uptime went from `last` back to `now` by a restart, not a wrap.
fn uptime_restarted(last: u32, now: u32) -> bool {
    now.saturating_add(RESTART_UPTIME_MS) < last && now.wrapping_sub(last) >= UPTIME_WRAP_MS
}

/// One (agent, sub-agent) datagram stream.
#[derive(Debug, Default)]
struct Stream {
    datagrams: u64,
    seq: Sequence,
    uptime_ms: u32,
    lost: u64,
    restarts: u64,
    out_of_order: u64,
}

impl Stream {
    /// Places datagram `sequence` sent at `uptime_ms`: a restart (uptime back by more than
    /// reordering explains, or the sequence back to 0 or 1), a gap, or a late arrival (which
    /// closes the gap it had opened).
    fn place(&mut self, sequence: u32, uptime_ms: u32) {
        self.datagrams += 1;
        let back_to_start = sequence <= 1 && self.seq.is_behind(sequence);
        if self.datagrams > 1 && (back_to_start || uptime_restarted(self.uptime_ms, uptime_ms)) {
            self.restarts += 1;
            self.seq.restart(sequence);
            self.uptime_ms = uptime_ms;
            return;
        }
        match self.seq.step(sequence) {
            Step::Behind { filled } => {
                self.out_of_order += 1;
                self.lost = self.lost.saturating_sub(filled.into());
                return;
            }
            Step::Ahead { missed } => self.lost += u64::from(missed),
            Step::First => {}
        }
        self.uptime_ms = uptime_ms;
    }
}

/// One data source's samples.
#[derive(Debug, Default)]
struct Source {
    ingress: Estimate,
    egress: Estimate,
    seq: Sequence,
    epoch: u64,
    pool: Accumulated,
    drops: Accumulated,
    gaps: u64,
    out_of_order: u64,
    discards: Capped<u32, u64, MAX_REASONS>,
}

impl Source {
    /// Places flow sample `f` of a stream that has restarted `epoch` times: pool and drops
    /// advance only with the sample sequence, and start over after a restart.
    fn place(&mut self, f: &FlowSample<'_>, epoch: u64) {
        let (pool, drops) = (u64::from(f.sample_pool), u64::from(f.drops));
        if self.epoch != epoch {
            self.epoch = epoch;
            self.seq.restart(f.sequence);
            self.pool.rebase(pool);
            self.drops.rebase(drops);
            return;
        }
        match self.seq.step(f.sequence) {
            Step::Behind { filled } => {
                self.out_of_order += 1;
                self.gaps = self.gaps.saturating_sub(filled.into());
            }
            step => {
                if let Step::Ahead { missed } = step {
                    self.gaps += u64::from(missed);
                }
                self.pool.advance(pool, 32);
                self.drops.advance(drops, 32);
            }
        }
    }
}

#[derive(Debug, Default)]
struct Flow {
    ingress: Estimate,
    other: Estimate,
}

/// Accumulates decoded datagrams, within the limits of `limits`.
#[derive(Debug, Default)]
pub struct Summary {
    streams: Capped<(IpAddr, u32), Stream, MAX_AGENTS>,
    sources: Capped<(IpAddr, DataSource), Source, MAX_SOURCES>,
    ports: Ports,
    agents_with_ingress: BTreeSet<IpAddr>,
    flows: Capped<FlowKey, Flow, MAX_FLOWS>,
    counters: Capped<(IpAddr, u32), Polled, MAX_INTERFACES>,
    errors: u64,
}

impl Summary {
    /// Counts a datagram that could not be decoded.
    pub fn error(&mut self) {
        self.errors += 1;
    }

    /// Adds one decoded datagram.
    pub fn add(&mut self, d: &Datagram<'_>) {
        let Some(st) = self.streams.entry((d.agent, d.sub_agent_id)) else { return };
        st.place(d.sequence, d.uptime_ms);
        let epoch = st.restarts;
        for s in &d.samples {
            match s {
                Sample::Flow(f) => self.flow(d.agent, epoch, f),
                Sample::Counters(c) => self.counter(d.agent, epoch, d.uptime_ms, c),
                Sample::Discard(x) => {
                    if let Some(n) = self.sources.entry((d.agent, x.source)).and_then(|s| s.discards.entry(x.reason)) {
                        *n += 1;
                    }
                }
                Sample::Unknown { .. } => {}
            }
        }
    }

    fn flow(&mut self, agent: IpAddr, epoch: u64, f: &FlowSample<'_>) {
        let Some(src) = self.sources.entry((agent, f.source)) else { return };
        let len = f
            .records
            .iter()
            .find_map(|r| match r {
                FlowRecord::RawHeader(h) => Some(h.frame_length),
                _ => None,
            })
            .unwrap_or(0);
        let ingress = self.ports.classify(agent, f) == Direction::Ingress;
        if ingress {
            src.ingress.add(f.sampling_rate, len);
            self.agents_with_ingress.insert(agent);
        } else {
            src.egress.add(f.sampling_rate, len);
        }
        src.place(f, epoch);
        let key = f.records.iter().find_map(|r| match r {
            FlowRecord::RawHeader(h) if h.protocol == HEADER_PROTOCOL_ETHERNET => decode_ethernet(&h.header),
            _ => None,
        });
        let ip = key.and_then(|k| k.ip);
        let key = FlowKey {
            agent,
            src: ip.map_or(NO_IP, |i| i.src),
            dst: ip.map_or(NO_IP, |i| i.dst),
            protocol: ip.map_or(0, |i| i.protocol),
            src_port: ip.and_then(|i| i.src_port).unwrap_or(0),
            dst_port: ip.and_then(|i| i.dst_port).unwrap_or(0),
        };
        if let Some(flow) = self.flows.entry(key) {
            if ingress { &mut flow.ingress } else { &mut flow.other }.add(f.sampling_rate, len);
        }
    }

    fn counter(&mut self, agent: IpAddr, epoch: u64, uptime_ms: u32, c: &CountersSample<'_>) {
        for r in &c.records {
            if let CounterRecord::Generic(g) = r
                && let Some(p) = self.counters.entry((agent, g.if_index))
            {
                p.add(c.sequence, epoch, uptime_ms, g);
            }
        }
    }

    /// The estimates, with the largest `top` flows by bytes.
    pub fn report(&self, top: usize) -> Report {
        let agents = self
            .streams
            .iter()
            .map(|((agent, sub), s)| AgentRow {
                agent: *agent,
                sub_agent_id: *sub,
                datagrams: s.datagrams,
                lost_datagrams: s.lost,
                restarts: s.restarts,
                out_of_order: s.out_of_order,
            })
            .collect();
        let interfaces = self
            .sources
            .iter()
            .map(|((agent, ds), s)| InterfaceRow {
                agent: *agent,
                source: format!("{}:{}", ds.class, ds.index),
                ingress: s.ingress,
                egress: s.egress,
                pool_packets: s.pool.total_u64(),
                dropped_samples: s.drops.total_u64(),
                sequence_gaps: s.gaps,
                out_of_order: s.out_of_order,
                discards: s.discards.iter().map(|(r, n)| (format!("{} ({r})", reason_name(*r)), *n)).collect(),
            })
            .collect();
        let mut flows: Vec<FlowRow> = self
            .flows
            .iter()
            .filter_map(|(k, f)| {
                let est = if self.agents_with_ingress.contains(&k.agent) { f.ingress } else { f.other };
                (est.samples > 0).then_some(FlowRow { key: *k, estimate: est, error_pct: est.error_pct() })
            })
            .collect();
        flows.sort_by(|a, b| b.estimate.bytes.total_cmp(&a.estimate.bytes).then(a.key.cmp(&b.key)));
        flows.truncate(top);
        let counters = self
            .counters
            .iter()
            .map(|((agent, if_index), p)| {
                let t = &p.totals;
                let sum = |a: [&Accumulated; 3]| a.iter().map(|x| x.total_u64()).fold(0u64, u64::saturating_add);
                CounterRow {
                    agent: *agent,
                    if_index: *if_index,
                    polls: p.polls,
                    out_of_order: p.out_of_order,
                    seconds: t.uptime_ms.total() as f64 / 1000.0,
                    in_octets: t.in_octets.total(),
                    in_packets: sum([&t.in_ucast, &t.in_mcast, &t.in_bcast]),
                    out_octets: t.out_octets.total(),
                    out_packets: sum([&t.out_ucast, &t.out_mcast, &t.out_bcast]),
                    in_discards: t.in_discards.total_u64(),
                    in_errors: t.in_errors.total_u64(),
                    out_discards: t.out_discards.total_u64(),
                }
            })
            .collect();
        let overflow = Overflow {
            agents: self.streams.overflow(),
            sources: self.sources.overflow(),
            interfaces: self.counters.overflow() + self.ports.overflow(),
            flows: self.flows.overflow(),
            reasons: self.sources.iter().map(|(_, s)| s.discards.overflow()).sum(),
        };
        Report { decode_errors: self.errors, overflow, agents, interfaces, flows, counters }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use std::net::Ipv4Addr;

    /// A 64-bit PRNG (splitmix64) so the synthetic traffic is the same on every run.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    fn frame(class: u16, len: u16) -> Vec<u8> {
        let mut f = vec![0u8; 64];
        f[12..14].copy_from_slice(&[8, 0]);
        wire::ipv4::write_header(
            &mut f[14..],
            len - 18,
            64,
            17,
            Ipv4Addr::new(16, 0, 0, 1),
            Ipv4Addr::new(48, 0, (class >> 8) as u8, class as u8),
        );
        f[34..38].copy_from_slice(&[4, 0, 8, 0]);
        f
    }

    /// Synthetic traffic: 20 classes with skewed sizes, sampled at 1:N with uniform skips on
    /// [1, 2N−1]; each class estimate must be within its 196/√c % bound (95 % confidence, so
    /// a few misses are expected: at most 2 of 20 are allowed, and none beyond twice the bound).
    fn check_rate(n: u32, packets: u64, seed: u64) {
        let mut rng = Rng(seed);
        let classes = 20u16;
        let mut truth = vec![(0u64, 0u64); classes as usize];
        let mut summary = Summary::default();
        let mut skip = 1 + rng.next() % (2 * u64::from(n) - 1);
        let (mut pool, mut seq) = (0u32, 0u32);
        for _ in 0..packets {
            // Class k carries weight k+1.
            let r = rng.next() % u64::from(classes * (classes + 1) / 2);
            let (mut k, mut acc) = (0u16, 0u64);
            while acc + u64::from(k + 1) <= r {
                acc += u64::from(k + 1);
                k += 1;
            }
            let len = 64 + 64 * k;
            truth[k as usize].0 += 1;
            truth[k as usize].1 += u64::from(len);
            pool = pool.wrapping_add(1);
            skip -= 1;
            if skip == 0 {
                skip = 1 + rng.next() % (2 * u64::from(n) - 1);
                seq += 1;
                let s = Sample::Flow(FlowSample {
                    sequence: seq,
                    source: DataSource::interface(1),
                    sampling_rate: n,
                    sample_pool: pool,
                    drops: 0,
                    input: Interface::Index(1),
                    output: Interface::Index(2),
                    records: vec![FlowRecord::RawHeader(RawHeader {
                        protocol: 1,
                        frame_length: u32::from(len),
                        stripped: 4,
                        header: Cow::Owned(frame(k, len)),
                    })],
                });
                summary.add(&Datagram {
                    agent: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)),
                    sub_agent_id: 0,
                    sequence: seq,
                    uptime_ms: seq,
                    samples: vec![s],
                });
            }
        }
        let report = summary.report(usize::MAX);
        assert_eq!(report.flows.len(), classes as usize);
        let (mut misses, mut far) = (0, 0);
        for f in &report.flows {
            let k = u16::from(f.key.dst.to_string().rsplit('.').next().unwrap().parse::<u8>().unwrap());
            let (true_pkts, true_bytes) = truth[k as usize];
            for (est, t) in [(f.estimate.packets, true_pkts), (f.estimate.bytes, true_bytes)] {
                let err = 100.0 * (est - t as f64).abs() / t as f64;
                misses += usize::from(err > f.error_pct);
                far += usize::from(err > 2.0 * f.error_pct);
            }
        }
        assert!(misses <= 4 && far == 0, "rate {n}: {misses} of 40 estimates outside the bound, {far} beyond twice it");
        // The first sample comes within 2N−1 packets of the start and the last within 2N−1 of
        // the end, so Δpool is the packet count less at most 4N−2.
        let total: u64 = truth.iter().map(|t| t.0).sum();
        let pool = report.interfaces[0].pool_packets;
        assert!(pool <= total && pool + 4 * u64::from(n) >= total, "pool {pool}, total {total}");
    }

    #[test]
    fn estimates_fall_inside_the_error_bound_at_1_in_10() {
        check_rate(10, 200_000, 1);
    }

    #[test]
    fn estimates_fall_inside_the_error_bound_at_1_in_100() {
        check_rate(100, 2_000_000, 2);
    }

    #[test]
    fn estimates_fall_inside_the_error_bound_at_1_in_1000() {
        check_rate(1000, 10_000_000, 3);
    }

    #[test]
    fn sequence_gaps_and_restarts_are_noticed() {
        let mut s = Summary::default();
        let agent = IpAddr::V4(Ipv4Addr::LOCALHOST);
        for (seq, up) in [(1, 10), (2, 20), (5, 50), (4, 40), (1, 5), (2, 6)] {
            s.add(&Datagram { agent, sub_agent_id: 0, sequence: seq, uptime_ms: up, samples: vec![] });
        }
        let r = s.report(10);
        assert_eq!(
            (r.agents[0].datagrams, r.agents[0].lost_datagrams, r.agents[0].out_of_order, r.agents[0].restarts),
            (6, 1, 1, 1),
            "3 is lost; 4 came late, so it is out of order and not lost"
        );
    }

    /// A flow sample of data source 1, of a flow numbered `flow`.
    fn sample(sequence: u32, sample_pool: u32, input: u32, output: u32, flow: u32) -> Sample<'static> {
        let mut header = frame(flow as u16, 64);
        header[34..36].copy_from_slice(&((flow >> 16) as u16).to_be_bytes());
        Sample::Flow(FlowSample {
            sequence,
            source: DataSource::interface(1),
            sampling_rate: 10,
            sample_pool,
            drops: sequence / 2,
            input: Interface::Index(input),
            output: Interface::Index(output),
            records: vec![FlowRecord::RawHeader(RawHeader {
                protocol: 1,
                frame_length: 64,
                stripped: 4,
                header: Cow::Owned(header),
            })],
        })
    }

    fn datagram(agent: IpAddr, sequence: u32, uptime_ms: u32, samples: Vec<Sample<'static>>) -> Datagram<'static> {
        Datagram { agent, sub_agent_id: 0, sequence, uptime_ms, samples }
    }

    #[test]
    fn a_restart_starts_pools_and_sequences_over() {
        let agent = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let mut s = Summary::default();
        for (seq, up, pool) in [(1, 1_000, 100), (2, 2_000, 300), (3, 60_000, 4_000_000_000)] {
            s.add(&datagram(agent, seq, up, vec![sample(seq, pool, 1, 2, 1)]));
        }
        // Restarted: uptime and every sequence back near the start.
        for (seq, up, pool) in [(1, 500, 50), (2, 900, 250)] {
            s.add(&datagram(agent, seq, up, vec![sample(seq, pool, 1, 2, 1)]));
        }
        let r = s.report(10);
        assert_eq!((r.agents[0].restarts, r.agents[0].lost_datagrams, r.agents[0].out_of_order), (1, 0, 0));
        let i = &r.interfaces[0];
        assert_eq!(
            (i.pool_packets, i.dropped_samples, i.sequence_gaps, i.out_of_order, i.ingress.samples),
            (4_000_000_000 - 100 + 200, 2, 0, 0, 5)
        );
    }

    #[test]
    fn tx_toward_a_sub_interface_is_egress() {
        let agent = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let mut s = Summary::default();
        // Port 1 samples rx and tx; 11 is its sub-interface 1.100, 2 another port.
        let mut tx = sample(1, 10, 2, 11, 1);
        if let Sample::Flow(f) = &mut tx {
            f.records.push(FlowRecord::Switch(ExtendedSwitch {
                src_vlan: 0,
                src_priority: 0,
                dst_vlan: 100,
                dst_priority: 0,
            }));
        }
        s.add(&datagram(agent, 1, 1, vec![tx, sample(2, 20, 1, 2, 2)]));
        let r = s.report(10);
        let i = &r.interfaces[0];
        assert_eq!((i.ingress.samples, i.egress.samples), (1, 1));
        assert_eq!(r.flows.len(), 1, "the agent sends ingress samples, so its egress ones are left out of the flows");
    }

    #[test]
    fn state_is_capped_and_the_overflow_counted() {
        let mut s = Summary::default();
        let agent = |k: usize| IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + k as u32));
        for k in 0..=MAX_AGENTS {
            s.add(&datagram(agent(k), 1, 1, vec![]));
        }
        let one = agent(0);
        for k in 0..=MAX_FLOWS {
            s.add(&datagram(one, 2 + k as u32, 2, vec![sample(1 + k as u32, 0, 1, 2, k as u32)]));
        }
        let mut seq = 2 + MAX_FLOWS as u32;
        for k in 1..=MAX_SOURCES {
            let mut x = sample(1, 0, 1, 2, 0);
            if let Sample::Flow(f) = &mut x {
                f.source.index = 1 + k as u32;
            }
            seq += 1;
            s.add(&datagram(one, seq, 2, vec![x]));
        }
        for k in 0..=MAX_REASONS as u32 {
            let discard = Sample::Discard(DiscardSample {
                sequence: k,
                source: DataSource::interface(1),
                drops: 0,
                input: 1,
                output: 0,
                reason: 256 + k,
                records: vec![],
            });
            seq += 1;
            s.add(&datagram(one, seq, 2, vec![discard]));
        }
        let r = s.report(1);
        assert_eq!((r.agents.len(), r.interfaces.len()), (MAX_AGENTS, MAX_SOURCES));
        let o = &r.overflow;
        assert_eq!((o.agents, o.sources, o.flows, o.reasons, o.interfaces), (1, 1, 1, 1, 0));
        assert_eq!(r.interfaces[0].discards.len(), MAX_REASONS);
        assert_eq!(r.interfaces[0].ingress.samples, MAX_FLOWS as u64 + 1, "still counted for the source");
        let text = r.text();
        assert!(text.contains("1 datagrams (over 1024 agents), 1 samples (over 16384 sources)"), "{text}");
    }
}
