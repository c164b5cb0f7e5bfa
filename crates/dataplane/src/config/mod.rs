//! The typed configuration model, read from and written to YAML.
//!
//! Keys follow vppcfg where it has them (`interfaces`, `sub-interfaces`, `addresses`, `l2xc`,
//! `mtu`, `state`) plus `workers`, `routes`, `neighbors` and `mpls`. Loading is two steps:
//! [`Config::from_yaml`] parses (unknown keys are errors) and [`Config::validate`] checks every
//! value and reference, so an error always names the field, the bad value and what is allowed.
//!
//! This module is the model's composition root: [`Config`] itself, loading, the checks that
//! span sections (addresses, routes, neighbors and labels refer to interfaces and to each
//! other) and what needs a restart. Each section's model and its own checks live with the
//! feature it configures (`interface::config`, `sflow::config`, `lcp::config`, …), the
//! shared vocabulary (prefixes, MACs, [`ConfigError`]) in [`crate::net`]; both are re-exported
//! here, so the whole model reads as one namespace: `dataplane::config::*`.

use crate::net::MAX_INTERFACES;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

mod interfaces;
mod l3;
mod lcp;
mod leaks;

pub use crate::flows::config::FlowCacheConfig;
pub use crate::interface::config::{
    AdminState, DEFAULT_MTU, Driver, Encapsulation, InterfaceConfig, RxPlacement, SubInterfaceConfig,
};
pub use crate::interface::config::{Direction, InterfaceSflow};
pub use crate::interface::driver_config::{
    AfPacketConfig, AfXdpConfig, BusyPollConfig, MAX_PCAP_RATE, PcapConfig, XdpModeConfig, ZeroCopyConfig,
};
pub use crate::interface::stream_config::{AddrRange, GeneratorConfig, RangeMode, StreamConfig, Template};
pub use crate::l3::config::{FibConfig, MAX_PATHS, MAX_VRFS, Route, RoutePath, VrfConfig};
pub use crate::mpls::config::{LocalLabel, Mpls};
pub use crate::neighbor::config::Neighbor;
pub use crate::net::{
    ConfigError, IpPrefix, Ipv4Prefix, Ipv6Prefix, Mac, Payload, PollMode, Prefix, PrefixAddr, is_link_local,
};
use crate::net::{default_true, invalid, is_default};
pub use crate::sflow::config::{Collector, SflowConfig};

/// The dotted path of the first place where `a` and `b` differ, under `path`.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, path: &str) -> Option<String> {
    use serde_json::Value;
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, &join(k)),
                _ => Some(join(k)),
            })
        }
        _ if a == b => None,
        _ => Some(if path.is_empty() { "(the whole file)".into() } else { path.to_string() }),
    }
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Config {
    /// Worker threads and buffers.
    #[serde(default)]
    pub workers: Workers,
    /// The size of every packet buffer.
    #[serde(default, skip_serializing_if = "is_default")]
    pub buffers: Buffers,
    /// Interfaces by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub interfaces: BTreeMap<String, InterfaceConfig>,
    /// VRFs by name: routing tables apart from the default one (1 to 15 characters: letters,
    /// digits, '-' and '_'; not `default`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub vrfs: BTreeMap<String, VrfConfig>,
    /// Static routes, IPv4 and IPv6.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    /// Static neighbors, IPv4 and IPv6 (they win over ones ARP or neighbor discovery learns).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub neighbors: Vec<Neighbor>,
    /// MPLS label switching.
    #[serde(default, skip_serializing_if = "Mpls::is_empty")]
    pub mpls: Mpls,
    /// Flow rules (ACLs, policy forwarding) in `ovs-ofctl` syntax, e.g.
    /// `priority=100,udp,nw_src=2.0.0.0/9,actions=output:port1` ([`crate::flows`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<String>,
    /// Each worker's megaflow cache for the flow rules.
    #[serde(default, skip_serializing_if = "FlowCacheConfig::is_default")]
    pub flow_cache: FlowCacheConfig,
    /// FIB sizing, IPv4 and IPv6.
    #[serde(default)]
    pub fib: FibConfig,
    /// The sFlow agent (names as in VPP's plugin and hsflowd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sflow: Option<SflowConfig>,
    /// The Prometheus endpoint of `vecflow run`.
    #[serde(default)]
    pub metrics: MetricsConfig,
    /// Who may use the API socket of `vecflow run` (its path is `--socket`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub api: ApiConfig,
    /// The Linux control plane: a TAP in a network namespace for every interface.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linux_cp: Option<crate::lcp::LinuxCpConfig>,
}

/// The Prometheus endpoint: `GET /metrics` over HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct MetricsConfig {
    /// Serve metrics (default true).
    #[serde(default = "default_true")]
    pub enabled: bool,
    /// Address and port to listen on (default 127.0.0.1:9482; use an address only the
    /// monitoring system reaches: the endpoint has no authentication).
    #[serde(default = "default_metrics_address")]
    pub address: std::net::SocketAddr,
}

fn default_metrics_address() -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], 9482))
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig { enabled: true, address: default_metrics_address() }
    }
}

/// Who may connect to the API socket: its group and permissions (connecting needs write
/// permission). A restart changes them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct ApiConfig {
    /// Group the socket belongs to, by name (default: the group vecflow runs as).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub socket_group: Option<String>,
    /// The socket's permissions, an octal string: owner read and write, no execute bits,
    /// `"0600"` (default: the owner only, and root) to `"0666"`; `"0660"` lets the group in.
    #[serde(default = "default_socket_mode")]
    pub socket_mode: String,
}

fn default_socket_mode() -> String {
    "0600".into()
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig { socket_group: None, socket_mode: default_socket_mode() }
    }
}

impl ApiConfig {
    /// The socket's permission bits, or the error naming `api.socket-mode`.
    pub fn mode(&self) -> Result<u32, ConfigError> {
        let m = &self.socket_mode;
        let bits = u32::from_str_radix(m.strip_prefix("0o").unwrap_or(m), 8).ok();
        match bits {
            Some(b) if m.len() <= 5 && b & 0o600 == 0o600 && b & !0o666 == 0 => Ok(b),
            _ => Err(invalid(
                "api.socket-mode",
                m,
                "an octal mode with owner read and write and no execute bit, 0600 to 0666",
            )),
        }
    }
}

/// Worker threads, their CPUs and their buffers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Workers {
    /// Number of worker threads (1–64).
    #[serde(default = "default_workers")]
    pub count: u16,
    /// CPU to pin the main thread to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main_core: Option<u16>,
    /// CPUs to pin workers to: worker i runs on `cores[i]`. Empty: no pinning.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cores: Vec<u16>,
    /// Packet buffers per worker (1024–1048576).
    #[serde(default = "default_buffers")]
    pub buffers: u32,
}

/// The packet buffers' size (their number per worker is `workers.buffers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Buffers {
    /// Bytes of frame a buffer holds after its headroom, 2048–9216 (default 2048). The largest
    /// MTU any interface may have is this less 18 (Ethernet header and one 802.1Q tag); raise
    /// it to 9216 for 9000-byte jumbo frames. Needs a restart to change.
    #[serde(default = "default_data_size")]
    pub data_size: u16,
}

fn default_data_size() -> u16 {
    crate::runtime::buffer::DEFAULT_DATA_SIZE
}

impl Default for Buffers {
    fn default() -> Self {
        Buffers { data_size: default_data_size() }
    }
}

impl Buffers {
    /// The largest L3 MTU a buffer can carry (a frame with an 802.1Q tag fits it).
    pub fn max_mtu(&self) -> u16 {
        crate::net::max_mtu(self.data_size)
    }

    /// Bytes of packet memory `count` buffers take (their slots, headroom and padding
    /// included; not the metadata).
    pub fn memory(&self, count: u32) -> u64 {
        u64::from(count) * crate::runtime::buffer::stride_for(self.data_size) as u64
    }
}

fn default_workers() -> u16 {
    1
}
fn default_buffers() -> u32 {
    16384
}

impl Default for Workers {
    fn default() -> Self {
        Self { count: default_workers(), main_core: None, cores: Vec::new(), buffers: default_buffers() }
    }
}

impl Config {
    /// Parses YAML. Unknown keys and wrong types are errors; values are not yet checked
    /// (call [`Config::validate`]).
    pub fn from_yaml(text: &str) -> Result<Config, ConfigError> {
        serde_saphyr::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))
    }

    /// Parses and validates YAML.
    pub fn load(text: &str) -> Result<Config, ConfigError> {
        let c = Self::from_yaml(text)?;
        c.validate()?;
        Ok(c)
    }

    /// Writes the configuration as YAML.
    pub fn to_yaml(&self) -> String {
        serde_saphyr::to_string(self).expect("the model always serializes")
    }

    /// Checks every value and cross-reference.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.api.mode()?;
        if let Some(g) = self.api.socket_group.as_deref().filter(|g| g.is_empty() || g.contains(['/', ':', '\0'])) {
            return Err(invalid("api.socket-group", format!("{g:?}"), "a group name"));
        }
        let w = &self.workers;
        if !(1..=64).contains(&w.count) {
            return Err(invalid("workers.count", w.count, "1 to 64"));
        }
        if !(1024..=1 << 20).contains(&w.buffers) {
            return Err(invalid("workers.buffers", w.buffers, "1024 to 1048576"));
        }
        use crate::runtime::buffer::{MAX_DATA_SIZE, MIN_DATA_SIZE};
        if !(MIN_DATA_SIZE..=MAX_DATA_SIZE).contains(&self.buffers.data_size) {
            return Err(invalid(
                "buffers.data-size",
                self.buffers.data_size,
                format!("{MIN_DATA_SIZE} to {MAX_DATA_SIZE}"),
            ));
        }
        // CPUs online, not only those this process may use now (`taskset` on the daemon must
        // not make a valid configuration invalid; pinning to a forbidden CPU fails at start).
        // SAFETY: sysconf has no preconditions.
        let ncpu = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.clamp(1, i64::from(u16::MAX)) as u16;
        for (i, c) in w.cores.iter().chain(&w.main_core).enumerate() {
            if *c >= ncpu {
                let f = if i < w.cores.len() { format!("workers.cores[{i}]") } else { "workers.main-core".into() };
                return Err(invalid(f, c, format!("a CPU number 0 to {}", ncpu - 1)));
            }
        }
        if !w.cores.is_empty() && w.cores.len() != w.count as usize {
            return Err(invalid(
                "workers.cores",
                format!("{} entries", w.cores.len()),
                format!("none, or one per worker ({})", w.count),
            ));
        }
        // Interfaces and sub-interfaces share one index space (1 to MAX_INTERFACES - 1).
        let total = self.interfaces.len() + self.interfaces.values().map(|i| i.sub_interfaces.len()).sum::<usize>();
        if total >= MAX_INTERFACES {
            return Err(invalid(
                "interfaces",
                format!("{total} interfaces and sub-interfaces"),
                format!("at most {} in all", MAX_INTERFACES - 1),
            ));
        }
        for (name, i) in &self.interfaces {
            if let Some(sub) =
                i.sub_interfaces.keys().find(|sub| self.interfaces.contains_key(&format!("{name}.{sub}")))
            {
                return Err(invalid(
                    format!("interfaces.{name}.{sub}"),
                    format!("name '{name}.{sub}'"),
                    format!(
                        "a name no sub-interface has (interfaces.{name}.sub-interfaces.{sub} is named {name}.{sub})"
                    ),
                ));
            }
        }
        let mut indices = BTreeMap::new();
        for (name, i) in &self.interfaces {
            self.validate_interface(name, i)?;
            if let Some(x) = i.index
                && let Some(other) = indices.insert(x, name)
            {
                return Err(invalid(
                    format!("interfaces.{name}.index"),
                    x,
                    format!("an index no other interface uses ({other} has it)"),
                ));
            }
        }
        self.validate_l3()?;
        crate::flows::config::validate_rules(&self.flows, |name| self.has_interface(name))?;
        self.flow_cache.validate()?;
        self.validate_linux_cp()?;
        self.validate_sflow()
    }

    /// The sFlow settings: each interface's, then the agent's against the rest of the
    /// configuration.
    fn validate_sflow(&self) -> Result<(), ConfigError> {
        for (n, i) in &self.interfaces {
            if let Some(s) = &i.sflow {
                s.validate(&format!("interfaces.{n}.sflow"), self.sflow.is_some())?;
            }
        }
        let Some(s) = &self.sflow else { return Ok(()) };
        s.validate(&crate::sflow::config::SflowSurroundings {
            first_address: self.first_address(),
            longest_interface_name: self.interfaces.keys().map(String::len).max().unwrap_or(0),
            linux_cp: self.linux_cp.is_some(),
            vrfs: !self.vrfs.is_empty(),
        })
    }

    /// What the AF_XDP setup reads of the configuration.
    pub fn xdp(&self) -> crate::drivers::af_xdp::setup::XdpSettings<'_> {
        crate::drivers::af_xdp::setup::XdpSettings {
            interfaces: &self.interfaces,
            workers: self.workers.count,
            worker_buffers: self.workers.buffers,
            data_size: self.buffers.data_size,
        }
    }

    /// The first IPv4 address of a physical interface (in name order), else of a
    /// sub-interface; without any, the first global (not link-local) IPv6 address, in the same
    /// order: the sFlow agent address when `sflow.agent-address` is not given.
    pub fn first_address(&self) -> Option<IpAddr> {
        let of = |physical: bool| self.addresses().filter(move |(owner, _)| owner.sub.is_none() == physical);
        let all = || of(true).chain(of(false)).map(|(_, a)| a.addr);
        all().find(IpAddr::is_ipv4).or_else(|| all().find(|&a| !is_link_local(a)))
    }

    /// The first key whose change from `self` to `new` a running dataplane cannot apply
    /// (`vecflow apply` refuses it: restart to change it), or `None`. What can change live:
    /// VRFs (not while linux-cp is on), routes, neighbors, MPLS local labels, flow rules and
    /// the flow cache's settings, of each interface and sub-interface its state, MTU,
    /// addresses, VRF (not while linux-cp is on), MPLS flag,
    /// cross-connect and description, each interface's sFlow
    /// settings, and the sFlow agent's sampling rate, direction, header bytes and polling
    /// interval (turning the agent on or off, collectors and the rest need a restart).
    pub fn needs_restart(&self, new: &Config) -> Option<String> {
        if let Some(key) = self.linux_cp_vrf_change(new) {
            return Some(key);
        }
        let live = |mut v: serde_json::Value| {
            for key in ["routes", "neighbors", "mpls", "flows", "flow-cache", "vrfs"] {
                v.as_object_mut().map(|o| o.remove(key));
            }
            if let Some(sf) = v.get_mut("sflow").and_then(|s| s.as_object_mut()) {
                for key in ["sampling-rate", "direction", "header-bytes", "polling-interval"] {
                    sf.remove(key);
                }
            }
            let interfaces = v.get_mut("interfaces").and_then(|i| i.as_object_mut());
            for i in interfaces.into_iter().flat_map(|i| i.values_mut()) {
                let subs = i.get_mut("sub-interfaces").and_then(|s| s.as_object_mut());
                for s in subs.into_iter().flat_map(|s| s.values_mut()) {
                    for key in ["state", "mtu", "addresses", "mpls", "l2xc", "vrf"] {
                        s.as_object_mut().map(|o| o.remove(key));
                    }
                }
                for key in ["state", "mtu", "addresses", "mpls", "l2xc", "vrf", "description", "sflow", "rx-mode"] {
                    i.as_object_mut().map(|o| o.remove(key));
                }
            }
            v
        };
        let to_json = |c: &Config| serde_json::to_value(c).expect("a configuration serializes");
        first_difference(&live(to_json(self)), &live(to_json(new)), "")
    }

    /// With linux-cp on in `self` and `new`, the first VRF key that differs: the VRFs' names
    /// (each VRF's namespace is made at start) or an interface's VRF (its TAP is in its VRF's
    /// namespace).
    fn linux_cp_vrf_change(&self, new: &Config) -> Option<String> {
        if self.linux_cp.is_none() || new.linux_cp.is_none() {
            return None;
        }
        if !self.vrfs.keys().eq(new.vrfs.keys()) {
            return Some("vrfs (while linux-cp is on: the VRFs' namespaces are made at start)".into());
        }
        let vrfs = |c: &Config| -> BTreeMap<String, Option<String>> {
            let mut out = BTreeMap::new();
            for (name, i) in &c.interfaces {
                out.insert(format!("interfaces.{name}.vrf"), i.vrf.clone());
                for (sub, s) in &i.sub_interfaces {
                    out.insert(format!("interfaces.{name}.sub-interfaces.{sub}.vrf"), s.vrf.clone());
                }
            }
            out
        };
        let (old, new) = (vrfs(self), vrfs(new));
        let moved = old.iter().find(|&(key, vrf)| new.get(key).is_some_and(|v| v != vrf));
        moved.map(|(key, _)| format!("{key} (while linux-cp is on: its TAP is in its VRF's namespace)"))
    }

    /// Every address with the interface it is on: each interface's own, then its
    /// sub-interfaces', in name order.
    fn addresses(&self) -> impl Iterator<Item = (Owner<'_>, &IpPrefix)> {
        self.interfaces.iter().flat_map(|(name, i)| {
            let vrf = i.vrf.as_deref();
            let own = i.addresses.iter().map(move |a| (Owner { name, sub: None, vrf }, a));
            let subs = i.sub_interfaces.iter().flat_map(move |(&sub, s)| {
                s.addresses.iter().map(move |a| (Owner { name, sub: Some(sub), vrf: s.vrf.as_deref() }, a))
            });
            own.chain(subs)
        })
    }

    /// The configured addresses of interface or sub-interface `name` (`parent.sub-id`).
    pub fn addresses_of(&self, name: &str) -> Vec<IpPrefix> {
        self.addresses().filter(|(owner, _)| owner.to_string() == name).map(|(_, a)| *a).collect()
    }

    /// True when `name` is a configured interface or sub-interface (`parent.sub-id`).
    pub fn has_interface(&self, name: &str) -> bool {
        self.interfaces.contains_key(name)
            || name.rsplit_once('.').is_some_and(|(parent, sub)| {
                sub.parse::<u32>()
                    .is_ok_and(|sub| self.interfaces.get(parent).is_some_and(|i| i.sub_interfaces.contains_key(&sub)))
            })
    }
}

/// An interface or sub-interface named by its parent and sub-id, shown as `name` or
/// `name.sub`.
#[derive(Clone, Copy)]
struct Owner<'a> {
    name: &'a str,
    sub: Option<u32>,
    /// The VRF it is in (`None`: the default table).
    vrf: Option<&'a str>,
}

impl fmt::Display for Owner<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.sub {
            Some(sub) => write!(f, "{}.{sub}", self.name),
            None => f.write_str(self.name),
        }
    }
}
