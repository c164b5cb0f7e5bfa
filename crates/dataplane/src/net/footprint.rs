//! What a table of the control plane takes in memory, for `show memory`: computed from its
//! capacity where the collection tells it (a hash table), estimated from its length where it
//! does not (a B-tree).

/// The bytes of a hash table (hashbrown, the standard library's) with room for `capacity`
/// entries of `(K, V)`: a bucket and a control byte each, for the power of two of buckets its
/// capacity is 7/8 of (a small table: one more than its capacity), and one more group of
/// control bytes.
pub fn hash_table_bytes<K, V>(capacity: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 7 { capacity + 1 } else { capacity / 7 * 8 };
    buckets * (std::mem::size_of::<(K, V)>() + 1) + 16
}

/// Keys and values a node of the standard library's B-tree holds at most.
const NODE_CAPACITY: usize = 11;

/// About the bytes of a B-tree map (the standard library's) of `len` entries of `(K, V)`,
/// filled in order: such a tree's leaves are a little over half full (six entries of
/// eleven), and its inner nodes add about a sixth.
pub fn tree_bytes<K, V>(len: usize) -> usize {
    let node = NODE_CAPACITY * (std::mem::size_of::<K>() + std::mem::size_of::<V>()) + 16;
    let leaves = len.div_ceil(6);
    leaves * node + leaves / 6 * (node + 12 * 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_tables_bytes_follow_its_buckets() {
        let mut m: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
        assert_eq!(hash_table_bytes::<u32, u32>(m.capacity()), 0);
        m.extend((0..1000).map(|i| (i, i)));
        // 1 000 entries are more than 1 024 buckets hold (896): 2 048 buckets, 8 + 1 bytes each.
        assert_eq!(m.capacity(), 1792);
        assert_eq!(hash_table_bytes::<u32, u32>(m.capacity()), 2048 * 9 + 16);
        assert_eq!(hash_table_bytes::<u32, u32>(3), 4 * 9 + 16);
    }

    #[test]
    fn a_trees_bytes_grow_with_its_length() {
        assert_eq!(tree_bytes::<u64, u64>(0), 0);
        let (small, large) = (tree_bytes::<u64, u64>(600), tree_bytes::<u64, u64>(6000));
        assert!(small >= 600 * 16 && large > 9 * small && large < 11 * small, "{small} {large}");
    }
}
