//! The `linux-cp` section, with its own checks.

use super::{MAX_NAME, listener, routes};
use crate::net::{ConfigError, invalid};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `linux-cp`: the Linux control plane, on when present.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct LinuxCpConfig {
    /// The network namespace of the TAPs (default `dataplane`), made when missing.
    #[serde(default = "default_netns")]
    pub netns: String,
    /// Packets a second each worker sends up each interface's TAP, by class.
    #[serde(default)]
    pub punt_rate: PuntRate,
    /// A TAP set down (or up) in Linux sets its interface down (or up) too (default off:
    /// vecflow puts the TAP back up, so a tool toggling a TAP cannot take a port down).
    #[serde(default)]
    pub link_sync: bool,
    /// The kernel routing table whose routes are mirrored into the FIB (default 254, the
    /// main table; not 0 or 255, the local table).
    #[serde(default = "default_table")]
    pub table: u32,
    /// The netlink listener's receive buffer in bytes (default 64 MiB, 4096–1073741824): room
    /// for a burst of route changes (a full table) before the kernel drops notifications and
    /// the listener has to dump again.
    #[serde(default = "default_netlink_buffer")]
    pub netlink_buffer: usize,
}

fn default_netns() -> String {
    "dataplane".into()
}

fn default_table() -> u32 {
    routes::MAIN_TABLE
}

fn default_netlink_buffer() -> usize {
    listener::EVENT_BUFFER
}

impl Default for LinuxCpConfig {
    fn default() -> Self {
        LinuxCpConfig {
            netns: default_netns(),
            punt_rate: PuntRate::default(),
            link_sync: false,
            table: default_table(),
            netlink_buffer: default_netlink_buffer(),
        }
    }
}

/// The punt policers' rates, packets a second per interface and worker (0: no limit), so
/// that bulk traffic to the router cannot starve the routing protocols' keepalives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PuntRate {
    /// ARP, neighbor discovery and MLD, OSPF, VRRP, IGMP, BGP, BFD, RIP (default 10 000).
    #[serde(default = "default_control_rate")]
    pub control: u32,
    /// Everything else for the router: SSH, SNMP, ICMP, … (default 5 000).
    #[serde(default = "default_other_rate")]
    pub other: u32,
}

fn default_control_rate() -> u32 {
    10_000
}

fn default_other_rate() -> u32 {
    5_000
}

impl Default for PuntRate {
    fn default() -> Self {
        PuntRate { control: default_control_rate(), other: default_other_rate() }
    }
}

/// The most packets a second a punt policer takes.
pub const MAX_PUNT_RATE: u32 = 10_000_000;

/// True for a name Linux takes for an interface and `ip` can print: 1–15 characters, no `/`,
/// `:`, whitespace or NUL, not `.` or `..`.
pub(crate) fn valid_linux_name(n: &str) -> bool {
    (1..=MAX_NAME).contains(&n.len())
        && n != "."
        && n != ".."
        && !n.chars().any(|c| c == '/' || c == ':' || c.is_whitespace() || c == '\0')
}

impl LinuxCpConfig {
    /// The namespace of VRF `vrf`'s TAPs: `NETNS-VRF` (`dataplane-red` by default).
    pub fn vrf_netns(&self, vrf: &str) -> String {
        format!("{}-{vrf}", self.netns)
    }

    /// Checks the section's own values (the TAPs' names are checked with the interfaces:
    /// [`crate::config::Config::linux_names`]).
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let n = &self.netns;
        if n.is_empty() || n.len() > 255 || n == "." || n == ".." || n.contains('/') || n.contains('\0') {
            return Err(invalid("linux-cp.netns", n, "a file name under /run/netns (no '/', not '.' or '..')"));
        }
        for (class, rate) in [("control", self.punt_rate.control), ("other", self.punt_rate.other)] {
            if rate > MAX_PUNT_RATE {
                return Err(invalid(format!("linux-cp.punt-rate.{class}"), rate, "0 (no limit) to 10000000"));
            }
        }
        if !(4096..=1 << 30).contains(&self.netlink_buffer) {
            return Err(invalid("linux-cp.netlink-buffer", self.netlink_buffer, "4096 to 1073741824 (bytes)"));
        }
        if self.table == 0 || self.table == 255 {
            return Err(invalid("linux-cp.table", self.table, "1 to 4294967295 but 255 (the local table)"));
        }
        Ok(())
    }
}
