//! The `sflow` section, with its checks. Each interface's `sflow` settings are part of the
//! `interfaces` section (`interface::config::InterfaceSflow`).

use crate::interface::config::{Direction, check_sampling_rate};
use crate::net::{ConfigError, invalid};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// The sFlow agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SflowConfig {
    /// Default 1-in-N sampling rate of enabled interfaces, 1–1073741824.
    #[serde(default = "default_sampling_rate")]
    pub sampling_rate: u32,
    /// Default direction sampled on enabled interfaces.
    #[serde(default)]
    pub direction: Direction,
    /// Bytes of each sampled frame exported, 64–256.
    #[serde(default = "default_header_bytes")]
    pub header_bytes: u16,
    /// Seconds between counter samples of each enabled interface, 0 (off) to 86400.
    #[serde(default = "default_polling_interval")]
    pub polling_interval: u32,
    /// Discard samples per second at most, over all workers, 1–100000.
    #[serde(default = "default_drop_limit")]
    pub drop_limit: u32,
    /// Where datagrams go.
    #[serde(default)]
    pub collectors: Vec<Collector>,
    /// The agent address in datagrams. Default: the first IPv4 interface address, else the
    /// first global IPv6 one ([`Config::first_address`]); required when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_address: Option<std::net::IpAddr>,
    /// Sub-agent id in datagrams.
    #[serde(default)]
    pub sub_agent_id: u32,
    /// Largest datagram, 200–8192 bytes.
    #[serde(default = "default_max_datagram")]
    pub max_datagram_size: u16,
    /// Slots per worker sample ring, a power of two 256–1048576 (448 bytes each).
    #[serde(default = "default_ring_depth")]
    pub ring_depth: u32,
    /// Nice value of the agent thread when the workers are pinned (`workers.cores`) and the
    /// agent has other CPUs to run on, -20 to 19 (0: the process's own). Below 0 it weighs
    /// more than ordinary threads when the host is busy, so that a share of a CPU fair to them
    /// does not starve it while the rings fill; it sleeps when there is nothing to send, so it
    /// takes only what it needs. Needs CAP_SYS_NICE (root) below the process's nice; without
    /// it the agent keeps the process's nice (logged). With unpinned workers the agent keeps
    /// the process's nice: it would take CPU time from them.
    #[serde(default = "default_agent_nice")]
    pub agent_nice: i32,
    /// Seed of the samplers' random skips, for tests and benchmarks only: the same seed (and
    /// the same traffic on each worker) chooses the same packets every run. Default: a fresh
    /// seed from the operating system per worker and per start, so that no two routers (and
    /// no two starts) sample the same packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The ifIndex samples and counters carry: `vecflow` (the interface index) or `linux`
    /// (the Linux ifindex of the interface's linux-cp TAP).
    #[serde(default)]
    pub if_index: crate::sflow::IfIndexSource,
}

fn default_sampling_rate() -> u32 {
    10_000
}
fn default_header_bytes() -> u16 {
    128
}
fn default_polling_interval() -> u32 {
    20
}
fn default_drop_limit() -> u32 {
    100
}
fn default_max_datagram() -> u16 {
    1400
}
fn default_agent_nice() -> i32 {
    -10
}
/// 32768 slots of 448 bytes: 14 MiB per worker, 39 ms of samples at 845 k samples/s (the
/// `ip4-lab` bench at 1:100 on an idle host), so that an agent thread kept off a CPU for a few
/// scheduler slices on a busy host loses nothing (4096 slots, 5 ms, did).
fn default_ring_depth() -> u32 {
    32768
}

/// An sFlow collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Collector {
    /// IPv4 or IPv6 address.
    pub address: std::net::IpAddr,
    /// UDP port.
    #[serde(default = "default_collector_port")]
    pub port: u16,
}

fn default_collector_port() -> u16 {
    6343
}

/// What the `sflow` section's checks need to know of the rest of the configuration.
pub(crate) struct SflowSurroundings {
    /// The address the agent takes without `agent-address`
    /// ([`crate::config::Config::first_address`]).
    pub first_address: Option<IpAddr>,
    /// The longest interface name (interface names travel in counter samples).
    pub longest_interface_name: usize,
    /// Whether `linux-cp` is on (`if-index: linux` needs it).
    pub linux_cp: bool,
    /// Whether there are VRFs (`if-index: linux` is refused with them).
    pub vrfs: bool,
}

impl SflowConfig {
    /// Checks the agent's settings against what `around` says of the rest of the configuration.
    pub(crate) fn validate(&self, around: &SflowSurroundings) -> Result<(), ConfigError> {
        let s = self;
        check_sampling_rate("sflow.sampling-rate".into(), s.sampling_rate)?;
        if s.agent_address.is_none() && around.first_address.is_none() {
            return Err(invalid(
                "sflow.agent-address",
                "(none)",
                "this router's address in datagrams; required when no interface has an IPv4 or a global IPv6 address",
            ));
        }
        if s.polling_interval > 86_400 {
            return Err(invalid("sflow.polling-interval", s.polling_interval, "0 (off) to 86400 seconds"));
        }
        if !(1..=100_000).contains(&s.drop_limit) {
            return Err(invalid("sflow.drop-limit", s.drop_limit, "1 to 100000 discard samples per second"));
        }
        if !(64..=256).contains(&s.header_bytes) {
            return Err(invalid("sflow.header-bytes", s.header_bytes, "64 to 256"));
        }
        // The longest sample must fit a datagram alone (the agent could never send it).
        let agent_v6 = s.agent_address.or(around.first_address).is_some_and(|a| a.is_ipv6());
        let least =
            crate::sflow::agent::min_datagram_size(agent_v6, s.header_bytes, around.longest_interface_name).max(200);
        if !(least..=8192).contains(&usize::from(s.max_datagram_size)) {
            return Err(invalid(
                "sflow.max-datagram-size",
                s.max_datagram_size,
                format!("{least} to 8192 (with header-bytes {} the longest sample needs {least})", s.header_bytes),
            ));
        }
        if !s.ring_depth.is_power_of_two() || !(256..=1 << 20).contains(&s.ring_depth) {
            return Err(invalid("sflow.ring-depth", s.ring_depth, "a power of two from 256 to 1048576"));
        }
        if !(-20..=19).contains(&s.agent_nice) {
            return Err(invalid("sflow.agent-nice", s.agent_nice, "-20 to 19 (0: the process's own)"));
        }
        if s.if_index == crate::sflow::IfIndexSource::Linux && !around.linux_cp {
            return Err(invalid("sflow.if-index", "linux", "vecflow, or linux when linux-cp is on"));
        }
        if s.if_index == crate::sflow::IfIndexSource::Linux && around.vrfs {
            let allowed = "vecflow while there are VRFs (their TAPs are in namespaces of their own, which number ifindexes apart: two TAPs may share one)";
            return Err(invalid("sflow.if-index", "linux", allowed));
        }
        if s.collectors.len() > 16 {
            return Err(invalid("sflow.collectors", format!("{} collectors", s.collectors.len()), "at most 16"));
        }
        Ok(())
    }
}
