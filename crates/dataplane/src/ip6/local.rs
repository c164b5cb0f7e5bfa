//! `ip6-local`: IPv6 packets for this router — to one of its addresses (link-local ones on
//! the input interface included), to all-nodes, all-routers or a solicited-node group.
//!
//! vecflow has no host stack. It takes ICMPv6 messages whose checksum verifies (others:
//! `icmp6-malformed`) that follow the IPv6 header directly:
//! - **echo request** to a unicast address of ours: answered in place (addresses swapped, hop
//!   limit 64) within the worker's ICMP rate limit, unless the source is `::`, multicast or a
//!   subnet-router anycast address. A reply between global addresses is routed through
//!   `ip6-lookup`; one to or from a link-local address goes straight back out of the input
//!   interface to the MAC the request came from.
//! - **neighbor solicitation** (RFC 4861 §7.2.3) for an address of the input interface:
//!   answered in place with an advertisement (router, solicited and override flags; our MAC
//!   as target link-layer address) to the solicitation's source link-layer address (else the
//!   frame's source MAC), or to all-nodes for a duplicate address detection probe from `::`.
//!   The sender's link-layer address is reported to the neighbor table (`stale`, RFC 4861)
//!   when the sender is on the interface's link.
//! - **neighbor advertisement**: its target and target link-layer address (else the frame's
//!   source MAC) are reported: a solicited one confirms the neighbor, an unsolicited one with
//!   the override flag updates an existing entry. Then dropped as `nd-advertisement`.
//! - router solicitations and advertisements and redirects: dropped as `nd-ignored`.
//!
//! ND messages must arrive with hop limit 255 and pass RFC 4861 §7.1's checks
//! (`nd-malformed`). Everything else is dropped as `ip6-local` (`multicast` when sent to a
//! group). With linux-cp on, every neighbor discovery message is first copied up the input
//! interface's TAP, and what else is dropped as `ip6-local` goes up the TAP instead
//! (`linux-cp-punt`): a fragment (a fragment header after the fixed header) as it is, for the
//! kernel to reassemble.

use crate::ip6::{drops, nodes};
use crate::l3::{L3Worker, RouteMeta};
use crate::neighbor::punt::PuntCounting;
use crate::neighbor::punt::{Event, Learn};
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::graph::NodeId;
use crate::runtime::vector::VecHandle;
use std::net::Ipv6Addr;
use wire::ethernet::field as ethernet;
use wire::icmpv6::{self, NeighborMessage};
use wire::ipv6::{self, HEADER_LEN};
use wire::{EtherType, MacAddr, checksum};

/// Processes one vector.
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    let now = crate::runtime::tsc::now();
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        if g.features.has_host() && is_neighbor_discovery(g, i) {
            // linux-cp: Linux gets a copy of every ND message, for its own neighbor entries.
            g.features.copy_up(&g.pool, i);
        }
        match answer(g, i, now) {
            Ok(next) => {
                crate::interface::consumed(g, i);
                let vrf = g.features.l3().vrfs.of_packet(g.pool.meta(i));
                let m = g.pool.meta_mut(i);
                m.set_lookup_vrf(vrf);
                // Straight back out of the input interface, or routed; either way a packet
                // this router originates.
                m.tx_if = if next == crate::interface::nodes::INTERFACE_OUTPUT { m.rx_if } else { 0 };
                m.rx_if = 0;
                g.nexts[k] = next;
            }
            Err(drops::IP6_LOCAL | drops::IP6_MULTICAST) if g.features.has_host() => {
                g.nexts[k] = crate::lcp::nodes::LINUX_CP_PUNT
            }
            Err(reason) => g.mark_drop(k, i, reason),
        }
    }
    g.split(v);
}

/// True when buffer `i` holds an ICMPv6 neighbor discovery message (router solicitation to
/// redirect, types 133 to 137) right after the fixed header.
fn is_neighbor_discovery<F: L3Worker>(g: &Graph<F>, i: u32) -> bool {
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    let f = g.pool.frame(i);
    f.get(l3 + 6) == Some(&icmpv6::PROTOCOL) && f.get(l3 + HEADER_LEN).is_some_and(|t| (133..=137).contains(t))
}

/// The IPv6 header fields of a packet for us and its ICMPv6 message's bounds in the frame.
struct Received {
    src: Ipv6Addr,
    dst: Ipv6Addr,
    hop_limit: u8,
    /// The frame bytes of the ICMPv6 message (from the IPv6 payload length, not the frame's
    /// end: Ethernet pads short frames).
    icmp: std::ops::Range<usize>,
}

/// Answers buffer `i` in place and names where it goes, or the reason to drop it.
fn answer<F: L3Worker>(g: &mut Graph<F>, i: u32, now: u64) -> Result<NodeId, DropReason> {
    let r = received(g, i)?;
    let kind = g.pool.frame(i)[r.icmp.start];
    match kind {
        icmpv6::ECHO_REQUEST if !r.dst.is_multicast() => echo(g, i, &r, now),
        icmpv6::NEIGHBOR_SOLICITATION => solicitation(g, i, &r),
        icmpv6::NEIGHBOR_ADVERTISEMENT => Err(advertisement(g, i, &r)),
        icmpv6::ROUTER_SOLICITATION | icmpv6::ROUTER_ADVERTISEMENT | icmpv6::REDIRECT => Err(drops::ND_IGNORED),
        _ => Err(not_ours(r.dst)),
    }
}

/// Why a packet to `dst` that vecflow does not answer is dropped.
fn not_ours(dst: Ipv6Addr) -> DropReason {
    if dst.is_multicast() { drops::IP6_MULTICAST } else { drops::IP6_LOCAL }
}

/// Reads buffer `i`'s IPv6 header and checks it carries a whole ICMPv6 message with a good
/// checksum.
fn received<F: L3Worker>(g: &Graph<F>, i: u32) -> Result<Received, DropReason> {
    let ip = crate::l3::ipv6(&g.pool, i).ok_or(drops::IP6_LOCAL)?; // ip6-input checked the header is there
    let (src, dst) = (ip.src(), ip.dst());
    if ip.next_header() != icmpv6::PROTOCOL {
        return Err(not_ours(dst));
    }
    let start = usize::from(g.pool.meta(i).l3_offset) + HEADER_LEN;
    let icmp = start..start + usize::from(ip.payload_len()); // ip6-input checked it fits
    let message = &g.pool.frame(i)[icmp.clone()];
    if message.len() < icmpv6::HEADER_LEN || icmpv6::checksum(src, dst, message) != 0 {
        return Err(drops::ICMP6_MALFORMED);
    }
    Ok(Received { src, dst, hop_limit: ip.hop_limit(), icmp })
}

/// True for a source no ICMPv6 message may go to (RFC 4443 §2.4(e)): `::`, multicast, or a
/// subnet-router anycast address.
pub(crate) fn is_invalid_source<F: L3Worker>(g: &Graph<F>, src: Ipv6Addr) -> bool {
    src.is_unspecified() || src.is_multicast() || g.features.interfaces().is_subnet_anycast6(src)
}

/// Turns the echo request in buffer `i` into its reply.
fn echo<F: L3Worker>(g: &mut Graph<F>, i: u32, r: &Received, now: u64) -> Result<NodeId, DropReason> {
    if is_invalid_source(g, r.src) || !g.features.punt().icmp_allowed(now) {
        return Err(drops::IP6_LOCAL);
    }
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    let f = g.pool.frame_mut(i);
    f[l3 + 7] = 64;
    f[l3 + 8..l3 + 24].copy_from_slice(&r.dst.octets());
    f[l3 + 24..l3 + 40].copy_from_slice(&r.src.octets());
    // The swap leaves the pseudo-header's sum as it was: only the type changes.
    let m = &mut f[r.icmp.clone()];
    let old = u16::from_be_bytes([m[0], m[1]]);
    let new = u16::from(icmpv6::ECHO_REPLY) << 8 | (old & 0xff);
    let csum = checksum::update16(u16::from_be_bytes([m[2], m[3]]), old, new);
    m[..2].copy_from_slice(&new.to_be_bytes());
    m[2..4].copy_from_slice(&csum.to_be_bytes());
    g.counters.punt().icmp_sent.add(1);
    let on_link = [r.src, r.dst].iter().any(|&a| crate::net::is_link_local(a.into()));
    if !on_link {
        return Ok(nodes::IP6_LOOKUP);
    }
    let rx_mac = g.features.interfaces().get(g.pool.meta(i).rx_if).mac;
    let f = g.pool.frame_mut(i);
    f.copy_within(6..12, 0);
    f[ethernet::SRC].copy_from_slice(&rx_mac.0);
    Ok(crate::interface::nodes::INTERFACE_OUTPUT)
}

/// The frame's source MAC.
fn frame_source<F: L3Worker>(g: &Graph<F>, i: u32) -> MacAddr {
    MacAddr(g.pool.frame(i)[ethernet::SRC].try_into().expect("a full Ethernet header"))
}

/// Parses the ND message of buffer `i` after RFC 4861 §7.1's checks.
fn neighbor_message<F: L3Worker>(g: &Graph<F>, i: u32, r: &Received) -> Result<NeighborMessage, DropReason> {
    if r.hop_limit != icmpv6::ND_HOP_LIMIT {
        return Err(drops::ND_MALFORMED);
    }
    NeighborMessage::parse(&g.pool.frame(i)[r.icmp.clone()]).map_err(|_| drops::ND_MALFORMED)
}

/// Answers the neighbor solicitation in buffer `i` with our advertisement, in place.
fn solicitation<F: L3Worker>(g: &mut Graph<F>, i: u32, r: &Received) -> Result<NodeId, DropReason> {
    let ns = neighbor_message(g, i, r)?;
    let dad = r.src.is_unspecified();
    if dad && (!icmpv6::is_solicited_node(r.dst) || ns.link_addr.is_some()) {
        return Err(drops::ND_MALFORMED);
    }
    let rx_if = g.pool.meta(i).rx_if;
    if !g.features.interfaces().is_own_address6(rx_if, ns.target) {
        return Err(drops::ND_NOT_FOR_US);
    }
    if let Some(mac) =
        ns.link_addr.filter(|m| !m.is_group() && !dad && g.features.interfaces().is_on_link6(rx_if, r.src))
    {
        let event = Event::Learned { interface: rx_if, address: r.src.into(), mac, how: Learn::Claimed };
        g.features.punt().report(event, g.counters.punt());
    }
    let own_mac = g.features.interfaces().get(rx_if).mac;
    let (to, to_mac, solicited) = if dad {
        (icmpv6::ALL_NODES, icmpv6::multicast_mac(icmpv6::ALL_NODES), 0)
    } else {
        (r.src, ns.link_addr.unwrap_or_else(|| frame_source(g, i)), icmpv6::FLAG_SOLICITED)
    };
    let na = NeighborMessage {
        kind: icmpv6::NEIGHBOR_ADVERTISEMENT,
        flags: icmpv6::FLAG_ROUTER | icmpv6::FLAG_OVERRIDE | solicited,
        target: ns.target,
        link_addr: Some(own_mac),
    };
    let mut frame = [0u8; 14 + HEADER_LEN + icmpv6::ND_LEN + icmpv6::LINK_OPTION_LEN];
    frame[..6].copy_from_slice(&to_mac.0);
    frame[ethernet::SRC].copy_from_slice(&own_mac.0);
    frame[ethernet::ETHERTYPE].copy_from_slice(&EtherType::IPV6.to_be_bytes());
    let (h, m) = frame[14..].split_at_mut(HEADER_LEN);
    let n = na.write(m);
    icmpv6::fill_checksum(ns.target, to, &mut m[..n]);
    ipv6::write_header(h, n as u16, icmpv6::PROTOCOL, icmpv6::ND_HOP_LIMIT, ns.target, to);
    let meta = *g.pool.meta(i);
    g.pool.write_frame(i, &frame);
    let m = g.pool.meta_mut(i);
    (m.rx_if, m.flags) = (meta.rx_if, meta.flags);
    g.counters.punt().nd_advertisements.add(1);
    Ok(crate::interface::nodes::INTERFACE_OUTPUT)
}

/// Reports what the neighbor advertisement in buffer `i` tells; returns the reason it is
/// dropped.
fn advertisement<F: L3Worker>(g: &mut Graph<F>, i: u32, r: &Received) -> DropReason {
    let na = match neighbor_message(g, i, r) {
        Ok(na) if !(r.dst.is_multicast() && na.flags & icmpv6::FLAG_SOLICITED != 0) => na,
        _ => return drops::ND_MALFORMED,
    };
    let rx_if = g.pool.meta(i).rx_if;
    let mac = na.link_addr.unwrap_or_else(|| frame_source(g, i));
    let how = if na.flags & icmpv6::FLAG_SOLICITED != 0 {
        Some(Learn::Confirmed)
    } else if na.flags & icmpv6::FLAG_OVERRIDE != 0 {
        Some(Learn::Overheard)
    } else {
        None
    };
    if let Some(how) = how
        && !mac.is_group()
        && g.features.interfaces().is_on_link6(rx_if, na.target)
        && !g.features.interfaces().is_own_address6(rx_if, na.target)
    {
        let event = Event::Learned { interface: rx_if, address: na.target.into(), mac, how };
        g.features.punt().report(event, g.counters.punt());
    }
    drops::ND_ADVERTISEMENT
}
