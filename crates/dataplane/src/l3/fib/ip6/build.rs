//! Building a slot's tree: the routes of a region flattened into elementary intervals of a
//! 32-bit key window, laid out as a static B+-tree of 64-byte nodes.

use super::{BIAS, HOSTS, Line, OFFSET, PAD, REGION_BITS, max_region};
use crate::l3::fib::{EXT, key_mask};

/// Most heights a tree may have (3 bits in an escape result and a first-level entry): 7 hold
/// 8 · 16^6 = 2^27 intervals, more than the arena's 2^22 lines of leaves (8 intervals each)
/// could.
const MAX_HEIGHT: u32 = 7;

/// A route of a region: its prefix (the address with bits past its length zero), its length
/// and its leaf (encoded).
pub(super) type Entry = (u128, u8, u32);

/// What an interval holds while its tree is built: a final result, or an escape to the tree
/// of longer routes built at `subtrees[i]`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Res {
    /// A leaf (or 0: none), possibly marked `HOSTS`.
    Final(u32),
    /// An escape to `subtrees[i]`.
    Escape(usize),
}

/// A tree: its nodes, root first, then escapes.
pub(super) struct Tree {
    /// Its lines.
    pub(super) lines: Vec<Line>,
    /// Its height: the steps every walk in it takes.
    pub(super) height: u32,
}

/// The 32 bits of `addr` from bit `d` (bits past 128: zeros).
#[inline(always)]
pub(super) fn window_key(addr: u128, d: u32) -> u32 {
    ((addr << d) >> 96) as u32
}

/// A slot's tree, where its window starts (the region's length `d`) and the region (bits
/// `first..d` of its first address, left-aligned in [`REGION_BITS`] bits).
pub(super) struct SlotTree {
    /// The tree.
    pub(super) tree: Tree,
    /// Where its key window starts.
    pub(super) d: u32,
    /// The region's bits.
    pub(super) region: u32,
}

/// The tree of a first-level slot's routes longer than the first level of `first` bits
/// (`routes`, sorted by prefix then length, at least one). Its window starts where the routes
/// stop sharing bits (at most [`max_region`]); /128s are hosts: only the keys holding them
/// are marked.
pub(super) fn build_slot(first: u32, routes: &[Entry]) -> SlotTree {
    let hosts: Vec<u128> = routes.iter().filter(|r| r.1 == 128).map(|r| r.0).collect();
    let nets: Vec<Entry> = routes.iter().filter(|r| r.1 < 128).copied().collect();
    let lo = nets.first().map(|r| r.0).into_iter().chain(hosts.first().copied()).min().expect("a route");
    let hi = nets.iter().map(|r| r.0 | !key_mask(r.1)).chain(hosts.last().copied()).max().expect("a route");
    let d = (lo ^ hi).leading_zeros().clamp(first, max_region(first));
    let tree = build_region(d, &nets, &hosts, 0);
    let region = ((lo << first) >> (128 - REGION_BITS)) as u32 & !((1u32 << (max_region(first) - d)) - 1);
    SlotTree { tree, d, region }
}

/// The tree of the region whose key window starts at bit `d`: `routes` (sorted, none shorter
/// than `d`, none /128), the `hosts` in it (sorted), and `inherited`, the result where none
/// of them covers.
fn build_region(d: u32, routes: &[Entry], hosts: &[u128], inherited: u32) -> Tree {
    let end = d + 32;
    let base = sweep(d, routes.iter().filter(|r| u32::from(r.1) <= end), inherited);
    let long: Vec<Entry> = routes.iter().filter(|r| u32::from(r.1) > end).copied().collect();
    let (mut specials, mut subtrees) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < long.len() || j < hosts.len() {
        let g = match (long.get(i), hosts.get(j)) {
            (Some(r), Some(&h)) => window_key(r.0, d).min(window_key(h, d)),
            (Some(r), None) => window_key(r.0, d),
            (None, Some(&h)) => window_key(h, d),
            (None, None) => unreachable!(),
        };
        let i0 = i;
        while i < long.len() && window_key(long[i].0, d) == g {
            i += 1;
        }
        let j0 = j;
        while j < hosts.len() && window_key(hosts[j], d) == g {
            j += 1;
        }
        let under = result_at(&base, g);
        if i > i0 {
            specials.push((g, Res::Escape(subtrees.len())));
            subtrees.push(build_region(end, &long[i0..i], &hosts[j0..j], under));
        } else {
            specials.push((g, Res::Final(under | HOSTS)));
        }
    }
    layout(&overlay(&base, &specials), subtrees)
}

/// The elementary intervals of the key window at bit `d` that `routes` (sorted, each within
/// the window) make over `inherited`: (first key, result), the first at key 0, no two
/// neighbours with the same result.
fn sweep<'a>(d: u32, routes: impl Iterator<Item = &'a Entry>, inherited: u32) -> Vec<(u32, u32)> {
    let mut out = vec![(0u32, inherited)];
    let set = |out: &mut Vec<(u32, u32)>, at: u64, res: u32| {
        let Ok(at) = u32::try_from(at) else { return };
        let last = out.len() - 1;
        if out[last].0 == at {
            out[last].1 = res;
            if last > 0 && out[last - 1].1 == res {
                out.pop();
            }
        } else if out[last].1 != res {
            out.push((at, res));
        }
    };
    // Routes that cover the sweep's position: (last key, result), innermost last.
    let mut open: Vec<(u64, u32)> = Vec::new();
    for &(prefix, len, leaf) in routes {
        let start = u64::from(window_key(prefix, d));
        let last = start + (1u64 << (d + 32 - u32::from(len))) - 1;
        while let Some(&(e, _)) = open.last().filter(|o| o.0 < start) {
            open.pop();
            set(&mut out, e + 1, open.last().map_or(inherited, |o| o.1));
        }
        set(&mut out, start, leaf);
        open.push((last, leaf));
    }
    while let Some((e, _)) = open.pop() {
        set(&mut out, e + 1, open.last().map_or(inherited, |o| o.1));
    }
    out
}

/// The result of the interval holding `key`.
fn result_at(intervals: &[(u32, u32)], key: u32) -> u32 {
    intervals[intervals.partition_point(|i| i.0 <= key) - 1].1
}

/// `base` with each special granule (sorted) cut out as an interval of its own.
fn overlay(base: &[(u32, u32)], specials: &[(u32, Res)]) -> Vec<(u32, Res)> {
    let mut out: Vec<(u32, Res)> = Vec::with_capacity(base.len() + 2 * specials.len());
    let mut push = |at: u64, res: Res| {
        if out.last().is_none_or(|l| l.1 != res) {
            out.push((at as u32, res));
        }
    };
    let mut s = 0;
    for (i, &(start, res)) in base.iter().enumerate() {
        let end = base.get(i + 1).map_or(1u64 << 32, |n| u64::from(n.0));
        let mut at = u64::from(start);
        while let Some(&(g, special)) = specials.get(s).filter(|sp| u64::from(sp.0) < end) {
            if u64::from(g) > at {
                push(at, Res::Final(res));
            }
            push(u64::from(g), special);
            at = u64::from(g) + 1;
            s += 1;
        }
        if at < end {
            push(at, Res::Final(res));
        }
    }
    out
}

/// The static B+-tree over `intervals`: leaves of 7 keys (the last key of each interval but
/// the leaf's last) and 8 results, internal nodes of 15 keys (the last key of each child but
/// the last) and the offset of their first child; root first, then each level, then the
/// `subtrees` the escapes point to.
fn layout(intervals: &[(u32, Res)], subtrees: Vec<Tree>) -> Tree {
    let m = intervals.len();
    let last_key = |i: usize| intervals.get(i + 1).map_or(u32::MAX, |n| n.0 - 1);
    // Levels bottom-up: nodes, and the last key each covers.
    let mut levels: Vec<(Vec<Line>, Vec<u32>)> = Vec::new();
    let mut escapes = Vec::new(); // (leaf index, lane, subtree)
    let (mut leaves, mut his) = (Vec::new(), Vec::new());
    for (l, chunk) in intervals.chunks(8).enumerate() {
        let mut line = Line([PAD; 16]);
        for (j, &(_, res)) in chunk.iter().enumerate() {
            if j + 1 < chunk.len() {
                line.0[j] = last_key(8 * l + j) ^ BIAS;
            }
            line.0[8 + j] = match res {
                Res::Final(r) => r,
                Res::Escape(t) => {
                    escapes.push((l, 8 + j, t));
                    0
                }
            };
        }
        leaves.push(line);
        his.push(last_key(8 * l + chunk.len() - 1));
    }
    debug_assert!(m > 0);
    levels.push((leaves, his));
    while levels.last().expect("leaves").0.len() > 1 {
        let below = &levels.last().expect("a level").1;
        let (mut nodes, mut his) = (Vec::new(), Vec::new());
        for chunk in below.chunks(16) {
            let mut line = Line([PAD; 16]);
            for (c, &hi) in chunk.iter().enumerate().take(chunk.len() - 1) {
                line.0[c] = hi ^ BIAS;
            }
            nodes.push(line);
            his.push(*chunk.last().expect("a child"));
        }
        levels.push((nodes, his));
    }
    let height = levels.len() as u32;
    assert!(height <= MAX_HEIGHT, "a tree of {m} intervals is too high");
    levels.reverse();
    let starts: Vec<usize> = levels.iter().scan(0, |at, l| Some(std::mem::replace(at, *at + l.0.len()))).collect();
    let mut lines = Vec::new();
    for (depth, (nodes, _)) in levels.iter().enumerate() {
        for (q, node) in nodes.iter().enumerate() {
            let mut node = *node;
            if depth + 1 < levels.len() {
                node.0[15] = (starts[depth + 1] + 16 * q - (starts[depth] + q)) as u32;
            }
            lines.push(node);
        }
    }
    let leaves_at = *starts.last().expect("leaves");
    let mut sub_at = Vec::with_capacity(subtrees.len());
    for t in &subtrees {
        sub_at.push((lines.len(), t.height));
        lines.extend_from_slice(&t.lines);
    }
    for (l, lane, t) in escapes {
        let (at, h) = sub_at[t];
        let off = u32::try_from(at - (leaves_at + l)).ok().filter(|&o| o <= OFFSET).expect("an escape within reach");
        lines[leaves_at + l].0[lane] = EXT | h << 28 | off;
    }
    Tree { lines, height }
}
