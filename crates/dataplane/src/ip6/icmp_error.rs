//! `icmp6-error`: ICMPv6 errors about packets this router could not forward (RFC 4443).
//!
//! Every packet arrives with its drop reason set and ends in `error-drop` under it. For each,
//! an ICMPv6 error goes back to its source in a fresh buffer routed through `ip6-lookup`,
//! quoting as much of the packet as keeps the error within the IPv6 minimum MTU (1280
//! bytes):
//! - `hop-limit-expired`: time exceeded (3/0);
//! - `no-route`: destination unreachable, no route (1/0);
//! - `no-neighbor` (a next hop whose resolution failed): destination unreachable, address
//!   unreachable (1/3);
//! - `packet-too-big`: packet too big (2/0) with the next hop's MTU (pushed labels take
//!   their part of it).
//!
//! It comes from the input interface's global address, else from the first global address
//! of any interface (none: no error). Never about (RFC 4443 §2.4(e)): an ICMPv6 error or a
//! redirect; a packet to a multicast address or received as link-layer multicast or broadcast
//! (but for packet too big); a source that is `::`, multicast, a subnet-router anycast
//! address or link-local (the error could not be routed back); a packet this router made.
//! A fragment other than the first carries no ICMPv6 header to look at: it gets its error
//! (RFC 4443 §3.2, §3.3). All within the worker's ICMP rate limit (`icmp_limited` counts
//! what it withheld).

use crate::ip6::{drops, nodes};
use crate::l3::Adjacency;
use crate::l3::L3Worker;
use crate::l3::RouteMeta;
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;
use wire::ipv6::{self, HEADER_LEN};
use wire::{EtherType, Ipv6Packet, MacAddr, icmpv6};

/// The IPv6 minimum MTU: no error is larger (RFC 4443 §2.4(c)).
const MIN_MTU: usize = 1280;

/// Processes one vector with the ICMPv6 errors IPv6 makes (its `IcmpErrors`).
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    crate::l3::shared::send_errors(
        g,
        v,
        &crate::l3::shared::IcmpErrors { message, may_answer, build, lookup: nodes::IP6_LOOKUP },
    );
}

/// Type, code and 32-bit parameter (the MTU of packet too big) of the error for buffer `i`'s
/// drop reason.
fn message<F: L3Worker>(g: &Graph<F>, i: u32) -> Option<(u8, u8, u32)> {
    let m = g.pool.meta(i);
    match DropReason::new(m.error) {
        drops::HOP_LIMIT_EXPIRED => Some((icmpv6::TIME_EXCEEDED, 0, 0)),
        drops::IP6_NO_ROUTE | drops::IP6_ROUTE_UNREACHABLE => Some((icmpv6::DEST_UNREACHABLE, icmpv6::NO_ROUTE, 0)),
        drops::IP6_ROUTE_PROHIBITED => Some((icmpv6::DEST_UNREACHABLE, icmpv6::ADMIN_PROHIBITED, 0)),
        drops::IP6_NO_NEIGHBOR => Some((icmpv6::DEST_UNREACHABLE, icmpv6::ADDRESS_UNREACHABLE, 0)),
        drops::PACKET_TOO_BIG => {
            let labels = match g.features.l3().adjs.get(m.adj() as usize) {
                Some(Adjacency::Via { push, .. }) => push.labels().len() as u16,
                _ => 0,
            };
            Some((
                icmpv6::PACKET_TOO_BIG,
                0,
                u32::from(g.features.interfaces().get(m.tx_if).mtu.saturating_sub(4 * labels)),
            ))
        }
        _ => None,
    }
}

/// True unless RFC 4443 §2.4(e) forbids an error of type `kind` about buffer `i`.
fn may_answer<F: L3Worker>(g: &Graph<F>, i: u32, kind: u8) -> bool {
    let Some(ip) = crate::l3::ipv6(&g.pool, i) else { return false };
    let m = g.pool.meta(i);
    let packet = &g.pool.frame(i)[usize::from(m.l3_offset)..];
    let about_error = match ipv6::upper_layer(packet) {
        // A first fragment (or whole packet) too short to show its type counts as an error,
        // the safe side.
        (icmpv6::PROTOCOL, Some(at)) => packet.get(at).is_none_or(|&t| icmpv6::is_error(t) || t == icmpv6::REDIRECT),
        _ => false,
    };
    let group = g.pool.frame(i)[0] & 1 == 1 || ip.dst().is_multicast();
    let src = ip.src();
    m.rx_if != 0
        && !about_error
        && (!group || kind == icmpv6::PACKET_TOO_BIG)
        && !crate::ip6::local::is_invalid_source(g, src)
        && !crate::net::is_link_local(src.into())
}

/// Builds the error about buffer `i` in a fresh buffer (its MACs left to `ip6-rewrite`);
/// `None` when none is free or no interface has a global address to send it from.
fn build<F: L3Worker>(g: &mut Graph<F>, i: u32, kind: u8, code: u8, param: u32) -> Option<u32> {
    let m = *g.pool.meta(i);
    let ip = &g.pool.frame(i)[usize::from(m.l3_offset)..];
    let original = Ipv6Packet::new_checked(ip).ok()?;
    let total = (HEADER_LEN + usize::from(original.payload_len())).min(ip.len());
    let quote = &ip[..total.min(MIN_MTU - HEADER_LEN - icmpv6::HEADER_LEN)];
    let to = original.src();
    let from = g.features.interfaces().global6(m.rx_if)?;
    let mut out = [0u8; MIN_MTU];
    let len = HEADER_LEN + icmpv6::HEADER_LEN + quote.len();
    let (h, rest) = out[..len].split_at_mut(HEADER_LEN);
    rest[0] = kind;
    rest[1] = code;
    rest[4..8].copy_from_slice(&param.to_be_bytes());
    rest[icmpv6::HEADER_LEN..].copy_from_slice(quote);
    icmpv6::fill_checksum(from, to, rest);
    ipv6::write_header(h, (len - HEADER_LEN) as u16, icmpv6::PROTOCOL, 64, from, to);
    let e = crate::l3::shared::originate(g, 0, MacAddr::default(), EtherType::IPV6, &out[..len])?;
    let vrf = g.features.l3().vrfs.of_packet(&m);
    g.pool.meta_mut(e).set_lookup_vrf(vrf);
    Some(e)
}
