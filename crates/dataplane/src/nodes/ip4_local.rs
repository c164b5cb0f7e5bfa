//! `ip4-local`: packets addressed to one of this router's own addresses, whatever their TTL.
//!
//! vecflow has no host stack: it answers ICMP echo requests (the request becomes the reply in
//! place — addresses swapped, TTL 64 — and is routed back through `ip4-lookup`) and drops
//! everything else as `ip4-local`; echo requests from a source no ICMP may go to (0/8,
//! multicast, a subnet broadcast, …) are dropped too. Fragments are not reassembled (a fragmented echo request
//! is dropped too). Echo replies share the worker's ICMP rate limit.

use crate::errors::DropReason;
use crate::graph::{Graph, NodeId};
use crate::vector::VecHandle;
use std::net::Ipv4Addr;
use wire::{checksum, icmp, ipv4};

/// Processes one vector.
pub fn run(g: &mut Graph, v: VecHandle) {
    let now = crate::tsc::now();
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        if is_echo_request(g, i) && !from_invalid_source(g, i) && g.punt.icmp_allowed(now) {
            if let Some(sf) = &g.sflow {
                sf.consumed(g.tables.get(g.pool.meta(i).rx_if).port, &g.counters);
            }
            echo_reply(g, i);
            g.counters.punt.icmp_sent.add(1);
            g.nexts[k] = NodeId::Ip4Lookup;
        } else {
            g.mark_drop(k, i, DropReason::Ip4Local);
        }
    }
    g.split(v);
}

/// The IPv4 header length and total length of the packet in buffer `i` (ip4-input checked
/// both against the frame).
fn lengths(ip: &[u8]) -> (usize, usize) {
    (usize::from(ip[0] & 0x0f) * 4, usize::from(u16::from_be_bytes([ip[2], ip[3]])))
}

/// True for an unfragmented ICMP echo request with a good checksum.
fn is_echo_request(g: &Graph, i: u32) -> bool {
    let Some(ip) = g.pool.frame(i).get(usize::from(g.pool.meta(i).l3_offset)..) else { return false };
    let (ihl, total) = lengths(ip);
    let fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
    ip[9] == ipv4::protocol::ICMP
        && !fragment
        && total >= ihl + icmp::HEADER_LEN
        && ip[ihl] == icmp::ECHO_REQUEST
        && checksum::checksum(&ip[ihl..total]) == 0
}

/// True when buffer `i`'s source may not be answered (see [`super::icmp4_error`]).
fn from_invalid_source(g: &Graph, i: u32) -> bool {
    let at = usize::from(g.pool.meta(i).l3_offset) + 12;
    let b = &g.pool.frame(i)[at..at + 4];
    super::icmp4_error::is_invalid_source(g, Ipv4Addr::new(b[0], b[1], b[2], b[3]))
}

/// Turns the echo request in buffer `i` into its reply, as a packet this router originates.
fn echo_reply(g: &mut Graph, i: u32) {
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    let ip = &mut g.pool.frame_mut(i)[l3..];
    let (ihl, _) = lengths(ip);
    let old = u16::from_be_bytes([ip[ihl], ip[ihl + 1]]);
    let new = u16::from(icmp::ECHO_REPLY) << 8 | (old & 0xff);
    let csum = checksum::update16(u16::from_be_bytes([ip[ihl + 2], ip[ihl + 3]]), old, new);
    ip[ihl..ihl + 2].copy_from_slice(&new.to_be_bytes());
    ip[ihl + 2..ihl + 4].copy_from_slice(&csum.to_be_bytes());
    let (src, dst) = (<[u8; 4]>::try_from(&ip[12..16]).unwrap(), <[u8; 4]>::try_from(&ip[16..20]).unwrap());
    ip[12..16].copy_from_slice(&dst);
    ip[16..20].copy_from_slice(&src);
    ip[8] = 64;
    ip[10..12].copy_from_slice(&[0, 0]);
    let csum = checksum::checksum(&ip[..ihl]);
    ip[10..12].copy_from_slice(&csum.to_be_bytes());
    let m = g.pool.meta_mut(i);
    m.rx_if = 0;
    m.tx_if = 0;
}
