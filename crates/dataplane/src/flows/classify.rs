//! `flow-classify`: the flow rules ([`crate::flows`]) of interfaces that have some, right after
//! `ethernet-input`.
//!
//! The key of each frame (input interface, ethertype, VLAN, and for IPv4 the addresses,
//! protocol, fragment flags and, but in later fragments, the TCP/UDP/SCTP ports) goes to the
//! worker's megaflow cache ([`classifier::MegaflowCache`]) as one batch. The matching rule's
//! packet counter goes up and its action runs: `output:<if>` sends the frame out of that
//! interface unchanged, `drop` drops it as `acl`, `normal` (and no matching rule) hands it to
//! the node `ethernet-input` would have chosen without rules. Megaflows unused for 10 s expire
//! (checked every 10 s).

use crate::flows::FlowAction;
use crate::flows::FlowCounting;
use crate::flows::FlowTables;
use crate::flows::FlowsWorker;
use crate::flows::drops;
use crate::interface::InterfaceTables;
use crate::runtime::graph::Graph;
use crate::runtime::vector::{VECTOR_SIZE, VecHandle};
use classifier::cache::Verdict;
use classifier::key::{FRAG_ANY, FRAG_LATER};
use classifier::{Field, FlowKey, MegaflowCache};
use wire::field_u16;
use wire::ipv4::field;

/// A worker's megaflow cache for `flow-classify`, made when first needed, and the TSC of its
/// last clock tick.
pub type WorkerCache = Option<(MegaflowCache, u64)>;

/// The classifier key of buffer `i`.
fn key_of<F: FlowsWorker>(g: &Graph<F>, i: u32) -> FlowKey {
    let m = g.pool.meta(i);
    let f = g.pool.frame(i);
    let l3 = usize::from(m.l3_offset);
    let ethertype = f.get(l3 - 2..l3).map_or(0, |b| u16::from_be_bytes([b[0], b[1]]));
    let mut key = FlowKey::default()
        .with(Field::InPort, u64::from(m.rx_if))
        .with(Field::Ethertype, u64::from(ethertype))
        .with(Field::Vlan, u64::from(g.features.interfaces().get(m.rx_if).vlan));
    let Some(ip) = f.get(l3..l3 + 20).filter(|_| ethertype == wire::EtherType::IPV4) else { return key };
    let frag = field_u16(ip, field::FLAGS_FRAGMENT);
    let (offset, more) = (frag & 0x1fff, frag & 0x2000 != 0);
    let flags = if offset != 0 {
        FRAG_ANY | FRAG_LATER
    } else if more {
        FRAG_ANY
    } else {
        0
    };
    key.set(Field::NwSrc, u64::from(u32::from_be_bytes(ip[field::SRC].try_into().expect("4 bytes"))));
    key.set(Field::NwDst, u64::from(u32::from_be_bytes(ip[field::DST].try_into().expect("4 bytes"))));
    key.set(Field::NwProto, u64::from(ip[field::PROTOCOL]));
    key.set(Field::Frag, flags);
    let l4 = l3 + usize::from(ip[field::VERSION_IHL] & 0x0f) * 4;
    if offset == 0
        && matches!(ip[field::PROTOCOL], 6 | 17 | 132)
        && let Some(p) = f.get(l4..l4 + 4)
    {
        key.set(Field::TpSrc, u64::from(u16::from_be_bytes([p[0], p[1]])));
        key.set(Field::TpDst, u64::from(u16::from_be_bytes([p[2], p[3]])));
    }
    key
}

/// Megaflows unused for this many seconds expire (Open vSwitch's default idle time is 10 s).
const IDLE_SECONDS: u32 = 10;

/// Advances the cache's clock once a second (TSC `now`, `hz` ticks a second) and, every
/// [`IDLE_SECONDS`], expires the megaflows unused for that long.
fn age(cache: &mut MegaflowCache, last_tick: &mut u64, now: u64, hz: u64) {
    if now.saturating_sub(*last_tick) < hz {
        return;
    }
    *last_tick = now;
    cache.tick();
    if cache.clock().is_multiple_of(IDLE_SECONDS) {
        cache.expire(IDLE_SECONDS);
    }
}

/// Processes one vector.
#[inline(never)]
pub fn run<F: FlowsWorker>(g: &mut Graph<F>, v: VecHandle) {
    let tables = g.features.snapshot().clone();
    let flows = &tables.flows();
    let n = g.vectors[v].len();
    let mut keys = [FlowKey::default(); VECTOR_SIZE];
    for (k, &i) in g.vectors[v].indices().iter().enumerate() {
        keys[k] = key_of(g, i);
    }
    let now = crate::runtime::tsc::now();
    if g.features.flow_cache().as_ref().is_some_and(|(cache, _)| cache.config() != flows.cache) {
        *g.features.flow_cache() = None;
    }
    let (cache, last_tick) = g.features.flow_cache().get_or_insert_with(|| (MegaflowCache::new(flows.cache), now));
    age(cache, last_tick, now, crate::runtime::tsc::hz());
    let before = cache.stats();
    let mut out = [Verdict::NONE; VECTOR_SIZE];
    cache.lookup_batch(&flows.table, &keys[..n], &mut out[..n]);
    let after = cache.stats();
    let c = g.counters.flow_cache();
    c.lookups.add(after.lookups - before.lookups);
    c.emc_hits.add(after.emc_hits - before.emc_hits);
    c.cd_hits.add(after.cd_hits - before.cd_hits);
    c.dpcls_hits.add(after.dpcls_hits - before.dpcls_hits);
    c.upcalls.add(after.upcalls - before.upcalls);
    c.subtables_probed.add(after.subtables_probed - before.subtables_probed);
    for (k, verdict) in out.iter().enumerate().take(n) {
        let i = g.vectors[v].indices()[k];
        let action = flows.actions.get(verdict.rule as usize).copied();
        if action.is_some() {
            g.counters.flow_hits(verdict.rule).add(1);
        }
        match action.unwrap_or(FlowAction::Normal) {
            FlowAction::Output(tx_if) => {
                g.pool.meta_mut(i).tx_if = tx_if;
                g.nexts[k] = crate::interface::nodes::INTERFACE_OUTPUT;
            }
            FlowAction::Drop => g.mark_drop(k, i, drops::ACL),
            FlowAction::Normal => {
                let rx_if = g.pool.meta(i).rx_if;
                let ethertype = keys[k].get(Field::Ethertype) as u16;
                match crate::ethernet::input::dispatch::<F>(
                    tables.interfaces().get(rx_if),
                    ethertype,
                    g.features.has_host(),
                ) {
                    Ok(node) => g.nexts[k] = node,
                    Err(reason) => g.mark_drop(k, i, reason),
                }
            }
        }
    }
    g.split(v);
}
