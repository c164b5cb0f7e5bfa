//! Turning ring slots into sFlow samples: each port's sequence numbers and totals, the flow
//! samples of forwarded packets packed into datagrams, and the discard samples of dropped ones.

use super::SourceRoutes;
use super::{AgentSetup, BATCH};
use crate::net::MAX_INTERFACES;
use crate::sflow::ring::{Fate, Slot};
use sflow::{
    DataSource, DatagramBuilder, DiscardSample, ExtendedMpls, ExtendedRouter, ExtendedSwitch, FlowRecord, FlowSample,
    Interface, RawHeader, Sample,
};
use std::borrow::Cow;

/// Per-port state.
#[derive(Clone, Copy, Default)]
pub(super) struct Source {
    seq: u32,
    /// The pool and drops of the last flow sample sent: a sample published earlier on
    /// another worker but read later never makes them step back.
    pool: u64,
    drops: u64,
    /// Discard samples sent.
    discard_seq: u32,
    /// Drops not reported (rate limit, full ring), as of the last discard sample.
    discards_lost: u32,
}

/// What the agent keeps from one round to the next: each source's sequence numbers and
/// totals, the datagram buffers and sequence number, the discard samples waiting, and the
/// ring to start draining at.
pub(super) struct Encoder {
    pub(super) sources: Box<[Source; MAX_INTERFACES]>,
    pub(super) bufs: Vec<Vec<u8>>,
    pub(super) datagram_seq: u32,
    pub(super) discards: Vec<Sample<'static>>,
    pub(super) next_ring: usize,
}

impl Encoder {
    /// Drains the rings into up to [`BATCH`] datagrams of flow samples, numbered on; keeps
    /// the discard samples it meets for datagrams of their own. Returns the datagrams'
    /// lengths (the first ones of `bufs`).
    pub(super) fn flow_datagrams(&mut self, s: &mut AgentSetup, uptime: u32) -> Vec<usize> {
        let mut lens = Vec::with_capacity(BATCH);
        for buf in self.bufs.iter_mut() {
            let mut b = DatagramBuilder::new(buf, s.agent, s.sub_agent_id, self.datagram_seq, uptime)
                .expect("max-datagram-size ≥ 200");
            let mut full = false;
            for k in 0..s.rings.len() {
                let r = (self.next_ring + k) % s.rings.len();
                let (rings, shared, routes, workers, if_indices) =
                    (&mut s.rings, &s.shared, &s.routes, &s.workers, &s.if_indices);
                let (sources, discards) = (&mut self.sources, &mut self.discards);
                rings[r].drain(usize::MAX, |slot| {
                    match slot.fate {
                        Fate::Forwarded => {}
                        Fate::Discard => {
                            let src = &mut sources[slot.port as usize];
                            src.discard_seq = src.discard_seq.wrapping_add(1);
                            src.discards_lost =
                                workers.iter().map(|w| w.sflow(slot.port).discards_lost.get()).sum::<u64>() as u32;
                            discards.push(discard_sample(slot, src, if_indices));
                            return true;
                        }
                        Fate::Dropped | Fate::InFlight => {
                            shared.counters.samples_of_drops.add(1);
                            return true;
                        }
                    }
                    let src = &mut sources[slot.port as usize];
                    src.pool = src.pool.max(slot.pool);
                    src.drops = src.drops.max(slot.drops);
                    let sample = flow_sample(slot, src, routes, if_indices);
                    if b.push(&sample).is_err() {
                        full = true;
                        return false;
                    }
                    src.seq = src.seq.wrapping_add(1);
                    shared.counters.samples_encoded.add(1);
                    shared.sent_by_port[slot.port as usize].add(1);
                    true
                });
                if full {
                    break;
                }
            }
            self.next_ring = (self.next_ring + 1) % s.rings.len();
            if b.is_empty() {
                break;
            }
            lens.push(b.finish());
            self.datagram_seq = self.datagram_seq.wrapping_add(1);
            if !full {
                break;
            }
        }
        lens
    }
}

/// The flow sample of a forwarded packet.
fn flow_sample<'a>(slot: &'a Slot, src: &Source, routes: &SourceRoutes, ifx: &crate::sflow::IfIndices) -> Sample<'a> {
    let header = &slot.header[..usize::from(slot.header_len)];
    let mut records = vec![FlowRecord::RawHeader(RawHeader {
        protocol: sflow::HEADER_PROTOCOL_ETHERNET,
        frame_length: u32::from(slot.frame_len) + 4,
        stripped: 4,
        header: Cow::Borrowed(header),
    })];
    if slot.in_vlan != 0 || slot.out_vlan != 0 {
        records.push(FlowRecord::Switch(ExtendedSwitch {
            src_vlan: u32::from(slot.in_vlan),
            // The received tag's priority: in the header as received, or as sent when vecflow
            // did not tag it itself (a cross-connected tagged frame); else unknown, 0.
            src_priority: if slot.stage == crate::sflow::RX || slot.out_vlan == 0 {
                u32::from(crate::sflow::header::priority(header))
            } else {
                0
            },
            dst_vlan: u32::from(slot.out_vlan),
            dst_priority: 0, // the tag vecflow pushes has priority 0
        }));
    }
    if slot.routed {
        // In the input interface's VRF, where the packet's source would be routed.
        let src_len =
            crate::sflow::header::ip_addresses(header).map_or(0, |(src, _)| routes.prefix_len(slot.input, src));
        records.push(FlowRecord::Router(ExtendedRouter {
            next_hop: slot.next_hop,
            src_mask_len: u32::from(src_len),
            dst_mask_len: u32::from(slot.dst_prefix_len),
        }));
    }
    if !slot.in_labels.is_empty() || !slot.out_labels.is_empty() {
        records.push(FlowRecord::Mpls(ExtendedMpls {
            next_hop: slot.next_hop,
            in_stack: slot.in_labels.labels().to_vec(),
            out_stack: slot.out_labels.labels().to_vec(),
        }));
    }
    Sample::Flow(FlowSample {
        sequence: src.seq.wrapping_add(1),
        source: DataSource::interface(ifx.of(slot.port)),
        sampling_rate: slot.rate,
        sample_pool: src.pool as u32, // modulo 2^32, as sFlow counts it
        drops: src.drops as u32,
        input: Interface::Index(ifx.of(slot.input)),
        output: Interface::Index(ifx.of(slot.output)),
        records,
    })
}

/// The discard sample of a dropped packet.
fn discard_sample(slot: &Slot, src: &Source, ifx: &crate::sflow::IfIndices) -> Sample<'static> {
    Sample::Discard(DiscardSample {
        sequence: src.discard_seq,
        source: DataSource::interface(ifx.of(slot.port)),
        drops: src.discards_lost,
        input: ifx.of(slot.input),
        output: ifx.of(slot.output),
        reason: slot.reason,
        records: vec![FlowRecord::RawHeader(RawHeader {
            protocol: sflow::HEADER_PROTOCOL_ETHERNET,
            frame_length: u32::from(slot.frame_len) + 4,
            stripped: 4,
            header: Cow::Owned(slot.header[..usize::from(slot.header_len)].to_vec()),
        })],
    })
}

#[cfg(test)]
mod tests;
