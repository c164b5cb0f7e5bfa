//! The typed configuration model, read from and written to YAML.
//!
//! Keys follow vppcfg where it has them (`interfaces`, `sub-interfaces`, `addresses`, `l2xc`,
//! `mtu`, `state`) plus `workers`, `routes`, `neighbors` and `mpls`. Loading is two steps:
//! [`Config::from_yaml`] parses (unknown keys are errors) and [`Config::validate`] checks every
//! value and reference, so an error always names the field, the bad value and what is allowed.

use crate::interface::{L2_OVERHEAD, MAX_INTERFACES};
use crate::runtime::buffer::DATA_CAPACITY;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::str::FromStr;
use wire::MacAddr;

/// A configuration error that names the field, the value and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The YAML could not be parsed into the model (syntax, unknown key, wrong type).
    #[error("config: {0}")]
    Parse(String),
    /// A value is out of range or refers to something that does not exist.
    #[error("{field}: {value} is not allowed; allowed: {allowed}")]
    Invalid {
        /// Dotted path of the field, e.g. `interfaces.port0.mtu`.
        field: String,
        /// The offending value as written.
        value: String,
        /// What would be accepted.
        allowed: String,
    },
}

fn invalid(field: impl Into<String>, value: impl fmt::Display, allowed: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { field: field.into(), value: value.to_string(), allowed: allowed.into() }
}

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

/// Serde helpers for types that read and write themselves as text (`Display` + `FromStr`).
mod as_text {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use std::{fmt::Display, str::FromStr};

    pub fn serialize<T: Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
    where
        T: FromStr<Err: Display>,
        D: Deserializer<'de>,
    {
        String::deserialize(d)?.parse().map_err(D::Error::custom)
    }
}

/// A MAC address written as `aa:bb:cc:dd:ee:ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Mac(
    #[serde(with = "as_text")]
    #[schemars(with = "String")]
    pub MacAddr,
);

/// An address a prefix can be made of: IPv4, IPv6 or either.
pub trait PrefixAddr: Copy + FromStr + fmt::Display {
    /// How a prefix of it is written, for messages and the schema.
    const FORM: &'static str;
    /// The longest prefix of this address.
    fn max_len(&self) -> u8;
    /// The address family (4 or 6) and the address aligned to the left of a `u128`.
    fn key(&self) -> (u8, u128);
}

impl PrefixAddr for Ipv4Addr {
    const FORM: &'static str = "a.b.c.d/len";
    fn max_len(&self) -> u8 {
        32
    }
    fn key(&self) -> (u8, u128) {
        (4, crate::l3::fib::FibAddr::key(*self))
    }
}

impl PrefixAddr for Ipv6Addr {
    const FORM: &'static str = "x:x::x/len";
    fn max_len(&self) -> u8 {
        128
    }
    fn key(&self) -> (u8, u128) {
        (6, crate::l3::fib::FibAddr::key(*self))
    }
}

impl PrefixAddr for IpAddr {
    const FORM: &'static str = "a.b.c.d/len or x:x::x/len";
    fn max_len(&self) -> u8 {
        if self.is_ipv4() { 32 } else { 128 }
    }
    fn key(&self) -> (u8, u128) {
        match self {
            IpAddr::V4(a) => a.key(),
            IpAddr::V6(a) => a.key(),
        }
    }
}

/// A prefix written as `address/len`: [`Ipv4Prefix`], [`Ipv6Prefix`] or either ([`IpPrefix`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prefix<A> {
    /// The address as written (host bits may be set, as in an interface address).
    pub addr: A,
    /// Prefix length, 0 to the address length.
    pub len: u8,
}

/// An IPv4 prefix, `a.b.c.d/len`.
pub type Ipv4Prefix = Prefix<Ipv4Addr>;
/// An IPv6 prefix, `x:x::x/len`.
pub type Ipv6Prefix = Prefix<Ipv6Addr>;
/// An IPv4 or IPv6 prefix.
pub type IpPrefix = Prefix<IpAddr>;

impl<A: PrefixAddr> Prefix<A> {
    /// True when `addr` is inside the prefix (an address of the other family never is).
    pub fn contains<B: PrefixAddr>(&self, addr: B) -> bool {
        let ((fa, a), (fb, b)) = (self.addr.key(), addr.key());
        let mask = crate::l3::fib::key_mask(self.len);
        fa == fb && a & mask == b & mask
    }

    /// The network: the address with its host bits cleared, as a family and key.
    pub fn network(&self) -> (u8, u128) {
        let (f, a) = self.addr.key();
        (f, a & crate::l3::fib::key_mask(self.len))
    }
}

impl IpPrefix {
    /// The IPv4 prefix, if it is one.
    pub fn v4(&self) -> Option<Ipv4Prefix> {
        match self.addr {
            IpAddr::V4(addr) => Some(Prefix { addr, len: self.len }),
            IpAddr::V6(_) => None,
        }
    }

    /// The IPv6 prefix, if it is one.
    pub fn v6(&self) -> Option<Ipv6Prefix> {
        match self.addr {
            IpAddr::V6(addr) => Some(Prefix { addr, len: self.len }),
            IpAddr::V4(_) => None,
        }
    }
}

impl<A: PrefixAddr> FromStr for Prefix<A> {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, l) = s.split_once('/').ok_or_else(|| format!("'{s}' is not a prefix (want {})", A::FORM))?;
        let addr: A = a.parse().map_err(|_| format!("'{s}' is not a prefix (bad address '{a}')"))?;
        let max = addr.max_len();
        let len = l
            .parse::<u8>()
            .ok()
            .filter(|&l| l <= max)
            .ok_or_else(|| format!("'{s}' is not a prefix (length '{l}' not in 0..={max})"))?;
        Ok(Prefix { addr, len })
    }
}

impl<A: fmt::Display> fmt::Display for Prefix<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl<A: PrefixAddr> JsonSchema for Prefix<A> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Prefix ({})", A::FORM).into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "description": format!("A prefix, {}", A::FORM)})
    }
}

impl<A: PrefixAddr> Serialize for Prefix<A> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        as_text::serialize(self, s)
    }
}

impl<'de, A: PrefixAddr> Deserialize<'de> for Prefix<A> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        as_text::deserialize(d)
    }
}

/// The whole configuration.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Config {
    /// Worker threads and buffers.
    #[serde(default)]
    pub workers: Workers,
    /// Interfaces by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub interfaces: BTreeMap<String, InterfaceConfig>,
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

fn default_true() -> bool {
    true
}

fn default_metrics_address() -> std::net::SocketAddr {
    std::net::SocketAddr::from(([127, 0, 0, 1], 9482))
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig { enabled: true, address: default_metrics_address() }
    }
}

/// Each worker's megaflow cache for the flow rules (`flow-classify`): which layers run and
/// their sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FlowCacheConfig {
    /// The exact-match cache (8192 entries, heavy flows; default true).
    #[serde(default = "default_true")]
    pub emc: bool,
    /// The Cuckoo Distributor, predicting each flow's megaflow subtable (default true).
    #[serde(default = "default_true")]
    pub cd: bool,
    /// Flows the Cuckoo Distributor predicts, a power of two 8–16777216 (default 1048576:
    /// 4 MiB per worker). Size it to the concurrent flows.
    #[serde(default = "default_cd_entries")]
    pub cd_entries: u32,
    /// Megaflows a worker holds at most, 1–1000000 (default 200000).
    #[serde(default = "default_max_megaflows")]
    pub max_megaflows: u32,
}

fn default_cd_entries() -> u32 {
    1 << 20
}
fn default_max_megaflows() -> u32 {
    200_000
}

impl Default for FlowCacheConfig {
    fn default() -> Self {
        FlowCacheConfig {
            emc: true,
            cd: true,
            cd_entries: default_cd_entries(),
            max_megaflows: default_max_megaflows(),
        }
    }
}

impl FlowCacheConfig {
    fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

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

/// FIB sizing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FibConfig {
    /// IPv4: groups of 256 entries for /24s holding longer prefixes (1 KiB each), 1–1048576.
    #[serde(default = "default_tbl8_groups")]
    pub tbl8_groups: u32,
    /// IPv6: groups of 256 entries, one per 8 bits of a prefix beyond /24 that it shares
    /// with no other (1 KiB each; the synthetic full table of 230 k prefixes of `vecflow
    /// bench --scenario ip6-bgp` takes about 310 000), 1–4194303. Memory is taken only as
    /// groups are used.
    #[serde(default = "default_ip6_groups")]
    pub ip6_groups: u32,
}

fn default_tbl8_groups() -> u32 {
    4096
}

fn default_ip6_groups() -> u32 {
    65536
}

impl Default for FibConfig {
    fn default() -> Self {
        FibConfig { tbl8_groups: default_tbl8_groups(), ip6_groups: default_ip6_groups() }
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

/// Where the XDP program of an `af-xdp` interface runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum XdpModeConfig {
    /// Native where the driver has it, else skb.
    #[default]
    Auto,
    /// In the driver (fails where the driver has no XDP).
    Native,
    /// Generic XDP, after the kernel built an skb (every driver; slower).
    Skb,
}

/// Whether an `af-xdp` interface's frames move without a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ZeroCopyConfig {
    /// Zero-copy where the driver supports it, copy otherwise (veth: copy).
    #[default]
    Auto,
    /// Zero-copy, or fail at start.
    On,
    /// Copy.
    Off,
}

/// AF_XDP settings of one interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AfXdpConfig {
    /// Where the XDP program runs: auto, native or skb.
    #[serde(default)]
    pub mode: XdpModeConfig,
    /// auto, on or off. A worker's sockets share one UMEM, which the first of them (in
    /// interface name order) binds in copy or zero-copy mode for all.
    #[serde(default)]
    pub zero_copy: ZeroCopyConfig,
    /// Device rx queues received from (queues 0 to N−1), 1 to 64; each polled by one worker
    /// (see `rx-placement`). Every worker also needs a queue of its own to transmit on: the
    /// device must have at least `queues` plus the number of workers polling none of them.
    #[serde(default = "default_rx_queues")]
    pub queues: u16,
    /// Entries of each of a socket's four rings (rx, tx, fill, completion), a power of two
    /// from 64 to 16384. Each rx queue lends the kernel up to twice this many of its worker's
    /// buffers (fill and rx rings), and so does each interface a worker sends on (tx and
    /// completion rings).
    #[serde(default = "default_xdp_ring")]
    pub ring_size: u32,
}

fn default_xdp_ring() -> u32 {
    1024
}

impl Default for AfXdpConfig {
    fn default() -> Self {
        AfXdpConfig {
            mode: XdpModeConfig::Auto,
            zero_copy: ZeroCopyConfig::Auto,
            queues: default_rx_queues(),
            ring_size: default_xdp_ring(),
        }
    }
}

/// How a worker waits for an interface's rx queues when they are empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PollMode {
    /// Poll without pause: lowest latency, a whole core.
    #[default]
    Polling,
    /// Sleep in poll(2) until a queue has frames: least CPU, a wake-up per burst.
    Interrupt,
    /// Poll while traffic flows; sleep in poll(2) once the queues stayed empty a while.
    Adaptive,
}

/// Capture-file settings of one interface (driver `pcap`): what it receives and where what it
/// transmits goes. At least one of `read` and `write`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PcapConfig {
    /// Capture whose frames the interface receives, in file order: pcap or pcapng (told apart
    /// by content), Ethernet link type. Without it the interface receives nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<PathBuf>,
    /// Start `read` again from its first frame when it ends (else the interface receives each
    /// frame once, and `vecflow run` ends once every such read is done and forwarded).
    #[serde(default, rename = "loop", skip_serializing_if = "std::ops::Not::not")]
    pub looping: bool,
    /// Frames per second `read` is replayed at, 0 to 100000000; 0 (default) = as fast as the
    /// worker goes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rate_pps: u64,
    /// File every frame the interface transmits is written to, created or truncated at start:
    /// pcapng when the name ends in `.pcapng`, else pcap (Ethernet, microsecond timestamps).
    /// Without it, transmitted frames are counted and discarded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<PathBuf>,
}

fn is_default<T: Default + PartialEq>(x: &T) -> bool {
    *x == T::default()
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Highest `pcap.rate-pps`.
pub const MAX_PCAP_RATE: u64 = 100_000_000;

/// AF_PACKET settings of one interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AfPacketConfig {
    /// Bytes per rx ring block, a power of two from 4096 to 4194304 (whole frames never
    /// span blocks).
    #[serde(default = "default_block_size")]
    pub block_size: u32,
    /// Rx ring blocks per queue, 2 to 1024 (default 64: a 16 MiB ring).
    #[serde(default = "default_blocks")]
    pub blocks: u32,
    /// Milliseconds after which the kernel hands over a block that is not full, 1 to 1000:
    /// the longest a packet waits in the ring at low rates.
    #[serde(default = "default_block_timeout")]
    pub block_timeout_ms: u32,
    /// Rx queues: sockets joined in one PACKET_FANOUT group (flows hashed over them), each
    /// polled by its own worker, starting at the interface's rx-placement worker. 1 to
    /// `workers.count`.
    #[serde(default = "default_rx_queues")]
    pub rx_queues: u16,
}

fn default_block_size() -> u32 {
    1 << 18
}
fn default_blocks() -> u32 {
    64
}
fn default_block_timeout() -> u32 {
    1
}
fn default_rx_queues() -> u16 {
    1
}

impl Default for AfPacketConfig {
    fn default() -> Self {
        AfPacketConfig {
            block_size: default_block_size(),
            blocks: default_blocks(),
            block_timeout_ms: default_block_timeout(),
            rx_queues: default_rx_queues(),
        }
    }
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
    /// Accept MPLS frames.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mpls: bool,
    /// 802.1Q sub-interfaces by sub-id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sub_interfaces: BTreeMap<u32, SubInterfaceConfig>,
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

/// Largest MTU a buffer can carry.
pub const MAX_MTU: u16 = DATA_CAPACITY as u16 - L2_OVERHEAD;

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
    /// Accept MPLS frames.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mpls: bool,
    /// L2 cross-connect target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2xc: Option<String>,
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

/// MPLS label switching.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct Mpls {
    /// Incoming labels and what to do with them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub local_labels: Vec<LocalLabel>,
}

impl Mpls {
    fn is_empty(&self) -> bool {
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

/// The packet under a popped label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Payload {
    /// IPv4, routed by the IPv4 FIB.
    #[default]
    Ip4,
    /// IPv6, routed by the IPv6 FIB.
    Ip6,
}

/// The generator of one interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct GeneratorConfig {
    /// Streams, interleaved vector by vector.
    pub streams: Vec<StreamConfig>,
}

/// The frame a stream emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Template {
    /// Ethernet with an opaque payload (ethertype 0x88b5, local experimental); the
    /// varied addresses are the MACs.
    L2,
    /// Ethernet + IPv4 + UDP; the varied addresses are the IPv4 source and destination.
    #[default]
    Ipv4Udp,
    /// Ethernet + MPLS label stack + IPv4 + UDP, or IPv6 + UDP when the addresses are IPv6.
    Mpls,
    /// Ethernet + IPv6 + UDP; the varied addresses are the IPv6 source and destination (their
    /// last 32 bits).
    Ipv6Udp,
}

/// How a field walks its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RangeMode {
    /// start, start+1, …, start+count−1, start, …
    #[default]
    Increment,
    /// Uniformly random in [start, start+count−1], from a seeded PRNG.
    Random,
}

/// A range of addresses starting at the stream's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AddrRange {
    /// Number of distinct addresses, 1–4294967295.
    pub count: u32,
    /// How they are walked.
    #[serde(default)]
    pub mode: RangeMode,
}

impl AddrRange {
    /// A single address.
    pub const ONE: AddrRange = AddrRange { count: 1, mode: RangeMode::Increment };
}

/// One generator stream (T-Rex-like).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct StreamConfig {
    /// Frame template.
    #[serde(default)]
    pub template: Template,
    /// Frame size on the wire including the 4-byte FCS (64 = 60 bytes in the buffer).
    #[serde(default = "default_frame_size")]
    pub frame_size: u16,
    /// Source MAC (the base of the range for template `l2`).
    #[serde(default = "default_src_mac")]
    pub src_mac: Mac,
    /// Destination MAC (the base of the range for template `l2`). Default: the interface's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_mac: Option<Mac>,
    /// 802.1Q VLAN id to tag with, 1–4094.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<u16>,
    /// MPLS labels, outermost first (template `mpls`), each 16–1048575.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels: Vec<u32>,
    /// IP source (the base of the source range), of the template's family. Default:
    /// 16.0.0.1, or 2001:db8:16::1 for `ipv6-udp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub src_ip: Option<IpAddr>,
    /// IP destination (the base of the destination range), of the template's family.
    /// Default: 48.0.0.1, or 2001:db8:48::1 for `ipv6-udp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dst_ip: Option<IpAddr>,
    /// IPv6 destinations to walk instead of `dst-ip` and `dst-range.count` (template
    /// `ipv6-udp`), in the order of `dst-range.mode`: for traffic spread over a routing table.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dst_addresses: Vec<Ipv6Addr>,
    /// UDP source port.
    #[serde(default = "default_port")]
    pub src_port: u16,
    /// UDP destination port.
    #[serde(default = "default_port")]
    pub dst_port: u16,
    /// IPv4 TTL or IPv6 hop limit (and MPLS TTL).
    #[serde(default = "default_ttl")]
    pub ttl: u8,
    /// Source address range (IPv4, or MAC for `l2`).
    #[serde(default = "default_src_range")]
    pub src_range: AddrRange,
    /// Destination address range (IPv4, or MAC for `l2`).
    #[serde(default = "default_dst_range")]
    pub dst_range: AddrRange,
    /// Top labels walked from `labels[0]` (template `mpls`): traffic spread over many LSPs.
    /// Absent = `labels[0]` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_range: Option<AddrRange>,
    /// Packets per second; absent = as fast as the worker can.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_pps: Option<u64>,
    /// Packets to send, then stop; absent = no end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// Seed of the PRNG behind `random` ranges.
    #[serde(default = "default_seed")]
    pub seed: u64,
}

fn default_frame_size() -> u16 {
    64
}
fn default_src_mac() -> Mac {
    Mac(MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]))
}
fn default_port() -> u16 {
    1024
}
fn default_ttl() -> u8 {
    64
}
fn default_src_range() -> AddrRange {
    AddrRange { count: 256, mode: RangeMode::Increment }
}
fn default_dst_range() -> AddrRange {
    AddrRange::ONE
}
fn default_seed() -> u64 {
    1
}

impl StreamConfig {
    /// A stream with every default.
    pub fn new(template: Template) -> Self {
        serde_json::from_value(serde_json::json!({ "template": template })).expect("defaults deserialize")
    }

    /// Header bytes before the payload (Ethernet, tag, labels, IP, UDP).
    pub fn header_len(&self) -> usize {
        let l2 = 14 + if self.vlan.is_some() { 4 } else { 0 };
        match self.template {
            Template::L2 => l2,
            Template::Ipv4Udp => l2 + 28,
            Template::Mpls if self.src_ip().is_ipv6() => l2 + 4 * self.labels.len() + 48,
            Template::Mpls => l2 + 4 * self.labels.len() + 28,
            Template::Ipv6Udp => l2 + 48,
        }
    }

    /// The source address: `src-ip`, else the template's default (IPv4 for `mpls`).
    pub fn src_ip(&self) -> IpAddr {
        self.src_ip.unwrap_or(match self.template {
            Template::Ipv6Udp => IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0x16, 0, 0, 0, 0, 1)),
            _ => IpAddr::V4(Ipv4Addr::new(16, 0, 0, 1)),
        })
    }

    /// The destination address: `dst-ip`, else the default of the source's family.
    pub fn dst_ip(&self) -> IpAddr {
        self.dst_ip.unwrap_or(match self.src_ip() {
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0x48, 0, 0, 0, 0, 1)),
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::new(48, 0, 0, 1)),
        })
    }
}

/// Largest generator frame size: the buffer capacity plus the FCS.
pub const MAX_FRAME_SIZE: u16 = DATA_CAPACITY as u16 + 4;

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
        let w = &self.workers;
        if !(1..=64).contains(&w.count) {
            return Err(invalid("workers.count", w.count, "1 to 64"));
        }
        if !(1024..=1 << 20).contains(&w.buffers) {
            return Err(invalid("workers.buffers", w.buffers, "1024 to 1048576"));
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
        self.validate_flows()?;
        self.validate_sflow()
    }

    fn validate_flows(&self) -> Result<(), ConfigError> {
        if self.flows.len() > crate::flows::MAX_FLOWS {
            let max = crate::flows::MAX_FLOWS;
            return Err(invalid("flows", format!("{} rules", self.flows.len()), format!("at most {max}")));
        }
        for (k, text) in self.flows.iter().enumerate() {
            let known = |name: &str| self.has_interface(name).then_some(1);
            crate::flows::parse(text, k as u32, known)
                .map_err(|why| invalid(format!("flows[{k}]"), text, format!("a rule in ovs-ofctl syntax ({why})")))?;
        }
        let c = &self.flow_cache;
        if !(8..=1 << 24).contains(&c.cd_entries) || !c.cd_entries.is_power_of_two() {
            return Err(invalid("flow-cache.cd-entries", c.cd_entries, "a power of two 8–16777216"));
        }
        if !(1..=1_000_000).contains(&c.max_megaflows) {
            return Err(invalid("flow-cache.max-megaflows", c.max_megaflows, "1–1000000"));
        }
        Ok(())
    }

    fn validate_interface(&self, name: &str, i: &InterfaceConfig) -> Result<(), ConfigError> {
        let f = |k: &str| format!("interfaces.{name}.{k}");
        if name.is_empty() || name.len() > 63 || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:".contains(c))
        {
            return Err(invalid(
                format!("interfaces.{name}"),
                format!("name '{name}'"),
                "1–63 characters of a-z A-Z 0-9 - _ . / :",
            ));
        }
        if let Some(x) = i.index
            && (x == 0 || x as usize >= MAX_INTERFACES)
        {
            return Err(invalid(f("index"), x, format!("1 to {}", MAX_INTERFACES - 1)));
        }
        if let Some(m) = i.mtu.filter(|m| !(68..=MAX_MTU).contains(m)) {
            return Err(invalid(f("mtu"), m, format!("68 to {MAX_MTU}")));
        }
        let xdp_max = crate::drivers::af_xdp::MAX_MTU;
        if let Some(m) = i.mtu.filter(|&m| i.driver == Driver::AfXdp && m > xdp_max) {
            return Err(invalid(
                f("mtu"),
                m,
                format!(
                    "68 to {xdp_max} with driver af-xdp (a frame must fit a buffer after the kernel's XDP headroom)"
                ),
            ));
        }
        self.validate_driver(name, i)?;
        self.validate_placement(name, i)?;
        if let Some(peer) = &i.l2xc {
            if !self.has_interface(peer) || peer == name {
                return Err(invalid(f("l2xc"), peer, "the name of another configured interface"));
            }
            if !i.addresses.is_empty() {
                return Err(invalid(
                    f("addresses"),
                    format!("{} addresses", i.addresses.len()),
                    "none on an L2 cross-connected interface",
                ));
            }
        }
        for (sub, s) in &i.sub_interfaces {
            let sf = |k: &str| format!("interfaces.{name}.sub-interfaces.{sub}.{k}");
            if *sub == 0 {
                return Err(invalid(format!("interfaces.{name}.sub-interfaces"), sub, "sub-ids from 1"));
            }
            if !(1..=4094).contains(&s.encapsulation.dot1q) {
                return Err(invalid(sf("encapsulation.dot1q"), s.encapsulation.dot1q, "1 to 4094"));
            }
            if let Some(m) = s.mtu.filter(|&m| !(68..=i.mtu()).contains(&m)) {
                return Err(invalid(sf("mtu"), m, format!("68 to the parent's MTU ({})", i.mtu())));
            }
            if let Some(peer) = s.l2xc.as_ref().filter(|p| !self.has_interface(p) || **p == format!("{name}.{sub}")) {
                return Err(invalid(sf("l2xc"), peer, "the name of a configured interface"));
            }
            if s.l2xc.is_some() && !s.addresses.is_empty() {
                return Err(invalid(
                    sf("addresses"),
                    format!("{} addresses", s.addresses.len()),
                    "none on an L2 cross-connected sub-interface",
                ));
            }
        }
        let dups = i.sub_interfaces.values().map(|s| s.encapsulation.dot1q).collect::<std::collections::BTreeSet<_>>();
        if dups.len() != i.sub_interfaces.len() {
            return Err(invalid(
                format!("interfaces.{name}.sub-interfaces"),
                "a repeated dot1q tag",
                "each VLAN id on at most one sub-interface",
            ));
        }
        if let Some(g) = &i.generator {
            for (k, s) in g.streams.iter().enumerate() {
                validate_stream(&format!("interfaces.{name}.generator.streams[{k}]"), s)?;
            }
        }
        Ok(())
    }

    /// Rx placement: workers that exist, `worker` or `queues` (one per rx queue), not both.
    fn validate_placement(&self, name: &str, i: &InterfaceConfig) -> Result<(), ConfigError> {
        let f = |k: &str| format!("interfaces.{name}.rx-placement.{k}");
        let Some(p) = &i.rx_placement else { return Ok(()) };
        let workers = self.workers.count;
        let range = || format!("0 to {} (workers.count is {workers})", workers - 1);
        if let Some(w) = p.worker.filter(|&w| w >= workers) {
            return Err(invalid(f("worker"), w, range()));
        }
        if let Some((q, w)) = p.queues.iter().enumerate().find(|&(_, &w)| w >= workers) {
            return Err(invalid(f(&format!("queues[{q}]")), w, range()));
        }
        if p.worker.is_some() && !p.queues.is_empty() {
            return Err(invalid(f("queues"), "set with worker", "either worker or queues"));
        }
        if !p.queues.is_empty() && p.queues.len() != usize::from(i.rx_queue_count()) {
            return Err(invalid(
                f("queues"),
                format!("{} worker(s)", p.queues.len()),
                format!("one worker per rx queue: {}", i.rx_queue_count()),
            ));
        }
        Ok(())
    }

    /// The driver's own settings: a host interface exactly for `af-packet`, generator streams
    /// only on the generator, ring sizes in range, each host interface used once.
    fn validate_driver(&self, name: &str, i: &InterfaceConfig) -> Result<(), ConfigError> {
        let f = |k: &str| format!("interfaces.{name}.{k}");
        match (i.driver, &i.host_interface) {
            (Driver::AfPacket | Driver::AfXdp, None) => {
                return Err(invalid(f("host-interface"), "(missing)", "the Linux interface to use, e.g. eth1"));
            }
            (Driver::AfPacket | Driver::AfXdp, Some(h)) => {
                if h.is_empty() || h.len() > 15 || h.contains(['/', ' ', ':']) || h == "." || h == ".." {
                    return Err(invalid(
                        f("host-interface"),
                        h,
                        "a Linux interface name: 1 to 15 characters, no '/', ':' or space",
                    ));
                }
                if let Some((other, _)) =
                    self.interfaces.iter().find(|(n, o)| n.as_str() < name && o.host_interface.as_ref() == Some(h))
                {
                    return Err(invalid(
                        f("host-interface"),
                        h,
                        format!("a host interface no other interface uses ({other} has it)"),
                    ));
                }
            }
            (Driver::Generator | Driver::Pcap, Some(h)) => {
                return Err(invalid(f("host-interface"), h, "only with driver: af-packet or af-xdp"));
            }
            (Driver::Generator | Driver::Pcap, None) => {}
        }
        self.validate_pcap(name, i)?;
        if i.driver != Driver::Generator && i.generator.is_some() {
            return Err(invalid(f("generator"), "streams", "generator streams only with driver: generator"));
        }
        if i.rx_mode != PollMode::Polling && !matches!(i.driver, Driver::AfPacket | Driver::AfXdp) {
            return Err(invalid(f("rx-mode"), "set", "only with driver: af-packet or af-xdp"));
        }
        if let Some(a) = &i.af_xdp {
            if i.driver != Driver::AfXdp {
                return Err(invalid(f("af-xdp"), "settings", "af-xdp settings only with driver: af-xdp"));
            }
            if !a.ring_size.is_power_of_two() || !(64..=16384).contains(&a.ring_size) {
                return Err(invalid(f("af-xdp.ring-size"), a.ring_size, "a power of two from 64 to 16384"));
            }
            if !(1..=64).contains(&a.queues) {
                return Err(invalid(f("af-xdp.queues"), a.queues, "1 to 64"));
            }
        }
        if let Some(a) = &i.af_packet {
            if i.driver != Driver::AfPacket {
                return Err(invalid(f("af-packet"), "settings", "af-packet settings only with driver: af-packet"));
            }
            if !a.block_size.is_power_of_two() || !(4096..=1 << 22).contains(&a.block_size) {
                return Err(invalid(f("af-packet.block-size"), a.block_size, "a power of two from 4096 to 4194304"));
            }
            if !(2..=1024).contains(&a.blocks) {
                return Err(invalid(f("af-packet.blocks"), a.blocks, "2 to 1024"));
            }
            if !(1..=1000).contains(&a.block_timeout_ms) {
                return Err(invalid(f("af-packet.block-timeout-ms"), a.block_timeout_ms, "1 to 1000"));
            }
            if !(1..=self.workers.count).contains(&a.rx_queues) {
                return Err(invalid(
                    f("af-packet.rx-queues"),
                    a.rx_queues,
                    format!("1 to {} (workers.count)", self.workers.count),
                ));
            }
        }
        Ok(())
    }

    /// Capture files exactly for driver `pcap`: something to read or write, loop and rate only
    /// with a read, no file written by two interfaces or both read and written.
    fn validate_pcap(&self, name: &str, i: &InterfaceConfig) -> Result<(), ConfigError> {
        let f = |k: &str| format!("interfaces.{name}.pcap{k}");
        let p = match (i.driver, &i.pcap) {
            (Driver::Pcap, None) => {
                return Err(invalid(f(""), "(missing)", "a capture to read and/or write, e.g. {read: in.pcap}"));
            }
            (Driver::Pcap, Some(p)) => p,
            (_, Some(_)) => return Err(invalid(f(""), "settings", "pcap settings only with driver: pcap")),
            (_, None) => return Ok(()),
        };
        if p.read.is_none() && p.write.is_none() {
            return Err(invalid(f(""), "{}", "read, write or both"));
        }
        if p.read.is_none() && (p.looping || p.rate_pps != 0) {
            return Err(invalid(f(if p.looping { ".loop" } else { ".rate-pps" }), "set", "only with pcap.read"));
        }
        if p.rate_pps > MAX_PCAP_RATE {
            return Err(invalid(f(".rate-pps"), p.rate_pps, format!("0 (as fast as possible) to {MAX_PCAP_RATE}")));
        }
        if let Some(w) = &p.write {
            if w.as_os_str().is_empty() {
                return Err(invalid(f(".write"), "\"\"", "a file name"));
            }
            let writers = self.interfaces.iter().filter_map(|(n, o)| Some((n, o.pcap.as_ref()?)));
            for (other, o) in writers {
                if o.read.as_ref() == Some(w) {
                    return Err(invalid(
                        f(".write"),
                        w.display(),
                        format!("a file no interface reads ({other} reads it)"),
                    ));
                }
                if other.as_str() < name && o.write.as_ref() == Some(w) {
                    return Err(invalid(
                        f(".write"),
                        w.display(),
                        format!("a file no other interface writes ({other} writes it)"),
                    ));
                }
            }
        }
        if p.read.as_ref().is_some_and(|r| r.as_os_str().is_empty()) {
            return Err(invalid(f(".read"), "\"\"", "a capture file name"));
        }
        Ok(())
    }

    fn validate_sflow(&self) -> Result<(), ConfigError> {
        let rates = |f: String, r: u32| {
            if (1..=1 << 30).contains(&r) { Ok(()) } else { Err(invalid(f, r, "1 to 1073741824")) }
        };
        for (n, i) in &self.interfaces {
            if let Some(r) = i.sflow.and_then(|s| s.sampling_rate) {
                rates(format!("interfaces.{n}.sflow.sampling-rate"), r)?;
            }
            if i.sflow.is_some_and(|s| s.enable) && self.sflow.is_none() {
                return Err(invalid(
                    format!("interfaces.{n}.sflow"),
                    "enable: true",
                    "only with a top-level sflow: section",
                ));
            }
        }
        let Some(s) = &self.sflow else { return Ok(()) };
        rates("sflow.sampling-rate".into(), s.sampling_rate)?;
        if s.agent_address.is_none() && self.first_address().is_none() {
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
        let agent_v6 = s.agent_address.or(self.first_address()).is_some_and(|a| a.is_ipv6());
        let longest_name = self.interfaces.keys().map(String::len).max().unwrap_or(0);
        let least = crate::sflow::agent::min_datagram_size(agent_v6, s.header_bytes, longest_name).max(200);
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
        if s.collectors.len() > 16 {
            return Err(invalid("sflow.collectors", format!("{} collectors", s.collectors.len()), "at most 16"));
        }
        Ok(())
    }

    fn validate_l3(&self) -> Result<(), ConfigError> {
        if !(1..=1 << 20).contains(&self.fib.tbl8_groups) {
            return Err(invalid("fib.tbl8-groups", self.fib.tbl8_groups, "1 to 1048576"));
        }
        if !(1..=crate::l3::fib::MAX_INDEX).contains(&self.fib.ip6_groups) {
            return Err(invalid("fib.ip6-groups", self.fib.ip6_groups, format!("1 to {}", crate::l3::fib::MAX_INDEX)));
        }
        let known = |n: &String| self.has_interface(n);
        let connected = |a: IpAddr| self.addresses().any(|(_, p)| p.contains(a));
        let mut addresses = BTreeMap::new();
        for (owner, a) in self.addresses() {
            if let IpAddr::V6(v6) = a.addr
                && (v6.is_unspecified() || v6.is_loopback() || v6.is_multicast())
            {
                return Err(invalid(
                    format!("interfaces.{owner}.addresses"),
                    a,
                    "a unicast IPv6 address (not ::, ::1 or multicast ff00::/8)",
                ));
            }
            // A link-local address names an interface only on its link: fe80::1 may be on
            // every link (as routers often have it).
            if !is_link_local(a.addr)
                && let Some(other) = addresses.insert(a.addr, owner)
            {
                return Err(invalid(
                    format!("interfaces.{owner}.addresses"),
                    a,
                    format!("an address configured once ({other} already has {})", a.addr),
                ));
            }
        }
        let mut prefixes = BTreeMap::new();
        for (k, r) in self.routes.iter().enumerate() {
            if let Some(first) = prefixes.insert((r.prefix.network(), r.prefix.len), k) {
                return Err(invalid(
                    format!("routes[{k}].prefix"),
                    r.prefix,
                    format!("a prefix no other route has (routes[{first}] has it)"),
                ));
            }
            if r.via.is_ipv4() != r.prefix.addr.is_ipv4() {
                let family = if r.prefix.addr.is_ipv4() { "IPv4" } else { "IPv6" };
                return Err(invalid(
                    format!("routes[{k}].via"),
                    r.via,
                    format!("an {family} next hop, as the prefix is"),
                ));
            }
            if let Some(n) = r.interface.as_ref().filter(|n| !known(n)) {
                return Err(invalid(format!("routes[{k}].interface"), n, "the name of a configured interface"));
            }
            if r.interface.is_none() && is_link_local(r.via) {
                return Err(invalid(
                    format!("routes[{k}].interface"),
                    "(missing)",
                    format!("the interface a link-local next hop ({}) is on", r.via),
                ));
            }
            if r.interface.is_none() && !connected(r.via) {
                return Err(invalid(
                    format!("routes[{k}].via"),
                    r.via,
                    format!(
                        "an address inside a configured interface's subnet, or name the interface in routes[{k}].interface"
                    ),
                ));
            }
            check_labels(&format!("routes[{k}].out-labels"), &r.out_labels)?;
        }
        let mut neighbors = BTreeMap::new();
        for (k, n) in self.neighbors.iter().enumerate() {
            if !known(&n.interface) {
                return Err(invalid(
                    format!("neighbors[{k}].interface"),
                    &n.interface,
                    "the name of a configured interface",
                ));
            }
            if let Some(first) = neighbors.insert((&n.interface, n.address), k) {
                return Err(invalid(
                    format!("neighbors[{k}].address"),
                    n.address,
                    format!("an address not already a neighbor on {} (neighbors[{first}] is)", n.interface),
                ));
            }
        }
        if self.mpls.local_labels.len() > usize::from(u16::MAX) {
            let n = self.mpls.local_labels.len();
            return Err(invalid("mpls.local-labels", format!("{n} entries"), "at most 65535 entries"));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (k, l) in self.mpls.local_labels.iter().enumerate() {
            let f = |x: &str| format!("mpls.local-labels[{k}].{x}");
            check_labels(&f("label"), &[l.label])?;
            check_labels(&f("out-labels"), &l.out_labels)?;
            if !seen.insert(l.label) {
                return Err(invalid(f("label"), l.label, "a label no other local-label entry uses"));
            }
            if !l.out_labels.is_empty() && l.payload != Payload::Ip4 {
                return Err(invalid(f("payload"), "ip6", "only for a pop (no out-labels): a swap keeps the payload"));
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
    /// routes, neighbors, MPLS local labels, flow rules and the flow cache's settings, of each interface and sub-interface its state,
    /// MTU, addresses, MPLS flag, cross-connect and description, each interface's sFlow
    /// settings, and the sFlow agent's sampling rate, direction, header bytes and polling
    /// interval (turning the agent on or off, collectors and the rest need a restart).
    pub fn needs_restart(&self, new: &Config) -> Option<String> {
        let live = |mut v: serde_json::Value| {
            for key in ["routes", "neighbors", "mpls", "flows", "flow-cache"] {
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
                    for key in ["state", "mtu", "addresses", "mpls", "l2xc"] {
                        s.as_object_mut().map(|o| o.remove(key));
                    }
                }
                for key in ["state", "mtu", "addresses", "mpls", "l2xc", "description", "sflow", "rx-mode"] {
                    i.as_object_mut().map(|o| o.remove(key));
                }
            }
            v
        };
        let to_json = |c: &Config| serde_json::to_value(c).expect("a configuration serializes");
        first_difference(&live(to_json(self)), &live(to_json(new)), "")
    }

    /// Every address with the interface it is on: each interface's own, then its
    /// sub-interfaces', in name order.
    fn addresses(&self) -> impl Iterator<Item = (Owner<'_>, &IpPrefix)> {
        self.interfaces.iter().flat_map(|(name, i)| {
            let own = i.addresses.iter().map(move |a| (Owner { name, sub: None }, a));
            let subs = i
                .sub_interfaces
                .iter()
                .flat_map(move |(&sub, s)| s.addresses.iter().map(move |a| (Owner { name, sub: Some(sub) }, a)));
            own.chain(subs)
        })
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
}

impl fmt::Display for Owner<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.sub {
            Some(sub) => write!(f, "{}.{sub}", self.name),
            None => f.write_str(self.name),
        }
    }
}

/// True for an IPv6 link-local address (fe80::/10), which names a neighbor only together
/// with an interface.
pub fn is_link_local(a: IpAddr) -> bool {
    matches!(a, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80)
}

/// The largest MPLS label (20 bits).
const MAX_LABEL: u32 = (1 << 20) - 1;

fn check_labels(field: &str, labels: &[u32]) -> Result<(), ConfigError> {
    match labels.iter().find(|&&l| !(16..=MAX_LABEL).contains(&l)) {
        Some(l) => Err(invalid(field, l, "labels 16 to 1048575")),
        None if labels.len() > 8 => Err(invalid(field, format!("{} labels", labels.len()), "at most 8 labels")),
        None => Ok(()),
    }
}

fn validate_stream(field: &str, s: &StreamConfig) -> Result<(), ConfigError> {
    let f = |k: &str| format!("{field}.{k}");
    let min = (s.header_len() as u16 + 4).max(64);
    if !(min..=MAX_FRAME_SIZE).contains(&s.frame_size) {
        return Err(invalid(
            f("frame-size"),
            s.frame_size,
            format!("{min} to {MAX_FRAME_SIZE} bytes including the FCS (the headers need {min})"),
        ));
    }
    if let Some(v) = s.vlan.filter(|v| !(1..=4094).contains(v)) {
        return Err(invalid(f("vlan"), v, "1 to 4094"));
    }
    match s.template {
        Template::Mpls if s.labels.is_empty() => {
            return Err(invalid(f("labels"), "[]", "1 to 8 labels for template mpls"));
        }
        Template::Mpls => check_labels(&f("labels"), &s.labels)?,
        _ if !s.labels.is_empty() => {
            return Err(invalid(f("labels"), format!("{:?}", s.labels), "labels only with template mpls"));
        }
        _ => {}
    }
    // An mpls stream carries IPv6 when its source is IPv6; the destination must agree.
    let v6 = s.template == Template::Ipv6Udp || (s.template == Template::Mpls && s.src_ip().is_ipv6());
    for (k, a) in [("src-ip", s.src_ip), ("dst-ip", s.dst_ip)] {
        match a {
            Some(IpAddr::V4(a)) if v6 => {
                return Err(invalid(f(k), a, "an IPv6 address, as the stream carries IPv6"));
            }
            Some(IpAddr::V6(a)) if !v6 => {
                return Err(invalid(
                    f(k),
                    a,
                    "an IPv4 address (IPv6 needs template ipv6-udp, or mpls with an IPv6 src-ip)",
                ));
            }
            _ => {}
        }
    }
    if !s.dst_addresses.is_empty() && !v6 {
        return Err(invalid(f("dst-addresses"), "(given)", "a list only with template ipv6-udp"));
    }
    if s.dst_addresses.len() > u32::MAX as usize {
        return Err(invalid(f("dst-addresses"), s.dst_addresses.len(), "at most 4294967295 addresses"));
    }
    for (k, r) in [("src-range.count", s.src_range), ("dst-range.count", s.dst_range)] {
        if r.count == 0 {
            return Err(invalid(f(k), r.count, "1 to 4294967295"));
        }
    }
    if let Some(r) = s.label_range {
        let Some(&top) = s.labels.first() else {
            return Err(invalid(f("label-range"), "(given)", "a range only with template mpls and its labels"));
        };
        let most = MAX_LABEL - top + 1;
        if !(1..=most).contains(&r.count) {
            return Err(invalid(
                f("label-range.count"),
                r.count,
                format!("1 to {most} (labels {top} + count - 1 up to {MAX_LABEL})"),
            ));
        }
    }
    if s.count == Some(0) {
        return Err(invalid(f("count"), 0, "1 to 18446744073709551615 packets, or absent for no end"));
    }
    if let Some(r) = s.rate_pps.filter(|&r| !(1..=1_000_000_000).contains(&r)) {
        return Err(invalid(f("rate-pps"), r, "1 to 1000000000 packets per second, or absent for unlimited"));
    }
    Ok(())
}
