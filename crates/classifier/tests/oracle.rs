//! The classifier against an oracle (a linear scan by priority, then rule id): random rules
//! over a small value space (so that they overlap and tie), random keys, interleaved inserts
//! and deletes; the rule table, its megaflows, and the cache with each layer on and off.

use classifier::cache::Verdict;
use classifier::key::{FRAG_ANY, FRAG_LATER};
use classifier::{CacheConfig, Field, FlowKey, MegaflowCache, Rule, RuleMatch, RuleTable};
use proptest::prelude::*;

/// The best rule for `key`: highest priority, then lowest id.
fn oracle<'a>(rules: &'a [Rule], key: &FlowKey) -> Option<&'a Rule> {
    rules.iter().filter(|r| r.matches(key)).min_by_key(|r| (std::cmp::Reverse(r.priority), r.id))
}

fn verdict(r: Option<&Rule>) -> Verdict {
    r.map_or(Verdict::NONE, |r| Verdict { rule: r.id, action: r.action })
}

/// A key over a small value space.
fn key() -> impl Strategy<Value = FlowKey> {
    (1u64..4, prop::bool::ANY, prop::sample::select(vec![6u64, 17]), 0u64..8, 0u64..4, 0u64..4, 0u64..3).prop_map(
        |(port, ip, proto, src, dst, tp, frag)| {
            let frag = [0, FRAG_ANY, FRAG_ANY | FRAG_LATER][frag as usize];
            let later = frag & FRAG_LATER != 0;
            FlowKey::default()
                .with(Field::InPort, port)
                .with(Field::Ethertype, if ip { 0x0800 } else { 0x86dd })
                .with(Field::NwProto, proto)
                .with(Field::NwSrc, (src << 29) | 0x0001_0203)
                .with(Field::NwDst, (dst << 30) | 0x0a00_0001)
                .with(Field::Frag, frag)
                .with(Field::TpSrc, if later { 0 } else { 1000 + tp })
                .with(Field::TpDst, if later { 0 } else { 80 + tp })
        },
    )
}

/// A rule matching a random subset of fields of a random key, the addresses by prefix.
fn rule() -> impl Strategy<Value = (u32, RuleMatch)> {
    (key(), 0u32..4, any::<u8>(), 0u32..33, 0u32..33).prop_map(|(k, priority, fields, src_len, dst_len)| {
        let mut m = RuleMatch::default();
        let plain = [Field::InPort, Field::Ethertype, Field::NwProto, Field::TpSrc, Field::TpDst, Field::Frag];
        for (b, f) in plain.iter().enumerate() {
            if fields & (1 << b) != 0 {
                m.set(*f, k.get(*f), f.full());
            }
        }
        if fields & 0x40 != 0 {
            m.set(Field::NwSrc, k.get(Field::NwSrc), classifier::key::prefix_bits(Field::NwSrc, src_len));
        }
        if fields & 0x80 != 0 {
            m.set(Field::NwDst, k.get(Field::NwDst), classifier::key::prefix_bits(Field::NwDst, dst_len));
        }
        (priority, m)
    })
}

#[derive(Debug, Clone)]
enum Op {
    Insert(u32, RuleMatch),
    Delete(usize),
    Lookup(Vec<FlowKey>),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            3 => rule().prop_map(|(p, m)| Op::Insert(p, m)),
            1 => any::<usize>().prop_map(Op::Delete),
            3 => prop::collection::vec(key(), 1..40).prop_map(Op::Lookup),
        ],
        1..60,
    )
}

/// A key equal to `key` under `mask`, with the other bits from `noise`.
fn under(key: &FlowKey, mask: &classifier::Mask, noise: &FlowKey) -> FlowKey {
    FlowKey { words: std::array::from_fn(|i| (key.words[i] & mask.0.words[i]) | (noise.words[i] & !mask.0.words[i])) }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, rng_seed: proptest::test_runner::RngSeed::Fixed(17), ..ProptestConfig::default() })]

    #[test]
    fn table_megaflows_and_caches_answer_as_the_oracle(ops in ops(), noise in prop::collection::vec(key(), 8)) {
        let mut table = RuleTable::new();
        let mut rules: Vec<Rule> = Vec::new();
        let configs = [(false, false), (true, false), (false, true), (true, true)];
        let mut caches: Vec<MegaflowCache> = configs
            .iter()
            .map(|&(emc, cd)| MegaflowCache::new(CacheConfig { emc, cd, cd_entries: 64, max_megaflows: 50 }))
            .collect();
        let mut next_id = 0;
        for op in ops {
            match op {
                Op::Insert(priority, m) => {
                    let r = Rule { id: next_id, priority, matches: m, action: next_id * 10 };
                    next_id += 1;
                    table.insert(r);
                    rules.push(r);
                }
                Op::Delete(k) if !rules.is_empty() => {
                    let r = rules.remove(k % rules.len());
                    prop_assert_eq!(table.remove(r.id), Some(r));
                }
                Op::Delete(_) => {}
                Op::Lookup(keys) => {
                    for key in &keys {
                        let found = table.lookup(key);
                        prop_assert_eq!(found.rule.as_ref(), oracle(&rules, key), "table, key {:?}", key);
                        // Every key equal under the megaflow mask gets the same answer.
                        for n in &noise {
                            let other = under(key, &found.megaflow, n);
                            prop_assert_eq!(oracle(&rules, &other), found.rule.as_ref(), "megaflow {:?}", found.megaflow);
                        }
                    }
                    for c in &mut caches {
                        let mut out = vec![Verdict::NONE; keys.len()];
                        // Twice: the second time from what the first installed.
                        for _ in 0..2 {
                            c.lookup_batch(&table, &keys, &mut out);
                            for (key, v) in keys.iter().zip(&out) {
                                prop_assert_eq!(*v, verdict(oracle(&rules, key)));
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn the_seed_rules_give_one_megaflow_per_source_with_its_rule_mask() {
    let mut table = RuleTable::new();
    for k in 1..=30u32 {
        let text = if k <= 20 {
            format!("udp,nw_src={k}.0.0.0/{}", 7 + k)
        } else {
            format!("udp,nw_src={k}.0.0.0/{},tp_dst={k}", k - 13)
        };
        let m = RuleMatch::parse(&text).unwrap();
        table.insert(Rule { id: k, priority: k, matches: m, action: k });
    }
    assert_eq!(table.subtables(), 30);
    for k in 1..=30u64 {
        let key = FlowKey::default()
            .with(Field::InPort, 1)
            .with(Field::Ethertype, 0x0800)
            .with(Field::NwProto, 17)
            .with(Field::NwSrc, k << 24 | 1)
            .with(Field::NwDst, 0x0a00_0001 + k)
            .with(Field::TpSrc, 1024)
            .with(Field::TpDst, k);
        let found = table.lookup(&key);
        let rule = found.rule.unwrap();
        assert_eq!(rule.id, k as u32);
        assert_eq!(found.megaflow, rule.matches.mask, "source {k}: its rule's mask, nothing more (prefix tracking)");
        assert_eq!(found.probed, 1, "only its own subtable is probed");
    }
}
