//! The embedded generator's streams (`generator`), with their checks.

use crate::net::{ConfigError, MAX_LABEL, Mac, check_labels, invalid};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use wire::MacAddr;

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

/// Checks stream `s` (named `field`) for buffers of `data_size` bytes: its largest frame is
/// that plus the FCS.
pub(crate) fn validate_stream(field: &str, s: &StreamConfig, data_size: u16) -> Result<(), ConfigError> {
    let f = |k: &str| format!("{field}.{k}");
    let min = (s.header_len() as u16 + 4).max(64);
    let max = data_size + 4;
    if !(min..=max).contains(&s.frame_size) {
        return Err(invalid(
            f("frame-size"),
            s.frame_size,
            format!(
                "{min} to {max} bytes including the FCS (the headers need {min}; buffers.data-size {data_size} plus \
                 the FCS)"
            ),
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
