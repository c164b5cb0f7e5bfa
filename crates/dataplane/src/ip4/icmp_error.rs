//! `icmp4-error`: ICMP errors about packets this router could not forward (RFC 1812).
//!
//! Every packet arrives with its drop reason set and ends in `error-drop` under it. For each,
//! an ICMP error goes back to its source, from the input interface's address, in a fresh
//! buffer routed through `ip4-lookup`, quoting the packet's IP header and as much of its data
//! as keeps the error within 576 bytes:
//! - `ttl-expired`: time exceeded (11/0);
//! - `no-route`: destination unreachable, net (3/0);
//! - `no-neighbor` (a next hop whose resolution failed): destination unreachable, host (3/1);
//! - `fragmentation-needed`: destination unreachable, fragmentation needed (3/4) with the
//!   next hop's MTU.
//!
//! Never about (RFC 1812 §4.3.2.7): an ICMP error, a frame received as link-layer broadcast or
//! multicast, a packet to a multicast or broadcast address (a subnet's too), a non-first
//! fragment, a source in 0/8, 127/8, multicast or 240/4 or a subnet's network or broadcast
//! address, or a packet this router made.
//! All within the worker's ICMP rate limit (`icmp_limited` counts what it withheld).

use crate::ip4::{drops, nodes};
use crate::l3::L3Worker;
use crate::l3::RouteMeta;
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;
use std::net::Ipv4Addr;
use wire::{EtherType, Ipv4Packet, checksum, icmp, ipv4};

/// Largest ICMP error datagram (RFC 1812 §4.3.2.3).
const MAX_ERROR: usize = 576;

/// Processes one vector with the ICMP errors IPv4 makes (its `IcmpErrors`).
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    crate::l3::shared::send_errors(
        g,
        v,
        &crate::l3::shared::IcmpErrors { message, may_answer, build, lookup: nodes::IP4_LOOKUP },
    );
}

/// Type, code and next-hop MTU of the error for buffer `i`'s drop reason.
fn message<F: L3Worker>(g: &Graph<F>, i: u32) -> Option<(u8, u8, u32)> {
    let m = g.pool.meta(i);
    match DropReason::new(m.error) {
        drops::TTL_EXPIRED => Some((icmp::TIME_EXCEEDED, 0, 0)),
        drops::NO_ROUTE => Some((icmp::DEST_UNREACHABLE, icmp::NET_UNREACHABLE, 0)),
        drops::NO_NEIGHBOR | drops::ROUTE_UNREACHABLE => Some((icmp::DEST_UNREACHABLE, icmp::HOST_UNREACHABLE, 0)),
        drops::ROUTE_PROHIBITED => Some((icmp::DEST_UNREACHABLE, icmp::ADMIN_PROHIBITED, 0)),
        drops::FRAG_NEEDED => {
            // The route's pushed labels take part of the MTU.
            let labels = match g.features.l3().adjs.get(m.adj() as usize) {
                Some(crate::l3::Adjacency::Via { push, .. }) => push.labels().len() as u16,
                _ => 0,
            };
            let mtu = g.features.interfaces().get(m.tx_if).mtu.saturating_sub(4 * labels);
            Some((icmp::DEST_UNREACHABLE, icmp::FRAG_NEEDED, u32::from(mtu)))
        }
        _ => None,
    }
}

/// True unless RFC 1812 §4.3.2.7 forbids an error about buffer `i` (of any type).
fn may_answer<F: L3Worker>(g: &Graph<F>, i: u32, _kind: u8) -> bool {
    let Some(ip) = crate::l3::ipv4(&g.pool, i) else { return false };
    let m = g.pool.meta(i);
    let dst = ip.dst();
    // An ICMP packet too short to show its type counts as an error, the safe side.
    let about_error = ip.protocol() == ipv4::protocol::ICMP
        && ip.payload().and_then(|p| p.first()).is_none_or(|&t| icmp::is_error(t));
    m.rx_if != 0
        && g.pool.frame(i)[0] & 1 == 0
        && !dst.is_multicast()
        && dst.octets()[0] < 240
        && !g.features.interfaces().is_subnet_edge(dst)
        && ip.fragment_offset() == 0
        && !about_error
        && !is_invalid_source(g, ip.src())
}

/// True for a source no ICMP message may go to (RFC 1812 §4.3.2.7, §5.3.7): 0/8, 127/8,
/// multicast, 240/4 (with 255.255.255.255), or a subnet's network or broadcast address.
pub fn is_invalid_source<F: L3Worker>(g: &Graph<F>, src: Ipv4Addr) -> bool {
    let first = src.octets()[0];
    first == 0 || first == 127 || first >= 224 || g.features.interfaces().is_subnet_edge(src)
}

/// Builds the error about buffer `i` in a fresh buffer; `None` when none is free or the input
/// interface (and every other) has no address to send it from.
fn build<F: L3Worker>(g: &mut Graph<F>, i: u32, kind: u8, code: u8, mtu: u32) -> Option<u32> {
    let m = *g.pool.meta(i);
    let ip = &g.pool.frame(i)[usize::from(m.l3_offset)..];
    let original = Ipv4Packet::new_checked(ip).ok()?;
    let total = usize::from(original.total_len()).min(ip.len());
    let quote = &ip[..total.min(MAX_ERROR - ipv4::HEADER_LEN - icmp::HEADER_LEN)];
    let to = original.src();
    let from = g
        .features
        .interfaces()
        .source_toward(m.rx_if, to)
        .or_else(|| g.features.interfaces().addresses.first().map(|(_, a)| a.addr))?;
    let mut out = [0u8; 14 + MAX_ERROR];
    out[wire::ethernet::field::ETHERTYPE].copy_from_slice(&EtherType::IPV4.to_be_bytes());
    let len = ipv4::HEADER_LEN + icmp::HEADER_LEN + quote.len();
    let (h, rest) = out[14..14 + len].split_at_mut(ipv4::HEADER_LEN);
    ipv4::write_header(h, len as u16, 64, ipv4::protocol::ICMP, from, to);
    h[ipv4::field::TOS] = 0xc0; // internetwork control
    h[ipv4::field::FLAGS] = 0; // may be fragmented on a link with a tiny MTU
    Ipv4Packet::new_checked(h).expect("20 bytes").fill_checksum();
    rest[0] = kind;
    rest[1] = code;
    rest[4..8].copy_from_slice(&mtu.to_be_bytes()); // the MTU in the low 16 bits (RFC 1191)
    rest[icmp::HEADER_LEN..].copy_from_slice(quote);
    let csum = checksum::checksum(rest);
    rest[2..4].copy_from_slice(&csum.to_be_bytes());
    let e = g.alloc_buffer()?;
    g.pool.write_frame(e, &out[..14 + len]);
    let vrf = g.features.l3().vrfs.of_packet(&m);
    g.pool.meta_mut(e).set_lookup_vrf(vrf);
    Some(e)
}
