//! The command registry: every command that shows state, with text and JSON output.
//!
//! The console, `vecflow ctl`, `demo` and `bench` all go through [`Registry::execute`], so a
//! command added here (later: `show sflow`, `show ip fib`) is available everywhere at once.

use crate::config::{Payload, Prefix, PrefixAddr};
use crate::control::engine::Dataplane;
use crate::l3::fib::{FibAddr, FibWriter, Route};
use crate::l3::{Adjacency, LabelEntry};
use crate::runtime::graph::NodeId;
use serde_json::{Value, json};
use std::fmt::Write;

/// A command's answer: text for people, JSON for programs.
#[derive(Debug, Clone)]
pub struct Reply {
    /// Human-readable table.
    pub text: String,
    /// The same facts as JSON.
    pub json: Value,
}

/// A command handler: the dataplane (mutable for commands that change or clear state) and the
/// words after the command's own.
pub type Handler = fn(&mut Dataplane, &[&str]) -> Result<Reply, String>;

/// One registered command.
pub struct Command {
    /// Its words, e.g. `show runtime`.
    pub words: &'static str,
    /// One line of help.
    pub help: &'static str,
    /// What it runs.
    pub run: Handler,
}

/// All commands known to this process.
pub struct Registry {
    commands: Vec<Command>,
}

impl Registry {
    /// The registry with the engine's commands: `show runtime`, `show errors`, `show interface`.
    pub fn with_builtins() -> Self {
        let mut r = Registry { commands: Vec::new() };
        r.register(Command {
            words: "show version",
            help: "vecflow's version, uptime, workers and TSC frequency",
            run: show_version,
        });
        r.register(Command {
            words: "show hardware",
            help: "each physical interface's driver: host interface, rings and queues, capture files, link",
            run: show_hardware,
        });
        r.register(Command {
            words: "show runtime",
            help: "per node per worker: calls, vectors, suspends, clocks/vector, vectors/call, vectors handled in another node's fused pass",
            run: show_runtime,
        });
        r.register(Command {
            words: "show errors",
            help: "dropped frames by node, reason and input interface",
            run: show_errors,
        });
        r.register(Command {
            words: "show interface",
            help: "interfaces with their state and counters; optional interface name",
            run: show_interface,
        });
        r.register(Command {
            words: "show interface address",
            help: "each interface's IPv4 and IPv6 addresses, the link-local one derived from its MAC included",
            run: show_interface_address,
        });
        r.register(Command {
            words: "show flows",
            help: "the flow rules, by id, with the packets each matched since the rules last changed",
            run: show_flows,
        });
        r.register(Command {
            words: "show flow-cache",
            help: "the workers' megaflow caches: lookups, EMC / Cuckoo Distributor / megaflow hits, upcalls, subtables probed per hit",
            run: show_flow_cache,
        });
        r.register(Command {
            words: "show ip fib",
            help: "IPv4 routes and their adjacencies; optional prefix (exact) or address (longest match)",
            run: show_ip_fib,
        });
        r.register(Command {
            words: "show ip6 fib",
            help: "IPv6 routes and their adjacencies; optional prefix (exact) or address (longest match)",
            run: show_ip6_fib,
        });
        r.register(Command {
            words: "show ip neighbors",
            help: "IPv4 neighbors (ARP): static and learned, with state and age",
            run: show_neighbors,
        });
        r.register(Command { words: "show neighbors", help: "the same as show ip neighbors", run: show_neighbors });
        r.register(Command {
            words: "show ip6 neighbors",
            help: "IPv6 neighbors (neighbor discovery): static and learned, with state and age",
            run: show_ip6_neighbors,
        });
        crate::control::change::register(&mut r);
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
        r.register(Command {
            words: "clear interfaces",
            help: "show interface counts from now (sFlow and Prometheus counters never reset)",
            run: |dp, args| cleared(dp, args, "interfaces", Dataplane::clear_interfaces),
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
            words: "show mpls fib",
            help: "MPLS local labels: swap (out-labels, next hop) or pop",
            run: show_mpls_fib,
        });
        r.register(Command {
            words: "show sflow",
            help: "sFlow agent settings and, per data source, samples taken, sent and dropped",
            run: show_sflow,
        });
        r
    }

    /// Adds a command. Panics if its words are already registered (a programming error).
    pub fn register(&mut self, c: Command) {
        assert!(self.commands.iter().all(|o| o.words != c.words), "command '{}' registered twice", c.words);
        self.commands.push(c);
    }

    /// The registered commands.
    pub fn commands(&self) -> &[Command] {
        &self.commands
    }

    /// Runs the command whose words begin `line` (each word may be cut short, as in VPP:
    /// `sh int` is `show interface`), the one with the most words when several do; the words
    /// after its own are its arguments.
    pub fn execute(&self, dp: &mut Dataplane, line: &str) -> Result<Reply, String> {
        let c = self.resolve(line)?;
        let words: Vec<&str> = line.split_whitespace().collect();
        (c.run)(dp, &words[c.words.split(' ').count()..])
    }

    /// The command `line` names.
    pub fn resolve(&self, line: &str) -> Result<&Command, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        // (command, words it has, how many of them were typed in full)
        let matches: Vec<(&Command, usize, usize)> = self
            .commands
            .iter()
            .filter_map(|c| {
                let cw: Vec<&str> = c.words.split(' ').collect();
                let fits = words.len() >= cw.len() && cw.iter().zip(&words).all(|(w, typed)| w.starts_with(typed));
                fits.then(|| (c, cw.len(), cw.iter().zip(&words).filter(|(w, typed)| w == typed).count()))
            })
            .collect();
        let most_words = matches.iter().map(|m| m.1).max();
        let mut best: Vec<_> = matches.into_iter().filter(|m| Some(m.1) == most_words).collect();
        // Among equally long commands, one typed out in full wins over abbreviations.
        if let Some(exact) = best.iter().find(|m| m.2 == m.1) {
            return Ok(exact.0);
        }
        match best.len() {
            1 => Ok(best.remove(0).0),
            0 => {
                let known: Vec<&str> = self.commands.iter().map(|c| c.words).collect();
                Err(format!("unknown command '{line}'; known: {}", known.join(", ")))
            }
            _ => {
                let candidates: Vec<&str> = best.iter().map(|m| m.0.words).collect();
                Err(format!("ambiguous command '{line}': {}", candidates.join(", ")))
            }
        }
    }
}

/// A `clear` command: takes no arguments, runs `clear`, says what it did.
fn cleared(dp: &mut Dataplane, args: &[&str], what: &str, clear: fn(&mut Dataplane)) -> Result<Reply, String> {
    if let Some(extra) = args.first() {
        return Err(format!("clear {what}: takes no arguments ('{extra}')"));
    }
    clear(dp);
    Ok(Reply { text: String::new(), json: json!({"cleared": what}) })
}

fn trace_add(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let inputs: Vec<&str> = NodeId::INPUTS.iter().map(|n| n.name()).collect();
    let usage = || {
        format!(
            "trace add INPUT-NODE COUNT: INPUT-NODE one of {}, COUNT 1 to {}",
            inputs.join(", "),
            crate::runtime::trace::MAX_PACKETS
        )
    };
    let [node, count] = args else { return Err(usage()) };
    let input = NodeId::INPUTS
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
        n if NodeId::INPUTS.contains(&n) => {
            format!("rx on {}, {} bytes: {}", name(m.rx_if), m.len(), super::summary::summary(&e.head[..e.len]))
        }
        NodeId::Ip4Lookup | NodeId::Ip6Lookup | NodeId::MplsRewrite | NodeId::Ip4Local if m.adj != 0 => {
            let adj = adjacency(dp, m.adj);
            format!("matched /{}, adjacency {}: {}", m.dst_prefix_len, m.adj, adjacency_detail(dp, adj))
        }
        NodeId::MplsLookup if m.label_entry > 0 => format!("local-label entry {}", m.label_entry),
        NodeId::ErrorDrop => match crate::runtime::drops::DropReason::from_index(m.error) {
            Some(r) => format!("dropped: {} ({})", r.name(), r.description()),
            None => "dropped".to_string(),
        },
        NodeId::L2Xconnect | NodeId::InterfaceOutput if m.tx_if != 0 => format!("out {}", name(m.tx_if)),
        NodeId::Ip4Rewrite
        | NodeId::Ip6Rewrite
        | NodeId::MplsRewrite
        | NodeId::ArpInput
        | NodeId::Ip6Local
        | NodeId::Icmp4Error
        | NodeId::Icmp6Error
        | NodeId::Ip4Frag => {
            format!("out {}: {}", name(m.tx_if), super::summary::summary(&e.head[..e.len]))
        }
        NodeId::GeneratorTx | NodeId::AfPacketTx | NodeId::PcapTx => {
            let refused = m.error != crate::runtime::buffer::NOT_DROPPED;
            format!("{} on {}", if refused { "refused" } else { "sent" }, name(m.tx_if))
        }
        _ => String::new(),
    };
    for (bit, what) in [(SAMPLED_RX, "sFlow sample (rx)"), (SAMPLED_TX, "sFlow sample (tx)")] {
        let newly = m.flags & bit != 0 && matches!(e.node, NodeId::EthernetInput | NodeId::InterfaceOutput);
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
                "tx_if": e.meta.tx_if, "len": e.meta.len(), "adjacency": e.meta.adj, "flags": e.meta.flags}));
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

fn show_hardware(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let mut text = format!("{:<16} {:>4} {:<10} {:<18} {:>5}  {}\n", "Name", "Idx", "Driver", "MAC", "MTU", "Details");
    let mut rows = Vec::new();
    for i in dp.interfaces().iter().filter(|i| i.parent.is_none()) {
        let cfg = dp.config().interfaces.get(&i.name);
        let link = dp.link(i.index);
        let (up, speed) = (link.oper_up.get() == 1, link.speed.get());
        let details = match i.driver {
            crate::interface::DriverKind::Generator => {
                let streams = cfg.and_then(|c| c.generator.as_ref()).map_or(0, |g| g.streams.len());
                json!({"streams": streams})
            }
            crate::interface::DriverKind::AfPacket | crate::interface::DriverKind::AfXdp => {
                let host = dp.host_link(i.index);
                let mut d = json!({"host_interface": host.map(|h| &h.name), "host_ifindex": host.map(|h| h.ifindex),
                    "host_mtu": host.map(|h| h.mtu), "rx_mode": cfg.map(|c| c.rx_mode)});
                let own = if i.driver == crate::interface::DriverKind::AfXdp {
                    let a = cfg.and_then(|c| c.af_xdp).unwrap_or_default();
                    let (xdp, zero_copy) = dp.xdp_attachment(i.index).unwrap_or(("none", false));
                    json!({"queues": a.queues, "ring_size": a.ring_size, "xdp": xdp,
                        "copy": if zero_copy { "zero-copy" } else { "copy" }})
                } else {
                    let a = cfg.and_then(|c| c.af_packet).unwrap_or_default();
                    json!({"rx_queues": a.rx_queues, "block_size": a.block_size, "blocks": a.blocks,
                        "block_timeout_ms": a.block_timeout_ms})
                };
                d.as_object_mut().expect("an object").extend(own.as_object().expect("an object").clone());
                d
            }
            crate::interface::DriverKind::Pcap => {
                let p = cfg.and_then(|c| c.pcap.clone());
                json!({"read": p.as_ref().and_then(|p| p.read.clone()), "loop": p.as_ref().is_some_and(|p| p.looping),
                    "rate_pps": p.as_ref().map_or(0, |p| p.rate_pps), "write": p.and_then(|p| p.write)})
            }
        };
        let mut words: Vec<String> = details
            .as_object()
            .expect("an object")
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{}={}", k.replace('_', "-"), v.as_str().map_or(v.to_string(), str::to_string)))
            .collect();
        words.push(format!(
            "link {}{}",
            if up { "up" } else { "down" },
            match speed {
                0 => String::new(),
                s => format!(" {} Mbit/s", s / 1_000_000),
            }
        ));
        let driver = serde_json::to_value(i.driver).expect("a name");
        let _ = writeln!(
            text,
            "{:<16} {:>4} {:<10} {:<18} {:>5}  {}",
            i.name,
            i.index,
            driver.as_str().unwrap_or("?"),
            i.mac,
            i.mtu,
            words.join(", ")
        );
        rows.push(
            json!({"interface": i.name, "index": i.index, "driver": driver, "mac": i.mac.to_string(), "mtu": i.mtu,
            "link": {"up": up, "speed": speed}, "details": details}),
        );
    }
    Ok(Reply { text, json: json!({"interfaces": rows}) })
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
        let input: u64 = w.nodes.iter().filter(|(n, _)| NodeId::INPUTS.contains(n)).map(|(_, s)| s.vectors).sum();
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

fn show_errors(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let rows = dp.errors_shown();
    let mut text = format!("{:>12}  {:<20} {:<22} {}\n", "Count", "Node", "Reason", "Interface");
    for r in &rows {
        let _ = writeln!(text, "{:>12}  {:<20} {:<22} {}", r.count, r.node, r.reason, r.interface);
    }
    Ok(Reply { text, json: json!({"errors": rows}) })
}

fn show_flows(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let hits = dp.flow_hits();
    let mut text = format!("{:>4} {:>12}  {}\n", "Id", "Packets", "Rule");
    let mut rows = Vec::new();
    for (id, (rule, n)) in dp.config().flows.iter().zip(hits).enumerate() {
        let _ = writeln!(text, "{id:>4} {n:>12}  {rule}");
        rows.push(json!({"id": id, "rule": rule, "packets": n}));
    }
    Ok(Reply { text, json: json!({ "flows": rows }) })
}

fn show_flow_cache(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let s = dp.flow_cache_stats();
    let hits = s.cd_hits + s.dpcls_hits;
    let per_hit = if hits == 0 { 0.0 } else { s.subtables_probed as f64 / hits as f64 };
    let text = format!(
        "lookups {}\nemc hits {}\ncd hits {}\nmegaflow hits {}\nupcalls {}\nsubtables probed per hit {per_hit:.2}\n",
        s.lookups, s.emc_hits, s.cd_hits, s.dpcls_hits, s.upcalls
    );
    let json = json!({"lookups": s.lookups, "emc_hits": s.emc_hits, "cd_hits": s.cd_hits,
        "megaflow_hits": s.dpcls_hits, "upcalls": s.upcalls, "subtables_per_hit": per_hit});
    Ok(Reply { text, json })
}

fn show_interface_address(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let mut text = String::new();
    let mut rows = Vec::new();
    for i in dp.interfaces().iter().filter(|i| !i.addresses.is_empty()) {
        let _ = writeln!(text, "{} ({})", i.name, if i.admin_up { "up" } else { "down" });
        let mut addresses = Vec::new();
        for a in &i.addresses {
            let note = if crate::config::is_link_local(a.addr) { "  link-local" } else { "" };
            let _ = writeln!(text, "  {a}{note}");
            addresses.push(a.to_string());
        }
        rows.push(json!({"interface": i.name, "addresses": addresses}));
    }
    Ok(Reply { text, json: json!({ "interfaces": rows }) })
}

fn show_interface(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let selected: Vec<_> =
        dp.interfaces().iter().filter(|i| args.is_empty() || args.contains(&i.name.as_str())).collect();
    if let Some(missing) = args.iter().find(|a| !dp.interfaces().iter().any(|i| i.name == **a)) {
        return Err(format!("show interface: no interface named '{missing}'"));
    }
    let mut text =
        format!("{:<16} {:>4} {:>7} {:>6}  {:<20} {:>16}\n", "Name", "Idx", "State", "MTU", "Counter", "Count");
    let mut list = Vec::new();
    for i in selected {
        let s = dp.interface_stats_shown(i.index);
        let link = dp.link(i.index);
        let link_up = link.oper_up.get() == 1;
        let state = match (i.admin_up, link_up) {
            (false, _) => "down",
            (true, true) => "up",
            (true, false) => "no-link",
        };
        let mut counters = serde_json::to_value(s).expect("plain counters");
        if i.parent.is_none() {
            counters["rx_miss"] = dp.rx_miss_shown(i.index).into();
        }
        let speed = link.speed.get();
        let mut first = true;
        for (k, v) in counters.as_object().expect("struct").iter() {
            if v.as_u64() == Some(0) {
                continue;
            }
            let head =
                if first { format!("{:<16} {:>4} {:>7} {:>6}", i.name, i.index, state, i.mtu) } else { String::new() };
            let _ = writeln!(text, "{head:<36}  {:<20} {:>16}", k.replace('_', " "), v);
            first = false;
        }
        if first {
            let _ = writeln!(text, "{:<16} {:>4} {:>7} {:>6}", i.name, i.index, state, i.mtu);
        }
        if speed > 0 {
            let _ = writeln!(text, "{:<36}  {:<20} {:>16}", "", "link speed (Mbit/s)", speed / 1_000_000);
        }
        let rates = dp.rates(i.index);
        if let Some(r) = rates.filter(|r| r.rx_pps + r.tx_pps > 0.0) {
            for (what, pps, bps) in [("rx", r.rx_pps, r.rx_bps), ("tx", r.tx_pps, r.tx_bps)] {
                let line = format!("{pps:.0} pps, {:.2} Mbit/s", bps / 1e6);
                let _ = writeln!(text, "{:<36}  {:<20} {:>16}", "", format!("{what} rate"), line);
            }
        }
        list.push(
            json!({"interface": i, "link": {"up": link_up, "speed": speed}, "counters": counters, "rates": rates}),
        );
    }
    Ok(Reply { text, json: json!({"interfaces": list}) })
}

/// How adjacency `adj` forwards, in words.
fn adjacency_detail(dp: &Dataplane, adj: Adjacency) -> String {
    let name = |i: u16| dp.interfaces().iter().find(|x| x.index == i).map_or("?".to_string(), |x| x.name.clone());
    match adj {
        Adjacency::Drop => "drop".to_string(),
        Adjacency::Local => "local (this router)".to_string(),
        Adjacency::Glean { tx_if } => format!("connected, out {}", name(tx_if)),
        Adjacency::Via { tx_if, next_hop, rewrite, push } => {
            let mac = rewrite.map_or("unresolved: no neighbor".to_string(), |r| {
                wire::MacAddr([r[0], r[1], r[2], r[3], r[4], r[5]]).to_string()
            });
            let labels = if push.is_empty() { String::new() } else { format!(" push {:?}", push.labels()) };
            format!("via {next_hop} out {} ({mac}){labels}", name(tx_if))
        }
    }
}

/// Adjacency `i`, or the drop adjacency for an index out of range.
fn adjacency(dp: &Dataplane, i: u32) -> Adjacency {
    dp.l3().adjs.get(i as usize).copied().unwrap_or(Adjacency::Drop)
}

/// One `show ip fib` / `show ip6 fib` row.
fn fib_row<A: FibAddr>(dp: &Dataplane, r: Route<A>, text: &mut String) -> Value {
    let prefix = format!("{}/{}", r.prefix, r.len);
    let adj = adjacency(dp, r.adj);
    let detail = adjacency_detail(dp, adj);
    let _ = writeln!(text, "{prefix:<24} {:>6}  {detail}", r.adj);
    json!({"prefix": prefix, "adjacency_index": r.adj, "adjacency": adj, "detail": detail})
}

fn show_ip_fib(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    show_fib(dp, &dp.fib().ip4, "show ip fib", args)
}

fn show_ip6_fib(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    show_fib(dp, &dp.fib().ip6, "show ip6 fib", args)
}

/// The routes of one family's table: all, one prefix (exact) or the longest match of an
/// address, with the table's use of tbl8 groups.
fn show_fib<A: FibAddr + PrefixAddr>(
    dp: &Dataplane,
    fib: &FibWriter<A>,
    cmd: &str,
    args: &[&str],
) -> Result<Reply, String> {
    let routes: Vec<Route<A>> = match args {
        [] => fib.routes().collect(),
        [a] if a.contains('/') => {
            let p: Prefix<A> = a.parse()?;
            let want = Route::new(p.addr, p.len, 0);
            fib.routes().filter(|r| (r.prefix, r.len) == (want.prefix, want.len)).collect()
        }
        [a] => {
            let addr: A =
                a.parse().map_err(|_| format!("{cmd}: '{a}' is neither a prefix ({}) nor an address", A::FORM))?;
            let want = fib.fib().lookup_addr(addr).map(|l| Route::new(addr, l.prefix_len, l.adj));
            fib.routes().filter(|r| want.is_some_and(|w| (r.prefix, r.len) == (w.prefix, w.len))).collect()
        }
        _ => return Err(format!("{cmd}: at most one prefix or address")),
    };
    let mut text = format!("{:<24} {:>6}  {}\n", "Prefix", "Adj", "Forwarding");
    let rows: Vec<Value> = routes.iter().map(|r| fib_row(dp, *r, &mut text)).collect();
    let (total, in_use, groups) = (fib.len(), fib.tbl8_in_use(), fib.fib().tbl8_groups());
    let _ = writeln!(text, "{} of {total} routes; tbl8 groups in use {in_use} of {groups}", rows.len());
    Ok(Reply {
        text,
        json: json!({"routes": rows, "total_routes": total, "tbl8_in_use": in_use, "tbl8_groups": groups}),
    })
}

fn show_neighbors(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    Ok(neighbor_table(dp, 16, |a| a.is_ipv4()))
}

fn show_ip6_neighbors(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    Ok(neighbor_table(dp, 40, |a| a.is_ipv6()))
}

/// The neighbors whose address is of the family `family` picks, as text (addresses `width`
/// wide) and JSON: interface, address, MAC, state, age in seconds.
fn neighbor_table(dp: &Dataplane, width: usize, family: fn(&std::net::IpAddr) -> bool) -> Reply {
    let name = |i: u16| dp.interfaces().iter().find(|x| x.index == i).map_or("?".into(), |x| x.name.clone());
    let mut text =
        format!("{:<16} {:<width$} {:<18} {:<11} {:>9}\n", "Interface", "Address", "MAC", "State", "Age (s)");
    let mut json_rows = Vec::new();
    for n in dp.neighbors().into_iter().filter(|n| family(&n.address)) {
        let (interface, address, mac, state, age) = (name(n.interface), n.address.to_string(), n.mac, n.state, n.age);
        let shown = mac.clone().unwrap_or_else(|| "-".into());
        let _ = writeln!(text, "{interface:<16} {address:<width$} {shown:<18} {:<11} {age:>9.1}", state.name());
        json_rows.push(json!({"interface": interface, "address": address, "mac": mac, "state": state, "age": age}));
    }
    Reply { text, json: json!({ "neighbors": json_rows }) }
}

fn show_mpls_fib(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let l3 = dp.l3();
    let mut text = format!("{:<10} {}\n", "Label", "Forwarding");
    let mut rows = Vec::new();
    for (label, e) in l3.labels.iter() {
        let entry = l3.label_entries[usize::from(e) - 1];
        let detail = match entry {
            LabelEntry::Swap { adj, out } => {
                format!("swap to {:?} {}", out.labels(), adjacency_detail(dp, adjacency(dp, adj)))
            }
            LabelEntry::Pop { payload: Payload::Ip4 } => {
                "pop (end of stack), then route the IPv4 packet by the FIB".to_string()
            }
            LabelEntry::Pop { payload: Payload::Ip6 } => {
                "pop (end of stack), then route the IPv6 packet by the FIB".to_string()
            }
        };
        let _ = writeln!(text, "{label:<10} {detail}");
        rows.push(json!({"label": label, "entry": entry, "detail": detail}));
    }
    Ok(Reply { text, json: json!({"labels": rows}) })
}

fn show_sflow(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let Some((agent, totals, rows)) = dp.sflow() else {
        return Ok(Reply {
            text: "sFlow is off (no sflow: section in the configuration)\n".into(),
            json: json!({"enabled": false}),
        });
    };
    let sf = dp.config().sflow.as_ref().expect("sflow configured");
    let mut text = format!(
        "sFlow agent {agent} sub-agent {}: header-bytes {}, max-datagram-size {}, ring-depth {} per worker\n",
        sf.sub_agent_id, sf.header_bytes, sf.max_datagram_size, sf.ring_depth
    );
    let polling = match sf.polling_interval {
        0 => "off".to_string(),
        s => format!("every {s} s"),
    };
    let _ = writeln!(text, "counter polling {polling}, discard samples at most {} per second", sf.drop_limit);
    for c in &sf.collectors {
        let _ = writeln!(text, "collector {}", std::net::SocketAddr::new(c.address, c.port));
    }
    let _ = writeln!(
        text,
        "datagrams {} (sent {}, failed {}, refused {}), flow samples {}, counter samples {}, discard samples {}, \
         sampled packets dropped by the graph {}",
        totals.datagrams,
        totals.datagrams_sent,
        totals.send_failures,
        totals.refused,
        totals.samples_encoded,
        totals.counter_samples,
        totals.discard_samples,
        totals.samples_of_drops
    );
    let _ = writeln!(
        text,
        "fullest ring the agent found: {} of {} slots (samples lost to full rings: {}), longest agent pause {} µs",
        totals.ring_high_water,
        sf.ring_depth,
        rows.iter().map(|r| r.sampler.ring_full).sum::<u64>(),
        totals.longest_pause_us
    );
    let _ = writeln!(
        text,
        "{:<16} {:>6} {:>10} {:>14} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "Interface", "ifIdx", "rate", "seen", "taken", "sent", "dropped", "discards", "disc-lost"
    );
    for r in &rows {
        let _ = writeln!(
            text,
            "{:<16} {:>6} {:>10} {:>14} {:>10} {:>10} {:>10} {:>10} {:>10}",
            r.interface,
            r.if_index,
            r.sampling_rate,
            r.sampler.seen,
            r.sampler.taken,
            r.samples_sent,
            r.sampler.ring_full,
            r.sampler.discards,
            r.sampler.discards_lost
        );
    }
    let json = json!({"enabled": true, "agent": agent, "sub_agent_id": sf.sub_agent_id, "header_bytes": sf.header_bytes,
        "max_datagram_size": sf.max_datagram_size, "ring_depth": sf.ring_depth, "collectors": sf.collectors, "totals": totals, "sources": rows});
    Ok(Reply { text, json })
}
