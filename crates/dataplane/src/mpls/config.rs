//! The `mpls` section: local labels and what they carry.

use crate::net::{Payload, is_default};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// MPLS label switching.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Mpls {
    /// Incoming labels and what to do with them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub local_labels: Vec<LocalLabel>,
}

impl Mpls {
    pub(crate) fn is_empty(&self) -> bool {
        self.local_labels.is_empty()
    }
}

/// One incoming (top) label. With `out-labels`: swap the top label for them and send toward
/// `via` on `interface`. Without: pop it at the end of the stack and route the packet inside
/// (IPv4, or IPv6 with `payload: ip6`) by the FIB (`via` and `interface` are then left out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct LocalLabel {
    /// Incoming label, 16–1048575.
    pub label: u32,
    /// Next hop, IPv4 or IPv6 (swap only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<IpAddr>,
    /// Output interface (swap only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// Labels to send with, outermost first (1–8); empty = pop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_labels: Vec<u32>,
    /// What a pop finds under the label: `ip4` (the default) or `ip6` (pop only).
    #[serde(default, skip_serializing_if = "is_default")]
    pub payload: Payload,
}
