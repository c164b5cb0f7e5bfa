//! The neighbor table (ARP for IPv4, neighbor discovery for IPv6) as the main thread keeps it.
//!
//! Static entries come from the configuration and always win. Learned entries come from the
//! workers' events ([`crate::neighbor::punt::Event`]), with the states of RFC 4861 §7.3.2 for both
//! families:
//! - an ARP packet addressed to us or a solicited neighbor advertisement confirms a neighbor:
//!   its entry is created or refreshed `reachable`;
//! - a neighbor solicitation with the sender's link-layer address creates the entry `stale`;
//!   one overheard (ARP not for us, an unsolicited advertisement) only updates an entry that
//!   exists; either makes it `stale` when the MAC changed;
//! - a `reachable` entry not confirmed for [`REACHABLE`] goes `stale`. vecflow forwards to
//!   every neighbor it has (it cannot see which ones traffic uses without a cost per packet),
//!   so a stale entry is taken as in use: at the next ageing pass it enters `delay`, and
//!   [`DELAY`] later `probe`: a unicast ARP request or solicitation every [`PROBE_EVERY`];
//!   after [`MAX_PROBES`] unanswered it is removed. Throughout, the MAC is used.
//!
//! When a packet misses, a worker drops it (`no-neighbor`, as VPP does: no packet is held)
//! and sends an ARP request or a multicast solicitation; it reports the resolution, which is
//! `incomplete` here until answered. An incomplete entry still unanswered after
//! [`RESOLVE_TIMEOUT`] is `failed`: packets toward it get an ICMP host (ICMPv6 address)
//! unreachable instead of more requests, until the entry is dropped [`FAILED_HOLD`] later and
//! resolution starts over.
//!
//! Beside the table: [`punt`] (the workers' line to the main thread that carries those events,
//! and the limits on packets a worker makes) and [`config`] (the `neighbors` section).

pub mod config;
pub mod punt;

use crate::neighbor::punt::{Event, Learn, Probe};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::IpAddr;
use std::time::{Duration, Instant};
use wire::MacAddr;

/// How long a confirmed entry is reachable (RFC 4861's REACHABLE_TIME).
pub const REACHABLE: Duration = Duration::from_secs(30);
/// How long a stale entry in use waits for a confirmation before probing
/// (DELAY_FIRST_PROBE_TIME).
pub const DELAY: Duration = Duration::from_secs(5);
/// Gap between two probes of an entry (RETRANS_TIMER).
pub const PROBE_EVERY: Duration = Duration::from_secs(1);
/// Unanswered probes after which an entry is removed (MAX_UNICAST_SOLICIT).
pub const MAX_PROBES: u8 = 3;
/// How long a resolution may stay unanswered before it fails.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(3);
/// How long a failed resolution answers with unreachables before it is tried again.
pub const FAILED_HOLD: Duration = Duration::from_secs(10);
/// Entries besides the static ones, at most: a host flooding ARP or ND, or a scan of a large
/// connected subnet, cannot grow the table (or the snapshots) without bound.
pub const MAX_DYNAMIC: usize = 16384;

/// The state of a neighbor entry (the names `show ip neighbors` prints).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// From the configuration; never ages.
    Static,
    /// Confirmed within [`REACHABLE`].
    Reachable,
    /// Not confirmed lately, or learned unconfirmed: used, to be verified.
    Stale,
    /// Stale and in use: waiting [`DELAY`] for a confirmation before probing.
    Delay,
    /// Being probed with unicast requests.
    Probe,
    /// A request is out, no answer yet.
    Incomplete,
    /// No answer: packets toward it get an unreachable.
    Failed,
}

impl State {
    /// The name `show ip neighbors` prints.
    pub fn name(self) -> &'static str {
        match self {
            State::Static => "static",
            State::Reachable => "reachable",
            State::Stale => "stale",
            State::Delay => "delay",
            State::Probe => "probe",
            State::Incomplete => "incomplete",
            State::Failed => "failed",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    mac: Option<MacAddr>,
    state: State,
    /// When it entered its state (for `reachable`: its last confirmation).
    since: Instant,
    probes: u8,
    last_probe: Instant,
}

impl Entry {
    fn new(mac: Option<MacAddr>, state: State, now: Instant) -> Self {
        Entry { mac, state, since: now, probes: 0, last_probe: now }
    }
}

/// One row of `show ip neighbors` / `show ip6 neighbors`.
#[derive(Debug, Clone, Serialize)]
pub struct NeighborRow {
    /// Interface index.
    pub interface: u16,
    /// IPv4 or IPv6 address.
    pub address: IpAddr,
    /// MAC, if known.
    pub mac: Option<String>,
    /// State.
    pub state: State,
    /// Seconds in its state (since the last confirmation when reachable); 0 for static
    /// entries.
    pub age: f64,
}

/// The main thread's neighbor table, both families.
#[derive(Debug, Default)]
pub struct Neighbors {
    entries: BTreeMap<(u16, IpAddr), Entry>,
    /// Entries that are not static.
    dynamic: usize,
}

impl Neighbors {
    /// A table holding the static entries `(interface, address, mac)`.
    pub fn new(statics: impl IntoIterator<Item = (u16, IpAddr, MacAddr)>, now: Instant) -> Self {
        let entries =
            statics.into_iter().map(|(i, a, mac)| ((i, a), Entry::new(Some(mac), State::Static, now))).collect();
        Neighbors { entries, dynamic: 0 }
    }

    /// Adds a dynamic entry unless the table is full; true when added.
    fn insert(&mut self, key: (u16, IpAddr), e: Entry) -> bool {
        if self.dynamic >= MAX_DYNAMIC {
            return false;
        }
        self.entries.insert(key, e);
        self.dynamic += 1;
        true
    }

    /// Applies a worker's event; true when what workers forward with changed.
    pub fn on_event(&mut self, event: Event, now: Instant) -> bool {
        match event {
            Event::Learned { interface, address, mac, how } => {
                let key = (interface, address);
                match (self.entries.get_mut(&key), how) {
                    (Some(e), _) if e.state == State::Static => false,
                    (Some(e), Learn::Confirmed) => {
                        let changed = e.mac != Some(mac) || e.state == State::Failed;
                        *e = Entry::new(Some(mac), State::Reachable, now);
                        changed
                    }
                    (Some(e), Learn::Claimed | Learn::Overheard) => {
                        let changed = e.mac != Some(mac);
                        if changed {
                            *e = Entry::new(Some(mac), State::Stale, now);
                        }
                        changed
                    }
                    (None, Learn::Confirmed) => self.insert(key, Entry::new(Some(mac), State::Reachable, now)),
                    (None, Learn::Claimed) => self.insert(key, Entry::new(Some(mac), State::Stale, now)),
                    (None, Learn::Overheard) => false,
                }
            }
            Event::Resolving { interface, address } => {
                if !self.entries.contains_key(&(interface, address)) {
                    self.insert((interface, address), Entry::new(None, State::Incomplete, now));
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
                State::Static | State::Incomplete => {}
                State::Reachable if age >= REACHABLE => *e = Entry::new(e.mac, State::Stale, now),
                State::Reachable => {}
                State::Stale => *e = Entry::new(e.mac, State::Delay, now),
                State::Delay if age >= DELAY => {
                    *e = Entry { state: State::Probe, probes: 1, last_probe: now, ..*e };
                    probes.push(Probe { interface, address, mac: e.mac });
                }
                State::Delay => {}
                State::Probe if now.saturating_duration_since(e.last_probe) < PROBE_EVERY => {}
                State::Probe if e.probes >= MAX_PROBES => {
                    changed = true;
                    return false;
                }
                State::Probe => {
                    e.probes += 1;
                    e.last_probe = now;
                    probes.push(Probe { interface, address, mac: e.mac });
                }
                State::Failed if age >= FAILED_HOLD => {
                    changed = true;
                    return false;
                }
                State::Failed => {}
            }
            if e.state == State::Incomplete && age >= RESOLVE_TIMEOUT {
                *e = Entry::new(None, State::Failed, now);
                changed = true;
            }
            true
        });
        self.dynamic -= before - self.entries.len(); // only dynamic entries are ever removed
        (changed, probes)
    }

    /// Replaces the static entries with `statics` (interface, address, MAC); a static entry
    /// takes the place of a learned one for the same address.
    pub fn set_statics(&mut self, statics: impl IntoIterator<Item = (u16, IpAddr, MacAddr)>, now: Instant) {
        self.entries.retain(|_, e| e.state != State::Static);
        for (i, a, mac) in statics {
            if self.entries.insert((i, a), Entry::new(Some(mac), State::Static, now)).is_some() {
                self.dynamic -= 1;
            }
        }
    }

    /// Whether the table has an entry for `address` on `interface` (in any state).
    pub fn knows(&self, interface: u16, address: IpAddr) -> bool {
        self.entries.contains_key(&(interface, address))
    }

    /// The MACs workers forward with: every entry that has one.
    pub fn macs(&self) -> HashMap<(u16, IpAddr), MacAddr> {
        self.entries.iter().filter_map(|(&k, e)| Some((k, e.mac?))).collect()
    }

    /// The next hops whose resolution failed.
    pub fn failed(&self) -> HashSet<(u16, IpAddr)> {
        self.entries.iter().filter(|(_, e)| e.state == State::Failed).map(|(&k, _)| k).collect()
    }

    /// The table for `show ip neighbors` and `show ip6 neighbors`, at `now`.
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
    use std::net::Ipv4Addr;

    const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
    const M: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

    fn learned(how: Learn) -> Event {
        Event::Learned { interface: 1, address: A, mac: M, how }
    }

    fn state(n: &Neighbors, at: Instant) -> State {
        n.rows(at)[0].state
    }

    #[test]
    fn learn_only_when_addressed_to_us_and_statics_win() {
        let t = Instant::now();
        let mut n = Neighbors::new([(2, A, MacAddr([9; 6]))], t);
        assert!(!n.on_event(learned(Learn::Overheard), t), "gratuitous ARP of an unknown host: not learned");
        assert!(n.on_event(learned(Learn::Confirmed), t));
        assert!(!n.on_event(learned(Learn::Overheard), t), "same MAC: no change for workers");
        let other_if = Event::Learned { interface: 2, address: A, mac: M, how: Learn::Confirmed };
        assert!(!n.on_event(other_if, t));
        assert_eq!(n.macs()[&(2, A)], MacAddr([9; 6]), "static entry kept");
        assert_eq!(n.macs()[&(1, A)], M);
    }

    #[test]
    fn a_solicitation_creates_a_stale_entry_and_a_new_mac_makes_it_stale() {
        let t = Instant::now();
        let b: IpAddr = "2001:db8::2".parse().unwrap();
        let mut n = Neighbors::new([], t);
        let claim = |mac| Event::Learned { interface: 1, address: b, mac, how: Learn::Claimed };
        assert!(n.on_event(claim(M), t));
        assert_eq!((state(&n, t), n.macs()[&(1, b)]), (State::Stale, M));
        let confirm = Event::Learned { interface: 1, address: b, mac: M, how: Learn::Confirmed };
        assert!(!n.on_event(confirm, t), "same MAC");
        assert_eq!(state(&n, t), State::Reachable);
        assert!(!n.on_event(claim(M), t), "the same MAC again: still reachable");
        assert_eq!(state(&n, t), State::Reachable);
        assert!(n.on_event(claim(MacAddr([2, 0, 0, 0, 0, 7])), t), "moved");
        assert_eq!(state(&n, t), State::Stale);
    }

    #[test]
    fn entries_go_stale_delay_get_probed_and_are_removed_unanswered() {
        let t = Instant::now();
        let mut n = Neighbors::new([], t);
        n.on_event(learned(Learn::Confirmed), t);
        assert_eq!(n.age(t + REACHABLE / 2), (false, vec![]));
        let mut at = t + REACHABLE;
        assert_eq!(n.age(at), (false, vec![]));
        assert_eq!(state(&n, at), State::Stale);
        assert_eq!(n.age(at), (false, vec![]));
        assert_eq!(state(&n, at), State::Delay, "in use: delay at the next pass");
        assert_eq!(n.age(at + DELAY / 2), (false, vec![]));
        at += DELAY;
        let (changed, probes) = n.age(at);
        assert!(!changed);
        assert_eq!(probes, vec![Probe { interface: 1, address: A, mac: Some(M) }]);
        assert_eq!(state(&n, at), State::Probe);
        assert!(n.age(at + PROBE_EVERY / 2).1.is_empty(), "one probe per PROBE_EVERY");
        for _ in 1..MAX_PROBES {
            at += PROBE_EVERY;
            assert_eq!(n.age(at).1.len(), 1);
        }
        assert!(n.macs().contains_key(&(1, A)), "used while probed");
        at += PROBE_EVERY;
        assert_eq!(n.age(at), (true, vec![]), "removed after the last probe went unanswered");
        assert!(n.macs().is_empty());
    }

    #[test]
    fn a_probe_answer_makes_it_reachable_again() {
        let t = Instant::now();
        let mut n = Neighbors::new([], t);
        n.on_event(learned(Learn::Confirmed), t);
        n.age(t + REACHABLE);
        n.age(t + REACHABLE);
        n.age(t + REACHABLE + DELAY);
        let at = t + REACHABLE + DELAY;
        n.on_event(learned(Learn::Confirmed), at);
        assert_eq!(state(&n, at), State::Reachable);
        assert!(n.age(at + PROBE_EVERY * 4).1.is_empty());
    }

    #[test]
    fn the_table_of_dynamic_entries_is_bounded() {
        let t = Instant::now();
        let mut n = Neighbors::new([], t);
        for k in 0..MAX_DYNAMIC as u32 + 10 {
            n.on_event(Event::Resolving { interface: 1, address: IpAddr::V4(Ipv4Addr::from(k)) }, t);
        }
        assert!(!n.on_event(learned(Learn::Confirmed), t), "full: not learned");
        assert_eq!(n.rows(t).len(), MAX_DYNAMIC);
        n.age(t + RESOLVE_TIMEOUT + FAILED_HOLD); // failed
        n.age(t + RESOLVE_TIMEOUT + FAILED_HOLD * 3); // and expired
        assert!(n.rows(t).is_empty());
        assert!(n.on_event(learned(Learn::Confirmed), t), "room again");
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
        assert!(n.on_event(learned(Learn::Overheard), t + RESOLVE_TIMEOUT));
        assert!(n.failed().is_empty());
    }
}
