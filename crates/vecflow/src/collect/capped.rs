//! Bounded state: a map that keeps at most `N` keys and counts what did not fit, so a flood of
//! spoofed agents, data sources or flows cannot grow the collector's memory without bound.

use std::collections::BTreeMap;

/// At most `N` keys; a new key beyond that is counted in [`Capped::overflow`], not stored.
#[derive(Debug)]
pub struct Capped<K, V, const N: usize> {
    map: BTreeMap<K, V>,
    overflow: u64,
}

impl<K, V, const N: usize> Default for Capped<K, V, N> {
    fn default() -> Self {
        Capped { map: BTreeMap::new(), overflow: 0 }
    }
}

impl<K: Ord, V: Default, const N: usize> Capped<K, V, N> {
    /// The value of `k`, inserted as default if there is room; `None` (and one more overflow)
    /// when `k` is new and the map is full.
    pub fn entry(&mut self, k: K) -> Option<&mut V> {
        if self.map.len() >= N && !self.map.contains_key(&k) {
            self.overflow += 1;
            return None;
        }
        Some(self.map.entry(k).or_default())
    }

    /// The value of `k`, if stored.
    pub fn get(&self, k: &K) -> Option<&V> {
        self.map.get(k)
    }

    /// The stored entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.map.iter()
    }

    /// How many times a new key did not fit.
    pub fn overflow(&self) -> u64 {
        self.overflow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_n_keys_and_counts_the_rest() {
        let mut m: Capped<u32, u32, 2> = Capped::default();
        *m.entry(1).unwrap() += 1;
        *m.entry(2).unwrap() += 1;
        assert!(m.entry(3).is_none() && m.entry(4).is_none());
        *m.entry(1).unwrap() += 1;
        assert_eq!((m.iter().count(), m.get(&1), m.overflow()), (2, Some(&2), 2));
    }
}
