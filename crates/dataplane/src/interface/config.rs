//! The `interfaces` section: each interface and sub-interface, its driver, MTU, addresses, rx
//! placement and sFlow sampling ([`InterfaceSflow`]). Their checks need the buffers, the workers and the other interfaces, so they
//! are in `config/interfaces.rs`.

use crate::interface::driver_config::{AfPacketConfig, AfXdpConfig, PcapConfig};
use crate::interface::stream_config::GeneratorConfig;
use crate::net::{ConfigError, IpPrefix, Mac, PollMode, invalid, is_default};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Administrative state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AdminState {
    /// Forwarding.
    #[default]
    Up,
    /// Everything received or sent is dropped.
    Down,
}

/// The driver behind an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Driver {
    /// The embedded traffic generator and sink.
    #[default]
    Generator,
    /// A Linux interface through AF_PACKET sockets (TPACKET_V3 rx ring, batched tx).
    AfPacket,
    /// Capture files: receives the frames of a pcap or pcapng file, writes what it transmits
    /// to another.
    Pcap,
    /// A Linux interface through AF_XDP sockets over the workers' own buffers (an XDP program
    /// redirects its frames to them).
    AfXdp,
}

/// Which workers poll an interface's rx queues.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct RxPlacement {
    /// Worker of the first rx queue, 0-based; further queues go to the next workers
    /// round-robin. Default: interfaces spread over workers round-robin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<u16>,
    /// Worker of each rx queue in order (queue 0 first), one per queue of `af-packet.rx-queues`
    /// or `af-xdp.queues`; instead of `worker`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub queues: Vec<u16>,
}

/// One interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct InterfaceConfig {
    /// Fixed interface index (also the sFlow ifIndex), 1–1023. Default: the lowest free one,
    /// in name order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u16>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Driver.
    #[serde(default)]
    pub driver: Driver,
    /// The Linux interface behind it (drivers `af-packet`), at most 15 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_interface: Option<String>,
    /// AF_PACKET ring and queue settings (driver `af-packet`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub af_packet: Option<AfPacketConfig>,
    /// AF_XDP program, queue and ring settings (driver `af-xdp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub af_xdp: Option<AfXdpConfig>,
    /// How the worker waits when the interface's rx queues are empty (drivers `af-packet` and
    /// `af-xdp`): polling (default), interrupt or adaptive. A worker sleeps only when none of
    /// its queues is polling.
    #[serde(default, skip_serializing_if = "is_default")]
    pub rx_mode: PollMode,
    /// Capture files read and written (driver `pcap`, required there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pcap: Option<PcapConfig>,
    /// MAC address. Default: a locally administered 02:fe:00:00:HH:LL from the index (also
    /// for `af-packet`: not the host interface's, so the kernel never takes our frames for
    /// its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mac: Option<Mac>,
    /// L3 MTU, 68–2030. Default: the host interface's (`af-packet`), else 1500.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u16>,
    /// Administrative state.
    #[serde(default)]
    pub state: AdminState,
    /// Rx queue placement: which worker polls each rx queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_placement: Option<RxPlacement>,
    /// Name of the interface every received frame is sent out of (L2 cross-connect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2xc: Option<String>,
    /// IPv4 and IPv6 addresses with prefix length (IPv4 forwarding is on when there is an
    /// IPv4 one, IPv6 forwarding when there is an IPv6 one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<IpPrefix>,
    /// The VRF (a name from `vrfs`) whose table routes what it receives and holds its
    /// addresses' routes; default: the default table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vrf: Option<String>,
    /// Accept MPLS frames.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mpls: bool,
    /// 802.1Q sub-interfaces by sub-id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sub_interfaces: BTreeMap<u32, SubInterfaceConfig>,
    /// The name of its TAP when `linux-cp` is on (default: the interface's name, when it has
    /// at most 15 characters and no '/' or ':').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linux_name: Option<String>,
    /// Generator streams (driver `generator` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<GeneratorConfig>,
    /// sFlow sampling of this interface (its sub-interfaces are sampled with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sflow: Option<InterfaceSflow>,
}

/// The MTU of an interface that names none and has no host interface to take it from.
pub const DEFAULT_MTU: u16 = 1500;

impl InterfaceConfig {
    /// Rx queues of the driver: `af-packet.rx-queues` or `af-xdp.queues`, else 1.
    pub fn rx_queue_count(&self) -> u16 {
        match self.driver {
            Driver::AfPacket => self.af_packet.unwrap_or_default().rx_queues,
            Driver::AfXdp => self.af_xdp.unwrap_or_default().queues,
            Driver::Generator | Driver::Pcap => 1,
        }
    }

    /// The worker that polls rx queue `q`, when the interface's first queue is on worker
    /// `first` (see [`RxPlacement`]) and there are `workers` workers.
    pub fn queue_worker(&self, q: u16, first: u16, workers: u16) -> u16 {
        match self.rx_placement.as_ref().and_then(|p| p.queues.get(usize::from(q))) {
            Some(&w) => w,
            None => ((u32::from(first) + u32::from(q)) % u32::from(workers.max(1))) as u16,
        }
    }

    /// The L3 MTU as configured, else [`DEFAULT_MTU`] (the engine takes an `af-packet`
    /// interface's from the kernel before it gets here).
    pub fn mtu(&self) -> u16 {
        self.mtu.unwrap_or(DEFAULT_MTU)
    }
}

impl Default for InterfaceConfig {
    /// A generator interface with every default (up, MTU 1500, no streams).
    fn default() -> Self {
        serde_json::from_value(serde_json::json!({})).expect("defaults deserialize")
    }
}

/// Tag matching of a sub-interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Encapsulation {
    /// The 802.1Q VLAN id, 1–4094.
    pub dot1q: u16,
}

/// An 802.1Q sub-interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct SubInterfaceConfig {
    /// The tag it matches.
    pub encapsulation: Encapsulation,
    /// L3 MTU; default the parent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u16>,
    /// Administrative state.
    #[serde(default)]
    pub state: AdminState,
    /// IPv4 and IPv6 addresses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<IpPrefix>,
    /// Its VRF (a name from `vrfs`), independent of the parent's; default: the default table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vrf: Option<String>,
    /// Accept MPLS frames.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mpls: bool,
    /// L2 cross-connect target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2xc: Option<String>,
    /// The name of its TAP when `linux-cp` is on (default: `PARENT.SUB`, when it has at most
    /// 15 characters and no '/' or ':').
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linux_name: Option<String>,
}

/// sFlow on one (physical) interface: sampled on receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct InterfaceSflow {
    /// Sample this interface.
    #[serde(default = "yes")]
    pub enable: bool,
    /// 1-in-N for this interface; default `sflow.sampling-rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling_rate: Option<u32>,
    /// Direction for this interface; default `sflow.direction`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// Report packets dropped with this interface (or its sub-interfaces) as input, or as
    /// output for drops on the way out, as discard samples.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_monitoring: bool,
}

fn yes() -> bool {
    true
}

/// Checks a 1-in-N sampling rate written at `field`.
pub(crate) fn check_sampling_rate(field: String, rate: u32) -> Result<(), ConfigError> {
    if (1..=1 << 30).contains(&rate) { Ok(()) } else { Err(invalid(field, rate, "1 to 1073741824")) }
}

impl InterfaceSflow {
    /// Checks one interface's settings (written at `field`); `agent_on` says whether the
    /// top-level `sflow` section is there, which `enable: true` needs.
    pub(crate) fn validate(&self, field: &str, agent_on: bool) -> Result<(), ConfigError> {
        if let Some(r) = self.sampling_rate {
            check_sampling_rate(format!("{field}.sampling-rate"), r)?;
        }
        if self.enable && !agent_on {
            return Err(invalid(field, "enable: true", "only with a top-level sflow: section"));
        }
        Ok(())
    }
}

/// Which packets of an interface its sampler sees: one rate, one pool and one sequence
/// either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Received packets.
    #[default]
    Rx,
    /// Transmitted packets.
    Tx,
    /// Both.
    Both,
}

impl Direction {
    /// True when received packets are sampled.
    pub fn rx(self) -> bool {
        self != Direction::Tx
    }

    /// True when transmitted packets are sampled.
    pub fn tx(self) -> bool {
        self != Direction::Rx
    }
}
