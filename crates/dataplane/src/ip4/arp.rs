//! `ip4-arp`: IPv4 packets whose next hop has no MAC yet (and MPLS swaps toward an IPv4 next
//! hop without one).
//!
//! vecflow does not hold such packets (as VPP, unlike Linux): each is dropped as `no-neighbor`, and
//! an ARP request for its next hop goes out of the output interface — at most one per next hop per
//! second ([`crate::neighbor::punt::Punt::resolve_allowed`]) — while the main thread is told a
//! resolution started. A next hop whose resolution already failed gets no more requests for a
//! while: IPv4 packets toward it go to `icmp4-error` for an ICMP host unreachable instead. (The
//! same steps as `ip6-nd`: [`crate::l3::shared::resolve_misses`].)

use crate::ip4::nodes;
use crate::l3::L3Worker;
use crate::neighbor::punt::PuntCounting;
use crate::net::Payload;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;
use std::net::{IpAddr, Ipv4Addr};
use wire::arp::{self, Arp};
use wire::{EtherType, MacAddr};

/// Processes one vector, resolving with ARP (IPv4's `Resolver`).
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    crate::l3::shared::resolve_misses(
        g,
        v,
        &crate::l3::shared::Resolver { family: Payload::Ip4, request, icmp: nodes::ICMP4_ERROR },
    );
}

/// Makes an ARP request for `target` (an IPv4 address) out of interface `tx_if` in a fresh
/// buffer, broadcast or to `dst`; `None` when no buffer is free or `target` is not IPv4.
pub fn request<F: L3Worker>(g: &mut Graph<F>, tx_if: u16, target: IpAddr, dst: Option<MacAddr>) -> Option<u32> {
    let IpAddr::V4(target) = target else { return None };
    let mac = g.features.interfaces().get(tx_if).mac;
    let spa = g.features.interfaces().source_toward(tx_if, target).unwrap_or(Ipv4Addr::UNSPECIFIED);
    let mut packet = [0u8; arp::LEN];
    Arp { op: arp::REQUEST, sha: mac, spa, tha: MacAddr([0; 6]), tpa: target }.write(&mut packet);
    let i = crate::l3::shared::originate(g, tx_if, dst.unwrap_or(MacAddr::BROADCAST), EtherType::ARP, &packet)?;
    g.counters.punt().arp_requests.add(1);
    Some(i)
}
