//! The layer 3 checks that span sections: the FIB's size, every interface address against
//! the others, each route's next hops against the interfaces and their subnets, and the
//! neighbor and MPLS sections against the interfaces.

use super::Config;
use crate::l3::config::{MAX_PATHS, Route, RoutePath};
use crate::net::{ConfigError, IpPrefix, check_labels, invalid, is_link_local};
use std::collections::BTreeMap;
use std::net::IpAddr;

impl Config {
    /// The FIB, the addresses, the routes, the static neighbors and the local labels.
    pub(super) fn validate_l3(&self) -> Result<(), ConfigError> {
        if !(1..=1 << 20).contains(&self.fib.tbl8_groups) {
            return Err(invalid("fib.tbl8-groups", self.fib.tbl8_groups, "1 to 1048576"));
        }
        self.validate_addresses()?;
        let mut prefixes = BTreeMap::new();
        for (k, r) in self.routes.iter().enumerate() {
            if let Some(first) = prefixes.insert((r.prefix.network(), r.prefix.len), k) {
                return Err(invalid(
                    format!("routes[{k}].prefix"),
                    r.prefix,
                    format!("a prefix no other route has (routes[{first}] has it)"),
                ));
            }
            self.validate_route(k, r)?;
        }
        let known = |n: &str| self.has_interface(n);
        crate::neighbor::config::validate_neighbors(&self.neighbors, known)?;
        self.mpls.validate(known)
    }

    /// Every address: a unicast one, and (but for link-local ones) on one interface only.
    fn validate_addresses(&self) -> Result<(), ConfigError> {
        let mut addresses = BTreeMap::new();
        for (owner, a) in self.addresses() {
            if let IpAddr::V6(v6) = a.addr
                && (v6.is_unspecified() || v6.is_loopback() || v6.is_multicast())
            {
                return Err(invalid(
                    format!("interfaces.{owner}.addresses"),
                    a,
                    "a unicast IPv6 address (not ::, ::1 or multicast ff00::/8)",
                ));
            }
            // A link-local address names an interface only on its link: fe80::1 may be on
            // every link (as routers often have it).
            if !is_link_local(a.addr)
                && let Some(other) = addresses.insert(a.addr, owner)
            {
                return Err(invalid(
                    format!("interfaces.{owner}.addresses"),
                    a,
                    format!("an address configured once ({other} already has {})", a.addr),
                ));
            }
        }
        Ok(())
    }

    /// Route `k`: `via` or 1 to [`MAX_PATHS`] paths, each next hop once, with a weight, and
    /// reachable (see [`Config::check_next_hop`]); its labels.
    fn validate_route(&self, k: usize, r: &Route) -> Result<(), ConfigError> {
        let paths = match (r.via, r.paths.len()) {
            (Some(_), 0) => vec![(format!("routes[{k}]"), r.next_hops().remove(0))],
            (None, 1..=MAX_PATHS) => {
                r.paths.iter().enumerate().map(|(p, path)| (format!("routes[{k}].paths[{p}]"), path.clone())).collect()
            }
            (Some(_), _) => return Err(invalid(format!("routes[{k}].paths"), "(given)", "nothing when via is given")),
            (None, 0) => return Err(invalid(format!("routes[{k}].via"), "(missing)", "a next hop, or paths")),
            (None, n) => {
                return Err(invalid(format!("routes[{k}].paths"), format!("{n} paths"), format!("1 to {MAX_PATHS}")));
            }
        };
        let mut seen = BTreeMap::new();
        for (at, p) in &paths {
            if let Some(first) = seen.insert((p.via, p.interface.clone()), at) {
                return Err(invalid(
                    format!("{at}.via"),
                    p.via,
                    format!("a next hop no other path has ({first} has it)"),
                ));
            }
            if p.weight == 0 {
                return Err(invalid(format!("{at}.weight"), 0, "1 to 255"));
            }
            self.check_next_hop(at, r.prefix, p)?;
        }
        check_labels(&format!("routes[{k}].out-labels"), &r.out_labels)
    }

    /// Checks one next hop of a route to `prefix` (`at` names it: `routes[K]` or
    /// `routes[K].paths[P]`): of the prefix's family, on a named interface or inside a
    /// connected subnet.
    pub(crate) fn check_next_hop(&self, at: &str, prefix: IpPrefix, p: &RoutePath) -> Result<(), ConfigError> {
        if p.via.is_ipv4() != prefix.addr.is_ipv4() {
            let family = if prefix.addr.is_ipv4() { "IPv4" } else { "IPv6" };
            return Err(invalid(format!("{at}.via"), p.via, format!("an {family} next hop, as the prefix is")));
        }
        match &p.interface {
            Some(n) if !self.has_interface(n) => {
                Err(invalid(format!("{at}.interface"), n, "the name of a configured interface"))
            }
            Some(_) => Ok(()),
            None if is_link_local(p.via) => Err(invalid(
                format!("{at}.interface"),
                "(missing)",
                format!("the interface a link-local next hop ({}) is on", p.via),
            )),
            None if !self.addresses().any(|(_, a)| a.contains(p.via)) => Err(invalid(
                format!("{at}.via"),
                p.via,
                format!("an address inside a configured interface's subnet, or name the interface in {at}.interface"),
            )),
            None => Ok(()),
        }
    }
}
