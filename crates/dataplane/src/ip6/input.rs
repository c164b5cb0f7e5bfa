//! `ip6-input`: validates the IPv6 header of each frame (at `l3_offset`) before it is routed.
//!
//! Checks, in order: 40 header bytes present (`truncated`), version 6 (`bad-ip-header`), the
//! payload the header announces present (`truncated`; extension headers are payload and pass
//! untouched), a source that is not multicast (`source-multicast`) and a destination that is
//! not `::1` (`destination-loopback`). Good packets go to `ip6-lookup` (the whole vector
//! unchanged when all are good). The hop limit is checked only when forwarding
//! (`ip6-rewrite`), so packets for this router's own addresses are delivered whatever it is.

use crate::ethernet::fused::{RxTally, plain_tally};
use crate::ip6::{drops, nodes};
use crate::l3::L3Worker;
use crate::runtime::buffer::BufferPool;
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;
use wire::field_u16;
use wire::ipv6::{HEADER_LEN, field};
use wire::{EtherType, MacAddr};

/// `::1` as a big-endian `u128`.
const LOOPBACK: u128 = 1;

/// The verdict on one IPv6 packet (`ip` = the bytes from the IPv6 header to the frame end).
#[inline(always)]
pub fn check(ip: &[u8]) -> Result<(), DropReason> {
    let Some(h) = ip.first_chunk::<HEADER_LEN>() else { return Err(drops::IP6_TRUNCATED) };
    if h[field::VERSION_TC] >> 4 != 6 {
        return Err(drops::IP6_BAD_HEADER);
    }
    if HEADER_LEN + usize::from(field_u16(h, field::PAYLOAD_LEN)) > ip.len() {
        return Err(drops::IP6_TRUNCATED);
    }
    if h[field::SRC.start] == 0xff {
        return Err(drops::IP6_SOURCE_MULTICAST);
    }
    if u128::from_be_bytes(h[field::DST].try_into().expect("16 bytes")) == LOOPBACK {
        return Err(drops::IP6_DESTINATION_LOOPBACK);
    }
    Ok(())
}

/// True for the common packet: every check passes. Branch-free, so a vector of good packets
/// runs straight through.
#[inline(always)]
fn fast_ok(ip: &[u8]) -> bool {
    let Some(h) = ip.first_chunk::<HEADER_LEN>() else { return false };
    let payload = usize::from(field_u16(h, field::PAYLOAD_LEN));
    let dst = u128::from_be_bytes(h[field::DST].try_into().expect("16 bytes"));
    (h[field::VERSION_TC] >> 4 == 6)
        & (HEADER_LEN + payload <= ip.len())
        & (h[field::SRC.start] != 0xff)
        & (dst != LOOPBACK)
}

/// The fused `ethernet-input` → `ip6-input` pass, for frames received on an L3 interface with
/// IPv6 and MAC `mac` that accepts frames of 14 to `max_frame` bytes: when every frame of
/// `indices` has such a size, `mac` or a group as its destination, the IPv6 ethertype (no tag)
/// and an IPv6 header at offset 14 that passes [`fast_ok`], returns what `ethernet-input`
/// counts of them; `None` as soon as one does not (the nodes then run one after the other).
/// One pass over the frames instead of one per node.
pub fn plain_frames(pool: &BufferPool, indices: &[u32], max_frame: u16, mac: MacAddr) -> Option<RxTally> {
    plain_tally(pool, indices, max_frame, mac, EtherType::IPV6, fast_ok)
}

/// Processes one vector: one branch-free pass when every packet is good, otherwise a second
/// pass that names each bad packet's reason.
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    crate::l3::shared::validate(g, v, fast_ok, check, drops::IP6_TRUNCATED, nodes::IP6_LOOKUP);
}
