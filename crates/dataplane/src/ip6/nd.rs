//! `ip6-nd`: IPv6 packets whose next hop has no MAC yet (and MPLS swaps toward an IPv6 next
//! hop without one), and the neighbor solicitations that resolve them (RFC 4861 §7.2.2).
//!
//! As `ip4-arp` ([`crate::l3::shared::resolve_misses`]): each packet is dropped as `no-neighbor`,
//! and a neighbor solicitation for its next hop goes to the next hop's solicited-node multicast
//! group out of the output interface — at most one per next hop per second — while the main thread
//! is told a resolution started. Toward a next hop whose resolution failed, IPv6 packets go to
//! `icmp6-error` for an ICMPv6 address unreachable instead.

use crate::ip6::nodes;
use crate::l3::L3Worker;
use crate::neighbor::punt::PuntCounting;
use crate::net::Payload;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;
use std::net::IpAddr;
use wire::ipv6::{self, HEADER_LEN};
use wire::{EtherType, MacAddr, icmpv6};

/// Processes one vector, resolving with neighbor solicitations (IPv6's `Resolver`).
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    crate::l3::shared::resolve_misses(
        g,
        v,
        &crate::l3::shared::Resolver { family: Payload::Ip6, request: solicit, icmp: nodes::ICMP6_ERROR },
    );
}

/// Makes a neighbor solicitation for `target` (an IPv6 address) out of interface `tx_if` in a
/// fresh buffer: to the target's solicited-node group, or to `dst` and the target itself (a
/// unicast probe). It comes from the interface's address toward the target and carries the
/// interface's MAC as source link-layer address. `None` when no buffer is free, `target` is
/// not IPv6 or the interface has no IPv6 address.
pub fn solicit<F: L3Worker>(g: &mut Graph<F>, tx_if: u16, target: IpAddr, dst: Option<MacAddr>) -> Option<u32> {
    let IpAddr::V6(target) = target else { return None };
    let mac = g.features.interfaces().get(tx_if).mac;
    let src = g.features.interfaces().source6_toward(tx_if, target)?;
    let (to, to_mac) = match dst {
        Some(m) => (target, m),
        None => (icmpv6::solicited_node(target), icmpv6::multicast_mac(icmpv6::solicited_node(target))),
    };
    let mut packet = [0u8; HEADER_LEN + icmpv6::ND_LEN + icmpv6::LINK_OPTION_LEN];
    let ns = icmpv6::NeighborMessage { kind: icmpv6::NEIGHBOR_SOLICITATION, flags: 0, target, link_addr: Some(mac) };
    let (h, m) = packet.split_at_mut(HEADER_LEN);
    let n = ns.write(m);
    icmpv6::fill_checksum(src, to, &mut m[..n]);
    ipv6::write_header(h, n as u16, icmpv6::PROTOCOL, icmpv6::ND_HOP_LIMIT, src, to);
    let i = crate::l3::shared::originate(g, tx_if, to_mac, EtherType::IPV6, &packet[..HEADER_LEN + n])?;
    g.counters.punt().nd_solicitations.add(1);
    Some(i)
}
