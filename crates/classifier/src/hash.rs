//! Hashing keys: CRC32C with SSE4.2 when the CPU has it (detected at run time), a
//! multiply-xorshift mix otherwise. Both are deterministic for a given [`Hasher`].

use crate::key::FlowKey;

/// How keys are hashed on this CPU.
#[derive(Debug, Clone, Copy)]
pub struct Hasher {
    crc: bool,
}

impl Default for Hasher {
    fn default() -> Self {
        Hasher::detect()
    }
}

impl Hasher {
    /// CRC32C when the CPU has SSE4.2, the portable mix otherwise.
    pub fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        let crc = std::arch::is_x86_feature_detected!("sse4.2");
        #[cfg(not(target_arch = "x86_64"))]
        let crc = false;
        Hasher { crc }
    }

    /// The portable mix whatever the CPU (for tests comparing the two).
    pub fn portable() -> Self {
        Hasher { crc: false }
    }

    /// True when hashing with the CPU's CRC32C instruction.
    pub fn uses_crc32c(&self) -> bool {
        self.crc
    }

    /// The 32-bit hash of `key`.
    #[inline(always)]
    pub fn hash(&self, key: &FlowKey) -> u32 {
        #[cfg(target_arch = "x86_64")]
        if self.crc {
            // SAFETY: `crc` is true only when the CPU has SSE4.2 (`detect`).
            return unsafe { crc32c(&key.words) };
        }
        mix(&key.words)
    }
}

/// CRC32C of three words, one instruction each.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn crc32c(w: &[u64; 3]) -> u32 {
    use std::arch::x86_64::_mm_crc32_u64;
    let h = _mm_crc32_u64(0xffff_ffff, w[0]);
    let h = _mm_crc32_u64(h, w[1]);
    _mm_crc32_u64(h, w[2]) as u32
}

/// A multiply-xorshift mix of three words (no CRC instruction).
#[inline(always)]
fn mix(w: &[u64; 3]) -> u32 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = w[0].wrapping_mul(K);
    h = (h ^ (h >> 29) ^ w[1]).wrapping_mul(K);
    h = (h ^ (h >> 31) ^ w[2]).wrapping_mul(K);
    (h ^ (h >> 32)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_hashes_spread_keys_that_differ_in_one_bit() {
        for h in [Hasher::detect(), Hasher::portable()] {
            let mut seen = std::collections::HashSet::new();
            for bit in 0..192 {
                let mut k = FlowKey::default();
                k.words[bit / 64] = 1 << (bit % 64);
                seen.insert(h.hash(&k));
            }
            assert_eq!(seen.len(), 192, "crc32c: {}", h.uses_crc32c());
        }
    }
}
