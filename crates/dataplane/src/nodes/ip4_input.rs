//! `ip4-input`: validates the IPv4 header of each frame (at `l3_offset`) before it is routed.
//!
//! Checks, in order: 20 header bytes present (`truncated`), version 4 and IHL ≥ 5 and total
//! length ≥ header length (`bad-ip-header`), the whole packet present (`truncated`), the
//! header checksum (`bad-checksum`). Good packets go to `ip4-lookup` (the whole vector
//! unchanged when all are good). The TTL is checked only when forwarding (`ip4-rewrite`), so
//! packets for this router's own addresses are delivered whatever their TTL.

use crate::errors::DropReason;
use crate::graph::{Graph, NodeId};
use crate::vector::VecHandle;
use wire::checksum;

/// True when the one's-complement sum of the header (checksum included) is all ones. Sums
/// 32-bit words into 64 bits and folds: the same result as 16-bit words (RFC 1071 §2(B)).
#[inline(always)]
fn header_checksum_ok(h: &[u8]) -> bool {
    let (words, rest) = h.as_chunks::<4>();
    debug_assert!(rest.is_empty(), "IPv4 header lengths are multiples of 4");
    let word = |w: &[u8; 4]| u64::from(u32::from_be_bytes(*w));
    let sum: u64 = match words {
        // No options, the usual case: five fixed loads.
        [a, b, c, d, e] => word(a) + word(b) + word(c) + word(d) + word(e),
        _ => words.iter().map(word).sum(),
    };
    let sum = (sum & 0xffff_ffff) + (sum >> 32);
    checksum::fold((sum & 0xffff_ffff) as u32 + (sum >> 32) as u32) == 0xffff
}

/// The verdict on one IPv4 packet (`ip` = the bytes from the IPv4 header to the frame end).
#[inline(always)]
pub fn check(ip: &[u8]) -> Result<(), DropReason> {
    let Some(h) = ip.get(..20) else { return Err(DropReason::Truncated) };
    let (version, ihl) = (h[0] >> 4, usize::from(h[0] & 0x0f) * 4);
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    if version != 4 || ihl < 20 || total < ihl {
        return Err(DropReason::BadIpHeader);
    }
    if ip.len() < total {
        return Err(DropReason::Truncated);
    }
    if !header_checksum_ok(&ip[..ihl]) {
        return Err(DropReason::BadChecksum);
    }
    Ok(())
}

/// True for the common packet: no options, within the frame, good checksum.
/// Branch-free, so a vector of good packets runs straight through.
#[inline(always)]
fn fast_ok(ip: &[u8]) -> bool {
    let Some(h) = ip.first_chunk::<20>() else { return false };
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    (h[0] == 0x45) & (total >= 20) & (total <= ip.len()) & header_checksum_ok(h)
}

/// Processes one vector: one branch-free pass when every packet is good, otherwise a second
/// pass that names each bad packet's reason.
pub fn run(g: &mut Graph, v: VecHandle) {
    super::validate(g, v, fast_ok, check, DropReason::Truncated, NodeId::Ip4Lookup);
}
