//! The Ethernet half of the fused fast paths: one scalar pass over a vector's frames that
//! checks what `ethernet-input` checks (size, destination MAC, an untagged ethertype) together
//! with a layer 3 input's header check, and the tally `ethernet-input` counts of the frames it
//! took. The layer 3 inputs (`ip4::input::plain_frames`, `ip6::input::plain_frames`,
//! `mpls::input::plain_frames`) build on
//! it and reach `ethernet-input` through [`super::EthernetWorker`], so this module names none of
//! them.

use crate::runtime::buffer::BufferPool;
use wire::MacAddr;
use wire::ethernet::field;

/// The scalar fused `ethernet-input` → `ip4-input`/`ip6-input` pass: when every frame of
/// `indices` is 14 to `max_frame` bytes long, to `mac` or a group, untagged with `ethertype`,
/// and its network header (from offset 14) passes `fast_ok`, their bytes and whether any has a
/// group destination MAC; `None` as soon as one does not.
#[inline(always)]
pub fn plain_frames_scalar(
    pool: &BufferPool,
    indices: &[u32],
    max_frame: u16,
    mac: MacAddr,
    ethertype: u16,
    fast_ok: impl Fn(&[u8]) -> bool,
) -> Option<(u64, bool)> {
    use wire::ethernet::HEADER_LEN;
    let dst = super::dst::DstCheck::unicast_to(mac);
    let (mut octets, mut any_group) = (0, false);
    for &i in indices {
        let f = pool.frame(i);
        let header = match f.first_chunk::<HEADER_LEN>() {
            Some(h) if f.len() <= usize::from(max_frame) => h,
            _ => return None,
        };
        if dst.stranger(header.first_chunk().expect("8 of 14 bytes"))
            || header[field::ETHERTYPE] != ethertype.to_be_bytes()
            || !fast_ok(&f[HEADER_LEN..])
        {
            return None;
        }
        octets += f.len() as u64;
        any_group |= header[0] & 1 == 1;
    }
    Some((octets, any_group))
}

/// What `ethernet-input` counts of the frames a fused pass took (`ip4::input::plain_frames`,
/// `ip6::input::plain_frames`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxTally {
    /// Bytes of all frames.
    pub octets: u64,
    /// Frames with a group (multicast or broadcast) destination MAC.
    pub group: u64,
    /// Frames to the broadcast MAC.
    pub broadcast: u64,
}

/// What `ethernet-input` counts of the frames `indices` a fused pass took: `octets` bytes,
/// and their group and broadcast destinations, looked for only when `any_group`.
#[inline(always)]
pub fn rx_tally(pool: &BufferPool, indices: &[u32], octets: u64, any_group: bool) -> RxTally {
    let mut tally = RxTally { octets, ..RxTally::default() };
    if any_group {
        for &i in indices {
            let (group, broadcast) = crate::interface::cast_bits(pool.head_u64(i));
            tally.group += group;
            tally.broadcast += broadcast;
        }
    }
    tally
}

/// The whole scalar fused pass for the layer 3 input whose frames carry `ethertype` and whose
/// header check is `fast_ok`: [`plain_frames_scalar`], then [`rx_tally`] of what it took.
#[inline(always)]
pub fn plain_tally(
    pool: &BufferPool,
    indices: &[u32],
    max_frame: u16,
    mac: MacAddr,
    ethertype: u16,
    fast_ok: impl Fn(&[u8]) -> bool,
) -> Option<RxTally> {
    let (octets, any_group) = plain_frames_scalar(pool, indices, max_frame, mac, ethertype, fast_ok)?;
    Some(rx_tally(pool, indices, octets, any_group))
}
