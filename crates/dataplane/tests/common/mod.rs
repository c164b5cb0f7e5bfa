//! What the node tests share: a graph built from YAML, driving frames through it, counters.
//! Each test crate uses part of it.
#![allow(dead_code)]

use dataplane::config::Config;
use dataplane::control::routes::build_forwarding;
use dataplane::datapath::Graph;
use dataplane::datapath::WorkerCounters;
use dataplane::interface::{IfStats, Interface};
use dataplane::l3::RouteMeta;
use dataplane::runtime::buffer::BufferPool;
use dataplane::runtime::graph::NodeId;
use dataplane::runtime::qsbr::Qsbr;
use std::sync::Arc;

/// 1024 buffers of the size `cfg` asks for.
fn pool(cfg: &Config) -> BufferPool {
    BufferPool::with_data_size(1024, cfg.buffers.data_size).unwrap()
}

/// A graph with 1024 buffers (of the size `buffers.data-size` says) forwarding with the
/// tables and FIB of `yaml`, and its interfaces.
pub fn graph(yaml: &str) -> (Graph, Vec<Interface>) {
    let cfg = Config::load(yaml).unwrap();
    let f = build_forwarding(&cfg, Arc::new(Qsbr::new(1))).unwrap();
    (Graph::new(pool(&cfg), f.tables, f.fib.fibs(), Arc::new(WorkerCounters::new())), f.interfaces)
}

/// [`graph`], with each of `rejects` (prefix, length, what) in the FIB as a kernel reject
/// route would be.
pub fn graph_with_rejects(yaml: &str, rejects: &[(&str, u8, dataplane::l3::Reject)]) -> Graph {
    let cfg = Config::load(yaml).unwrap();
    let mut f = build_forwarding(&cfg, Arc::new(Qsbr::new(1))).unwrap();
    let inserts: Vec<_> = rejects.iter().map(|&(p, len, r)| (0, p.parse().unwrap(), len, Some(r.adj()))).collect();
    f.fib.apply(&inserts).unwrap();
    Graph::new(pool(&cfg), f.tables, f.fib.fibs(), Arc::new(WorkerCounters::new()))
}

/// Receives `frames` on `port` and runs them through the graph, node by node. Returns every
/// frame that reached `capture` as (output interface, prefix length matched, bytes), in order;
/// vectors reaching `capture` stop there unless `capture` is a driver's tx node, which runs.
pub fn drive(g: &mut Graph, port: u16, frames: &[Vec<u8>], capture: NodeId) -> Vec<(u16, u8, Vec<u8>)> {
    let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
    let v = g.inject(port, &refs).unwrap();
    let mut out = Vec::new();
    let mut queue = vec![(dataplane::ethernet::nodes::ETHERNET_INPUT, v)];
    while let Some((node, v)) = queue.pop() {
        if node == capture {
            for &i in g.vectors[v].indices() {
                let m = *g.pool.meta(i);
                out.push((m.tx_if, m.dst_prefix_len(), g.pool.frame(i).to_vec()));
            }
            if node != dataplane::drivers::nodes::GENERATOR_TX {
                continue;
            }
        }
        g.dispatch(node, v);
        while let Some(p) = g.take_pending() {
            queue.push(p);
        }
    }
    out
}

/// Receives `frames` on `port` and runs the graph to completion.
pub fn receive(g: &mut Graph, port: u16, frames: &[&[u8]]) {
    let v = g.inject(port, frames).unwrap();
    g.forward(v, dataplane::ethernet::nodes::ETHERNET_INPUT);
    g.run(0);
}

/// The counters of interface `index`.
pub fn stats(g: &Graph, index: u16) -> IfStats {
    let mut s = IfStats::default();
    g.counters.interface(index).add_to(&mut s);
    s
}

/// Frames dropped with input `index`, over all reasons.
pub fn dropped(g: &Graph, index: u16) -> u64 {
    let n = dataplane::datapath::registry::N_REASONS;
    (0..n).map(|r| g.counters.errors[index as usize * n + r].get()).sum()
}

/// What frames come to: the frames reaching `interface-output` (forwarded, fragments, ICMP
/// errors, ARP requests; sorted, as vectors split toward several nodes reach it in another
/// order), every drop counter of the input and each interface's counters.
pub type Outcome = (Vec<(u16, u8, Vec<u8>)>, Vec<u64>, Vec<IfStats>);

/// The [`Outcome`] of `frames` received on `port` of the graph of `yaml`, one vector at a
/// time (`chunk` frames each), with the counters of interfaces 1 to `interfaces`.
pub fn outcome(yaml: &str, port: u16, frames: &[Vec<u8>], chunk: usize, interfaces: u16) -> Outcome {
    outcome_of(graph(yaml).0, port, frames, chunk, interfaces)
}

/// The [`Outcome`] of `frames` received on `port` of the graph of `yaml` as one vector, with
/// the packet tracer on (the input nodes then run one after the other, never fused) or off.
pub fn traced_outcome(yaml: &str, port: u16, frames: &[Vec<u8>], interfaces: u16, tracing: bool) -> Outcome {
    let mut g = graph(yaml).0;
    g.trace.active = tracing;
    outcome_of(g, port, frames, frames.len(), interfaces)
}

/// [`outcome`] on graph `g`.
fn outcome_of(mut g: Graph, port: u16, frames: &[Vec<u8>], chunk: usize, interfaces: u16) -> Outcome {
    let mut out: Vec<_> = frames
        .chunks(chunk)
        .flat_map(|c| drive(&mut g, port, c, dataplane::interface::nodes::INTERFACE_OUTPUT))
        .collect();
    out.sort();
    let drops = dataplane::datapath::registry::all_drops().map(|r| g.counters.error(port, r).get()).collect();
    (out, drops, (1..=interfaces).map(|i| stats(&g, i)).collect())
}

/// What a fused `ethernet-input` pass must say of `frames` with `max_frame`, from its
/// definition: every frame 14 to `max_frame` bytes long, to `mac` or a group, untagged with
/// `ethertype`, and its network header (from offset 14) passing `header_ok`; then their tally.
pub fn fused_oracle(
    frames: &[Vec<u8>],
    max_frame: u16,
    mac: [u8; 6],
    ethertype: u16,
    header_ok: impl Fn(&[u8]) -> bool,
) -> Option<dataplane::ethernet::fused::RxTally> {
    let mut t = dataplane::ethernet::fused::RxTally::default();
    for f in frames {
        let plain = (14..=usize::from(max_frame)).contains(&f.len())
            && (f[..6] == mac || f[0] & 1 == 1)
            && f[12..14] == ethertype.to_be_bytes()
            && header_ok(&f[14..]);
        if !plain {
            return None;
        }
        t.octets += f.len() as u64;
        t.group += u64::from(f[0] & 1);
        t.broadcast += u64::from(f[..6] == [0xff; 6]);
    }
    Some(t)
}

/// Up to 64 frames (within the ICMP burst, so rate limits cannot tell a vector from its
/// frames one vector each) in runs of 1 to 4 copies of one frame of `frame`.
pub fn runs_of(
    frame: impl proptest::strategy::Strategy<Value = Vec<u8>>,
) -> impl proptest::strategy::Strategy<Value = Vec<Vec<u8>>> {
    use proptest::strategy::Strategy;
    proptest::collection::vec((frame, 1usize..5).prop_map(|(f, n)| vec![f; n]), 1..24)
        .prop_map(|runs| runs.concat().into_iter().take(64).collect())
}

/// Checks the fused pass from `ethernet-input` over `input` (`ip4-input` or `ip6-input`) on
/// 100 plain `frames` received on port 1 of the graph of `yaml`: the vector goes straight to
/// `lookup`, counted as one call of `input` with its packets fused; while the packet tracer
/// runs, through `input` itself. Either way port 1 counts the same.
pub fn check_fused_pass(yaml: &str, frames: &[Vec<u8>], input: NodeId, lookup: NodeId) {
    assert_eq!(frames.len(), 100);
    let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
    for tracing in [false, true] {
        let mut g = graph(yaml).0;
        g.trace.active = tracing;
        let v = g.inject(1, &refs).unwrap();
        g.dispatch(dataplane::ethernet::nodes::ETHERNET_INPUT, v);
        let (next, _) = g.take_pending().unwrap();
        let c = &g.counters.nodes[input.index()];
        let counted = (c.calls.get(), c.vectors.get(), c.fused.get());
        if tracing {
            assert_eq!((next, counted), (input, (0, 0, 0)));
        } else {
            assert_eq!((next, counted), (lookup, (1, 100, 100)));
        }
        let s = stats(&g, 1);
        assert_eq!((s.rx_packets, s.rx_unicast), (100, 100), "tracing {tracing}");
        assert_eq!(s.rx_octets, frames.iter().map(|f| f.len() as u64).sum::<u64>(), "tracing {tracing}");
    }
}
