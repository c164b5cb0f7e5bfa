//! Multipath: load-balance objects and the flow hash that picks one of their paths.
//!
//! A route with several paths points (in the FIB) at a load-balance object instead of an
//! adjacency: [`LB`] set in the FIB value, the object's index below it. The object holds
//! [`BUCKETS`] buckets, each naming one path's adjacency, laid out in proportion to the
//! paths' weights. `ip4-lookup` and `ip6-lookup` hash each such packet's flow ([`hash4`],
//! [`hash6`]: addresses, protocol, and the ports of TCP and UDP when the packet is not a
//! fragment; for IPv6 a non-zero flow label stands in for the ports) and replace the value
//! with the adjacency of the bucket the hash picks ([`LoadBalance::pick`]). The hash has no
//! per-worker state and no seed, so a flow leaves by the same path from every worker; nothing
//! is written per packet.
//!
//! Buckets are resilient (as Linux's resilient next-hop groups): when a path goes down (its
//! link, or its neighbor failed to resolve) only its buckets move, to the paths below their
//! share; when it comes back it takes its share back from the paths above theirs. A route
//! whose paths change starts from the buckets of the object it had ([`LoadBalance::new`]), so
//! the flows of the paths it keeps stay where they were.

use serde::Serialize;

/// Buckets of every load-balance object: max(512, 8 × [`crate::l3::config::MAX_PATHS`]).
pub const BUCKETS: usize = 512;

/// Set in a FIB value that names a load-balance object (its index in the bits below).
pub const LB: u32 = 1 << 21;

/// One path of a load-balance object: an adjacency and its weight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Path {
    /// The path's adjacency (a `Via`).
    pub adj: u32,
    /// Its weight, 1–255.
    pub weight: u8,
}

/// A load-balance object: paths and the buckets that spread flows over them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadBalance {
    /// The paths, ordered by adjacency.
    pub paths: Vec<Path>,
    /// Whether each path (same order) takes traffic.
    pub live: Vec<bool>,
    /// The adjacency of each bucket.
    buckets: [u32; BUCKETS],
}

impl LoadBalance {
    /// An object over `paths` (ordered by adjacency, 1 to 64) with `live` telling which are
    /// up. With `from`, the object the route had before: the buckets of the paths both have
    /// stay where they were.
    pub fn new(paths: Vec<Path>, live: Vec<bool>, from: Option<&LoadBalance>) -> Self {
        let mut lb = LoadBalance { buckets: [u32::MAX; BUCKETS], paths, live: vec![false; live.len()] };
        if let Some(old) = from {
            for (b, &adj) in lb.buckets.iter_mut().zip(old.buckets.iter()) {
                if lb.paths.iter().any(|p| p.adj == adj) {
                    *b = adj;
                }
            }
        }
        lb.set_live(live);
        lb
    }

    /// The adjacency for a flow whose hash is `hash`.
    #[inline(always)]
    pub fn pick(&self, hash: u32) -> u32 {
        self.buckets[(hash >> (32 - BUCKETS.trailing_zeros())) as usize]
    }

    /// Buckets each path should hold: its weight's share of [`BUCKETS`] among the live
    /// paths (all paths when none is live), rounded by largest remainder.
    pub fn wanted(&self) -> Vec<usize> {
        let any_live = self.live.iter().any(|&l| l);
        let w: Vec<u64> = self
            .paths
            .iter()
            .zip(&self.live)
            .map(|(p, &l)| if l || !any_live { u64::from(p.weight) } else { 0 })
            .collect();
        let total: u64 = w.iter().sum::<u64>().max(1);
        let n = BUCKETS as u64;
        let mut want: Vec<usize> = w.iter().map(|&x| (x * n / total) as usize).collect();
        let mut rest = BUCKETS - want.iter().sum::<usize>();
        let mut by_remainder: Vec<usize> = (0..w.len()).collect();
        by_remainder.sort_by_key(|&k| (std::cmp::Reverse(w[k] * n % total), k));
        for &k in by_remainder.iter().filter(|&&k| w[k] > 0) {
            if rest == 0 {
                break;
            }
            want[k] += 1;
            rest -= 1;
        }
        want
    }

    /// Buckets each path holds.
    pub fn counts(&self) -> Vec<usize> {
        self.paths.iter().map(|p| self.buckets.iter().filter(|&&b| b == p.adj).count()).collect()
    }

    /// Takes which paths are live: a path that went down gives its buckets to the live paths
    /// furthest below their share, and no other bucket moves; a path that came up (or holds
    /// none yet) takes its share from the paths above theirs, and only to it do buckets move.
    /// With no live path no flow has a way out: nothing moves if the buckets are spread by
    /// weight over all paths, else (a new object, or one that had live paths) they are
    /// spread so, as if every path were live, the state a start with these paths down has.
    /// True when a bucket moved.
    pub fn set_live(&mut self, live: Vec<bool>) -> bool {
        let was = std::mem::replace(&mut self.live, live);
        if !self.live.iter().any(|&l| l) {
            if self.counts() == self.wanted() {
                return false;
            }
            let dead = std::mem::replace(&mut self.live, was);
            let moved = self.set_live(vec![true; dead.len()]);
            self.live = dead;
            return moved;
        }
        let want = self.wanted();
        let n = self.paths.len();
        let index = |adj: u32| self.paths.iter().position(|p| p.adj == adj);
        let mut held = vec![0usize; n];
        let mut free = Vec::new();
        for (b, &adj) in self.buckets.iter().enumerate() {
            match index(adj).filter(|&k| self.live[k]) {
                Some(k) => held[k] += 1,
                None => free.push(b),
            }
        }
        // Paths that join: just came up, or hold nothing yet.
        let joining: Vec<bool> =
            (0..n).map(|k| self.live[k] && (!was.get(k).copied().unwrap_or(false) || held[k] == 0)).collect();
        let short: usize = (0..n).filter(|&k| joining[k]).map(|k| want[k].saturating_sub(held[k])).sum();
        // What joining paths need beyond the free buckets comes from the paths furthest above
        // their share, their last buckets first.
        for _ in 0..short.saturating_sub(free.len()) {
            let Some(k) = (0..n).filter(|&k| !joining[k] && held[k] > want[k]).max_by_key(|&k| held[k] - want[k])
            else {
                break;
            };
            let b = (0..BUCKETS).rev().find(|&b| self.buckets[b] == self.paths[k].adj && !free.contains(&b));
            if let Some(b) = b {
                free.push(b);
                held[k] -= 1;
            }
        }
        if free.is_empty() {
            return false;
        }
        free.sort_unstable();
        // Deal the free buckets out in turn, to joining paths first, then to the live paths
        // furthest below their share, so that each path's buckets are spread over the hash
        // range.
        for b in free {
            let deficit = |k: usize| (want[k] as i64 - held[k] as i64) * BUCKETS as i64 / want[k].max(1) as i64;
            let k = (0..n)
                .filter(|&k| self.live[k])
                .max_by_key(|&k| (joining[k] && held[k] < want[k], deficit(k), std::cmp::Reverse(k)))
                .expect("a live path");
            self.buckets[b] = self.paths[k].adj;
            held[k] += 1;
        }
        true
    }
}

/// Mixes two words into a 32-bit hash whose top bits are well spread, whichever bits of the
/// words vary: `b` is spread by a multiply before it meets `a`, then the two go through
/// MurmurHash3's 64-bit finalizer (each shift folds high bits down before a multiply carries
/// them up).
#[inline(always)]
fn mix(a: u64, b: u64) -> u32 {
    let mut x = a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    (x >> 32) as u32
}

/// The flow hash of the IPv4 packet whose header starts `ip` (at least 20 bytes; the rest
/// of the frame after it): source, destination, protocol, and for TCP and UDP packets that
/// are not fragments the ports. Words are read in the machine's order (the hash only has to
/// be the same on every worker), and which fields count is chosen without a branch.
#[inline(always)]
pub fn hash4(ip: &[u8]) -> u32 {
    match ip.first_chunk::<24>() {
        // No options: the ports follow the fixed header, every read at a fixed offset.
        Some(h) if h[0] == 0x45 => {
            let ports = u32::from_ne_bytes([h[20], h[21], h[22], h[23]]);
            hash4_fields(h[..20].try_into().expect("20 bytes"), ports)
        }
        _ => hash4_options(ip),
    }
}

/// [`hash4`] of a header with options, or of a frame too short to hold the ports.
#[cold]
fn hash4_options(ip: &[u8]) -> u32 {
    let l4 = usize::from(ip[0] & 0x0f) * 4;
    let ports = ip.get(l4..l4 + 4).map_or(0, |p| u32::from_ne_bytes([p[0], p[1], p[2], p[3]]));
    hash4_fields(ip[..20].try_into().expect("20 bytes"), ports)
}

/// The flow hash of fixed header `h` and the 4 bytes of ports after the header (whatever
/// they are: they count only for TCP and UDP, not fragmented).
#[inline(always)]
fn hash4_fields(h: &[u8; 20], ports: u32) -> u32 {
    let addrs = u64::from_ne_bytes([h[12], h[13], h[14], h[15], h[16], h[17], h[18], h[19]]);
    let proto = h[9];
    let fragment = (h[6] & 0x3f) | h[7] != 0;
    let with_ports = ((proto == 6) | (proto == 17)) & !fragment;
    mix(addrs, u64::from(proto) << 32 | u64::from(ports & (with_ports as u32).wrapping_neg()))
}

/// The flow hash of the IPv6 packet whose header starts `ip` (at least 40 bytes; the rest of
/// the frame after it): source, destination, next header, and the flow label when it is not
/// zero, else the ports of TCP and UDP right after the fixed header.
#[inline(always)]
pub fn hash6(ip: &[u8]) -> u32 {
    let half = |o: usize| u64::from_be_bytes(ip[o..o + 8].try_into().expect("8 bytes"));
    let addrs = half(8) ^ half(16).rotate_left(17) ^ half(24).rotate_left(34) ^ half(32).rotate_left(51);
    let label = u32::from_be_bytes([0, ip[1] & 0x0f, ip[2], ip[3]]);
    let next = ip[6];
    let ports = match (label, next, ip.get(40..44)) {
        (0, 6 | 17, Some(p)) => u32::from_be_bytes([p[0], p[1], p[2], p[3]]),
        (0, _, _) => 0,
        _ => label,
    };
    mix(addrs, u64::from(next) << 32 | u64::from(ports))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn paths(weights: &[u8]) -> Vec<Path> {
        weights.iter().enumerate().map(|(k, &weight)| Path { adj: 10 + k as u32, weight }).collect()
    }

    /// A UDP/IPv4 header (plus ports) of flow `f`.
    fn udp4(f: u32) -> [u8; 24] {
        let mut h = [0u8; 24];
        h[0] = 0x45;
        h[9] = 17;
        h[12..16].copy_from_slice(&(0x1000_0000 | f >> 16).to_be_bytes());
        h[16..20].copy_from_slice(&0x3000_0001u32.to_be_bytes());
        h[20..24].copy_from_slice(&(f & 0xffff | 0x1234_0000).to_be_bytes());
        h
    }

    #[test]
    fn weights_are_rounded_to_buckets_by_largest_remainder() {
        let lb = LoadBalance::new(paths(&[1, 1, 1]), vec![true; 3], None);
        assert_eq!(lb.wanted(), vec![171, 171, 170]);
        assert_eq!(lb.counts(), lb.wanted());
        let lb = LoadBalance::new(paths(&[3, 1]), vec![true; 2], None);
        assert_eq!(lb.counts(), vec![384, 128]);
        let lb = LoadBalance::new(paths(&[1; 64]), vec![true; 64], None);
        assert!(lb.counts().iter().all(|&c| c == 8));
    }

    /// A route made while all its paths are down (its interfaces down) still spreads its
    /// buckets by weight, as a start with those interfaces down does (live apply found it
    /// holding none: every bucket named no adjacency).
    #[test]
    fn an_object_made_with_no_live_path_spreads_its_buckets_by_weight() {
        let lb = LoadBalance::new(paths(&[3, 1]), vec![false; 2], None);
        assert_eq!((lb.counts(), lb.live.clone()), (vec![384, 128], vec![false, false]));
    }

    #[test]
    fn no_live_path_keeps_buckets_already_spread_by_weight() {
        let mut lb = LoadBalance::new(paths(&[1, 2]), vec![true; 2], None);
        let before = lb.clone();
        assert!(!lb.set_live(vec![false, false]), "all down: nothing moves");
        assert_eq!(lb.buckets, before.buckets);
    }

    #[test]
    fn fragments_and_other_protocols_hash_without_ports() {
        let mut a = udp4(1);
        let mut b = udp4(2);
        assert_ne!(hash4(&a), hash4(&b), "ports differ");
        a[6] = 0x20; // more fragments
        b[6] = 0x20;
        assert_eq!(hash4(&a), hash4(&b), "a fragment's ports are not read");
        let mut h = udp4(3);
        h[20..24].fill(0);
        assert_eq!(hash4(&h[..20]), hash4(&h), "a header without room for ports hashes as ports 0");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, rng_seed: proptest::test_runner::RngSeed::Fixed(33), ..ProptestConfig::default() })]

        /// Same flow, same path, from any copy of the object (every worker holds its own);
        /// each path's share of 64 k flows is its weight's share within 5 % (and the
        /// rounding to buckets, and sampling noise; 16 paths or fewer); a path that goes down moves only its own flows, and coming back moves
        /// only flows to it.
        #[test]
        fn picks_are_stable_weighted_and_resilient(weights in proptest::collection::vec(1u8..=255, 2..16), down in any::<proptest::sample::Index>()) {
            let lb = LoadBalance::new(paths(&weights), vec![true; weights.len()], None);
            let copy = lb.clone();
            let flows: Vec<u32> = (0..65_536u32).collect();
            let before: Vec<u32> = flows.iter().map(|&f| lb.pick(hash4(&udp4(f)))).collect();
            prop_assert!(flows.iter().zip(&before).all(|(&f, &p)| copy.pick(hash4(&udp4(f))) == p));
            let total: f64 = weights.iter().map(|&w| f64::from(w)).sum();
            for (k, p) in lb.paths.iter().enumerate() {
                let share = before.iter().filter(|&&a| a == p.adj).count() as f64 / flows.len() as f64;
                let want = f64::from(weights[k]) / total;
                // 5 %, plus the rounding of weights to buckets, plus 4 standard deviations
                // of a share of 64 k flows.
                let noise = 4.0 * (want * (1.0 - want) / flows.len() as f64).sqrt();
                prop_assert!((share - want).abs() <= 0.05 * want + 1.0 / BUCKETS as f64 + noise, "path {k}: {share} against {want}");
            }
            let d = down.index(weights.len());
            let mut after = lb.clone();
            let mut live = vec![true; weights.len()];
            live[d] = false;
            prop_assert!(after.set_live(live));
            for (&f, &p) in flows.iter().zip(&before) {
                let now = after.pick(hash4(&udp4(f)));
                prop_assert_ne!(now, lb.paths[d].adj);
                if p != lb.paths[d].adj {
                    prop_assert_eq!(now, p, "flow {} moved off a live path", f);
                }
            }
            let mut back = after.clone();
            back.set_live(vec![true; weights.len()]);
            for (held, want) in back.counts().into_iter().zip(lb.wanted()) {
                prop_assert!(held.abs_diff(want) <= 1, "{held} buckets against a share of {want}");
            }
            for &f in &flows {
                let (was, now) = (after.pick(hash4(&udp4(f))), back.pick(hash4(&udp4(f))));
                prop_assert!(now == was || now == lb.paths[d].adj, "flow {} moved between live paths", f);
            }
        }

        /// A route whose paths change keeps the flows of the paths it keeps.
        #[test]
        fn a_changed_route_keeps_the_flows_of_kept_paths(n in 3usize..12, gone in any::<proptest::sample::Index>()) {
            let all = paths(&vec![1; n]);
            let old = LoadBalance::new(all.clone(), vec![true; n], None);
            let g = gone.index(n);
            let kept: Vec<Path> = all.iter().copied().filter(|p| p.adj != all[g].adj).collect();
            let new = LoadBalance::new(kept, vec![true; n - 1], Some(&old));
            for f in 0..4096u32 {
                let h = hash4(&udp4(f));
                if old.pick(h) != all[g].adj {
                    prop_assert_eq!(new.pick(h), old.pick(h));
                }
            }
        }
    }
}
