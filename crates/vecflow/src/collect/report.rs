//! What `collect --summary` prints: the report's rows and their text tables (JSON is the rows
//! serialized).

use super::limits::{MAX_AGENTS, MAX_FLOWS, MAX_INTERFACES, MAX_REASONS, MAX_SOURCES};
use super::summary::{Estimate, FlowKey};
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// Everything `--summary` prints.
#[derive(Debug, Serialize)]
pub struct Report {
    /// Datagrams that did not decode.
    pub decode_errors: u64,
    /// What the state limits left out.
    pub overflow: Overflow,
    /// Per (agent, sub-agent) datagram stream.
    pub agents: Vec<AgentRow>,
    /// Per data source.
    pub interfaces: Vec<InterfaceRow>,
    /// Largest flows by estimated bytes.
    pub flows: Vec<FlowRow>,
    /// Counter deltas per interface.
    pub counters: Vec<CounterRow>,
}

/// What did not fit in the collector's tables (see `limits`).
#[derive(Debug, Default, Serialize)]
pub struct Overflow {
    /// Datagrams of agents beyond the agent limit.
    pub agents: u64,
    /// Samples of data sources beyond the data-source limit.
    pub sources: u64,
    /// Counter records of interfaces, and sub-interfaces learned, beyond the interface limit.
    pub interfaces: u64,
    /// Samples of flows beyond the flow limit (still counted for their data source).
    pub flows: u64,
    /// Discards with a reason beyond the per-source reason limit.
    pub reasons: u64,
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
    /// Times the agent restarted (uptime or sequence went back to the start).
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
    /// Packets the agent's sampler saw over the samples (Σ Δ sample_pool mod 2³²).
    pub pool_packets: u64,
    /// Samples the agent lost over the samples (Σ Δ drops mod 2³²).
    pub dropped_samples: u64,
    /// Flow samples missing from the sample sequence.
    pub sequence_gaps: u64,
    /// Flow samples that arrived late or twice.
    pub out_of_order: u64,
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

/// Counter deltas of an interface over its polls (each step modulo the counter's width).
#[derive(Debug, Serialize)]
pub struct CounterRow {
    /// Agent address.
    pub agent: IpAddr,
    /// The interface.
    pub if_index: u32,
    /// Polls received.
    pub polls: u64,
    /// Polls that arrived late or twice.
    pub out_of_order: u64,
    /// Agent uptime over the polls, seconds.
    pub seconds: f64,
    /// Octets received (64-bit counter).
    pub in_octets: u128,
    /// Unicast, multicast and broadcast packets received.
    pub in_packets: u64,
    /// Octets sent (64-bit counter).
    pub out_octets: u128,
    /// Unicast, multicast and broadcast packets sent.
    pub out_packets: u64,
    /// ifInDiscards.
    pub in_discards: u64,
    /// ifInErrors.
    pub in_errors: u64,
    /// ifOutDiscards.
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
        let v = &self.overflow;
        let _ = writeln!(
            o,
            "left out at the state limits: {} datagrams (over {MAX_AGENTS} agents), {} samples (over \
             {MAX_SOURCES} sources), {} records (over {MAX_INTERFACES} interfaces), {} flow samples (over \
             {MAX_FLOWS} flows), {} discards (over {MAX_REASONS} reasons per source)",
            v.agents, v.sources, v.interfaces, v.flows, v.reasons
        );
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
            "{:<32} {:>8} {:>10} {:>10} {:>8} {:>10} {:>8} {:>8} {:>6}  discards",
            "agent source", "samples", "packets", "bytes", "±%", "pool", "dropped", "gaps", "late"
        );
        for i in &self.interfaces {
            for (dir, e) in [("in", i.ingress), ("out", i.egress)] {
                if e.samples > 0 {
                    let name = format!("{} {} {dir}", i.agent, i.source);
                    let _ = writeln!(
                        o,
                        "{name:<32} {:>8} {:>10} {:>10} {:>8.1} {:>10} {:>8} {:>8} {:>6}",
                        e.samples,
                        human(e.packets),
                        human(e.bytes),
                        e.error_pct(),
                        i.pool_packets,
                        i.dropped_samples,
                        i.sequence_gaps,
                        i.out_of_order
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
        let _ = writeln!(o, "\n== counters (deltas over the polls)");
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
