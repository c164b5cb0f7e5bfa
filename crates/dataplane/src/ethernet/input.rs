//! `ethernet-input`: the first node after a driver's rx.
//!
//! It counts what each interface receives (packets, octets, unicast/multicast/broadcast),
//! checks the length (at least the 14-byte header, at most MTU + 18), and demultiplexes
//! 802.1Q-tagged frames to the sub-interface of their VLAN id: the tag is removed, the frame's
//! `rx_if` becomes the sub-interface, which counts it. On an L3 (sub-)interface, a unicast
//! frame to another MAC is dropped as `not-for-us` ([`super::dst`]). Then, by the
//! (sub-)interface's mode:
//! - L2 cross-connect: to `l2-xconnect` (tagged frames that match no sub-interface pass as
//!   they are);
//! - L3: IPv4 to `ip4-input` and ARP to `arp-input` when the interface has an IPv4 address
//!   (else `ip4-not-enabled`, `unknown-ethertype`), IPv6 to `ip6-input` when it has an IPv6
//!   address (else `ip6-not-enabled`),
//!   MPLS to `mpls-input` when it has MPLS on (else `mpls-not-enabled`), LLDP up the
//!   (sub-)interface's TAP (`linux-cp-punt`) when linux-cp is on, tagged frames of no
//!   sub-interface are dropped as `unknown-vlan`, anything else (LLDP without linux-cp, slow
//!   protocols such as LACP, STP's LLC frames) as `unknown-ethertype`.
//!
//! An interface with flow rules sends every frame that passed those checks to `flow-classify`
//! instead, whose `normal` action dispatches as above.
//!
//! When every frame is untagged, well-sized and goes the same way (the usual case), the
//! vector is counted once and handed on unchanged.
//!
//! Fused fast paths: on an L3 interface with IPv4 (without flow rules), a vector of plain IPv4
//! frames (well-sized, to the interface's MAC or a group, no options, good checksum) is
//! checked for both this node and `ip4-input` in one pass and handed straight to
//! `ip4-lookup`; likewise a vector of plain IPv6 frames on an interface with IPv6, for
//! `ip6-input`, to `ip6-lookup`, and a vector of plain MPLS frames (a label stack entry with a
//! TTL above 1) on an interface with MPLS, for `mpls-input`, to `mpls-lookup`. The input node still counts the call and its packets (as
//! `fused`, their clocks being this node's); while the packet tracer runs, the nodes run one
//! after the other so that traces show each one.

use super::dst::DstCheck;
use super::fused::RxTally;
use crate::ethernet::EthernetWorker;
use crate::ethernet::{drops, nodes};
use crate::interface::InterfaceCounters;
use crate::interface::{IfRuntime, RxMode, cast_bits};
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::graph::NodeId;
use crate::runtime::vector::VecHandle;
use wire::EtherType;
use wire::ethernet::field;
use wire::ethernet::{HEADER_LEN, VLAN_TAG_LEN};
use wire::field_u16;

/// Processes one vector.
#[inline(never)]
pub fn run<F: EthernetWorker>(g: &mut Graph<F>, v: VecHandle) {
    let port = g.vectors[v].port;
    g.features.sample_rx(&mut g.pool, &mut g.vectors[v], port, &g.counters);
    let ifc = *g.features.interfaces().get(port);
    if fused(g, v, &ifc) {
        return;
    }
    let span = ifc.max_frame.wrapping_sub(HEADER_LEN as u16);
    let indices = g.vectors[v].indices();
    // The ethertype as it lies in the frame (no byte swap): every frame is compared with the
    // first one's, so a uniform vector needs one xor and one or per frame.
    let raw_ethertype = |i: u32| {
        let line = g.pool.line(i);
        u16::from_ne_bytes([line[12], line[13]])
    };
    let first = indices.first().map_or(0, |&i| raw_ethertype(i));
    // A cross-connect checks no destination: its loop skips the check (a loop-invariant
    // branch on the mode, which the compiler takes out of the loop: callgrind counts l2xc's
    // ethernet-input as before).
    let (dst, check) = (DstCheck::of(&ifc), matches!(ifc.mode, RxMode::L3));
    let (mut bad_size, mut strangers, mut mixed) = (false, 0u64, 0u16);
    let (mut octets, mut group, mut bcast) = (0u64, 0u64, 0u64);
    for &i in indices {
        let len = g.pool.meta(i).len();
        bad_size |= len.wrapping_sub(HEADER_LEN as u16) > span;
        octets += u64::from(len);
        mixed |= raw_ethertype(i) ^ first;
        // Unicast traffic takes one well-predicted branch and, on an L3 interface, the
        // destination check: an xor and an and. (Counted for every frame: when one is
        // missized or for another host, the per-packet path counts them all again.)
        let head = g.pool.line(i).first_chunk::<8>().expect("64 bytes");
        if head[0] & 1 == 1 {
            let (_, is_bcast) = cast_bits(u64::from_be_bytes(*head));
            group += 1;
            bcast += is_bcast;
        } else if check {
            strangers |= dst.difference(head);
        }
    }
    let n = indices.len() as u64;
    let all = |ethertype: u16| mixed == 0 && first == ethertype.to_be();
    let next = match ifc.mode {
        // Frames for other hosts are dropped one by one; tagged frames go one by one, to
        // their sub-interfaces.
        _ if bad_size
            || strangers != 0
            || !ifc.admin_up
            || (ifc.has_subifs && (mixed != 0 || all(EtherType::VLAN))) =>
        {
            None
        }
        // Interfaces with flow rules classify first (the rules' `normal` goes on from there).
        _ if ifc.classify => Some(F::NEXT.flow_classify),
        RxMode::L2Xconnect { .. } => Some(nodes::L2_XCONNECT),
        RxMode::L3 if all(EtherType::IPV4) && ifc.ip4 => Some(F::NEXT.ip4_input),
        RxMode::L3 if all(EtherType::IPV6) && ifc.ip6 => Some(F::NEXT.ip6_input),
        RxMode::L3 if all(EtherType::MPLS) && ifc.mpls => Some(F::NEXT.mpls_input),
        RxMode::L3 => None,
    };
    match next {
        Some(node) => {
            count_vector(g, port, n, RxTally { octets, group, broadcast: bcast });
            g.forward(v, node);
        }
        None => classify_each(g, v),
    }
}

/// The fused paths to `ip4-input`, `ip6-input` and `mpls-input`: on an L3 interface with the
/// protocol of the vector's first frame, when every frame of vector `v` is a plain packet of
/// it to the interface's MAC or a group ([`EthernetWorker::plain_ip4`],
/// [`EthernetWorker::plain_ip6`], [`EthernetWorker::plain_mpls`]), both nodes' work is done in
/// one pass and the vector
/// goes straight to the lookup, counted as a call of the input node. Not while the packet
/// tracer runs, so that traces show each node. Returns whether it took the vector.
#[inline(always)]
fn fused<F: EthernetWorker>(g: &mut Graph<F>, v: VecHandle, ifc: &IfRuntime) -> bool {
    if !(matches!(ifc.mode, RxMode::L3) && ifc.admin_up && !ifc.classify) || g.trace.active {
        return false;
    }
    // The family is told by the vector's first frame, at the cost of a load.
    let Some(&first) = g.vectors[v].indices().first() else { return false };
    let line = g.pool.line(first);
    let ethertype = u16::from_be_bytes([line[12], line[13]]);
    let indices = g.vectors[v].indices();
    let (tally, input, lookup) = match ethertype {
        EtherType::IPV4 if ifc.ip4 => {
            let tally = F::plain_ip4(g.isa, &g.pool, indices, ifc.max_frame, ifc.mac);
            (tally, F::NEXT.ip4_input, F::NEXT.ip4_lookup)
        }
        EtherType::IPV6 if ifc.ip6 => {
            (F::plain_ip6(&g.pool, indices, ifc.max_frame, ifc.mac), F::NEXT.ip6_input, F::NEXT.ip6_lookup)
        }
        EtherType::MPLS if ifc.mpls => {
            (F::plain_mpls(&g.pool, indices, ifc.max_frame, ifc.mac), F::NEXT.mpls_input, F::NEXT.mpls_lookup)
        }
        _ => return false,
    };
    let Some(tally) = tally else { return false };
    let n = indices.len() as u64;
    count_vector(g, g.vectors[v].port, n, tally);
    g.count_fused(input, n);
    g.forward(v, lookup);
    true
}

/// Counts `n` well-sized frames received on `port`, summed in `tally`.
#[inline(always)]
fn count_vector<F: EthernetWorker>(g: &Graph<F>, port: u16, n: u64, tally: RxTally) {
    let c = g.counters.interface(port);
    c.rx_packets.add(n);
    c.rx_octets.add(tally.octets);
    c.rx_unicast.add(n - tally.group);
    c.rx_multicast.add(tally.group - tally.broadcast);
    c.rx_broadcast.add(tally.broadcast);
}

/// Counts one received frame on `rx_if`; its destination only when `sized` (a full header,
/// within the MTU), as the vector path does.
fn count<F: EthernetWorker>(g: &Graph<F>, rx_if: u16, len: usize, head: u64, sized: bool) {
    let c = g.counters.interface(rx_if);
    c.rx_packets.add(1);
    c.rx_octets.add(len as u64);
    if sized {
        let (is_group, is_bcast) = cast_bits(head);
        c.rx_unicast.add(1 - is_group);
        c.rx_multicast.add(is_group - is_bcast);
        c.rx_broadcast.add(is_bcast);
    }
}

/// Where a frame on interface `ifc` goes, by its (inner) ethertype, without flow rules; `lcp`
/// when linux-cp is on (LLDP then goes up the interface's TAP).
pub(crate) fn dispatch<F: EthernetWorker>(ifc: &IfRuntime, ethertype: u16, lcp: bool) -> Result<NodeId, DropReason> {
    match ifc.mode {
        RxMode::L2Xconnect { .. } => Ok(nodes::L2_XCONNECT),
        RxMode::L3 => match ethertype {
            EtherType::IPV4 if ifc.ip4 => Ok(F::NEXT.ip4_input),
            EtherType::IPV4 => Err(drops::IP4_NOT_ENABLED),
            EtherType::ARP if ifc.ip4 => Ok(F::NEXT.arp_input),
            EtherType::IPV6 if ifc.ip6 => Ok(F::NEXT.ip6_input),
            EtherType::IPV6 => Err(drops::IP6_NOT_ENABLED),
            EtherType::MPLS if ifc.mpls => Ok(F::NEXT.mpls_input),
            EtherType::MPLS => Err(drops::MPLS_NOT_ENABLED),
            EtherType::LLDP if lcp => Ok(F::NEXT.linux_cp_punt),
            EtherType::VLAN | EtherType::QINQ => Err(drops::UNKNOWN_VLAN),
            _ => Err(drops::UNKNOWN_ETHERTYPE),
        },
    }
}

/// The per-packet path: counts each frame on its (sub-)interface, drops what must be dropped
/// (frames for other hosts among them), removes the tag of frames for sub-interfaces,
/// dispatches the rest, splits the vector.
#[cold]
fn classify_each<F: EthernetWorker>(g: &mut Graph<F>, v: VecHandle) {
    let port = g.vectors[v].port;
    let port_ifc = *g.features.interfaces().get(port);
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let len = g.pool.frame(i).len();
        let head = g.pool.head_u64(i);
        let ethertype = |g: &Graph<F>| {
            let f = g.pool.frame(i);
            field_u16(f, field::ETHERTYPE)
        };
        let sub = if len >= HEADER_LEN + VLAN_TAG_LEN && port_ifc.has_subifs && ethertype(g) == EtherType::VLAN {
            let f = g.pool.frame(i);
            let vid = field_u16(f, field::TCI) & 0x0fff;
            g.features.interfaces().vlans.get(&(port, vid)).copied()
        } else {
            None
        };
        let rx_if = sub.unwrap_or(port);
        count(g, rx_if, len, head, (HEADER_LEN..=port_ifc.max_frame as usize).contains(&len));
        let ifc = *g.features.interfaces().get(rx_if);
        let next = if !port_ifc.admin_up || !ifc.admin_up {
            Err(drops::INTERFACE_DOWN)
        } else if len < HEADER_LEN {
            Err(drops::TRUNCATED_ETHERNET)
        } else if len > port_ifc.max_frame as usize || (sub.is_some() && len - VLAN_TAG_LEN > ifc.max_frame as usize) {
            Err(drops::OVERSIZE)
        } else if DstCheck::of(&ifc).stranger(&head.to_be_bytes()) {
            Err(drops::NOT_FOR_US)
        } else {
            if sub.is_some() {
                // Remove the tag: the addresses move 4 bytes up and the frame starts there.
                g.pool.frame_mut(i).copy_within(0..12, VLAN_TAG_LEN);
                g.pool.shrink_head(i, VLAN_TAG_LEN).expect("a tagged frame holds its tag");
            }
            if ifc.classify {
                Ok(F::NEXT.flow_classify)
            } else {
                dispatch::<F>(&ifc, ethertype(g), g.features.has_host())
            }
        };
        let m = g.pool.meta_mut(i);
        m.rx_if = rx_if;
        m.l3_offset = HEADER_LEN as u16;
        match next {
            Ok(node) => g.nexts[k] = node,
            Err(reason) => g.mark_drop(k, i, reason),
        }
    }
    g.split(v);
}
