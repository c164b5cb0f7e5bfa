//! The sFlow v5 data model.

use serde::Serialize;
use std::borrow::Cow;
use std::net::IpAddr;

/// A structure's tag: `(enterprise << 12) | format`. Enterprise 0 is sflow.org's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct DataFormat {
    /// SMI enterprise number (20 bits).
    pub enterprise: u32,
    /// Format number (12 bits).
    pub format: u32,
}

impl DataFormat {
    /// A standard (enterprise 0) format.
    pub const fn standard(format: u32) -> Self {
        DataFormat { enterprise: 0, format }
    }

    /// From the wire word.
    pub fn from_u32(v: u32) -> Self {
        DataFormat { enterprise: v >> 12, format: v & 0xfff }
    }

    /// To the wire word.
    pub fn to_u32(self) -> u32 {
        (self.enterprise << 12) | (self.format & 0xfff)
    }
}

impl std::fmt::Display for DataFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.enterprise, self.format)
    }
}

/// A datagram: the header and its samples.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Datagram<'a> {
    /// The agent's address (its stable identity; collectors key on it).
    pub agent: IpAddr,
    /// Separates independent datagram streams of one agent.
    pub sub_agent_id: u32,
    /// +1 per datagram of this (agent, sub-agent) stream.
    pub sequence: u32,
    /// Milliseconds since the agent started.
    pub uptime_ms: u32,
    /// The samples.
    pub samples: Vec<Sample<'a>>,
}

/// A data source: `class` 0 = ifIndex, 1 = smonVlanDataSource, 2 = entPhysicalEntry,
/// 3 = entLogicalEntry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct DataSource {
    /// Source class.
    pub class: u32,
    /// Index within the class (an ifIndex for class 0).
    pub index: u32,
}

impl DataSource {
    /// An interface data source (class 0).
    pub const fn interface(if_index: u32) -> Self {
        DataSource { class: 0, index: if_index }
    }

    /// True when the compact `source_id` word can hold it.
    pub fn fits_compact(&self) -> bool {
        self.class <= 0xff && self.index <= 0x00ff_ffff
    }
}

/// The input or output of a flow sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Interface {
    /// An ifIndex; 0 means unknown.
    Index(u32),
    /// The device itself (compact 0x3FFFFFFF, expanded 0xFFFFFFFF).
    Internal,
    /// The packet was discarded; the value is the reason code (legacy; prefer discard samples).
    Discarded(u32),
    /// Sent to several interfaces; the count, 0 = unknown.
    Multiple(u32),
}

/// Largest value the compact interface encoding carries (0x3FFFFFFF is "internal").
pub const COMPACT_INTERFACE_MAX: u32 = 0x3fff_fffe;

impl Interface {
    /// The (format, value) pair of the expanded encoding.
    pub fn expanded(self) -> (u32, u32) {
        match self {
            Interface::Index(v) => (0, v),
            Interface::Internal => (0, u32::MAX),
            Interface::Discarded(v) => (1, v),
            Interface::Multiple(v) => (2, v),
        }
    }

    /// True when the compact encoding can carry it.
    pub fn fits_compact(self) -> bool {
        match self {
            Interface::Internal => true,
            Interface::Index(v) | Interface::Discarded(v) | Interface::Multiple(v) => v <= COMPACT_INTERFACE_MAX,
        }
    }
}

/// One sample of a datagram.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sample<'a> {
    /// A packet flow sample (0:1 or 0:3).
    Flow(FlowSample<'a>),
    /// A counter sample (0:2 or 0:4).
    Counters(CountersSample<'a>),
    /// A discarded packet (0:5).
    Discard(DiscardSample<'a>),
    /// A sample type this codec does not know, kept as its body.
    Unknown {
        /// Its tag.
        format: DataFormat,
        /// Its body.
        #[serde(serialize_with = "ser_bytes")]
        data: Cow<'a, [u8]>,
    },
}

/// A packet flow sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FlowSample<'a> {
    /// +1 per flow sample of this data source.
    pub sequence: u32,
    /// Where it was sampled.
    pub source: DataSource,
    /// 1-in-N.
    pub sampling_rate: u32,
    /// Packets that could have been sampled (cumulative).
    pub sample_pool: u32,
    /// Samples lost for lack of resources (cumulative).
    pub drops: u32,
    /// Input interface.
    pub input: Interface,
    /// Output interface.
    pub output: Interface,
    /// Flow records.
    pub records: Vec<FlowRecord<'a>>,
}

/// A counter sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CountersSample<'a> {
    /// +1 per counter sample of this data source.
    pub sequence: u32,
    /// Whose counters.
    pub source: DataSource,
    /// Counter records.
    pub records: Vec<CounterRecord<'a>>,
}

/// A discarded packet (sflow_drops.txt).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiscardSample<'a> {
    /// +1 per discard sample of this data source.
    pub sequence: u32,
    /// Where it was dropped (always written in the expanded form).
    pub source: DataSource,
    /// Discard records lost to rate limits or resources (cumulative).
    pub drops: u32,
    /// ifIndex it arrived on, 0 if unknown.
    pub input: u32,
    /// ifIndex of an egress drop, else 0.
    pub output: u32,
    /// Drop reason code (e.g. 0 net unreachable, 257 TTL exceeded, 258 ACL).
    pub reason: u32,
    /// Flow records describing the packet (usually a raw header).
    pub records: Vec<FlowRecord<'a>>,
}

/// A flow record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowRecord<'a> {
    /// 0:1 sampled header.
    RawHeader(RawHeader<'a>),
    /// 0:2 sampled Ethernet.
    Ethernet(SampledEthernet),
    /// 0:3 sampled IPv4.
    Ipv4(SampledIpv4),
    /// 0:4 sampled IPv6.
    Ipv6(SampledIpv6),
    /// 0:1001 extended switch.
    Switch(ExtendedSwitch),
    /// 0:1002 extended router.
    Router(ExtendedRouter),
    /// 0:1006 extended MPLS.
    Mpls(ExtendedMpls),
    /// A record this codec does not know, kept as its body.
    Unknown {
        /// Its tag.
        format: DataFormat,
        /// Its body.
        #[serde(serialize_with = "ser_bytes")]
        data: Cow<'a, [u8]>,
    },
}

/// Header protocol 1: Ethernet (ISO 8802-3).
pub const HEADER_PROTOCOL_ETHERNET: u32 = 1;

/// 0:1 sampled header: the first bytes of the packet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RawHeader<'a> {
    /// Header protocol (1 = Ethernet, 11 = IPv4, 12 = IPv6, 13 = MPLS, …).
    pub protocol: u32,
    /// Original frame length on the wire, FCS included.
    pub frame_length: u32,
    /// Bytes removed before the header was taken (4 for the FCS).
    pub stripped: u32,
    /// The header bytes.
    #[serde(serialize_with = "ser_bytes")]
    pub header: Cow<'a, [u8]>,
}

/// 0:2 sampled Ethernet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SampledEthernet {
    /// Frame length.
    pub length: u32,
    /// Source MAC.
    pub src: [u8; 6],
    /// Destination MAC.
    pub dst: [u8; 6],
    /// Ethertype.
    pub eth_type: u32,
}

/// 0:3 sampled IPv4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SampledIpv4 {
    /// IP packet length.
    pub length: u32,
    /// IP protocol.
    pub protocol: u32,
    /// Source address.
    pub src: std::net::Ipv4Addr,
    /// Destination address.
    pub dst: std::net::Ipv4Addr,
    /// Source port.
    pub src_port: u32,
    /// Destination port.
    pub dst_port: u32,
    /// TCP flags.
    pub tcp_flags: u32,
    /// Type of service.
    pub tos: u32,
}

/// 0:4 sampled IPv6.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SampledIpv6 {
    /// IP packet length.
    pub length: u32,
    /// Next header.
    pub protocol: u32,
    /// Source address.
    pub src: std::net::Ipv6Addr,
    /// Destination address.
    pub dst: std::net::Ipv6Addr,
    /// Source port.
    pub src_port: u32,
    /// Destination port.
    pub dst_port: u32,
    /// TCP flags.
    pub tcp_flags: u32,
    /// Priority (traffic class).
    pub priority: u32,
}

/// 0:1001 extended switch: VLANs in and out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ExtendedSwitch {
    /// 802.1Q VLAN id of the incoming frame.
    pub src_vlan: u32,
    /// 802.1p priority of the incoming frame.
    pub src_priority: u32,
    /// 802.1Q VLAN id of the outgoing frame.
    pub dst_vlan: u32,
    /// 802.1p priority of the outgoing frame.
    pub dst_priority: u32,
}

/// 0:1002 extended router: next hop and prefix lengths.
///
/// Next hops are always written as IPv4 or IPv6 (0.0.0.0 when unknown): sflowtool abandons a
/// datagram at an address of type 0 ("unknown"), although the specification allows it. The
/// decoder reads type 0 as 0.0.0.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ExtendedRouter {
    /// Next hop (0.0.0.0 when unknown).
    pub next_hop: IpAddr,
    /// Source prefix length.
    pub src_mask_len: u32,
    /// Destination prefix length.
    pub dst_mask_len: u32,
}

/// 0:1006 extended MPLS: next hop and label stacks (RFC 3032 entries, top first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExtendedMpls {
    /// Next hop (0.0.0.0 when unknown; see [`ExtendedRouter`]).
    pub next_hop: IpAddr,
    /// Label stack received.
    pub in_stack: Vec<u32>,
    /// Label stack sent.
    pub out_stack: Vec<u32>,
}

/// A counter record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterRecord<'a> {
    /// 0:1 generic interface counters.
    Generic(IfCounters),
    /// 0:2 Ethernet interface counters.
    Ethernet(EthernetCounters),
    /// 0:5 VLAN counters.
    Vlan(VlanCounters),
    /// 0:1005 port name (ifName).
    PortName(#[serde(serialize_with = "ser_text")] Cow<'a, [u8]>),
    /// A record this codec does not know, kept as its body.
    Unknown {
        /// Its tag.
        format: DataFormat,
        /// Its body.
        #[serde(serialize_with = "ser_bytes")]
        data: Cow<'a, [u8]>,
    },
}

/// 0:1 generic interface counters (IF-MIB). Unknown counters are all-ones, unknown gauges 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[allow(missing_docs)] // field names are the IF-MIB object names
pub struct IfCounters {
    pub if_index: u32,
    pub if_type: u32,
    pub if_speed: u64,
    /// 0 unknown, 1 full-duplex, 2 half-duplex, 3 in, 4 out.
    pub if_direction: u32,
    /// bit 0 ifAdminStatus up, bit 1 ifOperStatus up.
    pub if_status: u32,
    pub in_octets: u64,
    pub in_ucast_pkts: u32,
    pub in_multicast_pkts: u32,
    pub in_broadcast_pkts: u32,
    pub in_discards: u32,
    pub in_errors: u32,
    pub in_unknown_protos: u32,
    pub out_octets: u64,
    pub out_ucast_pkts: u32,
    pub out_multicast_pkts: u32,
    pub out_broadcast_pkts: u32,
    pub out_discards: u32,
    pub out_errors: u32,
    pub promiscuous_mode: u32,
}

/// 0:2 Ethernet interface counters (EtherLike-MIB dot3Stats*).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[allow(missing_docs)] // field names are the EtherLike-MIB object names
pub struct EthernetCounters {
    pub alignment_errors: u32,
    pub fcs_errors: u32,
    pub single_collision_frames: u32,
    pub multiple_collision_frames: u32,
    pub sqe_test_errors: u32,
    pub deferred_transmissions: u32,
    pub late_collisions: u32,
    pub excessive_collisions: u32,
    pub internal_mac_transmit_errors: u32,
    pub carrier_sense_errors: u32,
    pub frame_too_longs: u32,
    pub internal_mac_receive_errors: u32,
    pub symbol_errors: u32,
}

impl EthernetCounters {
    /// Every counter unknown (all-ones), as an agent without these statistics sends them.
    pub const UNKNOWN: EthernetCounters = EthernetCounters {
        alignment_errors: u32::MAX,
        fcs_errors: u32::MAX,
        single_collision_frames: u32::MAX,
        multiple_collision_frames: u32::MAX,
        sqe_test_errors: u32::MAX,
        deferred_transmissions: u32::MAX,
        late_collisions: u32::MAX,
        excessive_collisions: u32::MAX,
        internal_mac_transmit_errors: u32::MAX,
        carrier_sense_errors: u32::MAX,
        frame_too_longs: u32::MAX,
        internal_mac_receive_errors: u32::MAX,
        symbol_errors: u32::MAX,
    };
}

/// 0:5 VLAN counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[allow(missing_docs)]
pub struct VlanCounters {
    pub vlan_id: u32,
    pub octets: u64,
    pub ucast_pkts: u32,
    pub multicast_pkts: u32,
    pub broadcast_pkts: u32,
    pub discards: u32,
}

/// Bytes as lower-case hex. (serde's `serialize_with` hands over the field's own type.)
#[allow(clippy::ptr_arg)]
fn ser_bytes<S: serde::Serializer>(b: &Cow<'_, [u8]>, s: S) -> Result<S::Ok, S::Error> {
    use std::fmt::Write;
    let mut hex = String::with_capacity(b.len() * 2);
    for x in b.iter() {
        let _ = write!(hex, "{x:02x}");
    }
    s.serialize_str(&hex)
}

/// Bytes as text, invalid UTF-8 replaced.
#[allow(clippy::ptr_arg)]
fn ser_text<S: serde::Serializer>(b: &Cow<'_, [u8]>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&String::from_utf8_lossy(b))
}

impl Sample<'_> {
    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> Sample<'static> {
        match self {
            Sample::Flow(f) => Sample::Flow(FlowSample { records: owned_records(f.records), ..f }),
            Sample::Counters(c) => Sample::Counters(CountersSample {
                sequence: c.sequence,
                source: c.source,
                records: c.records.into_iter().map(CounterRecord::into_owned).collect(),
            }),
            Sample::Discard(d) => Sample::Discard(DiscardSample { records: owned_records(d.records), ..d }),
            Sample::Unknown { format, data } => Sample::Unknown { format, data: Cow::Owned(data.into_owned()) },
        }
    }
}

fn owned_records(r: Vec<FlowRecord<'_>>) -> Vec<FlowRecord<'static>> {
    r.into_iter().map(FlowRecord::into_owned).collect()
}

impl FlowRecord<'_> {
    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> FlowRecord<'static> {
        match self {
            FlowRecord::RawHeader(h) => {
                FlowRecord::RawHeader(RawHeader { header: Cow::Owned(h.header.into_owned()), ..h })
            }
            FlowRecord::Ethernet(x) => FlowRecord::Ethernet(x),
            FlowRecord::Ipv4(x) => FlowRecord::Ipv4(x),
            FlowRecord::Ipv6(x) => FlowRecord::Ipv6(x),
            FlowRecord::Switch(x) => FlowRecord::Switch(x),
            FlowRecord::Router(x) => FlowRecord::Router(x),
            FlowRecord::Mpls(x) => FlowRecord::Mpls(x),
            FlowRecord::Unknown { format, data } => FlowRecord::Unknown { format, data: Cow::Owned(data.into_owned()) },
        }
    }
}

impl CounterRecord<'_> {
    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> CounterRecord<'static> {
        match self {
            CounterRecord::Generic(x) => CounterRecord::Generic(x),
            CounterRecord::Ethernet(x) => CounterRecord::Ethernet(x),
            CounterRecord::Vlan(x) => CounterRecord::Vlan(x),
            CounterRecord::PortName(n) => CounterRecord::PortName(Cow::Owned(n.into_owned())),
            CounterRecord::Unknown { format, data } => {
                CounterRecord::Unknown { format, data: Cow::Owned(data.into_owned()) }
            }
        }
    }
}

impl Datagram<'_> {
    /// A copy that owns all its bytes.
    pub fn into_owned(self) -> Datagram<'static> {
        Datagram { samples: self.samples.into_iter().map(Sample::into_owned).collect(), ..self }
    }
}
