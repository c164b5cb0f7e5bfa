//! `ip4-input`: validates the IPv4 header of each frame (at `l3_offset`) before it is routed.
//!
//! Checks, in order: 20 header bytes present (`truncated`), version 4 and IHL ≥ 5 and total
//! length ≥ header length (`bad-ip-header`), the whole packet present (`truncated`), the
//! header checksum (`bad-checksum`). Good packets go to `ip4-lookup` (the whole vector
//! unchanged when all are good). The TTL is checked only when forwarding (`ip4-rewrite`), so
//! packets for this router's own addresses are delivered whatever their TTL.

use crate::ethernet::fused::{RxTally, plain_frames_scalar, rx_tally};
use crate::ip4::{drops, nodes};
use crate::l3::L3Worker;
use crate::runtime::buffer::BufferPool;
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::isa::Isa;
use crate::runtime::vector::VecHandle;
use wire::ipv4::field;
use wire::{EtherType, MacAddr};
use wire::{checksum, field_u16};

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
    let Some(h) = ip.get(..20) else { return Err(drops::TRUNCATED) };
    let (version, ihl) = (h[field::VERSION_IHL] >> 4, usize::from(h[field::VERSION_IHL] & 0x0f) * 4);
    let total = usize::from(field_u16(h, field::TOTAL_LEN));
    if version != 4 || ihl < 20 || total < ihl {
        return Err(drops::BAD_IP_HEADER);
    }
    if ip.len() < total {
        return Err(drops::TRUNCATED);
    }
    if !header_checksum_ok(&ip[..ihl]) {
        return Err(drops::BAD_CHECKSUM);
    }
    Ok(())
}

/// True for the common packet: no options, within the frame, good checksum.
/// Branch-free, so a vector of good packets runs straight through.
#[inline(always)]
pub fn fast_ok(ip: &[u8]) -> bool {
    let Some(h) = ip.first_chunk::<20>() else { return false };
    let total = usize::from(field_u16(h, field::TOTAL_LEN));
    (h[field::VERSION_IHL] == 0x45) & (total >= 20) & (total <= ip.len()) & header_checksum_ok(h)
}

/// True when every packet of `indices` passes [`fast_ok`], decided by the `isa` variant (the
/// scalar loop when the pool is too large to gather from).
pub fn all_fast_ok(isa: Isa, pool: &BufferPool, indices: &[u32]) -> bool {
    let raw = pool.raw();
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the graph runs a variant only once `Isa::supported` said the CPU has it;
        // the raw pool is this pool's, whose every slot offset fits an i32.
        Isa::Avx512 if raw.gatherable() => unsafe { x86::all_fast_ok_avx512(raw, indices) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        Isa::Avx2 if raw.gatherable() => unsafe { x86::all_fast_ok_avx2(raw, indices) },
        _ => indices.iter().all(|&i| {
            let l3 = usize::from(pool.meta(i).l3_offset);
            pool.frame(i).get(l3..).is_some_and(fast_ok)
        }),
    }
}

/// Processes one vector: one branch-free pass when every packet is good (16 or 8 packets at
/// once with AVX-512 or AVX2), otherwise a second pass that names each bad packet's reason.
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    let all_ok = all_fast_ok(g.isa, &g.pool, g.vectors[v].indices());
    crate::l3::shared::validated(g, v, all_ok, check, drops::TRUNCATED, nodes::IP4_LOOKUP);
}

/// The fused `ethernet-input` → `ip4-input` pass, for frames received on an L3 interface with
/// IPv4 and MAC `mac` that accepts frames of 14 to `max_frame` bytes: when every frame of
/// `indices` has such a size, `mac` or a group as its destination, the IPv4 ethertype (no tag)
/// and an IPv4 header at offset 14 that passes [`fast_ok`], returns what `ethernet-input`
/// counts of them; `None` as soon as one does not (the nodes then run one after the other).
/// One pass over the frames, by the `isa` variant (16 or 8 frames at once), instead of one per
/// node.
pub fn plain_frames(isa: Isa, pool: &BufferPool, indices: &[u32], max_frame: u16, mac: MacAddr) -> Option<RxTally> {
    let raw = pool.raw();
    // The SIMD passes sum lengths in 32-bit lanes: enough for a vector, not for any slice.
    let simd = raw.gatherable() && indices.len() <= 1 << 16;
    let (octets, any_group) = match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `all_fast_ok`.
        Isa::Avx512 if simd => unsafe { x86::plain_frames_avx512(raw, indices, max_frame, mac)? },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as in `all_fast_ok`.
        Isa::Avx2 if simd => unsafe { x86::plain_frames_avx2(raw, indices, max_frame, mac)? },
        _ => plain_frames_scalar(pool, indices, max_frame, mac, EtherType::IPV4, fast_ok)?,
    };
    Some(rx_tally(pool, indices, octets, any_group))
}

/// [`fast_ok`] across 16 or 8 packets at once: each packet's metadata words and the five
/// 32-bit words of its IPv4 header are gathered into one lane each, and the version/IHL byte,
/// the total length against the bytes present, and the header checksum (summed as
/// little-endian 16-bit words: a one's-complement sum is all ones in either byte order) are
/// checked in every lane together. The fused pass ([`plain_frames`]) adds the frame's size,
/// ethertype and destination MAC to the same lanes.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use crate::runtime::buffer::RawPool;
    use std::arch::x86_64::*;
    use wire::MacAddr;

    /// The IPv4 ethertype as the low 16 bits of a little-endian word loaded at byte 12.
    const IPV4_LE: i32 = 0x0008;

    /// `mac`'s bytes 0 to 4 and 2 to 6, as the little-endian words loaded at a frame's bytes 0
    /// and 2 when it is the destination.
    fn mac_words(mac: MacAddr) -> (i32, i32) {
        let m = mac.0;
        (i32::from_le_bytes([m[0], m[1], m[2], m[3]]), i32::from_le_bytes([m[2], m[3], m[4], m[5]]))
    }

    /// The lanes of `has20` whose IPv4 header, at byte `at` of the data region with `present`
    /// bytes from there to the frame end, passes `fast_ok` (AVX-512).
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW/VL; the 20 bytes at `data + at` lie inside the region in every
    /// lane of `has20`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn header_ok_avx512(data: *const u8, has20: __mmask16, at: __m512i, present: __m512i) -> __mmask16 {
        let (ones16, zero) = (_mm512_set1_epi32(0xffff), _mm512_setzero_si512());
        // SAFETY: the caller's promise, word by word.
        let word = |j: usize| unsafe { _mm512_mask_i32gather_epi32::<1>(zero, has20, at, data.add(4 * j).cast()) };
        let w = [word(0), word(1), word(2), word(3), word(4)];
        let v45 = _mm512_mask_cmpeq_epi32_mask(
            has20,
            _mm512_and_si512(w[0], _mm512_set1_epi32(0xff)),
            _mm512_set1_epi32(0x45),
        );
        let total = _mm512_or_si512(
            _mm512_srli_epi32::<24>(w[0]),
            _mm512_and_si512(_mm512_srli_epi32::<8>(w[0]), _mm512_set1_epi32(0xff00)),
        );
        let length_ok = _mm512_mask_cmpge_epi32_mask(v45, total, _mm512_set1_epi32(20))
            & _mm512_mask_cmple_epi32_mask(v45, total, present);
        let mut sum = zero;
        for x in w {
            sum = _mm512_add_epi32(sum, _mm512_add_epi32(_mm512_and_si512(x, ones16), _mm512_srli_epi32::<16>(x)));
        }
        sum = _mm512_add_epi32(_mm512_and_si512(sum, ones16), _mm512_srli_epi32::<16>(sum));
        sum = _mm512_add_epi32(_mm512_and_si512(sum, ones16), _mm512_srli_epi32::<16>(sum));
        _mm512_mask_cmpeq_epi32_mask(length_ok, sum, ones16)
    }

    /// The lanes of `has20` (all ones or all zeros each) whose IPv4 header, at byte `at` of
    /// the data region with `present` bytes from there to the frame end, passes `fast_ok`
    /// (AVX2), as all-ones lanes.
    ///
    /// # Safety
    /// The CPU has AVX2; otherwise as [`header_ok_avx512`].
    #[target_feature(enable = "avx2")]
    unsafe fn header_ok_avx2(data: *const u8, has20: __m256i, at: __m256i, present: __m256i) -> __m256i {
        let (ones16, zero) = (_mm256_set1_epi32(0xffff), _mm256_setzero_si256());
        // SAFETY: the caller's promise, word by word.
        let word = |j: usize| unsafe { _mm256_mask_i32gather_epi32::<1>(zero, data.add(4 * j).cast(), at, has20) };
        let w = [word(0), word(1), word(2), word(3), word(4)];
        let v45 = _mm256_cmpeq_epi32(_mm256_and_si256(w[0], _mm256_set1_epi32(0xff)), _mm256_set1_epi32(0x45));
        let total = _mm256_or_si256(
            _mm256_srli_epi32::<24>(w[0]),
            _mm256_and_si256(_mm256_srli_epi32::<8>(w[0]), _mm256_set1_epi32(0xff00)),
        );
        let length_ok =
            _mm256_andnot_si256(_mm256_cmpgt_epi32(total, present), _mm256_cmpgt_epi32(total, _mm256_set1_epi32(19)));
        let mut sum = zero;
        for x in w {
            sum = _mm256_add_epi32(sum, _mm256_add_epi32(_mm256_and_si256(x, ones16), _mm256_srli_epi32::<16>(x)));
        }
        sum = _mm256_add_epi32(_mm256_and_si256(sum, ones16), _mm256_srli_epi32::<16>(sum));
        sum = _mm256_add_epi32(_mm256_and_si256(sum, ones16), _mm256_srli_epi32::<16>(sum));
        _mm256_and_si256(_mm256_and_si256(has20, v45), _mm256_and_si256(length_ok, _mm256_cmpeq_epi32(sum, ones16)))
    }

    /// A chunk of (up to 16) buffers, one per lane: where their metadata is (byte offsets
    /// into it), their metadata's offset/length word, and where their frames start (byte
    /// offsets into the data region).
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW/VL; `lanes` covers only `chunk`'s elements, each an index of
    /// the live pool `pool`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    unsafe fn chunk_avx512(pool: RawPool, chunk: &[u32], lanes: __mmask16) -> (__m512i, __m512i, __m512i) {
        // SAFETY: the masked load reads only the chunk; the gather reads a word inside
        // metadata entry `i & mask`.
        unsafe {
            let idx = _mm512_maskz_loadu_epi32(lanes, chunk.as_ptr().cast());
            let k = _mm512_and_si512(idx, _mm512_set1_epi32(pool.mask as i32));
            let at_meta = _mm512_slli_epi32::<5>(k);
            let meta = pool.meta.cast::<u8>().add(RawPool::OFFSET_LEN);
            let off_len = _mm512_mask_i32gather_epi32::<1>(_mm512_setzero_si512(), lanes, at_meta, meta.cast());
            let slot = _mm512_mullo_epi32(k, _mm512_set1_epi32(pool.stride as i32));
            (at_meta, off_len, _mm512_add_epi32(slot, _mm512_and_si512(off_len, _mm512_set1_epi32(0xffff))))
        }
    }

    /// As [`chunk_avx512`], 8 buffers, for AVX2.
    ///
    /// # Safety
    /// The CPU has AVX2; `lanes` covers only `chunk`'s elements, each an index of the live
    /// pool `pool`.
    #[target_feature(enable = "avx2")]
    unsafe fn chunk_avx2(pool: RawPool, chunk: &[u32], lanes: __m256i) -> (__m256i, __m256i, __m256i) {
        // SAFETY: as in `chunk_avx512`.
        unsafe {
            let idx = _mm256_maskload_epi32(chunk.as_ptr().cast(), lanes);
            let k = _mm256_and_si256(idx, _mm256_set1_epi32(pool.mask as i32));
            let at_meta = _mm256_slli_epi32::<5>(k);
            let meta = pool.meta.cast::<u8>().add(RawPool::OFFSET_LEN);
            let off_len = _mm256_mask_i32gather_epi32::<1>(_mm256_setzero_si256(), meta.cast(), at_meta, lanes);
            let slot = _mm256_mullo_epi32(k, _mm256_set1_epi32(pool.stride as i32));
            (at_meta, off_len, _mm256_add_epi32(slot, _mm256_and_si256(off_len, _mm256_set1_epi32(0xffff))))
        }
    }

    /// The AVX-512 pass over `indices` (16 packets a step).
    ///
    /// # Safety
    /// The CPU has AVX-512 F/BW/VL; `pool` describes a live pool that is
    /// [`RawPool::gatherable`] and holds every index of `indices`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn all_fast_ok_avx512(pool: RawPool, indices: &[u32]) -> bool {
        let meta = pool.meta.cast::<u8>();
        let zero = _mm512_setzero_si512();
        for chunk in indices.chunks(16) {
            let lanes = ((1u32 << chunk.len()) - 1) as __mmask16;
            // SAFETY: each metadata gather reads a word inside entry `i & mask`; the header
            // is read only in lanes with at least 20 bytes from l3 to the frame end, which lie
            // in the slot (offset + len <= the stride).
            unsafe {
                let (at_meta, off_len, frame) = chunk_avx512(pool, chunk, lanes);
                let err_l3 = _mm512_mask_i32gather_epi32::<1>(zero, lanes, at_meta, meta.add(RawPool::ERROR_L3).cast());
                let l3 = _mm512_srli_epi32::<16>(err_l3);
                let present = _mm512_sub_epi32(_mm512_srli_epi32::<16>(off_len), l3);
                let has20 = _mm512_mask_cmpge_epi32_mask(lanes, present, _mm512_set1_epi32(20));
                let at = _mm512_add_epi32(frame, l3);
                if header_ok_avx512(pool.data, has20, at, present) != lanes {
                    return false;
                }
            }
        }
        true
    }

    /// The AVX2 pass over `indices` (8 packets a step).
    ///
    /// # Safety
    /// The CPU has AVX2; otherwise as [`all_fast_ok_avx512`].
    #[target_feature(enable = "avx2")]
    pub unsafe fn all_fast_ok_avx2(pool: RawPool, indices: &[u32]) -> bool {
        let meta = pool.meta.cast::<u8>();
        let zero = _mm256_setzero_si256();
        let lane_numbers = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        for chunk in indices.chunks(8) {
            let lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(chunk.len() as i32), lane_numbers);
            // SAFETY: as in `all_fast_ok_avx512`.
            unsafe {
                let (at_meta, off_len, frame) = chunk_avx2(pool, chunk, lanes);
                let err_l3 = _mm256_mask_i32gather_epi32::<1>(zero, meta.add(RawPool::ERROR_L3).cast(), at_meta, lanes);
                let l3 = _mm256_srli_epi32::<16>(err_l3);
                let present = _mm256_sub_epi32(_mm256_srli_epi32::<16>(off_len), l3);
                let has20 = _mm256_and_si256(lanes, _mm256_cmpgt_epi32(present, _mm256_set1_epi32(19)));
                let at = _mm256_add_epi32(frame, l3);
                let good = header_ok_avx2(pool.data, has20, at, present);
                if _mm256_movemask_epi8(good) != _mm256_movemask_epi8(lanes) {
                    return false;
                }
            }
        }
        true
    }

    /// The fused pass (`plain_frames`) with AVX-512, 16 frames a step: their bytes and
    /// whether any has a group destination, `None` at the first chunk with a frame that is not
    /// plain IPv4 to `mac` or a group.
    ///
    /// # Safety
    /// As [`all_fast_ok_avx512`], and `indices` holds at most 65 536 buffers.
    #[target_feature(enable = "avx512f,avx512bw,avx512vl")]
    pub unsafe fn plain_frames_avx512(
        pool: RawPool,
        indices: &[u32],
        max_frame: u16,
        mac: MacAddr,
    ) -> Option<(u64, bool)> {
        let (ones16, zero, c14) = (_mm512_set1_epi32(0xffff), _mm512_setzero_si512(), _mm512_set1_epi32(14));
        let (mac_lo, mac_hi) = mac_words(mac);
        let (mac_lo, mac_hi, one) = (_mm512_set1_epi32(mac_lo), _mm512_set1_epi32(mac_hi), _mm512_set1_epi32(1));
        let (mut octets, mut group) = (0u64, 0u16);
        for chunk in indices.chunks(16) {
            let lanes = ((1u32 << chunk.len()) - 1) as __mmask16;
            // SAFETY: the metadata gather reads a word inside entry `i & mask`; frame bytes
            // are read only in lanes whose frame holds at least 34 bytes (Ethernet and IPv4
            // headers), which lie in the slot (offset + len <= the stride).
            unsafe {
                let (_, off_len, at) = chunk_avx512(pool, chunk, lanes);
                let len = _mm512_srli_epi32::<16>(off_len);
                let sized = _mm512_mask_cmple_epi32_mask(lanes, len, _mm512_set1_epi32(i32::from(max_frame)));
                let has34 = _mm512_mask_cmpge_epi32_mask(sized, len, _mm512_set1_epi32(34));
                let head = _mm512_mask_i32gather_epi32::<1>(zero, has34, at, pool.data.cast());
                let head2 = _mm512_mask_i32gather_epi32::<1>(zero, has34, at, pool.data.add(2).cast());
                let ethertype = _mm512_mask_i32gather_epi32::<1>(zero, has34, at, pool.data.add(12).cast());
                let for_us = _mm512_mask_test_epi32_mask(has34, head, one)
                    | (_mm512_mask_cmpeq_epi32_mask(has34, head, mac_lo)
                        & _mm512_mask_cmpeq_epi32_mask(has34, head2, mac_hi));
                let ip4 = _mm512_mask_cmpeq_epi32_mask(
                    for_us,
                    _mm512_and_si512(ethertype, ones16),
                    _mm512_set1_epi32(IPV4_LE),
                );
                let at = _mm512_add_epi32(at, c14);
                if header_ok_avx512(pool.data, ip4, at, _mm512_sub_epi32(len, c14)) != lanes {
                    return None;
                }
                octets += u64::from(_mm512_reduce_add_epi32(len) as u32);
                group |= _mm512_test_epi32_mask(head, one);
            }
        }
        Some((octets, group != 0))
    }

    /// The fused pass (`plain_frames`) with AVX2, 8 frames a step.
    ///
    /// # Safety
    /// As [`all_fast_ok_avx2`], and `indices` holds at most 65 536 buffers.
    #[target_feature(enable = "avx2")]
    pub unsafe fn plain_frames_avx2(
        pool: RawPool,
        indices: &[u32],
        max_frame: u16,
        mac: MacAddr,
    ) -> Option<(u64, bool)> {
        let (ones16, zero, c14) = (_mm256_set1_epi32(0xffff), _mm256_setzero_si256(), _mm256_set1_epi32(14));
        let (mac_lo, mac_hi) = mac_words(mac);
        let (mac_lo, mac_hi, one) = (_mm256_set1_epi32(mac_lo), _mm256_set1_epi32(mac_hi), _mm256_set1_epi32(1));
        let lane_numbers = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let (mut lengths, mut group) = (zero, zero);
        for chunk in indices.chunks(8) {
            let lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(chunk.len() as i32), lane_numbers);
            // SAFETY: as in `plain_frames_avx512`.
            unsafe {
                let (_, off_len, at) = chunk_avx2(pool, chunk, lanes);
                let len = _mm256_srli_epi32::<16>(off_len);
                let sized =
                    _mm256_andnot_si256(_mm256_cmpgt_epi32(len, _mm256_set1_epi32(i32::from(max_frame))), lanes);
                let has34 = _mm256_and_si256(sized, _mm256_cmpgt_epi32(len, _mm256_set1_epi32(33)));
                let head = _mm256_mask_i32gather_epi32::<1>(zero, pool.data.cast(), at, has34);
                let head2 = _mm256_mask_i32gather_epi32::<1>(zero, pool.data.add(2).cast(), at, has34);
                let ethertype = _mm256_mask_i32gather_epi32::<1>(zero, pool.data.add(12).cast(), at, has34);
                let for_us = _mm256_or_si256(
                    _mm256_cmpeq_epi32(_mm256_and_si256(head, one), one),
                    _mm256_and_si256(_mm256_cmpeq_epi32(head, mac_lo), _mm256_cmpeq_epi32(head2, mac_hi)),
                );
                let ip4 = _mm256_and_si256(
                    _mm256_and_si256(has34, for_us),
                    _mm256_cmpeq_epi32(_mm256_and_si256(ethertype, ones16), _mm256_set1_epi32(IPV4_LE)),
                );
                let at = _mm256_add_epi32(at, c14);
                let good = header_ok_avx2(pool.data, ip4, at, _mm256_sub_epi32(len, c14));
                if _mm256_movemask_epi8(good) != _mm256_movemask_epi8(lanes) {
                    return None;
                }
                // At most 8192 frames of at most 64 KiB per lane: the 32-bit sums hold them.
                lengths = _mm256_add_epi32(lengths, len);
                group = _mm256_or_si256(group, _mm256_and_si256(head, one));
            }
        }
        let mut sums = [0u32; 8];
        // SAFETY: an unaligned store into a local array of 32 bytes.
        unsafe { _mm256_storeu_si256(sums.as_mut_ptr().cast(), lengths) };
        Some((sums.iter().map(|&s| u64::from(s)).sum(), _mm256_testz_si256(group, group) == 0))
    }
}
