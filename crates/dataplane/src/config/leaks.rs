//! Route leaking checks: a route whose `next-vrf` looks its packets up again in another VRF
//! names a VRF that exists, and no packet may meet a second such route after the first (so a
//! packet takes one extra lookup at most, and no set of routes sends one round in a circle:
//! A → B → A, A → B → C → A).

use super::Config;
use crate::net::{ConfigError, IpPrefix, invalid};
use std::collections::BTreeMap;

/// A route of one VRF as the leak check sees it: its prefix (masked) and, for a leak, the VRF
/// its packets go on to ("" for the default table).
struct Entry<'a> {
    prefix: IpPrefix,
    next: Option<&'a str>,
    /// Its index in `routes`, for a leak.
    at: usize,
}

/// True when `outer` contains every address of `inner`.
fn covers(outer: &IpPrefix, inner: &IpPrefix) -> bool {
    outer.len <= inner.len && outer.contains(inner.addr)
}

/// The longer of two prefixes when one holds the other: the addresses both have.
fn both(a: &IpPrefix, b: &IpPrefix) -> Option<IpPrefix> {
    if covers(a, b) {
        Some(*b)
    } else if covers(b, a) {
        Some(*a)
    } else {
        None
    }
}

impl Config {
    /// Route `k` (`r`), a lookup in VRF `next`: no next hop, labels or its own VRF beside it.
    pub(super) fn check_next_vrf(&self, k: usize, r: &crate::config::Route, next: &str) -> Result<(), ConfigError> {
        let field = format!("routes[{k}].next-vrf");
        if r.via.is_some() || !r.paths.is_empty() || !r.out_labels.is_empty() {
            return Err(invalid(field, next, "a lookup alone: no via, paths or out-labels beside it"));
        }
        if next != "default" && !self.vrfs.contains_key(next) {
            let names: String = self.vrfs.keys().map(|n| format!(", {n}")).collect();
            return Err(invalid(field, next, format!("the name of a VRF (default{names})")));
        }
        if r.vrf.as_deref().unwrap_or("default") == next {
            return Err(invalid(field, next, "another VRF than the route's own"));
        }
        Ok(())
    }

    /// Every VRF's routes (its interfaces' subnets and addresses, and its configured routes),
    /// by name ("" for the default table).
    fn routes_by_vrf(&self) -> BTreeMap<&str, Vec<Entry<'_>>> {
        let mut by: BTreeMap<&str, Vec<Entry<'_>>> = BTreeMap::new();
        for (owner, a) in self.addresses().filter(|(_, a)| !crate::net::is_link_local(a.addr)) {
            let host = IpPrefix { addr: a.addr, len: if a.addr.is_ipv4() { 32 } else { 128 } };
            let subnet = IpPrefix { addr: a.masked(), len: a.len };
            let list = by.entry(owner.vrf.unwrap_or("")).or_default();
            list.extend([subnet, host].map(|prefix| Entry { prefix, next: None, at: 0 }));
        }
        for (at, r) in self.routes.iter().enumerate() {
            let prefix = IpPrefix { addr: r.prefix.masked(), len: r.prefix.len };
            let next = r.next_vrf.as_deref().map(|n| if n == "default" { "" } else { n });
            by.entry(r.vrf.as_deref().unwrap_or("")).or_default().push(Entry { prefix, next, at });
        }
        by
    }

    /// No packet meets a second lookup route after a first: for each leak (a route of VRF A
    /// to prefix P looking up in B), no leak of B (to Q) shares addresses with P that take
    /// both routes: unless a route of A longer than P, or one of B longer than Q, covers
    /// all of them. (Conservative: two longer routes that cover them only together do not
    /// count.) The error names the VRFs and both routes.
    pub(super) fn validate_leaks(&self) -> Result<(), ConfigError> {
        let by = self.routes_by_vrf();
        let name = |v: &str| if v.is_empty() { "default".to_string() } else { v.to_string() };
        for (from, routes) in &by {
            for first in routes.iter().filter(|e| e.next.is_some()) {
                let to = first.next.unwrap_or_default();
                let Some(there) = by.get(to) else { continue };
                for second in there.iter().filter(|e| e.next.is_some()) {
                    let Some(shared) = both(&first.prefix, &second.prefix) else { continue };
                    // A longer route of A (B) covering them all takes those addresses first.
                    let longer = |list: &[Entry<'_>], than: u8| {
                        list.iter().any(|t| t.prefix.len > than && covers(&t.prefix, &shared))
                    };
                    if !longer(routes, first.prefix.len) && !longer(there, second.prefix.len) {
                        let end = name(second.next.unwrap_or_default());
                        return Err(invalid(
                            format!("routes[{}].next-vrf", first.at),
                            name(to),
                            format!(
                                "a VRF where the route's packets meet no other next-vrf route: {shared} would go {} → {} \
                                 → {end} (routes[{}] there); a packet takes one lookup after its first at most",
                                name(from),
                                name(to),
                                second.at
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}
