//! The host routes (/128s) of the IPv6 table: an open-addressed hash table with linear
//! probing, at most half full, built whole and republished by each batch that changes a host
//! route (a neighbour comes or goes: one batch, one table of a few thousand entries at most).

/// One slot, half a cache line: an address and its leaf (0: the slot is empty).
#[repr(C, align(32))]
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    hi: u64,
    lo: u64,
    leaf: u32,
}

/// The table.
pub(super) struct Hosts {
    slots: Box<[Slot]>,
    /// 64 minus log2 of the number of slots: a hash's top bits are its slot.
    shift: u32,
    /// This table's secret odd multiplier: hosts choose their addresses, and must not be able
    /// to choose ones that share a probe chain.
    mul: u64,
}

/// A multiply-shift hash of an address under odd multiplier `mul` (its top bits are the
/// slot): the /64 folded into the interface identifier, then one multiplication, which for a
/// random odd `mul` makes two distinct values collide in `b` top bits with probability about
/// 2^(1-b).
#[inline(always)]
fn hash(key: u128, mul: u64) -> u64 {
    (((key >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ key as u64).wrapping_mul(mul)
}

impl Hosts {
    /// A table of `hosts` (address and leaf, leaves non-zero, addresses distinct).
    pub(super) fn new(hosts: impl ExactSizeIterator<Item = (u128, u32)>) -> Hosts {
        let len = (hosts.len() * 2).next_power_of_two().max(8);
        let mut slots = vec![Slot::default(); len].into_boxed_slice();
        let shift = 64 - len.trailing_zeros();
        let mul = std::hash::BuildHasher::hash_one(&std::hash::RandomState::new(), len) | 1;
        for (key, leaf) in hosts {
            debug_assert!(leaf != 0);
            let mut i = (hash(key, mul) >> shift) as usize;
            while slots[i].leaf != 0 {
                i = (i + 1) & (len - 1);
            }
            slots[i] = Slot { hi: (key >> 64) as u64, lo: key as u64, leaf };
        }
        Hosts { slots, shift, mul }
    }

    /// Bytes allocated.
    pub(super) fn bytes(&self) -> usize {
        std::mem::size_of_val(&*self.slots)
    }

    /// The slot where the probe for `key` starts.
    #[inline(always)]
    pub(super) fn first(&self, key: u128) -> u32 {
        (hash(key, self.mul) >> self.shift) as u32 & (self.slots.len() - 1) as u32
    }

    /// Starts loading slot `at`.
    #[inline(always)]
    pub(super) fn prefetch(&self, at: u32) {
        crate::runtime::prefetch(&self.slots[at as usize & (self.slots.len() - 1)]);
    }

    /// The leaf of host route `key`, if there is one, probing from slot `at` (its
    /// [`first`](Hosts::first)).
    #[inline(always)]
    pub(super) fn get(&self, at: u32, key: u128) -> Option<u32> {
        let (hi, lo) = ((key >> 64) as u64, key as u64);
        let mut i = at as usize & (self.slots.len() - 1);
        loop {
            let s = &self.slots[i];
            if s.leaf == 0 {
                return None;
            }
            if s.hi == hi && s.lo == lo {
                return Some(s.leaf);
            }
            i = (i + 1) & (self.slots.len() - 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_host_and_no_other_address() {
        let net = 0x2001_0db8_0016_0000_0000_0000_0000_0000u128;
        let hosts = Hosts::new((1..=254u128).map(|h| (net | h, 1000 + h as u32)).collect::<Vec<_>>().into_iter());
        assert_eq!(hosts.slots.len(), 512);
        let get = |h: &Hosts, key| h.get(h.first(key), key);
        for h in 1..=254u128 {
            assert_eq!(get(&hosts, net | h), Some(1000 + h as u32));
        }
        for other in [net, net | 255, net | 1 << 64, !net] {
            assert_eq!(get(&hosts, other), None);
        }
        assert_eq!(get(&Hosts::new(std::iter::empty()), net), None);
    }
}
