//! `ethernet-input`: the first node after a driver's rx.
//!
//! For every frame of a vector (all from one interface) it checks the length (at least the
//! 14-byte header, at most MTU + 18) and counts the destination as unicast, multicast or
//! broadcast on the rx interface. Then, by the interface's mode:
//! - L2 cross-connect: every frame goes to `l2-xconnect` (the whole vector, unchanged, when
//!   nothing is dropped);
//! - L3: IPv4 and MPLS frames are dropped as `ip4-not-enabled` / `mpls-not-enabled` (this
//!   build does not route yet), anything else as `unknown-ethertype`.
//!
//! Drops: `truncated-ethernet`, `oversize`, `interface-down`, `unknown-ethertype`,
//! `ip4-not-enabled`, `mpls-not-enabled`.

use crate::errors::DropReason;
use crate::graph::{Graph, NodeId};
use crate::interface::{RxMode, cast_bits};
use crate::vector::VecHandle;
use wire::EtherType;
use wire::ethernet::HEADER_LEN;

/// Processes one vector.
pub fn run(g: &mut Graph, v: VecHandle) {
    let port = g.vectors[v].port;
    let ifc = *g.tables.get(port);
    let span = ifc.max_frame.wrapping_sub(HEADER_LEN as u16);
    let (mut valid, mut group, mut bcast) = (0u64, 0u64, 0u64);
    for &i in g.vectors[v].indices() {
        let ok = g.pool.meta(i).len.wrapping_sub(HEADER_LEN as u16) <= span;
        valid += u64::from(ok);
        // Unicast traffic takes one byte load and one well-predicted branch.
        if ok && g.pool.line(i)[0] & 1 == 1 {
            let (_, is_bcast) = cast_bits(g.pool.head_u64(i));
            group += 1;
            bcast += is_bcast;
        }
    }
    let c = g.counters.interface(port);
    c.rx_unicast.add(valid - group);
    c.rx_multicast.add(group - bcast);
    c.rx_broadcast.add(bcast);

    let all_valid = valid == g.vectors[v].len() as u64;
    match ifc.mode {
        RxMode::L2Xconnect { .. } if all_valid && ifc.admin_up => g.forward(v, NodeId::L2Xconnect),
        _ => classify_each(g, v),
    }
}

/// The per-packet path: drops what must be dropped, dispatches the rest, splits the vector.
#[cold]
fn classify_each(g: &mut Graph, v: VecHandle) {
    let ifc = *g.tables.get(g.vectors[v].port);
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let frame = g.pool.frame(i);
        let drop = if !ifc.admin_up {
            Some(DropReason::InterfaceDown)
        } else if frame.len() < HEADER_LEN {
            Some(DropReason::TruncatedEthernet)
        } else if frame.len() > ifc.max_frame as usize {
            Some(DropReason::Oversize)
        } else {
            match ifc.mode {
                RxMode::L2Xconnect { .. } => None,
                RxMode::L3 => Some(match u16::from_be_bytes([frame[12], frame[13]]) {
                    EtherType::IPV4 => DropReason::Ip4NotEnabled,
                    EtherType::MPLS => DropReason::MplsNotEnabled,
                    _ => DropReason::UnknownEthertype,
                }),
            }
        };
        match drop {
            Some(reason) => g.mark_drop(k, i, reason),
            None => g.nexts[k] = NodeId::L2Xconnect,
        }
    }
    g.split(v);
}
