//! The encoder: writes datagrams into a caller's buffer without allocating.

use crate::model::*;
use crate::xdr::{Writer, address_len, pad4};
use std::net::IpAddr;

/// Why encoding stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The sample (or header) needs `need` bytes but only `free` are left under the limit.
    #[error("would not fit: needs {need} bytes, {free} left")]
    WouldNotFit {
        /// Bytes the item needs.
        need: usize,
        /// Bytes left in the datagram.
        free: usize,
    },
}

const HEADER_V4: usize = 28;
const TLV: usize = 8;

/// Builds one datagram in a caller's buffer, sample by sample.
///
/// ```
/// use sflow::*;
/// let mut buf = [0u8; 1400];
/// let mut b = DatagramBuilder::new(&mut buf, "192.0.2.1".parse().unwrap(), 0, 1, 1000).unwrap();
/// let counters = Sample::Counters(CountersSample { sequence: 1, source: DataSource::interface(3), records: vec![] });
/// b.push(&counters).unwrap();
/// let n = b.finish();
/// assert_eq!(decode(&buf[..n]).unwrap().samples, vec![counters]);
/// ```
pub struct DatagramBuilder<'b> {
    buf: &'b mut [u8],
    len: usize,
    samples: u32,
    samples_at: usize,
}

impl<'b> DatagramBuilder<'b> {
    /// Starts a datagram in `buf` (its length is the size limit) with the given header fields.
    pub fn new(
        buf: &'b mut [u8],
        agent: IpAddr,
        sub_agent_id: u32,
        sequence: u32,
        uptime_ms: u32,
    ) -> Result<Self, EncodeError> {
        let need = HEADER_V4 - 8 + address_len(Some(agent));
        if need > buf.len() {
            return Err(EncodeError::WouldNotFit { need, free: buf.len() });
        }
        let mut w = Writer::at(buf, 0);
        w.u32(5);
        w.address(Some(agent));
        w.u32(sub_agent_id);
        w.u32(sequence);
        w.u32(uptime_ms);
        let samples_at = w.pos();
        w.u32(0);
        let len = w.pos();
        Ok(DatagramBuilder { buf, len, samples: 0, samples_at })
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no sample has been added.
    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }

    /// Samples added so far.
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// Bytes left under the limit.
    pub fn free(&self) -> usize {
        self.buf.len() - self.len
    }

    /// Appends a sample, or returns [`EncodeError::WouldNotFit`] and leaves the datagram as it was.
    pub fn push(&mut self, s: &Sample<'_>) -> Result<(), EncodeError> {
        let need = sample_len(s);
        if need > self.free() {
            return Err(EncodeError::WouldNotFit { need, free: self.free() });
        }
        let mut w = Writer::at(self.buf, self.len);
        write_sample(&mut w, s);
        debug_assert_eq!(w.pos(), self.len + need, "encoded length matches sample_len");
        self.len = w.pos();
        self.samples += 1;
        Ok(())
    }

    /// Writes the sample count and returns the datagram's length.
    pub fn finish(self) -> usize {
        Writer::at(self.buf, self.samples_at).u32(self.samples);
        self.len
    }
}

/// Encodes a whole datagram into `buf`; returns its length.
pub fn encode(d: &Datagram<'_>, buf: &mut [u8]) -> Result<usize, EncodeError> {
    let mut b = DatagramBuilder::new(buf, d.agent, d.sub_agent_id, d.sequence, d.uptime_ms)?;
    for s in &d.samples {
        b.push(s)?;
    }
    Ok(b.finish())
}

fn flow_expanded(f: &FlowSample<'_>) -> bool {
    !(f.source.fits_compact() && f.input.fits_compact() && f.output.fits_compact())
}

/// Encoded size of a sample, tag and length included.
pub fn sample_len(s: &Sample<'_>) -> usize {
    TLV + match s {
        Sample::Flow(f) => {
            (if flow_expanded(f) { 44 } else { 32 }) + f.records.iter().map(flow_record_len).sum::<usize>()
        }
        Sample::Counters(c) => {
            (if c.source.fits_compact() { 12 } else { 16 }) + c.records.iter().map(counter_record_len).sum::<usize>()
        }
        Sample::Discard(d) => 32 + d.records.iter().map(flow_record_len).sum::<usize>(),
        Sample::Unknown { data, .. } => pad4(data.len()),
    }
}

fn flow_record_len(r: &FlowRecord<'_>) -> usize {
    TLV + match r {
        FlowRecord::RawHeader(h) => 16 + pad4(h.header.len()),
        FlowRecord::Ethernet(_) => 24,
        FlowRecord::Ipv4(_) => 32,
        FlowRecord::Ipv6(_) => 56,
        FlowRecord::Switch(_) => 16,
        FlowRecord::Router(x) => address_len(Some(x.next_hop)) + 8,
        FlowRecord::Mpls(x) => address_len(Some(x.next_hop)) + 8 + 4 * (x.in_stack.len() + x.out_stack.len()),
        FlowRecord::Unknown { data, .. } => pad4(data.len()),
    }
}

fn counter_record_len(r: &CounterRecord<'_>) -> usize {
    TLV + match r {
        CounterRecord::Generic(_) => 88,
        CounterRecord::Ethernet(_) => 52,
        CounterRecord::Vlan(_) => 28,
        CounterRecord::PortName(n) => 4 + pad4(n.len()),
        CounterRecord::Unknown { data, .. } => pad4(data.len()),
    }
}

/// Writes a TLV header whose body is `len` bytes.
fn tlv(w: &mut Writer<'_>, format: DataFormat, len: usize) {
    w.u32(format.to_u32());
    w.u32(len as u32);
}

fn write_source(w: &mut Writer<'_>, s: DataSource, expanded: bool) {
    if expanded {
        w.u32(s.class);
        w.u32(s.index);
    } else {
        w.u32((s.class << 24) | (s.index & 0x00ff_ffff));
    }
}

fn write_interface(w: &mut Writer<'_>, i: Interface, expanded: bool) {
    let (format, value) = i.expanded();
    if expanded {
        w.u32(format);
        w.u32(value);
    } else if i == Interface::Internal {
        w.u32(0x3fff_ffff);
    } else {
        w.u32((format << 30) | value);
    }
}

fn write_sample(w: &mut Writer<'_>, s: &Sample<'_>) {
    let body = sample_len(s) - TLV;
    match s {
        Sample::Flow(f) => {
            let x = flow_expanded(f);
            tlv(w, DataFormat::standard(if x { 3 } else { 1 }), body);
            w.u32(f.sequence);
            write_source(w, f.source, x);
            w.u32(f.sampling_rate);
            w.u32(f.sample_pool);
            w.u32(f.drops);
            write_interface(w, f.input, x);
            write_interface(w, f.output, x);
            write_flow_records(w, &f.records);
        }
        Sample::Counters(c) => {
            let x = !c.source.fits_compact();
            tlv(w, DataFormat::standard(if x { 4 } else { 2 }), body);
            w.u32(c.sequence);
            write_source(w, c.source, x);
            w.u32(c.records.len() as u32);
            for r in &c.records {
                write_counter_record(w, r);
            }
        }
        Sample::Discard(d) => {
            tlv(w, DataFormat::standard(5), body);
            w.u32(d.sequence);
            write_source(w, d.source, true);
            for v in [d.drops, d.input, d.output, d.reason] {
                w.u32(v);
            }
            write_flow_records(w, &d.records);
        }
        Sample::Unknown { format, data } => {
            tlv(w, *format, body);
            w.bytes(data);
            w.pad(data.len());
        }
    }
}

fn write_flow_records(w: &mut Writer<'_>, records: &[FlowRecord<'_>]) {
    w.u32(records.len() as u32);
    for r in records {
        write_flow_record(w, r);
    }
}

fn write_mac(w: &mut Writer<'_>, m: &[u8; 6]) {
    w.bytes(m);
    w.bytes(&[0, 0]);
}

fn write_flow_record(w: &mut Writer<'_>, r: &FlowRecord<'_>) {
    let body = flow_record_len(r) - TLV;
    let tag = |f| DataFormat::standard(f);
    match r {
        FlowRecord::RawHeader(h) => {
            tlv(w, tag(1), body);
            w.u32(h.protocol);
            w.u32(h.frame_length);
            w.u32(h.stripped);
            w.opaque(&h.header);
        }
        FlowRecord::Ethernet(e) => {
            tlv(w, tag(2), body);
            w.u32(e.length);
            write_mac(w, &e.src);
            write_mac(w, &e.dst);
            w.u32(e.eth_type);
        }
        FlowRecord::Ipv4(x) => {
            tlv(w, tag(3), body);
            w.u32(x.length);
            w.u32(x.protocol);
            w.bytes(&x.src.octets());
            w.bytes(&x.dst.octets());
            for v in [x.src_port, x.dst_port, x.tcp_flags, x.tos] {
                w.u32(v);
            }
        }
        FlowRecord::Ipv6(x) => {
            tlv(w, tag(4), body);
            w.u32(x.length);
            w.u32(x.protocol);
            w.bytes(&x.src.octets());
            w.bytes(&x.dst.octets());
            for v in [x.src_port, x.dst_port, x.tcp_flags, x.priority] {
                w.u32(v);
            }
        }
        FlowRecord::Switch(x) => {
            tlv(w, tag(1001), body);
            for v in [x.src_vlan, x.src_priority, x.dst_vlan, x.dst_priority] {
                w.u32(v);
            }
        }
        FlowRecord::Router(x) => {
            tlv(w, tag(1002), body);
            w.address(Some(x.next_hop));
            w.u32(x.src_mask_len);
            w.u32(x.dst_mask_len);
        }
        FlowRecord::Mpls(x) => {
            tlv(w, tag(1006), body);
            w.address(Some(x.next_hop));
            for stack in [&x.in_stack, &x.out_stack] {
                w.u32(stack.len() as u32);
                for &l in stack.iter() {
                    w.u32(l);
                }
            }
        }
        FlowRecord::Unknown { format, data } => {
            tlv(w, *format, body);
            w.bytes(data);
            w.pad(data.len());
        }
    }
}

fn write_counter_record(w: &mut Writer<'_>, r: &CounterRecord<'_>) {
    let body = counter_record_len(r) - TLV;
    let tag = |f| DataFormat::standard(f);
    match r {
        CounterRecord::Generic(c) => {
            tlv(w, tag(1), body);
            w.u32(c.if_index);
            w.u32(c.if_type);
            w.u64(c.if_speed);
            w.u32(c.if_direction);
            w.u32(c.if_status);
            w.u64(c.in_octets);
            for v in [
                c.in_ucast_pkts,
                c.in_multicast_pkts,
                c.in_broadcast_pkts,
                c.in_discards,
                c.in_errors,
                c.in_unknown_protos,
            ] {
                w.u32(v);
            }
            w.u64(c.out_octets);
            for v in [
                c.out_ucast_pkts,
                c.out_multicast_pkts,
                c.out_broadcast_pkts,
                c.out_discards,
                c.out_errors,
                c.promiscuous_mode,
            ] {
                w.u32(v);
            }
        }
        CounterRecord::Ethernet(e) => {
            tlv(w, tag(2), body);
            for v in [
                e.alignment_errors,
                e.fcs_errors,
                e.single_collision_frames,
                e.multiple_collision_frames,
                e.sqe_test_errors,
                e.deferred_transmissions,
                e.late_collisions,
                e.excessive_collisions,
                e.internal_mac_transmit_errors,
                e.carrier_sense_errors,
                e.frame_too_longs,
                e.internal_mac_receive_errors,
                e.symbol_errors,
            ] {
                w.u32(v);
            }
        }
        CounterRecord::Vlan(v) => {
            tlv(w, tag(5), body);
            w.u32(v.vlan_id);
            w.u64(v.octets);
            for x in [v.ucast_pkts, v.multicast_pkts, v.broadcast_pkts, v.discards] {
                w.u32(x);
            }
        }
        CounterRecord::PortName(n) => {
            tlv(w, tag(1005), body);
            w.opaque(n);
        }
        CounterRecord::Unknown { format, data } => {
            tlv(w, *format, body);
            w.bytes(data);
            w.pad(data.len());
        }
    }
}
