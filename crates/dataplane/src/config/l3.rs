//! The layer 3 checks that span sections: the FIB's size, every interface address against
//! the others, each route's next hops against the interfaces and their subnets, and the
//! neighbor and MPLS sections against the interfaces.

use super::Config;
use crate::l3::config::{MAX_PATHS, MAX_VRFS, RESERVED_TABLES, Route, RoutePath};
use crate::net::{ConfigError, IpPrefix, check_labels, invalid, is_link_local};
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

impl Config {
    /// The FIB, the addresses, the routes, the static neighbors and the local labels.
    pub(super) fn validate_l3(&self) -> Result<(), ConfigError> {
        if !(1..=1 << 20).contains(&self.fib.tbl8_groups) {
            return Err(invalid("fib.tbl8-groups", self.fib.tbl8_groups, "1 to 1048576"));
        }
        if !(1..=1 << 20).contains(&self.fib.vrf_tbl8_groups) {
            return Err(invalid("fib.vrf-tbl8-groups", self.fib.vrf_tbl8_groups, "1 to 1048576"));
        }
        self.validate_vrfs()?;
        self.validate_addresses()?;
        let mut prefixes = HashMap::with_capacity(self.routes.len());
        for (k, r) in self.routes.iter().enumerate() {
            if r.vrf.is_some() {
                self.check_vrf(&format!("routes[{k}].vrf"), r.vrf.as_deref())?;
            }
            if let Some(first) = prefixes.insert((r.vrf.as_deref(), r.prefix.network(), r.prefix.len), k) {
                return Err(invalid(
                    format!("routes[{k}].prefix"),
                    r.prefix,
                    format!("a prefix no other route {} has (routes[{first}] has it)", vrf_phrase(r.vrf.as_deref())),
                ));
            }
            self.validate_route(k, r)?;
        }
        self.validate_leaks()?;
        let known = |n: &str| self.has_interface(n);
        crate::neighbor::config::validate_neighbors(&self.neighbors, known)?;
        self.mpls.validate(known)?;
        for (k, l) in self.mpls.local_labels.iter().enumerate() {
            self.check_vrf(&format!("mpls.local-labels[{k}].vrf"), l.vrf.as_deref())?;
        }
        Ok(())
    }

    /// The `vrfs` section: at most [`MAX_VRFS`], each name and table id valid, no table id
    /// twice; and the VRF of every interface and sub-interface one of them.
    fn validate_vrfs(&self) -> Result<(), ConfigError> {
        if self.vrfs.len() > MAX_VRFS {
            return Err(invalid("vrfs", format!("{} VRFs", self.vrfs.len()), format!("at most {MAX_VRFS}")));
        }
        let mut tables = BTreeMap::new();
        for (name, v) in &self.vrfs {
            let good = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
            if name.is_empty() || name.len() > 15 || !name.chars().all(good) || name == "default" {
                return Err(invalid(
                    format!("vrfs.{name}"),
                    format!("name {name:?}"),
                    "1 to 15 letters, digits, '-' or '_', not 'default' (the default table's name)",
                ));
            }
            if v.table == 0 || RESERVED_TABLES.contains(&v.table) {
                return Err(invalid(
                    format!("vrfs.{name}.table"),
                    v.table,
                    "1 to 4294967295 but 253, 254 and 255 (the kernel's default, main and local tables)",
                ));
            }
            if let Some(other) = tables.insert(v.table, name) {
                return Err(invalid(
                    format!("vrfs.{name}.table"),
                    v.table,
                    format!("a table no other VRF has (VRF {other} has it)"),
                ));
            }
        }
        for (name, i) in &self.interfaces {
            self.check_vrf(&format!("interfaces.{name}.vrf"), i.vrf.as_deref())?;
            for (sub, s) in &i.sub_interfaces {
                self.check_vrf(&format!("interfaces.{name}.sub-interfaces.{sub}.vrf"), s.vrf.as_deref())?;
            }
        }
        Ok(())
    }

    /// `vrf` at `field`: none (the default table) or a name of `vrfs`.
    fn check_vrf(&self, field: &str, vrf: Option<&str>) -> Result<(), ConfigError> {
        match vrf {
            None => Ok(()),
            Some(v) if !self.vrfs.contains_key(v) => {
                let names: Vec<&str> = self.vrfs.keys().map(String::as_str).collect();
                let allowed = if names.is_empty() { "none: vrfs is empty".into() } else { names.join(", ") };
                Err(invalid(field, v, format!("the name of a VRF of vrfs ({allowed})")))
            }
            Some(_) => Ok(()),
        }
    }

    /// The VRF of interface or sub-interface `name` (`parent.sub-id`), `None` for the default
    /// table or an unknown name.
    pub fn vrf_of(&self, name: &str) -> Option<&str> {
        if let Some(i) = self.interfaces.get(name) {
            return i.vrf.as_deref();
        }
        let (parent, sub) = name.rsplit_once('.')?;
        let sub = self.interfaces.get(parent)?.sub_interfaces.get(&sub.parse().ok()?)?;
        sub.vrf.as_deref()
    }

    /// Every address: a unicast one, and (but for link-local ones) on one interface only of
    /// its VRF.
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
            let vrf = owner.vrf;
            if !is_link_local(a.addr)
                && let Some(other) = addresses.insert((vrf, a.addr), owner)
            {
                return Err(invalid(
                    format!("interfaces.{owner}.addresses"),
                    a,
                    format!("an address configured once {} ({other} already has {})", vrf_phrase(vrf), a.addr),
                ));
            }
        }
        Ok(())
    }

    /// Route `k`: `via` or 1 to [`MAX_PATHS`] paths, each next hop once, with a weight, and
    /// reachable (see [`Config::check_next_hop`]); its labels.
    fn validate_route(&self, k: usize, r: &Route) -> Result<(), ConfigError> {
        if let Some(next) = &r.next_vrf {
            return self.check_next_vrf(k, r, next);
        }
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
            self.check_next_hop(at, r.prefix, r.next_hop_vrf(), p)?;
        }
        check_labels(&format!("routes[{k}].out-labels"), &r.out_labels)
    }

    /// Checks one next hop of a route to `prefix` in `vrf` (`at` names it: `routes[K]` or
    /// `routes[K].paths[P]`): of the prefix's family, on a named interface of the VRF or
    /// inside a connected subnet of it.
    pub(crate) fn check_next_hop(
        &self,
        at: &str,
        prefix: IpPrefix,
        vrf: Option<&str>,
        p: &RoutePath,
    ) -> Result<(), ConfigError> {
        if p.via.is_ipv4() != prefix.addr.is_ipv4() {
            let family = if prefix.addr.is_ipv4() { "IPv4" } else { "IPv6" };
            return Err(invalid(format!("{at}.via"), p.via, format!("an {family} next hop, as the prefix is")));
        }
        match &p.interface {
            Some(n) if !self.has_interface(n) => {
                Err(invalid(format!("{at}.interface"), n, "the name of a configured interface"))
            }
            Some(n) if self.vrf_of(n) != vrf => Err(invalid(
                format!("{at}.interface"),
                n,
                format!("an interface {} ({n} is {})", vrf_phrase(vrf), vrf_phrase(self.vrf_of(n))),
            )),
            Some(_) => Ok(()),
            None if is_link_local(p.via) => Err(invalid(
                format!("{at}.interface"),
                "(missing)",
                format!("the interface a link-local next hop ({}) is on", p.via),
            )),
            None if !self.addresses().any(|(o, a)| o.vrf == vrf && a.contains(p.via)) => Err(invalid(
                format!("{at}.via"),
                p.via,
                format!(
                    "an address inside the subnet of an interface {}, or name the interface in {at}.interface",
                    vrf_phrase(vrf)
                ),
            )),
            None => Ok(()),
        }
    }
}

/// "in VRF NAME" or "in the default table", for messages.
fn vrf_phrase(vrf: Option<&str>) -> String {
    vrf.map_or("in the default table".into(), |v| format!("in VRF {v}"))
}
