//! The rows of the flow pipeline: each sample of a datagram as one JSON object (ClickHouse's
//! `JSONEachRow`), flow, discard and counter samples alike. Every row carries
//! where it came from (agent, sub-agent, the datagram's sequence number and the sample's index
//! in it), so a row lost or delivered twice can be told exactly. The columns are those of
//! `contrib/flow-pipeline/schema.sql`; a field a row does not have is left out (ClickHouse
//! fills in the column's default).

use super::packet::{IpFields, decode_ethernet};
use super::reasons::reason_name;
use serde::Serialize;
use sflow::{
    CounterRecord, CountersSample, Datagram, DiscardSample, FlowRecord, FlowSample, HEADER_PROTOCOL_ETHERNET,
    IfCounters, Interface, Sample,
};
use std::net::IpAddr;

/// What every row starts with: which sample of which datagram of which agent it is.
#[derive(Serialize)]
struct Head {
    /// `flow`, `discard` or `counters`.
    #[serde(rename = "type")]
    kind: &'static str,
    time_received: u64,
    sampler_address: IpAddr,
    sub_agent_id: u32,
    /// The datagram's sequence number.
    sequence_num: u32,
    uptime_ms: u32,
    /// The sample's position in its datagram, from 0.
    sample_index: usize,
    /// The sample's own sequence number (per data source).
    sample_seq: u32,
    source_id_class: u32,
    source_id_index: u32,
}

/// What a sampled packet's records tell about it.
#[derive(Serialize, Default)]
struct Packet {
    #[serde(skip_serializing_if = "Option::is_none")]
    bytes: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    etype: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    vlan: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    src_mac: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dst_mac: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    src_addr: Option<IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dst_addr: Option<IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    proto: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    src_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dst_port: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tos: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_hop: Option<IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    src_prefix_len: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dst_prefix_len: Option<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mpls_in: Vec<u32>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    mpls_out: Vec<u32>,
}

#[derive(Serialize)]
struct FlowRow {
    #[serde(flatten)]
    head: Head,
    sampling_rate: u32,
    sample_pool: u32,
    drops: u32,
    in_if: u32,
    out_if: u32,
    /// Each flow sample stands for one sampled packet.
    packets: u32,
    #[serde(flatten)]
    packet: Packet,
}

#[derive(Serialize)]
struct DiscardRow {
    #[serde(flatten)]
    head: Head,
    drops: u32,
    in_if: u32,
    out_if: u32,
    reason: u32,
    reason_name: &'static str,
    packets: u32,
    #[serde(flatten)]
    packet: Packet,
}

#[derive(Serialize)]
struct CounterRow<'a> {
    #[serde(flatten)]
    head: Head,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    counters: Option<&'a IfCounters>,
}

/// Hands each flow, discard and counter sample of `d` as a JSON row to `each`, in the order of
/// the datagram (samples of unknown formats have no row). `unix_secs` is when the datagram
/// arrived; `buf` is scratch space.
pub fn each_row(buf: &mut Vec<u8>, unix_secs: u64, d: &Datagram<'_>, mut each: impl FnMut(&[u8])) {
    for (index, sample) in d.samples.iter().enumerate() {
        let head = |kind, sequence, source: &sflow::DataSource| Head {
            kind,
            time_received: unix_secs,
            sampler_address: d.agent,
            sub_agent_id: d.sub_agent_id,
            sequence_num: d.sequence,
            uptime_ms: d.uptime_ms,
            sample_index: index,
            sample_seq: sequence,
            source_id_class: source.class,
            source_id_index: source.index,
        };
        buf.clear();
        let written = match sample {
            Sample::Flow(f) => serde_json::to_writer(&mut *buf, &flow(head("flow", f.sequence, &f.source), f)),
            Sample::Discard(x) => serde_json::to_writer(&mut *buf, &discard(head("discard", x.sequence, &x.source), x)),
            Sample::Counters(c) => {
                serde_json::to_writer(&mut *buf, &counters(head("counters", c.sequence, &c.source), c))
            }
            Sample::Unknown { .. } => continue,
        };
        written.expect("rows are plain data");
        each(buf);
    }
}

fn flow(head: Head, f: &FlowSample<'_>) -> FlowRow {
    FlowRow {
        head,
        sampling_rate: f.sampling_rate,
        sample_pool: f.sample_pool,
        drops: f.drops,
        in_if: if_index(f.input),
        out_if: if_index(f.output),
        packets: 1,
        packet: packet(&f.records),
    }
}

fn discard(head: Head, x: &DiscardSample<'_>) -> DiscardRow {
    DiscardRow {
        head,
        drops: x.drops,
        in_if: x.input,
        out_if: x.output,
        reason: x.reason,
        reason_name: reason_name(x.reason),
        packets: 1,
        packet: packet(&x.records),
    }
}

fn counters<'a>(head: Head, c: &'a CountersSample<'_>) -> CounterRow<'a> {
    let generic = c.records.iter().find_map(|r| match r {
        CounterRecord::Generic(g) => Some(g),
        _ => None,
    });
    CounterRow { head, counters: generic }
}

/// An interface as its ifIndex: the device itself is 0x3FFFFFFF (as sFlow's compact form
/// says it), a discard or several interfaces 0.
fn if_index(i: Interface) -> u32 {
    match i {
        Interface::Index(v) => v,
        Interface::Internal => 0x3fff_ffff,
        Interface::Discarded(_) | Interface::Multiple(_) => 0,
    }
}

/// The packet's fields from its records: the sampled header first, the sampled IPv4/IPv6
/// records where there is no header, the extended records for the rest.
fn packet(records: &[FlowRecord<'_>]) -> Packet {
    let mut p = Packet::default();
    let mut switch_vlan = None;
    for r in records {
        match r {
            FlowRecord::RawHeader(h) => {
                p.bytes = Some(h.frame_length);
                if h.protocol == HEADER_PROTOCOL_ETHERNET
                    && let Some(e) = decode_ethernet(&h.header)
                {
                    p.etype = Some(e.ethertype);
                    p.vlan = e.vlan.map(u32::from);
                    p.src_mac = Some(super::packet::mac(e.src_mac));
                    p.dst_mac = Some(super::packet::mac(e.dst_mac));
                    if let Some(ip) = &e.ip {
                        p.ip(ip);
                    }
                }
            }
            FlowRecord::Ipv4(v) if p.src_addr.is_none() => {
                p.bytes.get_or_insert(v.length);
                p.etype.get_or_insert(wire::EtherType::IPV4);
                let (src, dst) = (IpAddr::V4(v.src), IpAddr::V4(v.dst));
                p.ip(&sampled_ip(src, dst, v.protocol, [v.src_port, v.dst_port], v.tos));
            }
            FlowRecord::Ipv6(v) if p.src_addr.is_none() => {
                p.bytes.get_or_insert(v.length);
                p.etype.get_or_insert(wire::EtherType::IPV6);
                let (src, dst) = (IpAddr::V6(v.src), IpAddr::V6(v.dst));
                p.ip(&sampled_ip(src, dst, v.protocol, [v.src_port, v.dst_port], v.priority));
            }
            FlowRecord::Switch(s) => switch_vlan = Some(s.src_vlan),
            FlowRecord::Router(r) => {
                p.next_hop = Some(r.next_hop);
                p.src_prefix_len = Some(r.src_mask_len);
                p.dst_prefix_len = Some(r.dst_mask_len);
            }
            FlowRecord::Mpls(m) => {
                p.next_hop.get_or_insert(m.next_hop);
                p.mpls_in.clone_from(&m.in_stack);
                p.mpls_out.clone_from(&m.out_stack);
            }
            _ => {}
        }
    }
    // The frame's own tag first, else the switch record's input VLAN (as goflow2 does).
    if p.vlan.is_none() {
        p.vlan = switch_vlan.filter(|&v| v != 0);
    }
    p
}

impl Packet {
    fn ip(&mut self, ip: &IpFields) {
        self.src_addr = Some(ip.src);
        self.dst_addr = Some(ip.dst);
        self.proto = Some(ip.protocol);
        self.src_port = ip.src_port;
        self.dst_port = ip.dst_port;
        self.tos = Some(ip.tos);
    }
}

/// The IP fields of a sampled IPv4 or IPv6 record (0:3, 0:4), which carry them as 32-bit words.
fn sampled_ip(src: IpAddr, dst: IpAddr, protocol: u32, ports: [u32; 2], tos: u32) -> IpFields {
    let port = |x: u32| u16::try_from(x).ok();
    IpFields {
        src,
        dst,
        protocol: u8::try_from(protocol).unwrap_or(u8::MAX),
        length: 0,
        ttl: 0,
        tos: u8::try_from(tos).unwrap_or(u8::MAX),
        src_port: port(ports[0]),
        dst_port: port(ports[1]),
    }
}
