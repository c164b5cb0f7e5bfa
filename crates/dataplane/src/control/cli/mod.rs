//! The command registry: every command, with text and JSON output, one module per feature
//! (`interface`, `ip`, `neighbor`, `mpls`, `flows`, `sflow`, and `system` for the process, the
//! runtime's counters and the tracer), each registering its own commands.
//!
//! The console, `vecflow ctl`, `demo` and `bench` all go through [`Registry::execute`], so a
//! command registered here is available everywhere at once.
//!
//! Commands that change the dataplane do it one way: a copy of the running configuration is
//! edited and applied whole ([`Dataplane::apply`]): validated, refused if only a restart could
//! make it, otherwise swapped in without disturbing what it does not touch. So a command can
//! never leave the dataplane half-changed, and `show config` always prints what runs.

use crate::config::{AdminState, Config, IpPrefix};
use crate::control::engine::Dataplane;
use serde_json::{Value, json};

mod flows;
mod interface;
mod ip;
mod lcp;
mod memory;
pub use memory::resident;
mod mpls;
mod neighbor;
mod sflow;
mod system;
mod vrf;

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
    /// The registry with every command, each feature's module registering its own.
    pub fn with_builtins() -> Self {
        let mut r = Registry { commands: Vec::new() };
        system::register(&mut r);
        interface::register(&mut r);
        ip::register(&mut r);
        vrf::register(&mut r);
        neighbor::register(&mut r);
        mpls::register(&mut r);
        flows::register(&mut r);
        sflow::register(&mut r);
        lcp::register(&mut r);
        memory::register(&mut r);
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

/// Applies `edit` to a copy of the running configuration, then the copy to the dataplane.
fn change(
    dp: &mut Dataplane,
    what: &str,
    edit: impl FnOnce(&mut Config) -> Result<(), String>,
) -> Result<Reply, String> {
    let mut c = dp.config().clone();
    edit(&mut c)?;
    dp.apply(&c).map_err(|e| format!("{what}: {e}"))?;
    Ok(Reply { text: String::new(), json: json!({"applied": what}) })
}

/// The settings an interface and a sub-interface share, of interface `name` (`parent.id`
/// for a sub-interface).
pub(in crate::control) struct Settings<'a> {
    pub(in crate::control) state: &'a mut AdminState,
    pub(in crate::control) mtu: &'a mut Option<u16>,
    pub(in crate::control) addresses: &'a mut Vec<IpPrefix>,
    mpls: &'a mut bool,
    l2xc: &'a mut Option<String>,
    pub(in crate::control) vrf: &'a mut Option<String>,
}

/// The settings of interface or sub-interface `name` in `c`; an error naming it when there
/// is none.
pub(in crate::control) fn settings<'a>(c: &'a mut Config, name: &str) -> Result<Settings<'a>, String> {
    let unknown = || format!("no interface named '{name}'");
    if c.interfaces.contains_key(name) {
        let i = c.interfaces.get_mut(name).expect("checked");
        return Ok(Settings {
            state: &mut i.state,
            mtu: &mut i.mtu,
            addresses: &mut i.addresses,
            mpls: &mut i.mpls,
            l2xc: &mut i.l2xc,
            vrf: &mut i.vrf,
        });
    }
    let (parent, sub) = name.rsplit_once('.').ok_or_else(unknown)?;
    let sub: u32 = sub.parse().map_err(|_| unknown())?;
    let s = c.interfaces.get_mut(parent).and_then(|p| p.sub_interfaces.get_mut(&sub)).ok_or_else(unknown)?;
    Ok(Settings {
        state: &mut s.state,
        mtu: &mut s.mtu,
        addresses: &mut s.addresses,
        mpls: &mut s.mpls,
        l2xc: &mut s.l2xc,
        vrf: &mut s.vrf,
    })
}

/// `args` as exactly `N` words, or the usage line.
fn words<'a, const N: usize>(args: &[&'a str], usage: &str) -> Result<[&'a str; N], String> {
    <[&str; N]>::try_from(args).map_err(|_| format!("usage: {usage}"))
}

/// The one number of `args`.
fn number<T: std::str::FromStr>(args: &[&str], usage: &str) -> Result<T, String> {
    let [n] = words(args, usage)?;
    n.parse().map_err(|_| format!("usage: {usage} ('{n}' is not a number)"))
}

/// `out-labels L ...` at the end of `args`, and the words before it.
fn out_labels<'a>(args: &'a [&'a str]) -> Result<(&'a [&'a str], Vec<u32>), String> {
    match args.iter().position(|w| *w == "out-labels") {
        Some(k) => {
            let labels = args[k + 1..]
                .iter()
                .map(|l| l.parse::<u32>().map_err(|_| format!("out-labels: '{l}' is not a label")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((&args[..k], labels))
        }
        None => Ok((args, Vec::new())),
    }
}
