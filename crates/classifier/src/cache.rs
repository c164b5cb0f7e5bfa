//! The megaflow cache of one worker: megaflows (a rule table answer wildcarded by its megaflow
//! mask) in one hash table per mask (*dpcls* subtables), searched in the order of their recent
//! hits, behind two predictors:
//! - the **exact-match cache** (EMC): full key → answer, 8192 entries, a packet's key put in
//!   with probability 1/100 (as Open vSwitch), so that only heavy flows take its room;
//! - the **Cuckoo Distributor** (CD): a 16-bit signature of the full key → the subtable that
//!   answered it last, in buckets of 8 (two candidate buckets per key). A hit costs one probe
//!   of the predicted subtable instead of a search; a false prediction costs that probe and the
//!   search. It is bypassed while the first ranked subtable takes nearly all hits anyway.
//!
//! Lookups go by batch (a vector): every key is hashed once and the buckets of the whole batch
//! are prefetched before any is probed; the search then runs subtable by subtable over the
//! keys still unanswered, each pass hashing and prefetching before probing. A key nobody
//! answers is looked up in the rule table (an *upcall*) and its megaflow installed. A rule
//! change (a new [`RuleTable::generation`]) empties the cache. Megaflows not used for a while
//! expire ([`MegaflowCache::expire`]); the cache holds at most `max_megaflows`.

use crate::hash::Hasher;
use crate::key::{FlowKey, Mask};
use crate::table::RuleTable;

/// The largest batch [`MegaflowCache::lookup_batch`] takes.
pub const MAX_BATCH: usize = 256;

/// The answer for a key: the rule's id and action, or [`Verdict::NONE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    /// The matching rule's id ([`u32::MAX`] when none).
    pub rule: u32,
    /// Its action ([`u32::MAX`] when none).
    pub action: u32,
}

impl Verdict {
    /// No rule matches.
    pub const NONE: Verdict = Verdict { rule: u32::MAX, action: u32::MAX };
}

/// Which layers run and how large they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheConfig {
    /// The exact-match cache is on.
    pub emc: bool,
    /// The Cuckoo Distributor is on.
    pub cd: bool,
    /// Entries of the CD (a power of two, at least 8): one per flow it should predict.
    pub cd_entries: usize,
    /// Megaflows at most.
    pub max_megaflows: usize,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig { emc: true, cd: true, cd_entries: 1 << 20, max_megaflows: 200_000 }
    }
}

/// What the cache did, since it was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Keys looked up.
    pub lookups: u64,
    /// Answered by the EMC.
    pub emc_hits: u64,
    /// Answered by the subtable the CD predicted.
    pub cd_hits: u64,
    /// Answered by the ranked search.
    pub dpcls_hits: u64,
    /// Answered by the rule table (megaflow installed, unless the cache was full).
    pub upcalls: u64,
    /// Subtables probed for the CD and dpcls hits (their average is this over their sum).
    pub subtables_probed: u64,
    /// CD predictions the predicted subtable did not confirm.
    pub cd_false: u64,
}

impl CacheStats {
    /// Average subtables probed per CD or dpcls hit (0 without any).
    pub fn subtables_per_hit(&self) -> f64 {
        let hits = self.cd_hits + self.dpcls_hits;
        if hits == 0 { 0.0 } else { self.subtables_probed as f64 / hits as f64 }
    }
}

/// EMC entries.
const EMC_ENTRIES: usize = 8192;
/// One in this many EMC misses is put in the EMC.
const EMC_INSERT_ONE_IN: u32 = 100;
/// Lookups between two re-rankings of the subtables.
const RERANK_EVERY: u64 = 1 << 16;
/// The share of hits the first ranked subtable must take for the CD to be bypassed.
const CD_BYPASS_SHARE: f64 = 0.9;

/// A slot of a megaflow subtable or of the EMC.
#[derive(Debug, Clone, Copy, Default)]
struct Slot {
    /// The (masked) key.
    key: FlowKey,
    /// Its hash with the low bit set; 0 when the slot is empty.
    tag: u32,
    /// The clock tick it was last used at.
    used: u32,
    verdict: (u32, u32),
}

/// The megaflows of one mask: open addressing, linear probing, at most half full.
#[derive(Debug, Clone)]
struct Subtable {
    mask: Mask,
    slots: Vec<Slot>,
    len: usize,
    /// Hits since the last re-ranking.
    hits: u64,
}

impl Subtable {
    fn new(mask: Mask) -> Self {
        Subtable { mask, slots: vec![Slot::default(); 16], len: 0, hits: 0 }
    }

    #[inline(always)]
    fn home(&self, hash: u32) -> usize {
        hash as usize & (self.slots.len() - 1)
    }

    #[inline(always)]
    fn prefetch(&self, hash: u32) {
        prefetch(&self.slots[self.home(hash)]);
    }

    /// The slot of masked key `key` with `hash`, if present.
    #[inline(always)]
    fn find(&mut self, key: &FlowKey, hash: u32) -> Option<&mut Slot> {
        let (tag, n) = (hash | 1, self.slots.len() - 1);
        let mut i = self.home(hash);
        loop {
            let s = &self.slots[i];
            if s.tag == 0 {
                return None;
            }
            if s.tag == tag && s.key == *key {
                return Some(&mut self.slots[i]);
            }
            i = (i + 1) & n;
        }
    }

    /// Adds masked key `key` (not present) with `hash`.
    fn insert(&mut self, key: FlowKey, hash: u32, verdict: (u32, u32), now: u32) {
        if 2 * (self.len + 1) > self.slots.len() {
            self.rebuild(self.slots.len() * 2, |_| true);
        }
        let n = self.slots.len() - 1;
        let mut i = self.home(hash);
        while self.slots[i].tag != 0 {
            i = (i + 1) & n;
        }
        self.slots[i] = Slot { key, tag: hash | 1, used: now, verdict };
        self.len += 1;
    }

    /// Rehashes into `size` slots, keeping the entries `keep` accepts.
    fn rebuild(&mut self, size: usize, keep: impl Fn(&Slot) -> bool) {
        let old = std::mem::replace(&mut self.slots, vec![Slot::default(); size]);
        self.len = 0;
        for s in old.into_iter().filter(|s| s.tag != 0 && keep(s)) {
            let n = self.slots.len() - 1;
            let mut i = s.tag as usize & n;
            while self.slots[i].tag != 0 {
                i = (i + 1) & n;
            }
            self.slots[i] = s;
            self.len += 1;
        }
    }
}

/// A CD bucket: 8 signatures and the subtable (index + 1; 0 = empty) each predicts.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C, align(32))]
struct Bucket {
    sig: [u16; 8],
    sub: [u16; 8],
}

impl Bucket {
    /// The first entry with signature `sig`: the 8 signatures compared at once.
    #[inline(always)]
    fn find(&self, sig: u16) -> Option<usize> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{__m128i, _mm_cmpeq_epi16, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi16};
            // SAFETY: SSE2 is part of x86_64; the load reads the 16 bytes of `self.sig`.
            let bits = unsafe {
                let sigs = _mm_loadu_si128(self.sig.as_ptr().cast::<__m128i>());
                _mm_movemask_epi8(_mm_cmpeq_epi16(sigs, _mm_set1_epi16(sig as i16)))
            };
            (bits != 0).then(|| bits.trailing_zeros() as usize / 2)
        }
        #[cfg(not(target_arch = "x86_64"))]
        self.sig.iter().position(|&s| s == sig)
    }
}

/// Hints the CPU to fetch the cache line of `x`.
#[inline(always)]
fn prefetch<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch((x as *const T).cast(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// One worker's megaflow cache.
#[derive(Debug, Clone)]
pub struct MegaflowCache {
    config: CacheConfig,
    hasher: Hasher,
    generation: u64,
    subtables: Vec<Subtable>,
    /// Subtable indices by recent hits, most first.
    rank: Vec<u16>,
    emc: Vec<Slot>,
    cd: Vec<Bucket>,
    cd_bypassed: bool,
    megaflows: usize,
    clock: u32,
    rng: u32,
    since_rank: u64,
    stats: CacheStats,
}

impl MegaflowCache {
    /// An empty cache with `config` (the CD size rounded up to a power of two).
    pub fn new(config: CacheConfig) -> Self {
        let buckets = (config.cd_entries.max(8) / 8).next_power_of_two();
        MegaflowCache {
            config,
            hasher: Hasher::detect(),
            generation: u64::MAX,
            subtables: Vec::new(),
            rank: Vec::new(),
            emc: vec![Slot::default(); if config.emc { EMC_ENTRIES } else { 1 }],
            cd: vec![Bucket::default(); if config.cd { buckets } else { 1 }],
            cd_bypassed: false,
            megaflows: 0,
            clock: 0,
            rng: 0x2545_f491,
            since_rank: 0,
            stats: CacheStats::default(),
        }
    }

    /// Its layers and sizes.
    pub fn config(&self) -> CacheConfig {
        self.config
    }

    /// What it did so far.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Megaflows held.
    pub fn megaflows(&self) -> usize {
        self.megaflows
    }

    /// Megaflow subtables (distinct masks).
    pub fn subtables(&self) -> usize {
        self.subtables.len()
    }

    /// Empties every layer.
    pub fn flush(&mut self) {
        self.subtables.clear();
        self.rank.clear();
        self.emc.fill(Slot::default());
        self.cd.fill(Bucket::default());
        self.megaflows = 0;
    }

    /// The clock megaflows' last use is kept in.
    pub fn clock(&self) -> u32 {
        self.clock
    }

    /// Advances the clock megaflows' last use is kept in (call it once a second, say).
    pub fn tick(&mut self) {
        self.clock = self.clock.wrapping_add(1);
    }

    /// Removes the megaflows not used for more than `idle` ticks (the EMC and CD entries
    /// naming them go too: both are emptied when a subtable goes).
    pub fn expire(&mut self, idle: u32) {
        let now = self.clock;
        for s in &mut self.subtables {
            let size = s.slots.len();
            s.rebuild(size, |slot| now.wrapping_sub(slot.used) <= idle);
        }
        self.megaflows = self.subtables.iter().map(|s| s.len).sum();
        self.emc.fill(Slot::default());
        if self.subtables.iter().any(|s| s.len == 0) {
            self.subtables.retain(|s| s.len > 0);
            self.rank = (0..self.subtables.len() as u16).collect();
            self.cd.fill(Bucket::default());
        }
    }

    /// Looks up every key of `keys` (at most [`MAX_BATCH`]) and writes its answer to `out`.
    pub fn lookup_batch(&mut self, table: &RuleTable, keys: &[FlowKey], out: &mut [Verdict]) {
        assert!(keys.len() <= MAX_BATCH && out.len() >= keys.len());
        if table.generation() != self.generation {
            self.flush();
            self.generation = table.generation();
        }
        let n = keys.len();
        self.stats.lookups += n as u64;
        let mut hash = [0u32; MAX_BATCH];
        for (k, key) in keys.iter().enumerate() {
            hash[k] = self.hasher.hash(key);
            if self.config.emc {
                prefetch(&self.emc[hash[k] as usize & (EMC_ENTRIES - 1)]);
            }
            if self.use_cd() {
                // Only the first bucket: entries go there while it has room, so the second
                // is rarely read (prefetching it too would double the memory traffic).
                prefetch(&self.cd[self.buckets(hash[k]).0]);
            }
        }
        let mut pending = [0u16; MAX_BATCH];
        let mut left = 0;
        for k in 0..n {
            match self.emc_find(&keys[k], hash[k]) {
                Some(v) => out[k] = v,
                None => {
                    pending[left] = k as u16;
                    left += 1;
                }
            }
        }
        self.stats.emc_hits += (n - left) as u64;
        if self.use_cd() {
            left = self.cd_pass(keys, &hash, &mut pending[..left], out);
        }
        left = self.search(keys, &hash, &mut pending[..left], out);
        for &k in &pending[..left] {
            let k = usize::from(k);
            out[k] = self.upcall(table, &keys[k], hash[k]);
        }
        self.since_rank += n as u64;
        if self.since_rank >= RERANK_EVERY {
            self.rerank();
        }
    }

    fn use_cd(&self) -> bool {
        self.config.cd && !self.cd_bypassed
    }

    /// The two candidate CD buckets of a key with `hash`.
    #[inline(always)]
    fn buckets(&self, hash: u32) -> (usize, usize) {
        let mask = self.cd.len() - 1;
        let b1 = hash as usize & mask;
        let alt = (u32::from(signature(hash)).wrapping_mul(0x9e37_79b1) >> 7) as usize;
        (b1, (b1 ^ alt) & mask)
    }

    /// The EMC's answer for `key`, if it has it.
    #[inline(always)]
    fn emc_find(&self, key: &FlowKey, hash: u32) -> Option<Verdict> {
        if !self.config.emc {
            return None;
        }
        let s = &self.emc[hash as usize & (EMC_ENTRIES - 1)];
        (s.tag == hash | 1 && s.key == *key).then_some(Verdict { rule: s.verdict.0, action: s.verdict.1 })
    }

    /// Puts `key` in the EMC once in [`EMC_INSERT_ONE_IN`] calls.
    #[inline(always)]
    fn emc_offer(&mut self, key: &FlowKey, hash: u32, v: Verdict) {
        if !self.config.emc {
            return;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 17;
        self.rng ^= self.rng << 5;
        if self.rng.is_multiple_of(EMC_INSERT_ONE_IN) {
            self.emc[hash as usize & (EMC_ENTRIES - 1)] =
                Slot { key: *key, tag: hash | 1, used: 0, verdict: (v.rule, v.action) };
        }
    }

    /// The subtable the CD predicts for a key with `hash`, if any.
    #[inline(always)]
    fn cd_predict(&self, hash: u32) -> Option<usize> {
        let sig = signature(hash);
        let (b1, b2) = self.buckets(hash);
        let hit = |b: &Bucket| {
            let j = b.find(sig)?;
            (b.sub[j] != 0).then(|| usize::from(b.sub[j] - 1))
        };
        hit(&self.cd[b1]).or_else(|| hit(&self.cd[b2]))
    }

    /// Records that subtable `sub` answered a key with `hash`: in a free entry of its buckets,
    /// else over a pseudo-random entry of the first.
    fn cd_learn(&mut self, hash: u32, sub: usize) {
        let sig = signature(hash);
        let (b1, b2) = self.buckets(hash);
        for b in [b1, b2] {
            let bucket = &mut self.cd[b];
            if let Some(j) = (0..8).find(|&j| bucket.sub[j] == 0 || bucket.sig[j] == sig) {
                (bucket.sig[j], bucket.sub[j]) = (sig, sub as u16 + 1);
                return;
            }
        }
        let j = (hash >> 13) as usize % 8;
        (self.cd[b1].sig[j], self.cd[b1].sub[j]) = (sig, sub as u16 + 1);
    }

    /// The CD pass over the `pending` keys: each predicted subtable is probed (hashes first,
    /// with prefetch, then compares). Returns how many keys are left, moved to the front.
    fn cd_pass(&mut self, keys: &[FlowKey], hash: &[u32], pending: &mut [u16], out: &mut [Verdict]) -> usize {
        let mut guess = [(u16::MAX, 0u32); MAX_BATCH];
        for (p, &k) in pending.iter().enumerate() {
            let k = usize::from(k);
            if let Some(sub) = self.cd_predict(hash[k]) {
                let s = &self.subtables[sub];
                let h = self.hasher.hash(&keys[k].masked(&s.mask));
                s.prefetch(h);
                guess[p] = (sub as u16, h);
            }
        }
        let mut left = 0;
        for p in 0..pending.len() {
            let k = usize::from(pending[p]);
            let (sub, h) = guess[p];
            let found = if sub == u16::MAX {
                None
            } else {
                self.stats.subtables_probed += 1;
                self.probe(usize::from(sub), &keys[k], h)
            };
            match found {
                Some(v) => {
                    out[k] = v;
                    self.stats.cd_hits += 1;
                    self.emc_offer(&keys[k], hash[k], v);
                }
                None => {
                    self.stats.cd_false += u64::from(sub != u16::MAX);
                    pending[left] = pending[p];
                    left += 1;
                }
            }
        }
        left
    }

    /// Probes subtable `sub` for `key` (whose masked key hashes to `h`); counts and stamps a hit.
    #[inline(always)]
    fn probe(&mut self, sub: usize, key: &FlowKey, h: u32) -> Option<Verdict> {
        let now = self.clock;
        let s = &mut self.subtables[sub];
        let masked = key.masked(&s.mask);
        let slot = s.find(&masked, h)?;
        slot.used = now;
        let v = Verdict { rule: slot.verdict.0, action: slot.verdict.1 };
        s.hits += 1;
        Some(v)
    }

    /// The ranked search over the `pending` keys, subtable by subtable. Returns how many keys
    /// are left, moved to the front.
    fn search(&mut self, keys: &[FlowKey], hash: &[u32], pending: &mut [u16], out: &mut [Verdict]) -> usize {
        let mut left = pending.len();
        let mut h = [0u32; MAX_BATCH];
        for r in 0..self.rank.len() {
            if left == 0 {
                break;
            }
            let sub = usize::from(self.rank[r]);
            let s = &self.subtables[sub];
            for p in 0..left {
                let k = usize::from(pending[p]);
                h[p] = self.hasher.hash(&keys[k].masked(&s.mask));
                s.prefetch(h[p]);
            }
            self.stats.subtables_probed += left as u64;
            let mut still = 0;
            for p in 0..left {
                let k = usize::from(pending[p]);
                match self.probe(sub, &keys[k], h[p]) {
                    Some(v) => {
                        out[k] = v;
                        self.stats.dpcls_hits += 1;
                        if self.use_cd() {
                            self.cd_learn(hash[k], sub);
                        }
                        self.emc_offer(&keys[k], hash[k], v);
                    }
                    None => {
                        pending[still] = pending[p];
                        still += 1;
                    }
                }
            }
            left = still;
        }
        // Keys that went through every subtable and missed probed them all: not hits, so
        // their probes do not count in the average per hit.
        self.stats.subtables_probed -= (left * self.rank.len()) as u64;
        left
    }

    /// Looks `key` up in the rule table and installs its megaflow (unless the cache is full
    /// even after expiring what the current tick has not used).
    fn upcall(&mut self, table: &RuleTable, key: &FlowKey, hash: u32) -> Verdict {
        self.stats.upcalls += 1;
        let found = table.lookup(key);
        let v = found.rule.map_or(Verdict::NONE, |r| Verdict { rule: r.id, action: r.action });
        if self.megaflows >= self.config.max_megaflows {
            self.expire(0);
            if self.megaflows >= self.config.max_megaflows {
                return v;
            }
        }
        let sub = match self.subtables.iter().position(|s| s.mask == found.megaflow) {
            Some(i) => i,
            None => {
                self.subtables.push(Subtable::new(found.megaflow));
                self.rank.push((self.subtables.len() - 1) as u16);
                self.subtables.len() - 1
            }
        };
        let s = &mut self.subtables[sub];
        let masked = key.masked(&s.mask);
        let h = self.hasher.hash(&masked);
        if s.find(&masked, h).is_none() {
            s.insert(masked, h, (v.rule, v.action), self.clock);
            self.megaflows += 1;
        }
        if self.use_cd() {
            self.cd_learn(hash, sub);
        }
        v
    }

    /// Orders the subtables by their hits since the last ranking and decides whether the CD
    /// is worth consulting.
    fn rerank(&mut self) {
        let subs = &self.subtables;
        self.rank.sort_by(|&a, &b| subs[usize::from(b)].hits.cmp(&subs[usize::from(a)].hits));
        let total: u64 = subs.iter().map(|s| s.hits).sum();
        let first = self.rank.first().map_or(0, |&i| subs[usize::from(i)].hits);
        self.cd_bypassed = total > 0 && first as f64 >= CD_BYPASS_SHARE * total as f64;
        for s in &mut self.subtables {
            s.hits = 0;
        }
        self.since_rank = 0;
    }
}

/// The CD signature of a key's hash: its high 16 bits.
#[inline(always)]
fn signature(hash: u32) -> u16 {
    (hash >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Field, Rule, RuleMatch};

    #[test]
    fn unused_megaflows_expire_and_the_answers_stay() {
        let mut t = RuleTable::new();
        let matches = RuleMatch::parse("udp,nw_src=1.0.0.0/8").unwrap();
        t.insert(Rule { id: 1, priority: 1, matches, action: 7 });
        let mut c = MegaflowCache::new(CacheConfig { cd_entries: 64, ..CacheConfig::default() });
        let key = |src: u64| {
            FlowKey::default().with(Field::Ethertype, 0x0800).with(Field::NwProto, 17).with(Field::NwSrc, src << 24)
        };
        let mut out = [Verdict::NONE; 2];
        c.lookup_batch(&t, &[key(1), key(2)], &mut out);
        assert_eq!((c.megaflows(), c.subtables()), (2, 2), "a match and a miss, each its own mask");
        c.tick();
        c.lookup_batch(&t, &[key(1)], &mut out[..1]);
        c.tick();
        c.expire(1);
        assert_eq!((c.megaflows(), c.subtables()), (1, 1), "the one used a tick ago stays");
        c.lookup_batch(&t, &[key(1), key(2)], &mut out);
        assert_eq!(out, [Verdict { rule: 1, action: 7 }, Verdict::NONE]);
        assert_eq!(c.stats().upcalls, 3, "the expired one came back through the rule table");
    }
}
