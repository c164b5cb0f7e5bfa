//! What `show` commands read: counters summed over workers, the baselines `clear` commands
//! set, interface rates, traces and the sFlow agent's state.

use super::engine::Dataplane;

use crate::datapath::registry::{self, N_REASONS, NodeFacts};
use crate::drivers::generator::GenStats;
use crate::interface::IfStats;
use crate::neighbor::NeighborRow;
use crate::neighbor::punt::PuntStats;
use crate::runtime::graph::{LoopStats, NodeId, NodeStats};
use crate::runtime::tsc;
use crate::sflow::SflowStats;
use crate::sflow::agent::AgentStats;
use serde::Serialize;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::Instant;

/// One worker's runtime counters.
#[derive(Debug, Clone)]
pub struct WorkerRuntime {
    /// Worker number.
    pub id: u16,
    /// CPU it is pinned to.
    pub core: Option<u16>,
    /// Per node, in the order of their ids (`datapath::registry::NODES`).
    pub nodes: Vec<(NodeId, NodeStats)>,
    /// Loop timing.
    pub looping: LoopStats,
}

/// The input "interface" of packets vecflow made itself, in `show errors`.
pub const LOCAL: &str = "(local)";

/// One row of `show errors`.
#[derive(Debug, Clone, Serialize)]
pub struct ErrorRow {
    /// Frames dropped.
    pub count: u64,
    /// Node that dropped them.
    pub node: &'static str,
    /// Reason name.
    pub reason: &'static str,
    /// Input interface name.
    pub interface: String,
}

/// An interface's packet and bit rates over the last link-refresh interval.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct IfRates {
    /// Packets per second received.
    pub rx_pps: f64,
    /// Bits per second received.
    pub rx_bps: f64,
    /// Packets per second transmitted.
    pub tx_pps: f64,
    /// Bits per second transmitted.
    pub tx_bps: f64,
}

/// Counter values read by the `clear` commands. The counters themselves never go back (sFlow
/// and Prometheus need them monotonic); what `show` prints is the difference.
#[derive(Default)]
pub(super) struct Cleared {
    /// By interface index: its counters and its rx-miss count.
    pub(super) interfaces: BTreeMap<u16, (IfStats, u64)>,
    /// By worker: each node's counters and the loop counters (start = when cleared).
    pub(super) runtime: Vec<WorkerRuntime>,
    /// By (interface index, reason).
    pub(super) errors: BTreeMap<(u16, u16), u64>,
    /// Each flow rule's packets when the rules last changed (ids are places in the list).
    pub(super) flows: Vec<u64>,
}

/// Interface counters read at the last two link refreshes, for rates.
#[derive(Default)]
pub(super) struct RateSamples([Option<(Instant, BTreeMap<u16, IfStats>)>; 2]);

impl RateSamples {
    /// Keeps `counts`, read now, and the read before it.
    pub(super) fn push(&mut self, counts: BTreeMap<u16, IfStats>) {
        self.0 = [self.0[1].take(), Some((Instant::now(), counts))];
    }
}

/// One data source in `show sflow`.
#[derive(Debug, Clone, Serialize)]
pub struct SflowSourceRow {
    /// Interface name.
    pub interface: String,
    /// Its ifIndex.
    pub if_index: u16,
    /// 1-in-N.
    pub sampling_rate: u32,
    /// Which packets are sampled: rx, tx or both.
    pub direction: &'static str,
    /// Sampler totals over workers.
    pub sampler: SflowStats,
    /// Flow samples encoded into datagrams.
    pub samples_sent: u64,
}

impl Dataplane {
    /// The neighbor table (`show ip neighbors`).
    pub fn neighbors(&self) -> Vec<NeighborRow> {
        self.neighbors.table.rows(Instant::now())
    }

    /// What workers made themselves (ARP, ICMP) and reported, summed.
    pub fn punt_stats(&self) -> PuntStats {
        let mut s = PuntStats::default();
        for w in &self.workers {
            w.counters.punt.add_to(&mut s);
        }
        s
    }

    /// Counters of interface `index`, summed over workers.
    pub fn interface_stats(&self, index: u16) -> IfStats {
        let mut s = IfStats::default();
        for w in &self.workers {
            w.counters.interface(index).add_to(&mut s);
        }
        s
    }

    /// Each worker's per-node counters and loop timing.
    pub fn runtime(&self) -> Vec<WorkerRuntime> {
        self.workers
            .iter()
            .map(|w| {
                let nodes = registry::all_nodes()
                    .map(|n| {
                        let mut s = NodeStats::default();
                        w.counters.nodes[n.index()].add_to(&mut s);
                        (n, s)
                    })
                    .collect();
                let mut looping = LoopStats::default();
                w.counters.looping.add_to(&mut looping);
                WorkerRuntime { id: w.id, core: w.core, nodes, looping }
            })
            .collect()
    }

    /// Non-zero drop counters per (reason, input interface), summed over workers.
    pub fn errors(&self) -> Vec<ErrorRow> {
        let mut rows = Vec::new();
        for (index, name) in self.drop_sources() {
            for r in registry::DROPS.iter() {
                let count: u64 = self.workers.iter().map(|w| w.counters.error(index, r.id).get()).sum();
                if count > 0 {
                    rows.push(ErrorRow { count, node: r.node.name(), reason: r.name, interface: name.clone() });
                }
            }
        }
        rows
    }

    /// Where drops are counted: each interface by index and name, and index 0, named
    /// [`LOCAL`], for packets vecflow made itself (ARP requests, ICMP errors, echo replies).
    pub(super) fn drop_sources(&self) -> impl Iterator<Item = (u16, String)> + '_ {
        std::iter::once((0, LOCAL.to_string())).chain(self.interfaces.iter().map(|i| (i.index, i.name.clone())))
    }

    /// Each flow rule's packets since start, by id, summed over workers.
    pub(super) fn flow_hits_total(&self) -> Vec<u64> {
        (0..crate::flows::MAX_FLOWS).map(|r| self.workers.iter().map(|w| w.counters.flow_hits[r].get()).sum()).collect()
    }

    /// The packets each flow rule (by id) matched since the rules last changed.
    pub fn flow_hits(&self) -> Vec<u64> {
        let base = &self.cleared.flows;
        let total = self.flow_hits_total();
        (0..self.config.flows.len()).map(|r| total[r] - base.get(r).copied().unwrap_or(0)).collect()
    }

    /// What the workers' megaflow caches did, summed.
    pub fn flow_cache_stats(&self) -> crate::flows::FlowCacheStats {
        let mut s = crate::flows::FlowCacheStats::default();
        for w in &self.workers {
            w.counters.flow_cache.add_to(&mut s);
        }
        s
    }

    /// Interface `index`'s rates between the last two link refreshes (`vecflow run` does one
    /// a second), or `None` before there were two.
    pub fn rates(&self, index: u16) -> Option<IfRates> {
        let RateSamples([Some((t0, a)), Some((t1, b))]) = &self.rate_samples else { return None };
        let dt = t1.duration_since(*t0).as_secs_f64().max(1e-3);
        let (a, b) = (a.get(&index)?, b.get(&index)?);
        let per_s = |x: u64, y: u64| y.wrapping_sub(x) as f64 / dt;
        Some(IfRates {
            rx_pps: per_s(a.rx_packets, b.rx_packets),
            rx_bps: per_s(a.rx_octets, b.rx_octets) * 8.0,
            tx_pps: per_s(a.tx_packets, b.tx_packets),
            tx_bps: per_s(a.tx_octets, b.tx_octets) * 8.0,
        })
    }

    /// `clear interfaces`: what [`Dataplane::interface_stats_shown`] and
    /// [`Dataplane::rx_miss_shown`] count from now on.
    pub fn clear_interfaces(&mut self) {
        self.cleared.interfaces = self
            .interfaces
            .iter()
            .map(|i| (i.index, (self.interface_stats(i.index), self.ports.links[usize::from(i.index)].rx_miss.get())))
            .collect();
    }

    /// Interface `index`'s counters since the last `clear interfaces`.
    pub fn interface_stats_shown(&self, index: u16) -> IfStats {
        let base = self.cleared.interfaces.get(&index).map(|b| b.0).unwrap_or_default();
        self.interface_stats(index).since(base)
    }

    /// Frames the kernel dropped for want of ring room on interface `index` since the last
    /// `clear interfaces`.
    pub fn rx_miss_shown(&self, index: u16) -> u64 {
        let base = self.cleared.interfaces.get(&index).map_or(0, |b| b.1);
        self.ports.links[usize::from(index)].rx_miss.get().wrapping_sub(base)
    }

    /// `clear runtime`: what [`Dataplane::runtime_shown`] counts from now on.
    pub fn clear_runtime(&mut self) {
        self.cleared.runtime = self.runtime();
        let now = tsc::now();
        for w in &mut self.cleared.runtime {
            w.looping.start_tsc = now;
        }
    }

    /// Per worker node counters since the last `clear runtime` (the loop's start time then
    /// being that clear).
    pub fn runtime_shown(&self) -> Vec<WorkerRuntime> {
        let mut now = self.runtime();
        for (w, base) in now.iter_mut().zip(&self.cleared.runtime) {
            for ((_, s), (_, b)) in w.nodes.iter_mut().zip(&base.nodes) {
                *s = s.since(*b);
            }
            w.looping.loops = w.looping.loops.wrapping_sub(base.looping.loops);
            w.looping.start_tsc = base.looping.start_tsc;
        }
        now
    }

    /// `clear errors`: what [`Dataplane::errors_shown`] counts from now on.
    pub fn clear_errors(&mut self) {
        self.cleared.errors = self
            .drop_sources()
            .flat_map(|(i, _)| self.drops_of(i).into_iter().enumerate().map(move |(r, n)| ((i, r as u16), n)))
            .collect();
    }

    /// Drops since the last `clear errors`, as [`Dataplane::errors`] lists them.
    pub fn errors_shown(&self) -> Vec<ErrorRow> {
        let mut rows = self.errors();
        rows.retain_mut(|row| {
            let i = self.drop_sources().find(|(_, name)| *name == row.interface).map_or(0, |(i, _)| i);
            let r = registry::DROPS.iter().find(|r| r.name == row.reason && r.node.name() == row.node);
            let base = r.and_then(|r| self.cleared.errors.get(&(i, r.id.raw()))).copied().unwrap_or(0);
            row.count = row.count.wrapping_sub(base);
            row.count > 0
        });
        rows
    }

    /// `trace add`: traces the next `count` packets each worker receives through `input`
    /// (an rx input node), replacing any armed request; the traces already finished stay.
    pub fn trace_add(&self, input: NodeId, count: u32) {
        for w in &self.workers {
            w.counters.trace.arm(Some(crate::runtime::trace::Request { input, count }));
        }
    }

    /// `clear trace`: disarms the tracer and forgets the finished traces.
    pub fn trace_clear(&self) {
        for w in &self.workers {
            w.counters.trace.arm(None);
            w.counters.trace.clear();
        }
    }

    /// The finished traces of every worker, oldest first.
    pub fn traces(&self) -> Vec<crate::runtime::trace::PacketTrace> {
        let mut all: Vec<_> = self.workers.iter().flat_map(|w| w.counters.trace.finished()).collect();
        all.sort_by_key(|p| p.entries.first().map_or(0, |e| e.tsc));
        all
    }

    /// Drops of input interface `index` by reason, summed over workers.
    pub fn drops_of(&self, index: u16) -> [u64; N_REASONS] {
        let mut out = [0; N_REASONS];
        for w in &self.workers {
            for r in registry::all_drops() {
                out[r.index()] += w.counters.error(index, r).get();
            }
        }
        out
    }

    /// Generator and sink totals, summed over workers.
    pub fn generator_stats(&self) -> GenStats {
        let mut s = GenStats::default();
        for w in &self.workers {
            w.counters.generator.add_to(&mut s);
        }
        s
    }

    /// sFlow: the agent address, its totals and each data source's counters; `None` when
    /// sFlow is off.
    pub fn sflow(&self) -> Option<(IpAddr, AgentStats, Vec<SflowSourceRow>)> {
        let sf = self.sflow.as_ref()?;
        let mut totals = AgentStats::default();
        sf.shared.counters.add_to(&mut totals);
        let rows = sf
            .sources
            .iter()
            .map(|&crate::sflow::DataSource { port, rate, stages }| {
                let mut sampler = SflowStats::default();
                for w in &self.workers {
                    w.counters.sflow(port).add_to(&mut sampler);
                }
                SflowSourceRow {
                    interface: self
                        .interfaces
                        .iter()
                        .find(|i| i.index == port)
                        .map_or(String::new(), |i| i.name.clone()),
                    if_index: port,
                    sampling_rate: rate,
                    direction: match stages {
                        crate::sflow::RX => "rx",
                        crate::sflow::TX => "tx",
                        _ => "both",
                    },
                    sampler,
                    samples_sent: sf.shared.sent_by_port[port as usize].get(),
                }
            })
            .collect();
        Some((sf.agent, totals, rows))
    }
}
