//! `collect --summary`: what the samples say about the traffic, with the error they carry.
//!
//! Estimates follow sFlow's packet sampling theory (sflow.org, "Packet Sampling Basics"): a
//! class seen in `c` samples taken at rate N is estimated at Σ N packets and Σ N × frame
//! length bytes, with a relative error at 95 % confidence of at most 196·√(1/c) %. A packet
//! is counted once: when an agent sends ingress samples (input = the data source), its other
//! samples are left out of the flow totals, since they see the same packets again on egress.

use super::packet::{NO_IP, decode_ethernet};
use serde::Serialize;
use sflow::*;
use std::collections::{BTreeMap, HashMap};
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

/// An uptime that goes back by more than this (with the sequence) means the agent restarted.
const RESTART_UPTIME_MS: u32 = 10_000;

#[derive(Debug, Default)]
struct Stream {
    datagrams: u64,
    last: Option<(u32, u32)>,
    lost: u64,
    restarts: u64,
    out_of_order: u64,
}

#[derive(Debug, Default)]
struct Source {
    ingress: Estimate,
    egress: Estimate,
    first_pool: Option<u32>,
    last_pool: u32,
    first_drops: Option<u32>,
    last_drops: u32,
    last_seq: Option<u32>,
    seq_gaps: u64,
    discards: BTreeMap<u32, u64>,
}

#[derive(Debug, Clone, Copy)]
struct CounterPoint {
    uptime_ms: u32,
    c: IfCounters,
}

#[derive(Debug, Default)]
struct Flow {
    ingress: Estimate,
    other: Estimate,
}

/// Accumulates decoded datagrams.
#[derive(Debug, Default)]
pub struct Summary {
    streams: BTreeMap<(IpAddr, u32), Stream>,
    sources: BTreeMap<(IpAddr, DataSource), Source>,
    agents_with_ingress: std::collections::BTreeSet<IpAddr>,
    flows: HashMap<FlowKey, Flow>,
    counters: BTreeMap<(IpAddr, u32), (CounterPoint, CounterPoint, u64)>,
    errors: u64,
}

impl Summary {
    /// Counts a datagram that could not be decoded.
    pub fn error(&mut self) {
        self.errors += 1;
    }

    /// Adds one decoded datagram.
    pub fn add(&mut self, d: &Datagram<'_>) {
        let st = self.streams.entry((d.agent, d.sub_agent_id)).or_default();
        st.datagrams += 1;
        // A restart sends the sequence back to the start and the uptime back by more than any
        // reordering could; anything else that goes back is late or duplicated.
        let now = (d.sequence, d.uptime_ms);
        match st.last {
            Some((seq, up))
                if d.sequence < seq && (d.sequence <= 1 || d.uptime_ms.saturating_add(RESTART_UPTIME_MS) < up) =>
            {
                st.restarts += 1;
                st.last = Some(now);
            }
            Some((seq, _)) if d.sequence <= seq => st.out_of_order += 1,
            Some((seq, _)) => {
                st.lost += u64::from(d.sequence - seq - 1);
                st.last = Some(now);
            }
            None => st.last = Some(now),
        }
        for s in &d.samples {
            match s {
                Sample::Flow(f) => self.flow(d.agent, f),
                Sample::Counters(c) => self.counter(d.agent, d.uptime_ms, c),
                Sample::Discard(x) => {
                    let src = self.sources.entry((d.agent, x.source)).or_default();
                    *src.discards.entry(x.reason).or_default() += 1;
                }
                Sample::Unknown { .. } => {}
            }
        }
    }

    fn flow(&mut self, agent: IpAddr, f: &FlowSample<'_>) {
        let ingress = f.input == Interface::Index(f.source.index) || f.output != Interface::Index(f.source.index);
        let frame_length = f.records.iter().find_map(|r| match r {
            FlowRecord::RawHeader(h) => Some(h.frame_length),
            _ => None,
        });
        let src = self.sources.entry((agent, f.source)).or_default();
        let len = frame_length.unwrap_or(0);
        if ingress {
            src.ingress.add(f.sampling_rate, len);
            self.agents_with_ingress.insert(agent);
        } else {
            src.egress.add(f.sampling_rate, len);
        }
        src.first_pool.get_or_insert(f.sample_pool);
        src.last_pool = f.sample_pool;
        src.first_drops.get_or_insert(f.drops);
        src.last_drops = f.drops;
        if let Some(prev) = src.last_seq {
            src.seq_gaps += u64::from(f.sequence.wrapping_sub(prev).saturating_sub(1));
        }
        src.last_seq = Some(f.sequence);
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
        let flow = self.flows.entry(key).or_default();
        if ingress { &mut flow.ingress } else { &mut flow.other }.add(f.sampling_rate, len);
    }

    fn counter(&mut self, agent: IpAddr, uptime_ms: u32, c: &CountersSample<'_>) {
        for r in &c.records {
            if let CounterRecord::Generic(g) = r {
                let p = CounterPoint { uptime_ms, c: *g };
                let e = self.counters.entry((agent, g.if_index)).or_insert((p, p, 0));
                e.1 = p;
                e.2 += 1;
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
                pool_packets: s.first_pool.map_or(0, |f| u64::from(s.last_pool.wrapping_sub(f))),
                dropped_samples: s.first_drops.map_or(0, |f| u64::from(s.last_drops.wrapping_sub(f))),
                sequence_gaps: s.seq_gaps,
                discards: s
                    .discards
                    .iter()
                    .map(|(r, n)| (super::text::reason_name(*r).to_string() + &format!(" ({r})"), *n))
                    .collect(),
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
            .map(|((agent, if_index), (a, b, n))| {
                let pkts = |c: &IfCounters| {
                    [c.in_ucast_pkts, c.in_multicast_pkts, c.in_broadcast_pkts].map(u64::from).iter().sum::<u64>()
                };
                let out_pkts = |c: &IfCounters| {
                    [c.out_ucast_pkts, c.out_multicast_pkts, c.out_broadcast_pkts].map(u64::from).iter().sum::<u64>()
                };
                CounterRow {
                    agent: *agent,
                    if_index: *if_index,
                    polls: *n,
                    seconds: f64::from(b.uptime_ms.wrapping_sub(a.uptime_ms)) / 1000.0,
                    in_octets: b.c.in_octets.wrapping_sub(a.c.in_octets),
                    in_packets: pkts(&b.c).wrapping_sub(pkts(&a.c)) & 0xffff_ffff,
                    out_octets: b.c.out_octets.wrapping_sub(a.c.out_octets),
                    out_packets: out_pkts(&b.c).wrapping_sub(out_pkts(&a.c)) & 0xffff_ffff,
                    in_discards: u64::from(b.c.in_discards.wrapping_sub(a.c.in_discards)),
                    in_errors: u64::from(b.c.in_errors.wrapping_sub(a.c.in_errors)),
                    out_discards: u64::from(b.c.out_discards.wrapping_sub(a.c.out_discards)),
                }
            })
            .collect();
        Report { decode_errors: self.errors, agents, interfaces, flows, counters }
    }
}

/// Everything `--summary` prints.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Datagrams that did not decode.
    pub decode_errors: u64,
    /// Per (agent, sub-agent) datagram stream.
    pub agents: Vec<AgentRow>,
    /// Per data source.
    pub interfaces: Vec<InterfaceRow>,
    /// Largest flows by estimated bytes.
    pub flows: Vec<FlowRow>,
    /// Counter deltas per interface.
    pub counters: Vec<CounterRow>,
}

/// A datagram stream.
#[derive(Debug, Serialize)]
pub struct AgentRow {
    /// Agent address.
    pub agent: IpAddr,
    /// Sub-agent.
    pub sub_agent_id: u32,
    /// Datagrams received.
    pub datagrams: u64,
    /// Datagrams missing from the sequence.
    pub lost_datagrams: u64,
    /// Times the agent restarted (sequence and uptime went back).
    pub restarts: u64,
    /// Datagrams that arrived late or twice.
    pub out_of_order: u64,
}

/// A data source's samples.
#[derive(Debug, Serialize)]
pub struct InterfaceRow {
    /// Agent address.
    pub agent: IpAddr,
    /// `class:index`.
    pub source: String,
    /// Estimate from samples taken on input.
    pub ingress: Estimate,
    /// Estimate from samples taken on output.
    pub egress: Estimate,
    /// Packets the agent's sampler saw between the first and last sample (Δ sample_pool).
    pub pool_packets: u64,
    /// Samples the agent lost between the first and last sample (Δ drops).
    pub dropped_samples: u64,
    /// Flow samples missing from the sample sequence.
    pub sequence_gaps: u64,
    /// Discard samples by reason.
    pub discards: BTreeMap<String, u64>,
}

/// A flow estimate.
#[derive(Debug, Serialize)]
pub struct FlowRow {
    /// The flow.
    pub key: FlowKey,
    /// Its estimate.
    pub estimate: Estimate,
    /// 95 % relative error bound, percent.
    pub error_pct: f64,
}

/// Counter deltas between the first and the last poll of an interface.
#[derive(Debug, Serialize)]
#[allow(missing_docs)]
pub struct CounterRow {
    pub agent: IpAddr,
    pub if_index: u32,
    pub polls: u64,
    pub seconds: f64,
    pub in_octets: u64,
    pub in_packets: u64,
    pub out_octets: u64,
    pub out_packets: u64,
    pub in_discards: u64,
    pub in_errors: u64,
    pub out_discards: u64,
}

fn human(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.2}G", v / 1e9),
        v if v >= 1e6 => format!("{:.2}M", v / 1e6),
        v if v >= 1e3 => format!("{:.1}k", v / 1e3),
        v => format!("{v:.0}"),
    }
}

impl Report {
    /// The report as text tables.
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let _ = writeln!(o, "== agents ({} datagrams failed to decode)", self.decode_errors);
        let _ = writeln!(
            o,
            "{:<40} {:>6} {:>10} {:>6} {:>9} {:>12}",
            "agent", "sub", "datagrams", "lost", "restarts", "out-of-order"
        );
        for a in &self.agents {
            let _ = writeln!(
                o,
                "{:<40} {:>6} {:>10} {:>6} {:>9} {:>12}",
                a.agent, a.sub_agent_id, a.datagrams, a.lost_datagrams, a.restarts, a.out_of_order
            );
        }
        let _ = writeln!(o, "\n== interfaces (estimates ± 95 % error bound)");
        let _ = writeln!(
            o,
            "{:<32} {:>8} {:>10} {:>10} {:>8} {:>10} {:>8} {:>8}  discards",
            "agent source", "samples", "packets", "bytes", "±%", "pool", "dropped", "gaps"
        );
        for i in &self.interfaces {
            for (dir, e) in [("in", i.ingress), ("out", i.egress)] {
                if e.samples > 0 {
                    let name = format!("{} {} {dir}", i.agent, i.source);
                    let _ = writeln!(
                        o,
                        "{name:<32} {:>8} {:>10} {:>10} {:>8.1} {:>10} {:>8} {:>8}",
                        e.samples,
                        human(e.packets),
                        human(e.bytes),
                        e.error_pct(),
                        i.pool_packets,
                        i.dropped_samples,
                        i.sequence_gaps
                    );
                }
            }
            if !i.discards.is_empty() {
                let d: Vec<String> = i.discards.iter().map(|(r, n)| format!("{r}: {n}")).collect();
                let _ = writeln!(o, "{:<32} discards {}", format!("{} {}", i.agent, i.source), d.join(", "));
            }
        }
        let _ = writeln!(o, "\n== top {} flows by bytes", self.flows.len());
        let _ = writeln!(o, "{:<56} {:>8} {:>10} {:>10} {:>8}", "flow", "samples", "packets", "bytes", "±%");
        for f in &self.flows {
            let k = f.key;
            let name = format!("{} {}:{} > {}:{} p{}", k.agent, k.src, k.src_port, k.dst, k.dst_port, k.protocol);
            let e = f.estimate;
            let _ = writeln!(
                o,
                "{name:<56} {:>8} {:>10} {:>10} {:>8.1}",
                e.samples,
                human(e.packets),
                human(e.bytes),
                f.error_pct
            );
        }
        let _ = writeln!(o, "\n== counters (deltas between the first and last poll)");
        let _ = writeln!(
            o,
            "{:<28} {:>6} {:>8} {:>12} {:>12} {:>12} {:>12} {:>9}",
            "agent ifIndex", "polls", "seconds", "in octets", "in packets", "out octets", "out packets", "discards"
        );
        for c in &self.counters {
            let name = format!("{} {}", c.agent, c.if_index);
            let _ = writeln!(
                o,
                "{name:<28} {:>6} {:>8.1} {:>12} {:>12} {:>12} {:>12} {:>9}",
                c.polls,
                c.seconds,
                c.in_octets,
                c.in_packets,
                c.out_octets,
                c.out_packets,
                c.in_discards + c.out_discards
            );
        }
        o
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
            (6, 2, 1, 1)
        );
    }
}
