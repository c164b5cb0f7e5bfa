//! The command registry: every command that shows state, with text and JSON output.
//!
//! The console, `vecflow ctl`, `demo` and `bench` all go through [`Registry::execute`], so a
//! command added here (later: `show sflow`, `show ip fib`) is available everywhere at once.

use crate::engine::Dataplane;
use crate::graph::NodeId;
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

/// A command handler: the dataplane and the words after the command's own.
pub type Handler = fn(&Dataplane, &[&str]) -> Result<Reply, String>;

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
            words: "show runtime",
            help: "per node per worker: calls, vectors, suspends, clocks/vector, vectors/call",
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

    /// Runs the command whose words are the longest prefix of `line`.
    pub fn execute(&self, dp: &Dataplane, line: &str) -> Result<Reply, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let best = self
            .commands
            .iter()
            .filter(|c| {
                let cw: Vec<&str> = c.words.split(' ').collect();
                words.len() >= cw.len() && cw.iter().zip(&words).all(|(a, b)| a == b)
            })
            .max_by_key(|c| c.words.len());
        match best {
            Some(c) => (c.run)(dp, &words[c.words.split(' ').count()..]),
            None => {
                let known: Vec<&str> = self.commands.iter().map(|c| c.words).collect();
                Err(format!("unknown command '{line}'; known: {}", known.join(", ")))
            }
        }
    }
}

fn show_runtime(dp: &Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let hz = crate::tsc::hz() as f64;
    let mut text = String::new();
    let mut workers = Vec::new();
    for w in dp.runtime() {
        let secs = w.looping.last_tsc.saturating_sub(w.looping.start_tsc) as f64 / hz;
        let input = w.nodes.iter().find(|(n, _)| *n == NodeId::GeneratorInput).map_or(0, |(_, s)| s.vectors);
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
            "{:<20} {:>14} {:>16} {:>12} {:>12} {:>13}",
            "Name", "Calls", "Vectors", "Suspends", "Clocks", "Vectors/Call"
        );
        let mut nodes = Vec::new();
        for (n, s) in &w.nodes {
            let per_vec = s.clocks as f64 / s.vectors.max(1) as f64;
            let per_call = s.vectors as f64 / s.calls.max(1) as f64;
            if s.calls > 0 || s.suspends > 0 {
                let _ = writeln!(
                    text,
                    "{:<20} {:>14} {:>16} {:>12} {:>12.2e} {:>13.2}",
                    n.name(),
                    s.calls,
                    s.vectors,
                    s.suspends,
                    per_vec,
                    per_call
                );
            }
            nodes.push(json!({"name": n.name(), "calls": s.calls, "vectors": s.vectors, "suspends": s.suspends,
                "clocks": s.clocks, "clocks_per_vector": per_vec, "vectors_per_call": per_call}));
        }
        workers
            .push(json!({"worker": w.id, "core": w.core, "seconds": secs, "loops": w.looping.loops, "nodes": nodes}));
    }
    Ok(Reply { text, json: json!({"tsc_hz": hz as u64, "workers": workers}) })
}

fn show_errors(dp: &Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let rows = dp.errors();
    let mut text = format!("{:>12}  {:<20} {:<22} {}\n", "Count", "Node", "Reason", "Interface");
    for r in &rows {
        let _ = writeln!(text, "{:>12}  {:<20} {:<22} {}", r.count, r.node, r.reason, r.interface);
    }
    Ok(Reply { text, json: json!({"errors": rows}) })
}

fn show_interface(dp: &Dataplane, args: &[&str]) -> Result<Reply, String> {
    let selected: Vec<_> =
        dp.interfaces().iter().filter(|i| args.is_empty() || args.contains(&i.name.as_str())).collect();
    if let Some(missing) = args.iter().find(|a| !dp.interfaces().iter().any(|i| i.name == **a)) {
        return Err(format!("show interface: no interface named '{missing}'"));
    }
    let mut text =
        format!("{:<16} {:>4} {:>5} {:>6}  {:<20} {:>16}\n", "Name", "Idx", "State", "MTU", "Counter", "Count");
    let mut list = Vec::new();
    for i in selected {
        let s = dp.interface_stats(i.index);
        let state = if i.admin_up { "up" } else { "down" };
        let counters = serde_json::to_value(s).expect("plain counters");
        let mut first = true;
        for (k, v) in counters.as_object().expect("struct").iter() {
            if v.as_u64() == Some(0) {
                continue;
            }
            let head =
                if first { format!("{:<16} {:>4} {:>5} {:>6}", i.name, i.index, state, i.mtu) } else { String::new() };
            let _ = writeln!(text, "{head:<34}  {:<20} {:>16}", k.replace('_', " "), v);
            first = false;
        }
        if first {
            let _ = writeln!(text, "{:<16} {:>4} {:>5} {:>6}", i.name, i.index, state, i.mtu);
        }
        list.push(json!({"interface": i, "counters": counters}));
    }
    Ok(Reply { text, json: json!({"interfaces": list}) })
}
