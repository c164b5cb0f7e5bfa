//! The `mpls` section: local labels and what they carry.

use crate::net::{ConfigError, Payload, check_labels, invalid, is_default};
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

    /// Checks the local labels: at most 65535, each label once and valid, a swap's labels
    /// (or implicit null alone) and its next hop on an interface `known` names, a pop with
    /// neither; a VRF and a payload for a pop only. Whether the VRF exists is the caller's
    /// to check.
    pub fn validate(&self, known: impl Fn(&str) -> bool) -> Result<(), ConfigError> {
        if self.local_labels.len() > usize::from(u16::MAX) {
            let n = self.local_labels.len();
            return Err(invalid("mpls.local-labels", format!("{n} entries"), "at most 65535 entries"));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (k, l) in self.local_labels.iter().enumerate() {
            let f = |x: &str| format!("mpls.local-labels[{k}].{x}");
            check_labels(&f("label"), &[l.label])?;
            if l.out_labels.len() > 1 && l.out_labels.contains(&IMPLICIT_NULL) {
                let allowed = "3 (implicit null) alone, or labels 16 to 1048575";
                return Err(invalid(f("out-labels"), "3 among other labels", allowed));
            }
            if l.out_labels != [IMPLICIT_NULL] {
                check_labels(&f("out-labels"), &l.out_labels)?;
            }
            if !seen.insert(l.label) {
                return Err(invalid(f("label"), l.label, "a label no other local-label entry uses"));
            }
            if !l.out_labels.is_empty() && l.payload != Payload::Ip4 {
                return Err(invalid(f("payload"), "ip6", "only for a pop (no out-labels): a swap keeps the payload"));
            }
            if let (false, Some(v)) = (l.out_labels.is_empty(), &l.vrf) {
                return Err(invalid(
                    f("vrf"),
                    v,
                    "only for a pop (no out-labels): a swap sends the packet on by label",
                ));
            }
            match (&l.via, &l.interface, l.out_labels.is_empty()) {
                (Some(_), Some(n), false) if known(n) => {}
                (Some(_), Some(n), false) => {
                    return Err(invalid(f("interface"), n, "the name of a configured interface"));
                }
                (None, None, true) => {}
                (_, _, false) => {
                    return Err(invalid(
                        f("via"),
                        "(missing)",
                        "a next hop and an interface for a swap (out-labels given)",
                    ));
                }
                (_, _, true) => {
                    return Err(invalid(
                        f("via"),
                        "(given)",
                        "nothing for a pop (no out-labels): the packet is routed by the FIB",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The implicit-null label (RFC 3032): as a swap's only out-label, the top label is popped
/// and the packet sent on with the labels under it (penultimate-hop popping).
pub const IMPLICIT_NULL: u32 = 3;

/// One incoming (top) label. With `out-labels`: swap the top label for them (none, for
/// [`IMPLICIT_NULL`]) and send toward `via` on `interface`. Without: pop it; with more labels
/// under it, look the next one up; at the end of the stack, route the packet inside (IPv4, or
/// IPv6 with `payload: ip6`) by the FIB of `vrf` (default: the input interface's), `via` and
/// `interface` then left out.
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
    /// Labels to send with, outermost first (1–8, or 3 alone: implicit null, pop and send
    /// on); empty = pop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_labels: Vec<u32>,
    /// What a pop finds under the label: `ip4` (the default) or `ip6` (pop only).
    #[serde(default, skip_serializing_if = "is_default")]
    pub payload: Payload,
    /// The VRF (a name from `vrfs`) whose FIB routes the packet a pop leaves (pop only): an
    /// L3VPN's per-VRF label. Default: the input interface's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vrf: Option<String>,
}
