//! `ip4-local`: packets addressed to one of this router's own addresses, whatever their TTL.
//!
//! vecflow has no host stack: it answers ICMP echo requests (the request becomes the reply in place
//! — addresses swapped, TTL 64 — and is routed back through `ip4-lookup`) and drops everything else
//! as `ip4-local`; echo requests from a source no ICMP may go to (0/8, multicast, a subnet
//! broadcast, …) are dropped too. Fragments are not reassembled (a fragmented echo request is
//! dropped too). Echo replies share the worker's ICMP rate limit. With linux-cp on, what is
//! not answered goes up the input interface's TAP instead (`linux-cp-punt`), fragments as they
//! are, for the kernel to reassemble.

use crate::ip4::{drops, nodes};
use crate::l3::{L3Worker, RouteMeta};
use crate::neighbor::punt::PuntCounting;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;
use wire::{Ipv4Packet, checksum, icmp, ipv4};

/// Processes one vector.
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    let now = crate::runtime::tsc::now();
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        if is_echo_request(g, i) && !from_invalid_source(g, i) && g.features.punt().icmp_allowed(now) {
            crate::interface::consumed(g, i);
            echo_reply(g, i);
            g.counters.punt().icmp_sent.add(1);
            g.nexts[k] = nodes::IP4_LOOKUP;
        } else if g.features.has_host() {
            g.nexts[k] = crate::lcp::nodes::LINUX_CP_PUNT;
        } else {
            g.mark_drop(k, i, drops::IP4_LOCAL);
        }
    }
    g.split(v);
}

/// True for an unfragmented ICMP echo request with a good checksum.
fn is_echo_request<F: L3Worker>(g: &Graph<F>, i: u32) -> bool {
    crate::l3::ipv4(&g.pool, i).is_some_and(|ip| {
        ip.protocol() == ipv4::protocol::ICMP
            && !ip.is_fragment()
            && ip.payload().is_some_and(|m| {
                m.len() >= icmp::HEADER_LEN && m[0] == icmp::ECHO_REQUEST && checksum::checksum(m) == 0
            })
    })
}

/// True when buffer `i`'s source may not be answered (see [`crate::ip4::icmp_error`]).
fn from_invalid_source<F: L3Worker>(g: &Graph<F>, i: u32) -> bool {
    crate::l3::ipv4(&g.pool, i).is_none_or(|ip| crate::ip4::icmp_error::is_invalid_source(g, ip.src()))
}

/// Turns the echo request in buffer `i` into its reply, as a packet this router originates.
fn echo_reply<F: L3Worker>(g: &mut Graph<F>, i: u32) {
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    let ip = &mut g.pool.frame_mut(i)[l3..];
    let ihl = usize::from(ip[wire::ipv4::field::VERSION_IHL] & 0x0f) * 4;
    let old = u16::from_be_bytes([ip[ihl], ip[ihl + 1]]);
    let new = u16::from(icmp::ECHO_REPLY) << 8 | (old & 0xff);
    let csum = checksum::update16(u16::from_be_bytes([ip[ihl + 2], ip[ihl + 3]]), old, new);
    ip[ihl..ihl + 2].copy_from_slice(&new.to_be_bytes());
    ip[ihl + 2..ihl + 4].copy_from_slice(&csum.to_be_bytes());
    let mut h = Ipv4Packet::new_checked(ip).expect("ip4-input checked the header");
    let (src, dst) = (h.src(), h.dst());
    h.set_src(dst);
    h.set_dst(src);
    h.set_ttl(64);
    h.fill_checksum();
    let vrf = g.features.l3().vrfs.of_packet(g.pool.meta(i));
    let m = g.pool.meta_mut(i);
    m.set_lookup_vrf(vrf);
    m.rx_if = 0;
    m.tx_if = 0;
}
