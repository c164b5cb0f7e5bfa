//! The `fib` section (FIB sizing) and `routes`.

use crate::net::IpPrefix;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// FIB sizing (the IPv6 table needs none: it grows with its routes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FibConfig {
    /// IPv4: groups of 256 entries for /24s holding longer prefixes (1 KiB each), 1–1048576.
    #[serde(default = "default_tbl8_groups")]
    pub tbl8_groups: u32,
}

fn default_tbl8_groups() -> u32 {
    4096
}

impl Default for FibConfig {
    fn default() -> Self {
        FibConfig { tbl8_groups: default_tbl8_groups() }
    }
}

/// A static route: one next hop (`via`, with `interface`) or up to [`MAX_PATHS`] of them
/// (`paths`), among which flows are spread by a hash of their addresses and ports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Route {
    /// Destination prefix, IPv4 or IPv6.
    pub prefix: IpPrefix,
    /// Next-hop address, of the prefix's family (the one-path form; leave out with `paths`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<IpAddr>,
    /// Output interface of `via`; default: the one whose address covers `via` (required for
    /// an IPv6 link-local `via`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Several next hops (multipath, 1 to 64), each with an optional weight; instead of `via`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<RoutePath>,
    /// MPLS labels to push, outermost first (on every path).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_labels: Vec<u32>,
}

/// Most paths a route can have.
pub const MAX_PATHS: usize = 64;

/// One path of a multipath route.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RoutePath {
    /// Next-hop address, of the prefix's family.
    pub via: IpAddr,
    /// Output interface; default: the one whose address covers `via`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Share of the route's flows against the other paths' weights (unequal-cost multipath,
    /// e.g. BGP link bandwidth), 1–255.
    #[serde(default = "default_weight")]
    pub weight: u8,
}

fn default_weight() -> u8 {
    1
}

impl Route {
    /// A one-path route to `via`.
    pub fn via(prefix: IpPrefix, via: IpAddr) -> Self {
        Route { prefix, via: Some(via), interface: None, paths: Vec::new(), out_labels: Vec::new() }
    }

    /// Its paths: `via` (weight 1) or `paths`.
    pub fn next_hops(&self) -> Vec<RoutePath> {
        match self.via {
            Some(via) => vec![RoutePath { via, interface: self.interface.clone(), weight: 1 }],
            None => self.paths.clone(),
        }
    }
}
