//! The IPv4 neighbor (ARP) table as the main thread keeps it.
//!
//! Static entries come from the configuration and always win. Learned entries come from the
//! workers' ARP events ([`crate::punt::Event`]): an ARP packet addressed to us creates or
//! refreshes one; any other ARP packet only updates an entry that exists (RFC 826). A learned
//! entry is `reachable` for [`REACHABLE`] after its last confirmation, then `stale`: it is
//! still used, and probed (a unicast ARP request) every [`PROBE_EVERY`]; after
//! [`MAX_PROBES`] probes without an answer it is removed.
//!
//! When a packet misses, a worker drops it (`no-neighbor`, as VPP does: no packet is held)
//! and sends an ARP request; it reports the resolution, which is `incomplete` here until
//! answered. An incomplete entry still unanswered after [`RESOLVE_TIMEOUT`] is `failed`:
//! packets toward it get ICMP host unreachable instead of more ARP requests, until the entry
//! is dropped [`FAILED_HOLD`] later and resolution starts over.

use crate::punt::{Event, Probe};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};
use wire::MacAddr;

/// How long a confirmed entry is reachable.
pub const REACHABLE: Duration = Duration::from_secs(30);
/// Gap between refresh probes of a stale entry.
pub const PROBE_EVERY: Duration = Duration::from_secs(5);
/// Unanswered probes after which a stale entry is removed.
pub const MAX_PROBES: u8 = 3;
/// How long a resolution may stay unanswered before it fails.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a failed resolution answers with host unreachable before it is tried again.
pub const FAILED_HOLD: Duration = Duration::from_secs(10);
/// Entries besides the static ones, at most: a host flooding ARP or a scan of a large
/// connected subnet cannot grow the table (or the snapshots) without bound.
pub const MAX_DYNAMIC: usize = 16384;

/// The state of a neighbor entry (the names `show ip neighbors` prints).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// From the configuration; never ages.
    Static,
    /// Confirmed within [`REACHABLE`].
    Reachable,
    /// Not confirmed lately: used, and being probed.
    Stale,
    /// An ARP request is out, no answer yet.
    Incomplete,
    /// No answer: packets toward it get ICMP host unreachable.
    Failed,
}

impl State {
    /// The name `show ip neighbors` prints.
    pub fn name(self) -> &'static str {
        match self {
            State::Static => "static",
            State::Reachable => "reachable",
            State::Stale => "stale",
            State::Incomplete => "incomplete",
            State::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    mac: Option<MacAddr>,
    state: State,
    /// Last confirmation (learned entries), or when resolution started or failed.
    since: Instant,
    probes: u8,
    last_probe: Instant,
}

/// One row of `show ip neighbors`.
#[derive(Debug, Clone, Serialize)]
pub struct NeighborRow {
    /// Interface index.
    pub interface: u16,
    /// IPv4 address.
    pub address: Ipv4Addr,
    /// MAC, if known.
    pub mac: Option<String>,
    /// State.
    pub state: State,
    /// Seconds since it was last confirmed (or resolution started); 0 for static entries.
    pub age: f64,
}

/// The main thread's neighbor table.
#[derive(Debug, Default)]
pub struct Neighbors {
    entries: BTreeMap<(u16, Ipv4Addr), Entry>,
    /// Entries that are not static.
    dynamic: usize,
}

impl Neighbors {
    /// A table holding the static entries `(interface, address, mac)`.
    pub fn new(statics: impl IntoIterator<Item = (u16, Ipv4Addr, MacAddr)>, now: Instant) -> Self {
        let entries = statics
            .into_iter()
            .map(|(i, a, mac)| {
                ((i, a), Entry { mac: Some(mac), state: State::Static, since: now, probes: 0, last_probe: now })
            })
            .collect();
        Neighbors { entries, dynamic: 0 }
    }

    /// Applies a worker's event; true when what workers forward with changed.
    pub fn on_event(&mut self, event: Event, now: Instant) -> bool {
        match event {
            Event::Learned { interface, address, mac, solicited } => {
                let key = (interface, address);
                match self.entries.get_mut(&key) {
                    Some(e) if e.state == State::Static => false,
                    Some(e) => {
                        let changed = e.mac != Some(mac) || e.state == State::Failed;
                        *e = Entry { mac: Some(mac), state: State::Reachable, since: now, probes: 0, last_probe: now };
                        changed
                    }
                    None if solicited && self.dynamic < MAX_DYNAMIC => {
                        let e =
                            Entry { mac: Some(mac), state: State::Reachable, since: now, probes: 0, last_probe: now };
                        self.entries.insert(key, e);
                        self.dynamic += 1;
                        true
                    }
                    None => false,
                }
            }
            Event::Resolving { interface, address } => {
                if self.dynamic < MAX_DYNAMIC && !self.entries.contains_key(&(interface, address)) {
                    let e = Entry { mac: None, state: State::Incomplete, since: now, probes: 0, last_probe: now };
                    self.entries.insert((interface, address), e);
                    self.dynamic += 1;
                }
                false
            }
        }
    }

    /// Ages the table at `now`: reachable entries go stale, stale ones are probed and at
    /// last removed, resolutions fail and failures expire. Returns whether what workers
    /// forward with changed, and the probes to send.
    pub fn age(&mut self, now: Instant) -> (bool, Vec<Probe>) {
        let mut changed = false;
        let mut probes = Vec::new();
        let before = self.entries.len();
        self.entries.retain(|&(interface, address), e| {
            let age = now.saturating_duration_since(e.since);
            match e.state {
                State::Static => true,
                State::Reachable | State::Stale if age < REACHABLE => true,
                State::Reachable | State::Stale => {
                    e.state = State::Stale;
                    if e.probes >= MAX_PROBES && now.saturating_duration_since(e.last_probe) >= PROBE_EVERY {
                        changed = true;
                        return false;
                    }
                    if e.probes == 0 || now.saturating_duration_since(e.last_probe) >= PROBE_EVERY {
                        e.probes += 1;
                        e.last_probe = now;
                        probes.push(Probe { interface, address, mac: e.mac });
                    }
                    true
                }
                State::Incomplete if age >= RESOLVE_TIMEOUT => {
                    *e = Entry { state: State::Failed, since: now, ..*e };
                    changed = true;
                    true
                }
                State::Incomplete => true,
                State::Failed if age >= FAILED_HOLD => {
                    changed = true;
                    false
                }
                State::Failed => true,
            }
        });
        self.dynamic -= before - self.entries.len(); // only dynamic entries are ever removed
        (changed, probes)
    }

    /// Replaces the static entries with `statics` (interface, address, MAC); a static entry
    /// takes the place of a learned one for the same address.
    pub fn set_statics(&mut self, statics: impl IntoIterator<Item = (u16, Ipv4Addr, MacAddr)>, now: Instant) {
        self.entries.retain(|_, e| e.state != State::Static);
        for (i, a, mac) in statics {
            let static_entry = Entry { mac: Some(mac), state: State::Static, since: now, probes: 0, last_probe: now };
            if self.entries.insert((i, a), static_entry).is_some() {
                self.dynamic -= 1;
            }
        }
    }

    /// The MACs workers forward with: every entry that has one.
    pub fn macs(&self) -> HashMap<(u16, Ipv4Addr), MacAddr> {
        self.entries.iter().filter_map(|(&k, e)| Some((k, e.mac?))).collect()
    }

    /// The next hops whose resolution failed.
    pub fn failed(&self) -> HashSet<(u16, Ipv4Addr)> {
        self.entries.iter().filter(|(_, e)| e.state == State::Failed).map(|(&k, _)| k).collect()
    }

    /// The table for `show ip neighbors`, at `now`.
    pub fn rows(&self, now: Instant) -> Vec<NeighborRow> {
        self.entries
            .iter()
            .map(|(&(interface, address), e)| NeighborRow {
                interface,
                address,
                mac: e.mac.map(|m| m.to_string()),
                state: e.state,
                age: if e.state == State::Static { 0.0 } else { now.saturating_duration_since(e.since).as_secs_f64() },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
    const M: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

    fn learned(solicited: bool) -> Event {
        Event::Learned { interface: 1, address: A, mac: M, solicited }
    }

    #[test]
    fn learn_only_when_addressed_to_us_and_statics_win() {
        let t = Instant::now();
        let mut n = Neighbors::new([(2, A, MacAddr([9; 6]))], t);
        assert!(!n.on_event(learned(false), t), "gratuitous ARP of an unknown host: not learned");
        assert!(n.on_event(learned(true), t));
        assert!(!n.on_event(learned(false), t), "same MAC: refreshed, no change for workers");
        assert!(!n.on_event(Event::Learned { interface: 2, address: A, mac: M, solicited: true }, t));
        assert_eq!(n.macs()[&(2, A)], MacAddr([9; 6]), "static entry kept");
        assert_eq!(n.macs()[&(1, A)], M);
    }

    #[test]
    fn entries_go_stale_get_probed_and_are_removed_unanswered() {
        let t = Instant::now();
        let mut n = Neighbors::new([], t);
        n.on_event(learned(true), t);
        assert_eq!(n.age(t + REACHABLE / 2), (false, vec![]));
        let (changed, probes) = n.age(t + REACHABLE);
        assert!(!changed);
        assert_eq!(probes, vec![Probe { interface: 1, address: A, mac: Some(M) }]);
        assert_eq!(n.rows(t + REACHABLE)[0].state, State::Stale);
        let mut at = t + REACHABLE;
        for _ in 1..MAX_PROBES {
            at += PROBE_EVERY;
            assert_eq!(n.age(at).1.len(), 1);
        }
        at += PROBE_EVERY;
        assert_eq!(n.age(at), (true, vec![]), "removed after the last probe went unanswered");
        assert!(n.macs().is_empty());
    }

    #[test]
    fn a_probe_answer_makes_it_reachable_again() {
        let t = Instant::now();
        let mut n = Neighbors::new([], t);
        n.on_event(learned(true), t);
        n.age(t + REACHABLE);
        n.on_event(learned(true), t + REACHABLE);
        assert_eq!(n.rows(t + REACHABLE)[0].state, State::Reachable);
        assert!(n.age(t + REACHABLE + PROBE_EVERY * 4).1.is_empty());
    }

    #[test]
    fn the_table_of_dynamic_entries_is_bounded() {
        let t = Instant::now();
        let mut n = Neighbors::new([], t);
        for k in 0..MAX_DYNAMIC as u32 + 10 {
            n.on_event(Event::Resolving { interface: 1, address: Ipv4Addr::from(k) }, t);
        }
        assert!(!n.on_event(learned(true), t), "full: not learned");
        assert_eq!(n.rows(t).len(), MAX_DYNAMIC);
        n.age(t + RESOLVE_TIMEOUT + FAILED_HOLD); // failed
        n.age(t + RESOLVE_TIMEOUT + FAILED_HOLD * 3); // and expired
        assert!(n.rows(t).is_empty());
        assert!(n.on_event(learned(true), t), "room again");
    }

    #[test]
    fn unanswered_resolutions_fail_then_expire() {
        let t = Instant::now();
        let mut n = Neighbors::new([], t);
        n.on_event(Event::Resolving { interface: 1, address: A }, t);
        assert_eq!(n.age(t + RESOLVE_TIMEOUT / 2), (false, vec![]));
        assert_eq!(n.age(t + RESOLVE_TIMEOUT), (true, vec![]));
        assert!(n.failed().contains(&(1, A)));
        assert_eq!(n.age(t + RESOLVE_TIMEOUT + FAILED_HOLD), (true, vec![]));
        assert!(n.failed().is_empty() && n.rows(t).is_empty());
        // An answer while failed clears it at once.
        n.on_event(Event::Resolving { interface: 1, address: A }, t);
        n.age(t + RESOLVE_TIMEOUT);
        assert!(n.on_event(learned(false), t + RESOLVE_TIMEOUT));
        assert!(n.failed().is_empty());
    }
}
