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
mod tests;
