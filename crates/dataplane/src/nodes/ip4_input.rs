//! `ip4-input`: validates the IPv4 header of each frame (at `l3_offset`) before it is routed.
//!
//! Checks, in order: 20 header bytes present (`truncated`), version 4 and IHL ≥ 5 and total
//! length ≥ header length (`bad-ip-header`), the whole packet present (`truncated`), the
//! header checksum (`bad-checksum`), TTL > 1 (`ttl-expired`). Good packets go to `ip4-lookup`
//! (the whole vector unchanged when all are good).

use crate::errors::DropReason;
use crate::graph::{Graph, NodeId};
use crate::vector::VecHandle;
use wire::checksum;

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
    if checksum::fold(checksum::sum_words(&ip[..ihl], 0)) != 0xffff {
        return Err(DropReason::BadChecksum);
    }
    if h[8] <= 1 {
        return Err(DropReason::TtlExpired);
    }
    Ok(())
}

/// Processes one vector.
pub fn run(g: &mut Graph, v: VecHandle) {
    let mut all_ok = true;
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let l3 = usize::from(g.pool.meta(i).l3_offset);
        let verdict = g.pool.frame(i).get(l3..).map_or(Err(DropReason::Truncated), check);
        match verdict {
            Ok(()) => g.nexts[k] = NodeId::Ip4Lookup,
            Err(reason) => {
                g.mark_drop(k, i, reason);
                all_ok = false;
            }
        }
    }
    if all_ok { g.forward(v, NodeId::Ip4Lookup) } else { g.split(v) }
}
