//! Prefix tracking (after Open vSwitch's classifier tries): a binary trie of the prefixes some
//! rules match on one 32-bit address field tells, for an address, whether any of those prefixes
//! of a given length can match it and, when none can, how many leading bits of the address
//! showed it. A subtable none of whose prefixes can match is skipped, and the megaflow then
//! depends on those leading bits only, not on the subtable's whole mask.

/// One trie node: its children for a 0 and a 1 bit (0 = none: the root is never a child).
#[derive(Debug, Clone, Default)]
struct Node {
    child: [u32; 2],
    /// Rule prefixes ending here (their length is the node's depth).
    here: u32,
    /// Bit L set when a prefix of length L ends in this node's subtree.
    lens: u64,
}

/// The prefixes of one field (32-bit), with their multiplicities.
#[derive(Debug, Clone)]
pub struct PrefixTrie {
    nodes: Vec<Node>,
}

impl Default for PrefixTrie {
    fn default() -> Self {
        PrefixTrie { nodes: vec![Node::default()] }
    }
}

/// Bit `d` (from the most significant) of 32-bit `value`.
fn bit(value: u32, d: u32) -> usize {
    (value >> (31 - d) & 1) as usize
}

impl PrefixTrie {
    /// The nodes from the root along the first `len` bits of `value`, creating missing ones.
    fn path(&mut self, value: u32, len: u32) -> Vec<usize> {
        let mut path = vec![0usize];
        for d in 0..len {
            let n = *path.last().expect("the root");
            let b = bit(value, d);
            if self.nodes[n].child[b] == 0 {
                self.nodes.push(Node::default());
                self.nodes[n].child[b] = (self.nodes.len() - 1) as u32;
            }
            path.push(self.nodes[n].child[b] as usize);
        }
        path
    }

    /// Adds prefix `value`/`len` (`len` ≤ 32; bits past `len` ignored).
    pub fn insert(&mut self, value: u32, len: u32) {
        let path = self.path(value, len);
        self.nodes[path[len as usize]].here += 1;
        for n in path {
            self.nodes[n].lens |= 1 << len;
        }
    }

    /// Removes one copy of prefix `value`/`len` (which must be in the trie).
    pub fn remove(&mut self, value: u32, len: u32) {
        let path = self.path(value, len);
        let end = path[len as usize];
        self.nodes[end].here = self.nodes[end].here.saturating_sub(1);
        for &n in path.iter().rev() {
            let node = &self.nodes[n];
            let depth_bit = if node.here > 0 { 1u64 << depth_of(&path, n) } else { 0 };
            let below = node.child.iter().filter(|&&c| c != 0).fold(0, |a, &c| a | self.nodes[c as usize].lens);
            self.nodes[n].lens = depth_bit | below;
        }
    }

    /// For `value`: `None` when a prefix of length `len` matches it (a subtable of that length
    /// must be probed), else how many leading bits of `value` rule every such prefix out.
    pub fn rules_out(&self, value: u32, len: u32) -> Option<u32> {
        let mut n = 0usize;
        for d in 0..=len {
            if self.nodes[n].lens & (1 << len) == 0 {
                return Some(d);
            }
            if d == len {
                break;
            }
            match self.nodes[n].child[bit(value, d)] {
                0 => return Some(d + 1),
                c => n = c as usize,
            }
        }
        None
    }
}

/// The depth of node `n` on `path` (its index there).
fn depth_of(path: &[usize], n: usize) -> u32 {
    path.iter().position(|&p| p == n).expect("on the path") as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_rule_out_with_the_bits_that_differ() {
        let mut t = PrefixTrie::default();
        t.insert(0x0a00_0000, 8); // 10/8
        t.insert(0x0b00_0000, 9); // 11.0/9
        assert_eq!(t.rules_out(0x0a01_0203, 8), None, "10.1.2.3 is in 10/8");
        // 11.0.0.1 vs 10/8: 00001011 vs 00001010: they part at bit 7, so 8 bits show it.
        assert_eq!(t.rules_out(0x0b00_0001, 8), Some(8));
        // 200.0.0.1 vs 11.0/9: bit 0 differs; no prefix of any length starts with 1.
        assert_eq!(t.rules_out(0xc800_0001, 9), Some(1));
        assert_eq!(t.rules_out(0x0b00_0001, 9), None);
        assert_eq!(t.rules_out(0x0b00_0001, 16), Some(0), "no /16 at all");
        t.insert(0x0a00_0000, 8);
        t.remove(0x0a00_0000, 8);
        assert_eq!(t.rules_out(0x0a01_0203, 8), None, "one copy left");
        t.remove(0x0a00_0000, 8);
        assert_eq!(t.rules_out(0x0a01_0203, 8), Some(0), "gone");
        assert_eq!(t.rules_out(0x0b00_0001, 9), None, "the other stays");
    }
}
