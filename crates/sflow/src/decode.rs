//! The decoder: bytes to [`Datagram`], borrowing from the input.

use crate::model::*;
use crate::xdr::{Reader, Short};
use std::borrow::Cow;

/// Why a datagram could not be decoded. Offsets are from the start of the datagram.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The input ended inside a structure.
    #[error("truncated at byte {at}: {need} more bytes needed")]
    Truncated {
        /// Offset of the structure that did not fit.
        at: usize,
        /// Bytes it needed.
        need: usize,
    },
    /// Not an sFlow version 5 datagram.
    #[error("version {0} (only sFlow version 5 is decoded)")]
    Version(u32),
    /// An `address` union of an unknown type.
    #[error("byte {at}: address type {kind} (want 1 = IPv4 or 2 = IPv6)")]
    AddressType {
        /// Offset of the union.
        at: usize,
        /// The type found.
        kind: u32,
    },
    /// A known structure whose length field does not match its contents.
    #[error("byte {at}: {what} with length {len}: {problem}")]
    Length {
        /// Offset of the structure's tag.
        at: usize,
        /// What it is, e.g. `flow record 0:1001`.
        what: String,
        /// Its length field.
        len: usize,
        /// What is wrong: too short for its fields, or bytes left over.
        problem: String,
    },
    /// Bytes left over after the last sample.
    #[error("{0} bytes after the last sample")]
    Trailing(usize),
}

impl From<Short> for DecodeError {
    fn from(s: Short) -> Self {
        DecodeError::Truncated { at: s.at, need: s.need }
    }
}

/// Decodes one datagram. Unknown sample and record types are skipped by their length and
/// kept as `Unknown`. Never panics; allocation is bounded by the input's size.
pub fn decode(buf: &[u8]) -> Result<Datagram<'_>, DecodeError> {
    let mut r = Reader::new(buf, 0);
    let version = r.u32()?;
    if version != 5 {
        return Err(DecodeError::Version(version));
    }
    let at = r.offset();
    let agent = r.address()?.map_err(|kind| DecodeError::AddressType { at, kind })?;
    let agent = agent.ok_or(DecodeError::AddressType { at, kind: 0 })?;
    let sub_agent_id = r.u32()?;
    let sequence = r.u32()?;
    let uptime_ms = r.u32()?;
    let n = r.u32()?;
    let mut samples = Vec::new();
    for _ in 0..n {
        samples.push(sample(&mut r)?);
    }
    if r.remaining() > 0 {
        return Err(DecodeError::Trailing(r.remaining()));
    }
    Ok(Datagram { agent, sub_agent_id, sequence, uptime_ms, samples })
}

/// Reads a TLV header and returns (format, body reader). XDR pads every body to a multiple
/// of 4 bytes, so any other length is malformed.
fn tlv<'a>(r: &mut Reader<'a>) -> Result<(DataFormat, Reader<'a>), DecodeError> {
    let at = r.offset();
    let format = DataFormat::from_u32(r.u32()?);
    let len = r.u32()? as usize;
    if !len.is_multiple_of(4) {
        return Err(DecodeError::Length {
            at,
            what: format!("structure {format}"),
            len,
            problem: "not a multiple of 4".into(),
        });
    }
    Ok((format, r.sub(len)?))
}

/// Decodes a known body with `f`, requiring it to use the whole body exactly. A body too
/// short for its fields is a length error (the datagram itself may well go on).
fn known<'a, T>(
    mut body: Reader<'a>,
    what: impl Fn() -> String,
    f: impl FnOnce(&mut Reader<'a>) -> Result<T, DecodeError>,
) -> Result<T, DecodeError> {
    let (at, len) = (body.offset() - 8, body.remaining());
    let length = |problem: String| DecodeError::Length { at, what: what(), len, problem };
    let v = f(&mut body).map_err(|e| match e {
        DecodeError::Truncated { .. } => length("too short for its fields".into()),
        e => e,
    })?;
    match body.remaining() {
        0 => Ok(v),
        n => Err(length(format!("{n} bytes left over after its fields"))),
    }
}

fn sample<'a>(r: &mut Reader<'a>) -> Result<Sample<'a>, DecodeError> {
    let (format, body) = tlv(r)?;
    let what = || format!("sample {format}");
    if format.enterprise != 0 {
        return Ok(Sample::Unknown { format, data: Cow::Borrowed(body_bytes(body)) });
    }
    Ok(match format.format {
        1 => Sample::Flow(known(body, what, |b| flow_sample(b, false))?),
        3 => Sample::Flow(known(body, what, |b| flow_sample(b, true))?),
        2 => Sample::Counters(known(body, what, |b| counters_sample(b, false))?),
        4 => Sample::Counters(known(body, what, |b| counters_sample(b, true))?),
        5 => Sample::Discard(known(body, what, discard_sample)?),
        _ => Sample::Unknown { format, data: Cow::Borrowed(body_bytes(body)) },
    })
}

fn body_bytes(mut body: Reader<'_>) -> &[u8] {
    body.bytes(body.remaining()).expect("remaining bytes")
}

fn source(r: &mut Reader<'_>, expanded: bool) -> Result<DataSource, Short> {
    Ok(if expanded {
        DataSource { class: r.u32()?, index: r.u32()? }
    } else {
        let id = r.u32()?;
        DataSource { class: id >> 24, index: id & 0x00ff_ffff }
    })
}

fn interface(r: &mut Reader<'_>, expanded: bool) -> Result<Interface, Short> {
    let (format, value) = if expanded {
        (r.u32()?, r.u32()?)
    } else {
        let w = r.u32()?;
        (w >> 30, w & 0x3fff_ffff)
    };
    Ok(match (format, value) {
        (0, 0x3fff_ffff) if !expanded => Interface::Internal,
        (0, u32::MAX) if expanded => Interface::Internal,
        (0, v) => Interface::Index(v),
        (1, v) => Interface::Discarded(v),
        // Format 3 is reserved: keep the value as a count rather than failing the datagram.
        (_, v) => Interface::Multiple(v),
    })
}

fn flow_sample<'a>(r: &mut Reader<'a>, expanded: bool) -> Result<FlowSample<'a>, DecodeError> {
    let sequence = r.u32()?;
    let source = source(r, expanded)?;
    let (sampling_rate, sample_pool, drops) = (r.u32()?, r.u32()?, r.u32()?);
    let input = interface(r, expanded)?;
    let output = interface(r, expanded)?;
    let records = flow_records(r)?;
    Ok(FlowSample { sequence, source, sampling_rate, sample_pool, drops, input, output, records })
}

fn counters_sample<'a>(r: &mut Reader<'a>, expanded: bool) -> Result<CountersSample<'a>, DecodeError> {
    let sequence = r.u32()?;
    let source = source(r, expanded)?;
    let n = r.u32()?;
    let mut records = Vec::new();
    for _ in 0..n {
        records.push(counter_record(r)?);
    }
    Ok(CountersSample { sequence, source, records })
}

fn discard_sample<'a>(r: &mut Reader<'a>) -> Result<DiscardSample<'a>, DecodeError> {
    let sequence = r.u32()?;
    let source = source(r, true)?;
    let (drops, input, output, reason) = (r.u32()?, r.u32()?, r.u32()?, r.u32()?);
    let records = flow_records(r)?;
    Ok(DiscardSample { sequence, source, drops, input, output, reason, records })
}

fn flow_records<'a>(r: &mut Reader<'a>) -> Result<Vec<FlowRecord<'a>>, DecodeError> {
    let n = r.u32()?;
    let mut records = Vec::new();
    for _ in 0..n {
        records.push(flow_record(r)?);
    }
    Ok(records)
}

/// A next-hop address; type 0 ("unknown") reads as 0.0.0.0.
fn next_hop(r: &mut Reader<'_>) -> Result<std::net::IpAddr, DecodeError> {
    let at = r.offset();
    let a = r.address()?.map_err(|kind| DecodeError::AddressType { at, kind })?;
    Ok(a.unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)))
}

fn mac(r: &mut Reader<'_>) -> Result<[u8; 6], Short> {
    let b = r.array::<8>()?;
    Ok([b[0], b[1], b[2], b[3], b[4], b[5]])
}

fn label_stack(r: &mut Reader<'_>) -> Result<Vec<u32>, Short> {
    let n = r.u32()?;
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(r.u32()?);
    }
    Ok(out)
}

fn flow_record<'a>(r: &mut Reader<'a>) -> Result<FlowRecord<'a>, DecodeError> {
    let (format, body) = tlv(r)?;
    let what = || format!("flow record {format}");
    if format.enterprise != 0 {
        return Ok(FlowRecord::Unknown { format, data: Cow::Borrowed(body_bytes(body)) });
    }
    Ok(match format.format {
        1 => FlowRecord::RawHeader(known(body, what, |b| {
            let (protocol, frame_length, stripped) = (b.u32()?, b.u32()?, b.u32()?);
            Ok(RawHeader { protocol, frame_length, stripped, header: Cow::Borrowed(b.opaque()?) })
        })?),
        2 => FlowRecord::Ethernet(known(body, what, |b| {
            Ok(SampledEthernet { length: b.u32()?, src: mac(b)?, dst: mac(b)?, eth_type: b.u32()? })
        })?),
        3 => FlowRecord::Ipv4(known(body, what, |b| {
            Ok(SampledIpv4 {
                length: b.u32()?,
                protocol: b.u32()?,
                src: b.array::<4>()?.into(),
                dst: b.array::<4>()?.into(),
                src_port: b.u32()?,
                dst_port: b.u32()?,
                tcp_flags: b.u32()?,
                tos: b.u32()?,
            })
        })?),
        4 => FlowRecord::Ipv6(known(body, what, |b| {
            Ok(SampledIpv6 {
                length: b.u32()?,
                protocol: b.u32()?,
                src: b.array::<16>()?.into(),
                dst: b.array::<16>()?.into(),
                src_port: b.u32()?,
                dst_port: b.u32()?,
                tcp_flags: b.u32()?,
                priority: b.u32()?,
            })
        })?),
        1001 => FlowRecord::Switch(known(body, what, |b| {
            Ok(ExtendedSwitch {
                src_vlan: b.u32()?,
                src_priority: b.u32()?,
                dst_vlan: b.u32()?,
                dst_priority: b.u32()?,
            })
        })?),
        1002 => FlowRecord::Router(known(body, what, |b| {
            Ok(ExtendedRouter { next_hop: next_hop(b)?, src_mask_len: b.u32()?, dst_mask_len: b.u32()? })
        })?),
        1006 => FlowRecord::Mpls(known(body, what, |b| {
            Ok(ExtendedMpls { next_hop: next_hop(b)?, in_stack: label_stack(b)?, out_stack: label_stack(b)? })
        })?),
        _ => FlowRecord::Unknown { format, data: Cow::Borrowed(body_bytes(body)) },
    })
}

fn counter_record<'a>(r: &mut Reader<'a>) -> Result<CounterRecord<'a>, DecodeError> {
    let (format, body) = tlv(r)?;
    let what = || format!("counter record {format}");
    if format.enterprise != 0 {
        return Ok(CounterRecord::Unknown { format, data: Cow::Borrowed(body_bytes(body)) });
    }
    Ok(match format.format {
        1 => CounterRecord::Generic(known(body, what, |b| {
            Ok(IfCounters {
                if_index: b.u32()?,
                if_type: b.u32()?,
                if_speed: b.u64()?,
                if_direction: b.u32()?,
                if_status: b.u32()?,
                in_octets: b.u64()?,
                in_ucast_pkts: b.u32()?,
                in_multicast_pkts: b.u32()?,
                in_broadcast_pkts: b.u32()?,
                in_discards: b.u32()?,
                in_errors: b.u32()?,
                in_unknown_protos: b.u32()?,
                out_octets: b.u64()?,
                out_ucast_pkts: b.u32()?,
                out_multicast_pkts: b.u32()?,
                out_broadcast_pkts: b.u32()?,
                out_discards: b.u32()?,
                out_errors: b.u32()?,
                promiscuous_mode: b.u32()?,
            })
        })?),
        2 => CounterRecord::Ethernet(known(body, what, |b| {
            Ok(EthernetCounters {
                alignment_errors: b.u32()?,
                fcs_errors: b.u32()?,
                single_collision_frames: b.u32()?,
                multiple_collision_frames: b.u32()?,
                sqe_test_errors: b.u32()?,
                deferred_transmissions: b.u32()?,
                late_collisions: b.u32()?,
                excessive_collisions: b.u32()?,
                internal_mac_transmit_errors: b.u32()?,
                carrier_sense_errors: b.u32()?,
                frame_too_longs: b.u32()?,
                internal_mac_receive_errors: b.u32()?,
                symbol_errors: b.u32()?,
            })
        })?),
        5 => CounterRecord::Vlan(known(body, what, |b| {
            Ok(VlanCounters {
                vlan_id: b.u32()?,
                octets: b.u64()?,
                ucast_pkts: b.u32()?,
                multicast_pkts: b.u32()?,
                broadcast_pkts: b.u32()?,
                discards: b.u32()?,
            })
        })?),
        1005 => CounterRecord::PortName(known(body, what, |b| Ok(Cow::Borrowed(b.opaque()?)))?),
        _ => CounterRecord::Unknown { format, data: Cow::Borrowed(body_bytes(body)) },
    })
}
