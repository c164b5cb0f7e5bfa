//! Commands about the process as a whole: its version and configuration, the runtime's
//! per-node counters, drops, and the packet tracer.

use super::ip::{adjacency, adjacency_detail};
use super::{Command, Registry, Reply, cleared};
use crate::control::engine::Dataplane;
use crate::control::summary::summary;
use crate::datapath::registry::{self, DropFacts, NodeFacts};
use crate::l3::RouteMeta;
use crate::runtime::graph::NodeId;
use serde_json::json;
use std::fmt::Write;

/// Adds these commands to `r`.
pub(super) fn register(r: &mut Registry) {
    r.register(Command {
        words: "show version",
        help: "vecflow's version, uptime, workers and TSC frequency",
        run: show_version,
    });
    r.register(Command {
        words: "show config",
        help: "the running configuration as YAML (vecflow apply takes it back)",
        run: show_config,
    });
    r.register(Command {
            words: "show runtime",
            help: "per node per worker: calls, vectors, suspends, clocks/vector, vectors/call, vectors handled in another node's fused pass",
            run: show_runtime,
        });
    r.register(Command {
        words: "show buffers",
        help: "each worker's packet buffers: count, size, memory, free now and fewest free",
        run: show_buffers,
    });
    r.register(Command {
        words: "show errors",
        help: "dropped frames by node, reason and input interface",
        run: show_errors,
    });
    r.register(Command {
        words: "clear runtime",
        help: "show runtime counts from now",
        run: |dp, args| cleared(dp, args, "runtime", Dataplane::clear_runtime),
    });
    r.register(Command {
        words: "clear errors",
        help: "show errors counts from now",
        run: |dp, args| cleared(dp, args, "errors", Dataplane::clear_errors),
    });
    r.register(Command {
        words: "trace add",
        help: "trace the next COUNT packets (per worker) an input node receives: trace add generator-input 10",
        run: trace_add,
    });
    r.register(Command {
        words: "show trace",
        help: "each traced packet's path node by node, with what each node decided",
        run: show_trace,
    });
    r.register(Command {
        words: "clear trace",
        help: "stop tracing and forget the traces",
        run: |dp, args| cleared(dp, args, "trace", |dp| dp.trace_clear()),
    });
}

fn trace_add(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let inputs: Vec<&str> = crate::drivers::nodes::INPUTS.iter().map(|n| n.name()).collect();
    let usage = || {
        format!(
            "trace add INPUT-NODE COUNT: INPUT-NODE one of {}, COUNT 1 to {}",
            inputs.join(", "),
            crate::runtime::trace::MAX_PACKETS
        )
    };
    let [node, count] = args else { return Err(usage()) };
    let input = crate::drivers::nodes::INPUTS
        .iter()
        .find(|n| n.name() == *node)
        .ok_or_else(|| format!("trace add: '{node}' is not an input node; {}", usage()))?;
    let count = count
        .parse::<u32>()
        .ok()
        .filter(|c| (1..=crate::runtime::trace::MAX_PACKETS).contains(c))
        .ok_or_else(|| format!("trace add: count '{count}'; {}", usage()))?;
    dp.trace_add(*input, count);
    Ok(Reply {
        text: format!("tracing the next {count} packets from {node} on each worker\n"),
        json: json!({"input": node, "count": count}),
    })
}

/// What `entry` says about its node's decision, in words (`next`: the node the packet went
/// to after it, if any).
fn trace_detail(dp: &Dataplane, e: &crate::runtime::trace::TraceEntry, next: Option<NodeId>) -> String {
    use crate::runtime::trace::{SAMPLED_RX, SAMPLED_TX};
    let name = |i: u16| dp.interfaces().iter().find(|x| x.index == i).map_or(format!("#{i}"), |x| x.name.clone());
    let m = &e.meta;
    let mut d = match e.node {
        n if crate::drivers::nodes::INPUTS.contains(&n) => {
            format!("rx on {}, {} bytes: {}", name(m.rx_if), m.len(), summary(&e.head[..e.len]))
        }
        crate::ip4::nodes::IP4_LOOKUP
        | crate::ip6::nodes::IP6_LOOKUP
        | crate::mpls::nodes::MPLS_REWRITE
        | crate::ip4::nodes::IP4_LOCAL
            if m.adj() != 0 =>
        {
            let adj = adjacency(dp, m.adj());
            format!("matched /{}, adjacency {}: {}", m.dst_prefix_len(), m.adj(), adjacency_detail(dp, adj))
        }
        crate::mpls::nodes::MPLS_LOOKUP if m.label_entry() > 0 => format!("local-label entry {}", m.label_entry()),
        crate::interface::nodes::ERROR_DROP => match registry::drop_reason(m.error) {
            Some(r) => format!("dropped: {} ({})", r.name(), r.info().description),
            None => "dropped".to_string(),
        },
        crate::ethernet::nodes::L2_XCONNECT | crate::interface::nodes::INTERFACE_OUTPUT if m.tx_if != 0 => {
            format!("out {}", name(m.tx_if))
        }
        crate::ip4::nodes::IP4_REWRITE
        | crate::ip6::nodes::IP6_REWRITE
        | crate::mpls::nodes::MPLS_REWRITE
        | crate::ip4::nodes::ARP_INPUT
        | crate::ip6::nodes::IP6_LOCAL
        | crate::ip4::nodes::ICMP4_ERROR
        | crate::ip6::nodes::ICMP6_ERROR
        | crate::ip4::nodes::IP4_FRAG => {
            format!("out {}: {}", name(m.tx_if), summary(&e.head[..e.len]))
        }
        crate::drivers::nodes::GENERATOR_TX | crate::drivers::nodes::AF_PACKET_TX | crate::drivers::nodes::PCAP_TX => {
            let refused = m.error != crate::runtime::buffer::NOT_DROPPED;
            format!("{} on {}", if refused { "refused" } else { "sent" }, name(m.tx_if))
        }
        _ => String::new(),
    };
    for (bit, what) in [(SAMPLED_RX, "sFlow sample (rx)"), (SAMPLED_TX, "sFlow sample (tx)")] {
        let newly = m.flags & bit != 0
            && matches!(e.node, crate::ethernet::nodes::ETHERNET_INPUT | crate::interface::nodes::INTERFACE_OUTPUT);
        if newly {
            d = if d.is_empty() { what.to_string() } else { format!("{d}; {what}") };
        }
    }
    if let Some(n) = next {
        d = if d.is_empty() { format!("next {}", n.name()) } else { format!("{d}; next {}", n.name()) };
    }
    d
}

fn show_trace(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    if let Some(extra) = args.first() {
        return Err(format!("show trace: takes no arguments ('{extra}')"));
    }
    let hz = crate::runtime::tsc::hz() as f64;
    let mut text = String::new();
    let mut packets = Vec::new();
    for (k, p) in dp.traces().iter().enumerate() {
        let _ = writeln!(text, "Packet {} (worker {})", k + 1, p.worker);
        let t0 = p.entries.first().map_or(0, |e| e.tsc);
        let mut entries = Vec::new();
        for (j, e) in p.entries.iter().enumerate() {
            let next = p.entries.get(j + 1).map(|n| n.node);
            let detail = trace_detail(dp, e, next);
            let us = e.tsc.saturating_sub(t0) as f64 / hz * 1e6;
            let _ = writeln!(text, "  {us:>9.3} us  {:<18} {detail}", e.node.name());
            entries.push(json!({"node": e.node.name(), "us": us, "detail": detail, "rx_if": e.meta.rx_if,
                "tx_if": e.meta.tx_if, "len": e.meta.len(), "adjacency": e.meta.adj(), "flags": e.meta.flags}));
        }
        packets.push(json!({"worker": p.worker, "entries": entries}));
    }
    if packets.is_empty() {
        text.push_str("no packets traced (trace add INPUT-NODE COUNT)\n");
    }
    Ok(Reply { text, json: json!({ "packets": packets }) })
}

fn show_version(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let (version, uptime, workers) = (env!("CARGO_PKG_VERSION"), dp.uptime(), dp.config().workers.count);
    let hz = crate::runtime::tsc::hz();
    let text = format!("vecflow {version}, up {uptime:.1} s, {workers} worker(s), TSC {:.3} GHz\n", hz as f64 / 1e9);
    Ok(Reply { text, json: json!({"version": version, "uptime": uptime, "workers": workers, "tsc_hz": hz}) })
}

fn show_runtime(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let hz = crate::runtime::tsc::hz() as f64;
    let isa = dp.isa().name();
    let available: Vec<&str> = crate::runtime::isa::Isa::available().iter().map(|i| i.name()).collect();
    let mut text =
        format!("SIMD variant {isa} (this CPU runs {}; {} chooses)\n", available.join(", "), crate::runtime::isa::ENV);
    let mut workers = Vec::new();
    for w in dp.runtime_shown() {
        let secs = w.looping.last_tsc.saturating_sub(w.looping.start_tsc) as f64 / hz;
        let input: u64 =
            w.nodes.iter().filter(|(n, _)| crate::drivers::nodes::INPUTS.contains(n)).map(|(_, s)| s.vectors).sum();
        let core = w.core.map_or("unpinned".to_string(), |c| format!("core {c}"));
        let _ = writeln!(text, "Thread {} vecflow-wk-{} ({core})", w.id + 1, w.id);
        let _ = writeln!(
            text,
            "Time {secs:.1}, {} loops, vector rate in {:.4e} packets/s",
            w.looping.loops,
            input as f64 / secs.max(1e-9)
        );
        let _ = writeln!(
            text,
            "{:<20} {:>14} {:>16} {:>12} {:>12} {:>13} {:>16}",
            "Name", "Calls", "Vectors", "Suspends", "Clocks", "Vectors/Call", "Fused"
        );
        let mut nodes = Vec::new();
        for (n, s) in &w.nodes {
            let per_vec = s.clocks as f64 / s.vectors.max(1) as f64;
            let per_call = s.vectors as f64 / s.calls.max(1) as f64;
            if s.calls > 0 || s.suspends > 0 {
                let _ = writeln!(
                    text,
                    "{:<20} {:>14} {:>16} {:>12} {:>12.2e} {:>13.2} {:>16}",
                    n.name(),
                    s.calls,
                    s.vectors,
                    s.suspends,
                    per_vec,
                    per_call,
                    s.fused
                );
            }
            nodes.push(json!({"name": n.name(), "calls": s.calls, "vectors": s.vectors, "suspends": s.suspends,
                "clocks": s.clocks, "clocks_per_vector": per_vec, "vectors_per_call": per_call, "fused": s.fused}));
        }
        workers
            .push(json!({"worker": w.id, "core": w.core, "seconds": secs, "loops": w.looping.loops, "nodes": nodes}));
    }
    Ok(Reply { text, json: json!({"tsc_hz": hz as u64, "isa": isa, "isa_available": available, "workers": workers}) })
}

fn show_buffers(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let (count, sizes) = (dp.config().workers.buffers, dp.config().buffers);
    let stride = crate::runtime::buffer::stride_for(sizes.data_size);
    let memory = sizes.memory(count);
    let mib = |b: u64| b as f64 / f64::from(1u32 << 20);
    let mut text = format!(
        "{count} buffers per worker of {} bytes of frame (buffers.data-size; {stride}-byte slots with headroom): \
         {:.1} MiB per worker\n{:<8} {:>10} {:>10} {:>12}\n",
        sizes.data_size,
        mib(memory),
        "Worker",
        "Free",
        "In use",
        "Fewest free"
    );
    let mut workers = Vec::new();
    for w in dp.runtime() {
        let (free, low) = (w.looping.buffers_free, w.looping.buffers_low);
        let _ = writeln!(text, "{:<8} {free:>10} {:>10} {low:>12}", w.id, u64::from(count).saturating_sub(free));
        workers.push(
            json!({"worker": w.id, "free": free, "in_use": u64::from(count).saturating_sub(free), "fewest_free": low}),
        );
    }
    let _ = writeln!(text, "Total {:.1} MiB", mib(memory * u64::from(dp.config().workers.count)));
    Ok(Reply {
        text,
        json: json!({"buffers": count, "data_size": sizes.data_size, "stride": stride, "bytes_per_worker": memory,
            "workers": workers}),
    })
}

fn show_errors(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let rows = dp.errors_shown();
    let mut text = format!("{:>12}  {:<20} {:<22} {}\n", "Count", "Node", "Reason", "Interface");
    for r in &rows {
        let _ = writeln!(text, "{:>12}  {:<20} {:<22} {}", r.count, r.node, r.reason, r.interface);
    }
    Ok(Reply { text, json: json!({"errors": rows}) })
}

fn show_config(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let text = serde_saphyr::to_string(dp.config()).map_err(|e| e.to_string())?;
    Ok(Reply { text, json: serde_json::to_value(dp.config()).map_err(|e| e.to_string())? })
}
