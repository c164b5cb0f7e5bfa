//! The `neighbors` section: static neighbors.

use crate::net::{ConfigError, Mac, invalid};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::net::IpAddr;

/// A static neighbor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Neighbor {
    /// Interface the neighbor is on.
    pub interface: String,
    /// Its IPv4 or IPv6 address.
    pub address: IpAddr,
    /// Its MAC address.
    pub mac: Mac,
}

/// Checks the static neighbors: each on an interface `known` names, and each address once
/// per interface.
pub fn validate_neighbors(neighbors: &[Neighbor], known: impl Fn(&str) -> bool) -> Result<(), ConfigError> {
    let mut seen = BTreeMap::new();
    for (k, n) in neighbors.iter().enumerate() {
        if !known(&n.interface) {
            return Err(invalid(
                format!("neighbors[{k}].interface"),
                &n.interface,
                "the name of a configured interface",
            ));
        }
        if let Some(first) = seen.insert((&n.interface, n.address), k) {
            return Err(invalid(
                format!("neighbors[{k}].address"),
                n.address,
                format!("an address not already a neighbor on {} (neighbors[{first}] is)", n.interface),
            ));
        }
    }
    Ok(())
}
