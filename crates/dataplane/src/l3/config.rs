//! The `fib` section (FIB sizing) and `routes`.

use crate::config::*;
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

/// A static route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Route {
    /// Destination prefix, IPv4 or IPv6.
    pub prefix: IpPrefix,
    /// Next-hop address, of the prefix's family.
    pub via: IpAddr,
    /// Output interface; default: the one whose address covers `via` (required for an IPv6
    /// link-local `via`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// MPLS labels to push, outermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_labels: Vec<u32>,
}
