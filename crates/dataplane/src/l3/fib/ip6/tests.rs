//! The IPv6 table against a naive longest-prefix match, under concurrent reads, and at the
//! real table's distribution of lengths.

use super::*;
use crate::l3::fib::{FibError, MAX_INDEX, key_mask, oracle};
use crate::runtime::qsbr::Qsbr;
use proptest::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

mod concurrent;

/// The first level's width the tests' tables have: the default table's, but 12 bits under
/// Miri, where setting up and dropping the default width's 2^18 slots took about 50 s of each
/// test (the code under test is the same generic code at either width).
const TEST_FIRST: u32 = if cfg!(miri) { 12 } else { FIRST_BITS };

fn writer() -> Fib6Writer<TEST_FIRST> {
    Fib6Writer::new(Arc::new(Fib6::new().unwrap()), Arc::new(Qsbr::new(1)))
}

/// Checks every address of `addrs`, one by one and by batch (with each instruction set this
/// CPU has), against `want`.
fn check<const FIRST: u32>(
    fib: &Fib6<FIRST>,
    addrs: &[u128],
    want: impl Fn(u128) -> Option<Leaf>,
) -> Result<(), TestCaseError> {
    for chunk in addrs.chunks(VECTOR_SIZE) {
        let dst: Vec<[u8; 16]> = chunk.iter().map(|a| a.to_be_bytes()).collect();
        let mut batch = vec![0u32; chunk.len()];
        let wanted: Vec<Option<Leaf>> = chunk.iter().map(|&a| want(a)).collect();
        for (&addr, &want) in chunk.iter().zip(&wanted) {
            prop_assert_eq!(fib.lookup(addr), want, "addr {}", Ipv6Addr::from(addr));
        }
        for isa in Isa::available() {
            fib.lookup_batch(isa, &dst, &mut batch);
            for ((&addr, &want), &e) in chunk.iter().zip(&wanted).zip(&batch) {
                prop_assert_eq!(Leaf::decode(e), want, "batch ({}), addr {}", isa.name(), Ipv6Addr::from(addr));
            }
        }
    }
    Ok(())
}

/// The first and last address of every prefix and their outer neighbours.
fn edges(keys: &[(u128, u8)]) -> impl Iterator<Item = u128> + '_ {
    keys.iter().flat_map(|&(p, l)| [p, p | !key_mask(l), p.wrapping_sub(1), (p | !key_mask(l)).wrapping_add(1)])
}

fn arb_route6() -> impl Strategy<Value = (u128, u8, u32)> {
    // Each route shares a random number of leading bits with one of four anchors, then
    // random bits: routes nest often, at and between node boundaries, with lengths at every
    // depth from /0 to /128 (short ones, which change defaults and first-level leaves, rarely;
    // under Miri none shorter than /12: a /0 writes 2^18 defaults).
    const ANCHORS: [u128; 4] = [
        0x2001_0db8_aaaa_bbbb_cccc_dddd_eeee_ffff,
        0x2001_0db8_aaaa_0000_0000_0000_0000_0001,
        0x2001_0db9_0000_0000_1111_2222_3333_4444,
        0x2001_0db8_aaab_0000_0000_0000_0000_0000,
    ];
    let short = if cfg!(miri) { 12u8 } else { 0 };
    (
        0usize..4,
        0u8..=128,
        any::<u128>(),
        prop_oneof![1 => short..=20, 1 => 16u8..=32, 3 => 32u8..=48, 2 => 48u8..=64, 2 => 64u8..=128, 1 => 120u8..=128],
        1u32..100,
    )
        .prop_map(|(a, shared, rest, len, adj)| {
            let key = ANCHORS[a] & key_mask(shared) | rest & !key_mask(shared);
            (key & key_mask(len), len, adj)
        })
}

/// Applies batches of random inserts, replaces and deletes to `w` and returns the routes
/// that should be left. `((key, len, adj), delete)` inserts `key/len` or, with `delete`,
/// removes a route already there (the one `adj` picks).
/// A change the tests draw: a route, and whether it is a delete instead.
type Op = ((u128, u8, u32), bool);

fn apply_batches<const FIRST: u32>(w: &mut Fib6Writer<FIRST>, batches: Vec<Vec<Op>>) -> BTreeMap<(u128, u8), u32> {
    let mut model = BTreeMap::new();
    for ops in batches {
        let mut batch = Vec::new();
        for ((key, len, adj), delete) in ops {
            let victim = model.keys().nth(adj as usize % model.len().max(1)).copied();
            match victim.filter(|_| delete) {
                Some((key, len)) => {
                    batch.push((Ipv6Addr::from(key), len, None));
                    model.remove(&(key, len));
                }
                None => {
                    batch.push((Ipv6Addr::from(key), len, Some(adj)));
                    model.insert((key, len), adj);
                }
            }
        }
        w.apply(&batch).unwrap();
    }
    model
}

/// Random batches of inserts, replaces and deletes in a table of a `FIRST`-bit first level,
/// then lookups at random addresses near the prefixes and at every prefix's edges, scalar and
/// by batch, against the naive oracle; deleting everything leaves no subtree behind.
fn matches_a_naive_lpm<const FIRST: u32>(
    batches: Vec<Vec<Op>>,
    probes: Vec<(usize, u128, u32)>,
) -> Result<(), TestCaseError> {
    let mut w = Fib6Writer::<FIRST>::new(Arc::new(Fib6::new().unwrap()), Arc::new(Qsbr::new(1)));
    let empty = w.bytes();
    let model = apply_batches(&mut w, batches);
    let fib = w.fib().clone();
    let keys: Vec<(u128, u8)> = model.keys().copied().collect();
    // A probe shares a random number of leading bits with one of the prefixes.
    let near = probes.into_iter().map(|(k, r, shared)| match keys.get(k % keys.len().max(1)) {
        Some(&(p, _)) => p & key_mask(shared as u8) | r & !key_mask(shared as u8),
        None => r,
    });
    let addrs: Vec<u128> = near.chain(edges(&keys)).collect();
    check(&fib, &addrs, |a| oracle(&model, a))?;
    let slots = keys
        .iter()
        .filter(|(_, l)| u32::from(*l) > FIRST)
        .map(|(k, _)| slot_of::<FIRST>(*k))
        .collect::<std::collections::BTreeSet<_>>();
    prop_assert_eq!(w.subtrees(), slots.len(), "one subtree per slot with a long route");
    prop_assert_eq!(
        w.routes().map(|r| (u128::from(r.prefix), r.len, r.adj)).collect::<Vec<_>>(),
        model.iter().map(|(&(k, l), &a)| (k, l, a)).collect::<Vec<_>>()
    );
    // Deleting everything (in one batch) leaves nothing.
    let all: Vec<_> = keys.iter().map(|&(p, l)| (Ipv6Addr::from(p), l, None)).collect();
    w.apply(&all).unwrap();
    prop_assert_eq!(w.subtrees(), 0, "no subtree leaks");
    prop_assert!(w.is_empty());
    check(&fib, &addrs, |_| None)?;
    prop_assert_eq!(w.lines_used(), 0, "every line given back");
    prop_assert!(w.bytes() >= empty);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 2 } else { 96 }, rng_seed: proptest::test_runner::RngSeed::Fixed(6), ..ProptestConfig::default() })]

    /// The default table's 18-bit first level. (Not under Miri: the small table's test runs the
    /// same unsafe code there, in a tenth of the time.)
    #[test]
    #[cfg_attr(miri, ignore = "the small table's test covers the same unsafe code")]
    fn the_default_table_matches_a_naive_lpm(
        batches in proptest::collection::vec(proptest::collection::vec((arb_route6(), any::<bool>()), 1..12), 1..if cfg!(miri) { 4 } else { 24 }),
        probes in proptest::collection::vec((0usize..1000, any::<u128>(), 0u32..=128), if cfg!(miri) { 16 } else { 64 }),
    ) {
        matches_a_naive_lpm::<FIRST_BITS>(batches, probes)?;
    }

    /// A small table's 12-bit first level: regions and windows start earlier.
    #[test]
    fn a_small_table_matches_a_naive_lpm(
        batches in proptest::collection::vec(proptest::collection::vec((arb_route6(), any::<bool>()), 1..12), 1..if cfg!(miri) { 4 } else { 24 }),
        probes in proptest::collection::vec((0usize..1000, any::<u128>(), 0u32..=128), if cfg!(miri) { 16 } else { 64 }),
    ) {
        matches_a_naive_lpm::<12>(batches, probes)?;
    }
}

#[test]
fn lab_routes_fallback_and_refused_batches() {
    let mut w = writer();
    let a = |s: &str| s.parse::<Ipv6Addr>().unwrap();
    let l = |adj, prefix_len| Some(Leaf { adj, prefix_len });
    w.apply(&[(a("2001:db8::"), 32, Some(2)), (a("2001:db8:1::"), 48, Some(3)), (a("2001:db8:1:100::"), 56, Some(4))])
        .unwrap();
    let f = w.fib().clone();
    let look = |s: &str| f.lookup(u128::from(a(s)));
    assert_eq!(look("2001:db8:1:1ff::1"), l(4, 56));
    assert_eq!(look("2001:db8:1:200::1"), l(3, 48));
    assert_eq!(look("2001:db8:2::1"), l(2, 32));
    assert_eq!(look("2001:db9::1"), None);
    assert_eq!(w.subtrees(), 1);
    // A whole batch is refused when one change is wrong, and nothing of it applied.
    assert_eq!(
        w.apply(&[(a("2001:db8:5::"), 48, Some(5)), (a("2001:db8:6::"), 48, None)]),
        Err(FibError::NoSuchRoute(a("2001:db8:6::").into(), 48))
    );
    assert_eq!(w.apply(&[(a("::"), 129, Some(1))]), Err(FibError::Invalid(a("::").into(), 129, 1)));
    assert_eq!(w.apply(&[(a("::"), 0, Some(MAX_INDEX + 1))]), Err(FibError::Invalid(a("::").into(), 0, MAX_INDEX + 1)));
    assert_eq!(w.len(), 3);
    assert_eq!(look("2001:db8:5::1"), l(2, 32));
    // A delete of a route the same batch inserts is fine; a second delete is not.
    w.apply(&[(a("2001:db8:5::"), 48, Some(5)), (a("2001:db8:5::"), 48, None)]).unwrap();
    assert!(w.apply(&[(a("2001:db8:1::"), 48, None), (a("2001:db8:1::"), 48, None)]).is_err());
    // Short routes: defaults under a subtree and first-level leaves elsewhere.
    w.apply(&[(a("2000::"), 12, Some(6)), (a("2001::"), 16, Some(7))]).unwrap();
    assert_eq!(look("2001:db9::1"), l(7, 16));
    assert_eq!(look("2001:db8:2::1"), l(2, 32));
    assert_eq!(look("2002::1"), l(6, 12));
    w.apply(&[(a("2001::"), 16, None), (a("2001:db8::"), 32, None)]).unwrap();
    assert_eq!(look("2001:db8:2::1"), l(6, 12));
    assert_eq!(look("2001:db8:1:1ff::1"), l(4, 56));
    w.apply(&[(a("2001:db8:1::"), 48, None), (a("2001:db8:1:100::"), 56, None)]).unwrap();
    assert_eq!(w.subtrees(), 0, "the slot went back to a leaf");
    assert_eq!(look("2001:db8:1:1ff::1"), l(6, 12));
    w.apply(&[(a("2001:db8::1"), 128, Some(8))]).unwrap();
    assert_eq!(look("2001:db8::1"), l(8, 128));
    assert_eq!(look("2001:db8::"), l(6, 12));
    assert_eq!(look("2001:db8::2"), l(6, 12));
}

/// Neighbours on connected /64s (as `ip6-connected` has them): each host route answers for
/// its address only, the /64 for the rest, and one probe of the host table decides.
#[test]
fn host_routes_on_connected_subnets() {
    let mut w = writer();
    let net = |n: u128| 0x2001_0db8_0000_0000_0000_0000_0000_0000u128 | n << 80;
    let mut model = BTreeMap::new();
    let mut changes = Vec::new();
    let (hosts, probes) = if cfg!(miri) { (6u128, 10u128) } else { (254, 300) };
    for (port, n) in [0x16u128, 0x48].into_iter().enumerate() {
        model.insert((net(n), 64), 10 + port as u32);
        for h in 1..=hosts {
            model.insert((net(n) | h, 128), 100 + h as u32);
        }
    }
    model.insert((net(0x16) | 0x8000 << 48, 80), 7); // longer than the window: an escape
    for (&(k, l), &adj) in &model {
        changes.push((Ipv6Addr::from(k), l, Some(adj)));
    }
    w.apply(&changes).unwrap();
    let keys: Vec<(u128, u8)> = model.keys().copied().collect();
    let mut addrs: Vec<u128> = edges(&keys).collect();
    addrs.extend((0..=probes).flat_map(|h| [net(0x16) | h, net(0x48) | h, net(0x16) | 0x8000 << 48 | h]));
    check(w.fib(), &addrs, |a| oracle(&model, a)).unwrap();
    assert_eq!(w.subtrees(), 1, "both /64s in one slot");
}

/// A batch whose trees do not fit the lines left is refused whole: the routes and the
/// lookups are as before it.
#[test]
fn a_batch_that_does_not_fit_changes_nothing() {
    let mut w = writer();
    let a = |s: &str| s.parse::<Ipv6Addr>().unwrap();
    w.apply(&[(a("2001:db8::"), 32, Some(2))]).unwrap();
    w.limit_lines(4);
    let many: Vec<_> =
        (0..200u128).map(|k| (Ipv6Addr::from(u128::from(a("2001:db8::")) | k << 64), 64, Some(3 + k as u32))).collect();
    assert!(matches!(w.apply(&many), Err(FibError::Full(_))));
    assert_eq!(w.len(), 1);
    assert_eq!(w.fib().lookup_addr(a("2001:db8:0:5::1")), Some(Leaf { adj: 2, prefix_len: 32 }));
    assert_eq!(w.subtrees(), 1);
    w.apply(&many[..1]).unwrap();
    assert_eq!(w.fib().lookup_addr(a("2001:db8::1")), Some(Leaf { adj: 3, prefix_len: 64 }));
}

/// Lengths as `ip6_bgp_table()` (crates/vecflow/src/bench/scenarios.rs) draws them, `count`
/// prefixes.
pub(super) fn bgp_like_table(count: usize) -> Vec<(u128, u8)> {
    const SPREAD: [u8; 20] = [16, 19, 20, 22, 24, 28, 29, 30, 31, 33, 34, 36, 38, 40, 42, 44, 45, 46, 47, 64];
    fn splitmix(x: &mut u64) -> u64 {
        *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let mut rng = 0x6b9d_5eed_u64;
    let random = |rng: &mut u64| {
        (0x2u128 << 124) | ((u128::from(splitmix(rng)) << 64 | u128::from(splitmix(rng))) & (u128::MAX >> 4))
    };
    let allocations: Vec<u128> = (0..count * 24 / 230).map(|_| random(&mut rng) & key_mask(32)).collect();
    let mut seen = std::collections::HashSet::new();
    let mut table = Vec::with_capacity(count);
    while table.len() < count {
        let (r, host) = (splitmix(&mut rng), random(&mut rng));
        let len = match r % 1000 {
            0 => 128,
            1..=100 => 32,
            101..=600 => 48,
            _ => SPREAD[(r >> 10) as usize % SPREAD.len()],
        };
        let inside = len > 32 && (r >> 20) % 10 < 8;
        let addr =
            if inside { allocations[(r >> 32) as usize % allocations.len()] | host & !key_mask(32) } else { host };
        if seen.insert((addr & key_mask(len), len)) {
            table.push((addr & key_mask(len), len));
        }
    }
    table
}

/// A longest-prefix match by hash lookups, longest length first (fast enough for big tables).
fn hash_oracle(routes: &HashMap<(u128, u8), u32>, lens: &[u8], key: u128) -> Option<Leaf> {
    lens.iter().find_map(|&l| routes.get(&(key & key_mask(l), l)).map(|&adj| Leaf { adj, prefix_len: l }))
}

#[test]
#[cfg_attr(miri, ignore = "20 000 routes")]
fn a_table_with_the_real_lengths_matches_the_oracle() {
    let table = bgp_like_table(20_000);
    let mut w = writer();
    let changes: Vec<_> =
        table.iter().enumerate().map(|(k, &(p, l))| (Ipv6Addr::from(p), l, Some(k as u32 % 1000 + 2))).collect();
    w.apply(&changes).unwrap();
    let mut routes: HashMap<(u128, u8), u32> =
        changes.iter().map(|&(a, l, adj)| ((u128::from(a), l), adj.unwrap())).collect();
    let mut lens: Vec<u8> = (0..=128).rev().collect();
    let mut rng = 0x1234_5678_u128;
    let mut probes = |keys: &[(u128, u8)]| -> Vec<u128> {
        let near = keys.iter().map(|&(p, l)| {
            rng = rng.wrapping_mul(0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645).wrapping_add(1);
            p | rng & !key_mask(l)
        });
        near.chain(edges(keys)).collect::<Vec<_>>()
    };
    let addrs = probes(&table);
    check(w.fib(), &addrs, |a| hash_oracle(&routes, &lens, a)).unwrap();
    // A tenth deleted in one batch, and a default route.
    let gone: Vec<_> = table.iter().step_by(10).map(|&(p, l)| (Ipv6Addr::from(p), l, None)).collect();
    w.apply(&gone).unwrap();
    w.apply(&[(Ipv6Addr::UNSPECIFIED, 0, Some(1))]).unwrap();
    for (a, l, _) in &gone {
        routes.remove(&(u128::from(*a), *l));
    }
    routes.insert((0, 0), 1);
    lens.retain(|_| true);
    check(w.fib(), &addrs, |a| hash_oracle(&routes, &lens, a)).unwrap();
}

/// Build and delete rates at the scale of `ip6-bgp` (run in release:
/// `cargo test --release -p dataplane --lib ip6::tests::build_rate -- --ignored --nocapture`).
#[test]
#[ignore = "a timing, for release builds"]
fn build_rate() {
    let table = bgp_like_table(230_000);
    let mut w = writer();
    let changes: Vec<_> =
        table.iter().enumerate().map(|(k, &(p, l))| (Ipv6Addr::from(p), l, Some(k as u32 % 1000 + 2))).collect();
    let t = std::time::Instant::now();
    w.apply(&changes).unwrap();
    let build = t.elapsed();
    let mut rng = 0x9e37_79b9_u64;
    let mut gone = std::collections::BTreeSet::new();
    while gone.len() < 10_000 {
        rng = rng.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        gone.insert((rng >> 33) as usize % table.len());
    }
    let deletes: Vec<_> = gone.iter().map(|&k| (Ipv6Addr::from(table[k].0), table[k].1, None)).collect();
    let t = std::time::Instant::now();
    w.apply(&deletes).unwrap();
    let delete = t.elapsed();
    println!(
        "230 000 routes in {build:?} ({:.0} routes/s); 10 000 deletes in {delete:?}; {} subtrees, {} bytes, {:.1} bytes/route",
        230_000.0 / build.as_secs_f64(),
        w.subtrees(),
        w.bytes(),
        w.bytes() as f64 / w.len() as f64
    );
}

/// Lookup speed at the scale of `ip6-bgp`: one address in each prefix, in random order, by
/// batches of a vector (run in release:
/// `cargo test --release -p dataplane --lib ip6::tests::lookup_rate -- --ignored --nocapture`).
#[test]
#[ignore = "a timing, for release builds"]
fn lookup_rate() {
    let table = bgp_like_table(std::env::var("ROUTES").ok().and_then(|r| r.parse().ok()).unwrap_or(230_000));
    let mut w = writer();
    let changes: Vec<_> =
        table.iter().enumerate().map(|(k, &(p, l))| (Ipv6Addr::from(p), l, Some(k as u32 % 1000 + 2))).collect();
    w.apply(&changes).unwrap();
    let mut rng = 0xd57_5eed_u128;
    let mut dst: Vec<[u8; 16]> = table
        .iter()
        .map(|&(p, l)| {
            rng = rng.wrapping_mul(0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645).wrapping_add(1);
            (p | rng & !key_mask(l)).to_be_bytes()
        })
        .collect();
    for i in (1..dst.len()).rev() {
        rng = rng.wrapping_mul(0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645).wrapping_add(1);
        dst.swap(i, (rng >> 64) as usize % (i + 1));
    }
    let fib = w.fib().clone();
    let mut out = [0u32; VECTOR_SIZE];
    let mut sum = 0u64;
    let t = std::time::Instant::now();
    let rounds = 4_600_000 / dst.len();
    for _ in 0..rounds {
        for chunk in dst.chunks(VECTOR_SIZE) {
            for d in chunk {
                fib.prefetch(d);
            }
            fib.lookup_batch(Isa::best(), chunk, &mut out[..chunk.len()]);
            sum += u64::from(out[0]);
        }
    }
    let batch = t.elapsed().as_secs_f64() * 1e9 / (rounds * dst.len()) as f64;
    let t = std::time::Instant::now();
    for d in &dst {
        sum += fib.lookup(u128::from_be_bytes(*d)).map_or(0, |l| u64::from(l.adj));
    }
    let scalar = t.elapsed().as_secs_f64() * 1e9 / dst.len() as f64;
    // Walks by the height of their slot's tree (0: none, or outside its region).
    let mut hist = [0usize; 8];
    for d in &dst {
        let key = u128::from_be_bytes(*d);
        let (walk, _) = start::<TEST_FIRST>(
            fib.first(slot_of::<TEST_FIRST>(key)).load(Ordering::Acquire),
            key,
            fib.arena.base() as usize,
        );
        hist[walk & 63] += 1;
    }
    println!("walks by tree height: {hist:?}");
    println!("batch {batch:.1} ns/lookup, scalar {scalar:.1} ns/lookup ({sum}); {} bytes/route", w.bytes() / w.len());
}
