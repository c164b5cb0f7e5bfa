//! A map keyed by prefix for the control plane's tables of a full Internet table: hash tables
//! by prefix length, each split in [`SHARDS`] by the address's hash. A lookup is one hash
//! probe (where a tree of a million prefixes takes twenty comparisons), and a search for the
//! covering prefix probes only the lengths that have some. A hash table doubles all at once,
//! allocating and moving every entry: one table of a full table stalled the main thread
//! 20–100 ms when it did, and one per length (the /24s are half of an IPv4 table) still
//! 30–80 ms. Split this way, no table holds more than about a thirtieth of a full table.

use super::AddrKey;
use rustc_hash::{FxHashMap, FxHasher};
use std::collections::hash_map::Entry;
use std::hash::{Hash, Hasher};

/// Tables per prefix length.
pub const SHARDS: usize = 16;

/// Values by prefix (a masked address and its length) of one address family.
#[derive(Debug, Clone)]
pub struct PrefixMap<A, V> {
    /// [`SHARDS`] tables per length, those of length `len` at `len * SHARDS`.
    tables: Vec<FxHashMap<A, V>>,
    /// The number of prefixes of each length.
    by_len: Vec<usize>,
    /// The number of prefixes, over every length.
    count: usize,
}

impl<A: AddrKey, V> Default for PrefixMap<A, V> {
    fn default() -> Self {
        let lengths = usize::from(A::BITS) + 1;
        let tables = (0..lengths * SHARDS).map(|_| FxHashMap::default()).collect();
        PrefixMap { tables, by_len: vec![0; lengths], count: 0 }
    }
}

/// The index of the table of `addr/len`: bits 40–43 of the address's hash (a hash table
/// uses the low bits for its bucket and the top seven for its control bytes).
fn table_of<A: Hash>(addr: &A, len: u8) -> usize {
    let mut h = FxHasher::default();
    addr.hash(&mut h);
    usize::from(len) * SHARDS + (h.finish() >> 40) as usize % SHARDS
}

impl<A: AddrKey, V> PrefixMap<A, V> {
    /// The value of `addr/len`. Out-of-range lengths have none.
    pub fn get(&self, addr: A, len: u8) -> Option<&V> {
        self.tables.get(table_of(&addr, len))?.get(&addr)
    }

    /// The value of `addr/len`, made from `default` when it has none.
    ///
    /// # Panics
    /// On a length beyond the family's (the caller checks lengths first).
    pub fn get_or_insert(&mut self, addr: A, len: u8, default: V) -> &mut V {
        match self.tables[table_of(&addr, len)].entry(addr) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => {
                self.count += 1;
                self.by_len[usize::from(len)] += 1;
                e.insert(default)
            }
        }
    }

    /// Sets the value of `addr/len`; the value before, if any.
    ///
    /// # Panics
    /// On a length beyond the family's (the caller checks lengths first).
    pub fn insert(&mut self, addr: A, len: u8, value: V) -> Option<V> {
        let old = self.tables[table_of(&addr, len)].insert(addr, value);
        self.count += usize::from(old.is_none());
        self.by_len[usize::from(len)] += usize::from(old.is_none());
        old
    }

    /// Removes `addr/len`; its value, if it had one.
    pub fn remove(&mut self, addr: A, len: u8) -> Option<V> {
        let old = self.tables.get_mut(table_of(&addr, len))?.remove(&addr);
        self.count -= usize::from(old.is_some());
        self.by_len[usize::from(len)] -= usize::from(old.is_some());
        old
    }

    /// True when some prefix of length `len` has a value.
    pub fn has_length(&self, len: u8) -> bool {
        self.by_len.get(usize::from(len)).is_some_and(|&n| n > 0)
    }

    /// Every prefix with its value: by length, shortest first, then in no order.
    pub fn iter(&self) -> impl Iterator<Item = (A, u8, &V)> {
        self.tables.iter().enumerate().flat_map(|(i, m)| {
            let len = (i / SHARDS) as u8;
            m.iter().map(move |(&a, v)| (a, len, v))
        })
    }

    /// The number of prefixes.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when there is none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The bytes its tables take.
    pub fn bytes(&self) -> usize {
        self.tables.iter().map(|m| super::hash_table_bytes::<A, V>(m.capacity())).sum::<usize>()
            + self.tables.capacity() * std::mem::size_of::<FxHashMap<A, V>>()
            + self.by_len.capacity() * std::mem::size_of::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn prefixes_of_each_length_are_kept_apart_and_counted() {
        let mut m: PrefixMap<Ipv4Addr, u32> = PrefixMap::default();
        let net = Ipv4Addr::new(10, 0, 0, 0);
        assert_eq!(m.insert(net, 8, 1), None);
        assert_eq!(m.insert(net, 16, 2), None);
        assert_eq!(m.insert(net, 16, 3), Some(2));
        *m.get_or_insert(net, 24, 0) += 4;
        *m.get_or_insert(net, 24, 0) += 4;
        assert_eq!((m.len(), m.get(net, 8), m.get(net, 16), m.get(net, 24)), (3, Some(&1), Some(&3), Some(&8)));
        assert!(m.has_length(16) && !m.has_length(12) && !m.has_length(40));
        assert_eq!(m.get(net, 40), None, "a length beyond the family's has nothing");
        let listed: Vec<(Ipv4Addr, u8, u32)> = m.iter().map(|(a, l, &v)| (a, l, v)).collect();
        assert_eq!(listed, [(net, 8, 1), (net, 16, 3), (net, 24, 8)], "shortest first");
        assert_eq!((m.remove(net, 16), m.remove(net, 16), m.remove(net, 99)), (Some(3), None, None));
        assert_eq!(m.len(), 2);
        assert!(!m.has_length(16));
    }

    #[test]
    fn ipv6_has_every_length_to_128() {
        let mut m: PrefixMap<Ipv6Addr, ()> = PrefixMap::default();
        m.insert(Ipv6Addr::LOCALHOST, 128, ());
        m.insert(Ipv6Addr::UNSPECIFIED, 0, ());
        assert_eq!(m.iter().map(|(_, l, _)| l).collect::<Vec<_>>(), [0, 128]);
    }
}
