//! Building a subtree from the routes of one first-level slot.

use super::{FIRST_BITS, NODE, Node, STRIDE, index};
use crate::l3::fib::Leaf;

/// A route as the builder takes it: key (host bits zero), length, adjacency.
pub(super) type Entry = (u128, u8, u32);

/// The builder's buffers, kept by the writer and reused from subtree to subtree.
#[derive(Default)]
pub(super) struct Builder {
    /// Nodes so far, with `child` the index of the first child and `leaf` twice the index of
    /// the first leaf (or a single route, tagged by an odd `leaf`).
    nodes: Vec<Node>,
    leaves: Vec<u32>,
}

/// The prefix length of a leaf (0 for none, which every route beats).
fn len_of(e: u32) -> u32 {
    (e >> 22) & 0xff
}

impl Builder {
    /// Bytes the buffers hold.
    pub(super) fn bytes(&self) -> usize {
        self.nodes.capacity() * NODE + self.leaves.capacity() * 4
    }

    /// The subtree of `routes`: routes longer than `FIRST_BITS` of one slot, ordered by key
    /// then length (a covering route before the routes it covers), at least one.
    pub(super) fn build(&mut self, routes: &[Entry]) -> Box<[u64]> {
        debug_assert!(!routes.is_empty() && routes.iter().all(|r| u32::from(r.1) > FIRST_BITS));
        self.nodes.clear();
        self.leaves.clear();
        self.nodes.push(Node::default());
        self.child(0, routes, FIRST_BITS, 0);
        // The block: a header word, the nodes (3 words each), the leaves (2 a word).
        let n = self.nodes.len();
        let words = 1 + 3 * n + self.leaves.len().div_ceil(2);
        let mut block = Vec::with_capacity(words);
        block.push(words as u64);
        let leaves_at = 8 + NODE * n;
        for (k, node) in self.nodes.iter().enumerate() {
            if node.leaf & 1 != 0 {
                block.extend([node.vector, node.leafvec, pair(node.child, node.leaf)]);
                continue;
            }
            let here = 8 + NODE * k;
            // Offsets to "rank 0": a popcount of 1 reaches the first child or leaf.
            let child = if node.vector == 0 { 0 } else { NODE * node.child as usize - NODE * k - NODE };
            let leaf = leaves_at + 4 * (node.leaf >> 1) as usize - here - 4;
            let child = u32::try_from(child).expect("a subtree under 4 GiB");
            let leaf = u32::try_from(leaf).expect("a subtree under 4 GiB");
            block.push(node.vector);
            block.push(node.leafvec);
            block.push(pair(child, leaf));
        }
        for two in self.leaves.chunks(2) {
            block.push(pair(two[0], two.get(1).copied().unwrap_or(0)));
        }
        debug_assert_eq!(block.len(), words);
        block.into_boxed_slice()
    }

    /// Fills node `at`, `depth` bits into the address, from `routes` (all inside the node's
    /// prefix; those not longer than `depth` are already in `inherited`, the best leaf above).
    fn node(&mut self, at: usize, routes: &[Entry], depth: u32, inherited: u32) {
        let mut leaf = [inherited; 64];
        for &(key, len, adj) in routes {
            let len32 = u32::from(len);
            if len32 > depth && len32 <= depth + STRIDE {
                let i = index(key, depth) as usize;
                let e = Leaf { adj, prefix_len: len }.encode();
                for l in &mut leaf[i..i + (1 << (depth + STRIDE - len32))] {
                    if len_of(*l) < len32 || *l == 0 {
                        *l = e;
                    }
                }
            }
        }
        // Runs of routes under the same index, with one route longer than the node: children.
        let mut children = [(0usize, 0usize); 64];
        let mut vector = 0u64;
        let mut r = 0;
        while r < routes.len() {
            let i = index(routes[r].0, depth);
            let start = r;
            let mut deep = false;
            while r < routes.len() && index(routes[r].0, depth) == i {
                deep |= u32::from(routes[r].1) > depth + STRIDE;
                r += 1;
            }
            if deep {
                children[i as usize] = (start, r);
                vector |= 1 << i;
            }
        }
        let mut leafvec = 0u64;
        let base0 = self.leaves.len();
        let mut last = None;
        for (i, &l) in leaf.iter().enumerate() {
            if vector & (1 << i) == 0 && last != Some(l) {
                leafvec |= 1 << i;
                self.leaves.push(l);
                last = Some(l);
            }
        }
        let base1 = self.nodes.len();
        let count = vector.count_ones() as usize;
        self.nodes.resize(base1 + count, Node::default());
        self.nodes[at] = Node { vector, leafvec, child: base1 as u32, leaf: (base0 as u32) << 1 };
        let mut c = base1;
        for i in 0..64 {
            if vector & (1 << i) != 0 {
                let (s, e) = children[i];
                self.child(c, &routes[s..e], depth + STRIDE, leaf[i]);
                c += 1;
            }
        }
    }

    /// Fills node `at` as [`Builder::node`] does, or, when a single route is longer than
    /// `depth` and ends within 64 bits of it, as that route alone: its bits after `depth`
    /// (`vector`, left-aligned), how many (`child`), its leaf and `inherited` (`leafvec`, low
    /// and high half), tagged by an odd `leaf` (a node's leaf offset is a multiple of 4). A
    /// walk then ends there, with no further load.
    fn child(&mut self, at: usize, routes: &[Entry], depth: u32, inherited: u32) {
        let mut deep = routes.iter().filter(|r| u32::from(r.1) > depth);
        if let (Some(&(key, len, adj)), None) = (deep.next(), deep.next())
            && u32::from(len) - depth <= 64
        {
            let leaf = Leaf { adj, prefix_len: len }.encode();
            self.nodes[at] = Node {
                vector: ((key << depth) >> 64) as u64,
                leafvec: u64::from(leaf) | u64::from(inherited) << 32,
                child: u32::from(len) - depth,
                leaf: 1,
            };
        } else {
            self.node(at, routes, depth, inherited);
        }
    }
}

/// Two `u32`s as the word that holds them in this order in memory.
fn pair(a: u32, b: u32) -> u64 {
    let (a, b) = (a.to_ne_bytes(), b.to_ne_bytes());
    u64::from_ne_bytes([a[0], a[1], a[2], a[3], b[0], b[1], b[2], b[3]])
}
