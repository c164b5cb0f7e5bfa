//! Internet checksum (RFC 1071) and its incremental update (RFC 1624).

/// Adds `data` as big-endian 16-bit words to a one's-complement running `sum` (not folded:
/// [`fold`] gives the same 16 bits as adding the words one by one would).
///
/// Four bytes at a time in native byte order into a 64-bit accumulator (which the compiler
/// vectorises): a one's-complement sum of byte-swapped words is the byte-swapped sum, so one
/// swap of the folded result at the end stands for a swap of every word.
pub fn sum_words(data: &[u8], sum: u32) -> u32 {
    let mut chunks = data.chunks_exact(4);
    let mut wide = 0u64;
    for c in &mut chunks {
        wide += u64::from(u32::from_ne_bytes([c[0], c[1], c[2], c[3]]));
    }
    let wide = (wide & 0xffff_ffff) + (wide >> 32); // at most 33 bits
    let native = fold(((wide & 0xffff_ffff) + (wide >> 32)) as u32);
    let mut sum = sum + u32::from(u16::from_be(native));
    let rest = chunks.remainder();
    if rest.len() >= 2 {
        sum += u32::from(u16::from_be_bytes([rest[0], rest[1]]));
    }
    if rest.len() % 2 == 1 {
        sum += u32::from(rest[rest.len() - 1]) << 8;
    }
    sum
}

/// Folds a 32-bit one's-complement sum to 16 bits (not inverted). Two fixed steps are
/// exact for any `u32`: the first leaves at most 0x1fffe, the second at most 0xffff.
#[inline(always)]
pub fn fold(sum: u32) -> u16 {
    let sum = (sum & 0xffff) + (sum >> 16);
    ((sum & 0xffff) + (sum >> 16)) as u16
}

/// The Internet checksum of `data`: the inverted folded one's-complement sum.
pub fn checksum(data: &[u8]) -> u16 {
    !fold(sum_words(data, 0))
}

/// Updates checksum `old_csum` for one 16-bit field changing from `old` to `new`
/// (RFC 1624 eqn. 3: `HC' = ~(~HC + ~m + m')`).
#[inline]
pub fn update16(old_csum: u16, old: u16, new: u16) -> u16 {
    let sum = u32::from(!old_csum) + u32::from(!old) + u32::from(new);
    !fold(sum)
}

/// Updates checksum `old_csum` for one 32-bit field (two words) changing from `old` to `new`.
#[inline]
pub fn update32(old_csum: u16, old: u32, new: u32) -> u16 {
    let sum = u32::from(!old_csum)
        + u32::from(!(old >> 16) as u16)
        + u32::from(!(old as u16))
        + u32::from((new >> 16) as u16)
        + u32::from(new as u16);
    !fold(sum)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3 example bytes: 00 01 f2 03 f4 f5 f6 f7 -> sum 0xddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(fold(sum_words(&data, 0)), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn fold_is_exact_at_the_extremes() {
        assert_eq!(fold(0xffff_ffff), 0xffff);
        assert_eq!(fold(0x0001_fffe), 0xffff);
        assert_eq!(fold(0x0001_0000), 0x0001);
        assert_eq!(fold(0), 0);
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(checksum(&[0x12]), checksum(&[0x12, 0x00]));
    }

    /// Adds `data` as big-endian words one by one (the definition).
    fn sum_words_one_by_one(data: &[u8], mut sum: u32) -> u32 {
        for pair in data.chunks(2) {
            sum += u32::from(pair[0]) << 8 | u32::from(pair.get(1).copied().unwrap_or(0));
        }
        sum
    }

    #[test]
    fn sums_of_zeros_and_of_all_ones_fold_as_word_by_word() {
        for data in [vec![0u8; 0], vec![0u8; 7], vec![0xff; 4], vec![0xff; 9], vec![0xff; 1500]] {
            assert_eq!(fold(sum_words(&data, 0)), fold(sum_words_one_by_one(&data, 0)), "{} bytes", data.len());
        }
    }

    proptest! {
        #[test]
        fn four_bytes_at_a_time_folds_as_word_by_word(data in proptest::collection::vec(any::<u8>(), 0..3000),
                                                      sum in 0u32..1 << 20) {
            prop_assert_eq!(fold(sum_words(&data, sum)), fold(sum_words_one_by_one(&data, sum)));
        }

        #[test]
        fn incremental_matches_full(mut data in proptest::collection::vec(any::<u8>(), 8..64),
                                    new in any::<u32>()) {
            let len = data.len() & !1;
            data.truncate(len);
            let old = u32::from_be_bytes([data[0], data[1], data[2], data[3]]);
            let before = checksum(&data);
            data[..4].copy_from_slice(&new.to_be_bytes());
            let full = checksum(&data);
            let inc = update32(before, old, new);
            // 0x0000 and 0xffff are the same value in one's complement.
            prop_assert!(inc == full || (inc ^ full) == 0xffff && (inc == 0 || full == 0),
                         "inc {inc:#06x} full {full:#06x}");
            let old16 = u16::from_be_bytes([data[4], data[5]]);
            let before = checksum(&data);
            data[4..6].copy_from_slice(&(new as u16).to_be_bytes());
            let inc = update16(before, old16, new as u16);
            let full = checksum(&data);
            prop_assert!(inc == full || (inc ^ full) == 0xffff && (inc == 0 || full == 0));
        }
    }
}
