//! The rule table: tuple space search over one subtable per distinct mask, from the highest
//! priority down, pruned once no subtable left can beat the match in hand, with prefix
//! tracking on the IPv4 address fields. Each lookup also returns the megaflow mask.
//!
//! Prefix tracking keeps a trie of each subtable's own prefixes per address field (Open
//! vSwitch keeps one per field for the whole table, which cannot rule out a subtable when
//! another one has a prefix of the same length that matches): a subtable none of whose
//! prefixes match is skipped, and the megaflow takes only the leading bits that showed it.

use crate::key::{Field, FlowKey, Mask, prefix_bits};
use crate::rule::Rule;
use crate::trie::PrefixTrie;
use std::collections::HashMap;

/// The fields with prefix tracking.
const TRACKED: [Field; 2] = [Field::NwSrc, Field::NwDst];

/// The rules of one mask.
#[derive(Debug, Clone)]
struct Subtable {
    mask: Mask,
    /// The highest priority of its rules.
    max_priority: u32,
    /// Masked key → its rules as (priority, id), the best first (priority down, id up).
    rules: HashMap<FlowKey, Vec<(u32, u32)>>,
    /// The prefix length of each [`TRACKED`] field's mask, when it is a prefix.
    prefix: [Option<u32>; 2],
    /// The trie of this subtable's prefixes of each [`TRACKED`] field that has one.
    tries: [PrefixTrie; 2],
}

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lookup {
    /// The best matching rule: highest priority, then lowest id.
    pub rule: Option<Rule>,
    /// The bits the search depended on: every key equal to this one under it gets the same
    /// answer.
    pub megaflow: Mask,
    /// Subtables whose hash table was probed.
    pub probed: u32,
}

/// The rule table.
#[derive(Debug, Clone, Default)]
pub struct RuleTable {
    rules: HashMap<u32, Rule>,
    /// By highest priority, descending.
    subtables: Vec<Subtable>,
    generation: u64,
}

/// Orders (priority, id) pairs best first.
fn better(a: (u32, u32), b: (u32, u32)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

impl RuleTable {
    /// An empty table.
    pub fn new() -> Self {
        RuleTable::default()
    }

    /// Bumped by every change: caches built from an older generation are stale.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// True when there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The number of subtables (distinct masks).
    pub fn subtables(&self) -> usize {
        self.subtables.len()
    }

    /// The rules, by id.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        let mut v: Vec<&Rule> = self.rules.values().collect();
        v.sort_by_key(|r| r.id);
        v.into_iter()
    }

    /// Adds `rule`, replacing the rule with its id if there is one.
    pub fn insert(&mut self, rule: Rule) {
        self.remove(rule.id);
        let m = rule.matches;
        let at = match self.subtables.iter().position(|s| s.mask == m.mask) {
            Some(at) => at,
            None => {
                let prefix = TRACKED.map(|f| m.mask.prefix_len(f));
                let tries = Default::default();
                let s = Subtable { mask: m.mask, max_priority: 0, rules: HashMap::new(), prefix, tries };
                self.subtables.push(s);
                self.subtables.len() - 1
            }
        };
        let s = &mut self.subtables[at];
        let list = s.rules.entry(m.key).or_default();
        list.push((rule.priority, rule.id));
        list.sort_by(|a, b| if better(*a, *b) { std::cmp::Ordering::Less } else { std::cmp::Ordering::Greater });
        s.max_priority = s.max_priority.max(rule.priority);
        for (t, f) in TRACKED.iter().enumerate() {
            if let Some(len) = s.prefix[t] {
                s.tries[t].insert(m.key.get(*f) as u32, len);
            }
        }
        self.rules.insert(rule.id, rule);
        self.sort();
    }

    /// Removes the rule with `id`; returns it.
    pub fn remove(&mut self, id: u32) -> Option<Rule> {
        let rule = self.rules.remove(&id)?;
        let m = rule.matches;
        let at = self.subtables.iter().position(|s| s.mask == m.mask).expect("a rule's subtable");
        let s = &mut self.subtables[at];
        let list = s.rules.get_mut(&m.key).expect("a rule's entry");
        list.retain(|&(_, i)| i != id);
        if list.is_empty() {
            s.rules.remove(&m.key);
        }
        for (t, f) in TRACKED.iter().enumerate() {
            if let Some(len) = s.prefix[t] {
                s.tries[t].remove(m.key.get(*f) as u32, len);
            }
        }
        if s.rules.is_empty() {
            self.subtables.remove(at);
        } else {
            s.max_priority = s.rules.values().map(|l| l[0].0).max().unwrap_or(0);
        }
        self.sort();
        Some(rule)
    }

    fn sort(&mut self) {
        self.subtables.sort_by_key(|s| std::cmp::Reverse(s.max_priority));
        self.generation += 1;
    }

    /// The best rule for `key` and the megaflow mask of the search.
    pub fn lookup(&self, key: &FlowKey) -> Lookup {
        let mut best: Option<(u32, u32)> = None;
        let mut megaflow = Mask::EMPTY;
        let mut probed = 0;
        for s in &self.subtables {
            if best.is_some_and(|(p, _)| s.max_priority < p) {
                break; // sorted: none left can beat it
            }
            if let Some((field, bits)) = ruled_out(s, key) {
                // No rule of this subtable can match: the leading bits that showed it are all
                // the megaflow needs of the field.
                megaflow.set(field, megaflow.get(field) | prefix_bits(field, bits));
                continue;
            }
            megaflow = megaflow.union(&s.mask);
            probed += 1;
            if let Some(list) = s.rules.get(&key.masked(&s.mask))
                && best.is_none_or(|b| better(list[0], b))
            {
                best = Some(list[0]);
            }
        }
        Lookup { rule: best.map(|(_, id)| self.rules[&id]), megaflow, probed }
    }
}

/// A tracked field whose trie shows no rule of subtable `s` can match `key`, and how many
/// leading bits of the field showed it.
fn ruled_out(s: &Subtable, key: &FlowKey) -> Option<(Field, u32)> {
    TRACKED.iter().enumerate().find_map(|(t, &f)| {
        let len = s.prefix[t]?;
        Some((f, s.tries[t].rules_out(key.get(f) as u32, len)?))
    })
}
