//! The `neighbors` section: static neighbors.

use crate::net::Mac;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
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
