//! The `fib` section (FIB sizing), `vrfs` and `routes`.

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
    /// Each VRF's IPv4 table (a 16-8-8 trie): groups of 256 entries for /16s and /24s holding
    /// longer prefixes (1 KiB each, resident only once used), 1–1048576.
    #[serde(default = "default_tbl8_groups")]
    pub vrf_tbl8_groups: u32,
}

fn default_tbl8_groups() -> u32 {
    4096
}

impl Default for FibConfig {
    fn default() -> Self {
        FibConfig { tbl8_groups: default_tbl8_groups(), vrf_tbl8_groups: default_tbl8_groups() }
    }
}

/// A VRF: a routing table of its own, IPv4 and IPv6, beside the default one. Interfaces and
/// sub-interfaces join it with `vrf: NAME`, routes with the same key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct VrfConfig {
    /// Its table id, as Linux and the routing daemons number tables: 1 to 4294967295, not
    /// 253, 254 or 255 (the kernel's default, main and local tables), one per VRF.
    pub table: u32,
}

/// Most VRFs beside the default table.
pub const MAX_VRFS: usize = 4095;

/// The kernel's own tables, which no VRF may take: default, main and local.
pub const RESERVED_TABLES: [u32; 3] = [253, 254, 255];

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
    /// The VRF (a name from `vrfs`) the route is in; its next hops are on that VRF's
    /// interfaces, or for a route with `out-labels` (an L3VPN route toward a remote provider
    /// edge) on the default table's: the provider's core. Default: the default table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vrf: Option<String>,
    /// Instead of next hops: look the destination up again in this VRF's tables (a name from
    /// `vrfs`, or `default` for the default table): route leaking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_vrf: Option<String>,
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
        Route {
            prefix,
            via: Some(via),
            interface: None,
            paths: Vec::new(),
            out_labels: Vec::new(),
            vrf: None,
            next_vrf: None,
        }
    }

    /// The VRF its next hops are in: its own, or the default table (`None`) for a labelled
    /// route: an L3VPN route leaves its VRF with its labels through the provider's core.
    pub fn next_hop_vrf(&self) -> Option<&str> {
        if self.out_labels.is_empty() { self.vrf.as_deref() } else { None }
    }

    /// Its paths: `via` (weight 1) or `paths`.
    pub fn next_hops(&self) -> Vec<RoutePath> {
        match self.via {
            Some(via) => vec![RoutePath { via, interface: self.interface.clone(), weight: 1 }],
            None => self.paths.clone(),
        }
    }
}
