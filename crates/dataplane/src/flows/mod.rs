//! Operators' flow rules (ACLs, policy forwarding) in `ovs-ofctl` syntax:
//! `priority=100,udp,nw_src=2.0.0.0/9,actions=output:port1`.
//!
//! The match is the classifier's ([`classifier::RuleMatch::parse`]); `in_port` may name an
//! interface. The action is one of `output:<interface>` (sent out of it unchanged, like a
//! cross-connect), `drop` (dropped as `acl`) or `normal` (on to what the interface does without
//! rules). Priority 0 to 65535, default 32768 as in Open vSwitch. A rule's id is its place in
//! the configuration's `flows` list.
//!
//! Beside the rules: [`classify`] (the `flow-classify` node), the workers' megaflow cache
//! counters, and [`config`] (the `flow-cache` section and the rules' checks).

pub mod classify;
pub mod config;
pub mod drops;
pub mod nodes;

use crate::ethernet::EthernetWorker;
use crate::flows::config::FlowCacheConfig;
use crate::interface::{Interface, InterfaceTables, InterfaceWorker};
use crate::runtime::counter::Counter;
use crate::runtime::graph::Features;
use crate::runtime::stats::counter_set;
use classifier::{Rule, RuleMatch, RuleTable};

/// The part of the workers' snapshot `flow-classify` reads beside the interfaces.
pub trait FlowTables: InterfaceTables {
    /// The flow rules.
    fn flows(&self) -> &Flows;
}

/// The counters `flow-classify` keeps.
pub trait FlowCounting {
    /// What the worker's megaflow cache did.
    fn flow_cache(&self) -> &FlowCacheCounters;

    /// Packets rule `rule` matched (ids beyond [`MAX_FLOWS`] wrap).
    fn flow_hits(&self, rule: u32) -> &Counter;
}

/// A worker's state as `flow-classify` sees it.
pub trait FlowsWorker:
    EthernetWorker + InterfaceWorker<Snapshot: FlowTables> + Features<Counters: FlowCounting>
{
    /// The worker's megaflow cache.
    fn flow_cache(&mut self) -> &mut classify::WorkerCache;
}

counter_set! {
    /// One worker's megaflow cache counters (`show flow-cache`).
    FlowCacheCounters,
    /// Summed over workers.
    FlowCacheStats {
        /// Packets classified.
        lookups,
        /// Answered by the exact-match cache.
        emc_hits,
        /// Answered by the subtable the Cuckoo Distributor predicted.
        cd_hits,
        /// Answered by the ranked megaflow search.
        dpcls_hits,
        /// Answered by the rule table (a megaflow installed).
        upcalls,
        /// Subtables probed for the CD and megaflow hits.
        subtables_probed,
    }
}

/// What a matching rule does with a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowAction {
    /// Send it out of this interface unchanged.
    Output(u16),
    /// Drop it (`acl`).
    Drop,
    /// Carry on as without rules.
    Normal,
}

/// The most flow rules a configuration may have.
pub const MAX_FLOWS: usize = 4096;

/// The default priority (Open vSwitch's).
const DEFAULT_PRIORITY: u32 = 32768;

/// The flow rules workers classify with: the table and the action of each rule (by id).
#[derive(Debug, Clone, Default)]
pub struct Flows {
    /// The rule table.
    pub table: RuleTable,
    /// The action of rule `id` at index `id`.
    pub actions: Vec<FlowAction>,
    /// The interfaces rules may apply to: an interface named by a rule's `in_port`, or every
    /// one when a rule has none.
    pub inputs: Inputs,
    /// The layers and sizes of each worker's megaflow cache.
    pub cache: classifier::CacheConfig,
}

/// Which interfaces run `flow-classify`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Inputs {
    /// None (no rules).
    #[default]
    None,
    /// These interface indices.
    Some(Vec<u16>),
    /// Every interface.
    All,
}

impl Inputs {
    /// True when interface `index` runs `flow-classify`.
    pub fn has(&self, index: u16) -> bool {
        match self {
            Inputs::None => false,
            Inputs::Some(v) => v.contains(&index),
            Inputs::All => true,
        }
    }
}

/// Parses flow rule `text` as rule `id`; `index_of` gives the index of an interface name.
pub fn parse(text: &str, id: u32, index_of: impl Fn(&str) -> Option<u16>) -> Result<(Rule, FlowAction), String> {
    let (matches, action) = match text.rsplit_once("actions=") {
        Some((m, a)) => (m.trim_end().trim_end_matches(',').trim_end(), a.trim()),
        None => return Err(format!("'{text}': no actions= (output:IF, drop or normal)")),
    };
    let by_name = index_of;
    let mut priority = DEFAULT_PRIORITY;
    let mut rest = Vec::new();
    for token in matches.split([',', ' ']).map(str::trim).filter(|t| !t.is_empty()) {
        match token.split_once('=') {
            Some(("priority", p)) => {
                priority =
                    p.parse().ok().filter(|&p| p <= 65535).ok_or(format!("'{token}': priority is 0 to 65535"))?;
            }
            Some(("in_port", name)) if name.parse::<u16>().is_err() => {
                let index = by_name(name).ok_or(format!("'{token}': no interface named '{name}'"))?;
                rest.push(format!("in_port={index}"));
            }
            _ => rest.push(token.to_string()),
        }
    }
    let m = RuleMatch::parse(&rest.join(",")).map_err(|e| e.to_string())?;
    let action = match action.split_once(':') {
        None if action == "drop" => FlowAction::Drop,
        None if action == "normal" => FlowAction::Normal,
        Some(("output", name)) => {
            FlowAction::Output(by_name(name).ok_or(format!("'actions={action}': no interface named '{name}'"))?)
        }
        _ => return Err(format!("'actions={action}': the action is output:IF, drop or normal")),
    };
    Ok((Rule { id, priority, matches: m, action: id }, action))
}

/// Builds the rule table of `texts` (validated: each parses), each worker's cache as `cache`
/// says.
pub fn build(texts: &[String], cache: &FlowCacheConfig, interfaces: &[Interface]) -> Flows {
    let mut flows = Flows {
        cache: classifier::CacheConfig {
            emc: cache.emc,
            cd: cache.cd,
            cd_entries: cache.cd_entries as usize,
            max_megaflows: cache.max_megaflows as usize,
        },
        ..Flows::default()
    };
    let mut inputs = Vec::new();
    let mut all = false;
    for (id, text) in texts.iter().enumerate() {
        let index_of = |name: &str| interfaces.iter().find(|i| i.name == name).map(|i| i.index);
        let (rule, action) = parse(text, id as u32, index_of).expect("validated flow rules");
        match rule.matches.mask.get(classifier::Field::InPort) {
            0 => all = true,
            _ => inputs.push(rule.matches.key.get(classifier::Field::InPort) as u16),
        }
        flows.table.insert(rule);
        flows.actions.push(action);
    }
    flows.inputs = match (all, inputs.is_empty()) {
        (true, _) => Inputs::All,
        (false, true) => Inputs::None,
        (false, false) => Inputs::Some(inputs),
    };
    flows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ifs(name: &str) -> Option<u16> {
        ["port0", "port1"].iter().position(|n| *n == name).map(|k| k as u16 + 1)
    }

    #[test]
    fn rules_with_names_priorities_and_actions() {
        let (r, a) = parse("priority=100,udp,nw_src=2.0.0.0/9,actions=output:port1", 7, ifs).unwrap();
        assert_eq!((r.id, r.priority, r.action, a), (7, 100, 7, FlowAction::Output(2)));
        let (r, a) = parse("in_port=port0 tcp tp_dst=22 actions=drop", 0, ifs).unwrap();
        assert_eq!((r.priority, r.matches.key.get(classifier::Field::InPort), a), (32768, 1, FlowAction::Drop));
        assert_eq!(parse("ip,actions=normal", 0, ifs).unwrap().1, FlowAction::Normal);
    }

    #[test]
    fn errors_name_the_bad_token() {
        let e = |t: &str| parse(t, 0, ifs).unwrap_err();
        assert_eq!(e("udp,actions=output:port9"), "'actions=output:port9': no interface named 'port9'");
        assert_eq!(e("udp,actions=flood"), "'actions=flood': the action is output:IF, drop or normal");
        assert_eq!(e("priority=70000,udp,actions=drop"), "'priority=70000': priority is 0 to 65535");
        assert_eq!(e("in_port=eth9,actions=drop"), "'in_port=eth9': no interface named 'eth9'");
        assert_eq!(e("udp,nw_src=1.2.3,actions=drop"), "'nw_src=1.2.3': '1.2.3' is not an IPv4 address");
        assert_eq!(e("udp"), "'udp': no actions= (output:IF, drop or normal)");
    }
}
