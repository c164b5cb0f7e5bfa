//! What the IPv4, IPv6 and MPLS nodes share: the validation and fused rewrite passes, label
//! pushing, neighbor resolution on a miss, and the packets a worker makes itself (ICMP errors,
//! ARP requests, neighbor solicitations).

use crate::l3::L3Tables;
use crate::l3::L3Worker;
use crate::l3::RouteMeta;
use crate::l3::{Adjacency, L3, LabelEntry, LabelStack, Reject};
use crate::neighbor::punt::Event;
use crate::neighbor::punt::PuntCounting;
use crate::net::Payload;
use crate::runtime::buffer::BufferPool;
use crate::runtime::drops::DropReason;
use crate::runtime::graph::{Features, Graph};
use crate::runtime::graph::{NodeId, Outbox};
use crate::runtime::vector::VecHandle;
use std::net::IpAddr;
use wire::ethernet::field as ethernet;
use wire::{EtherType, MacAddr};

/// What `ip4-input` and `ip6-input` do with a vector: one branch-free pass with `fast_ok` over
/// each packet's network header (the bytes from `l3_offset` to the frame end); when every
/// packet passes, the vector goes to `next` unchanged, otherwise a second pass names each bad
/// packet's reason with `check`.
#[inline(always)]
pub(crate) fn validate<F: L3Worker>(
    g: &mut Graph<F>,
    v: VecHandle,
    fast_ok: impl Fn(&[u8]) -> bool,
    check: fn(&[u8]) -> Result<(), DropReason>,
    truncated: DropReason,
    next: NodeId,
) {
    let mut all_ok = true;
    for &i in g.vectors[v].indices() {
        let l3 = usize::from(g.pool.meta(i).l3_offset);
        all_ok &= g.pool.frame(i).get(l3..).is_some_and(&fast_ok);
    }
    validated(g, v, all_ok, check, truncated, next);
}

/// A resolved next hop without out-labels, as the plain paths of `ip4-rewrite` and
/// `ip6-rewrite` use it.
#[derive(Clone, Copy)]
struct PlainAdj<'t> {
    /// Its adjacency index.
    adj: u32,
    /// The output interface.
    tx_if: u16,
    /// The output interface's MTU.
    mtu: usize,
    /// The next hop's MAC and the output interface's, as the frame's first 12 bytes.
    macs: &'t [u8; 12],
}

/// Adjacency `adj` when it is a plain one: a resolved next hop without out-labels.
#[inline(always)]
fn plain_adj(l3: &L3, adj: u32) -> Option<PlainAdj<'_>> {
    let p = l3.plain.get(adj as usize)?;
    (p.mtu != 0).then_some(PlainAdj { adj, tx_if: p.tx_if, mtu: usize::from(p.mtu), macs: &p.macs })
}

/// The plain packets at the start of vector `v`, for `ip4-rewrite` and `ip6-rewrite`: each one
/// toward a plain adjacency ([`plain_adj`]) whose first `N` network-header bytes `edit`
/// accepts and rewrites, given the output MTU (it returns false, the bytes unchanged, for a
/// packet that needs the full treatment); then the MACs and the output interface are written.
/// Returns how many it took. A vector toward one adjacency resolves it once; one toward
/// several (a multipath route's, connected hosts') reads each packet's from the 16-byte
/// entries of [`crate::l3::L3::plain`].
#[inline(always)]
pub(crate) fn plain_rewrite_prefix<const N: usize, F: L3Worker>(
    g: &mut Graph<F>,
    v: VecHandle,
    edit: impl Fn(&mut [u8; N], usize) -> bool,
) -> usize {
    let l3 = g.features.l3();
    let indices = g.vectors[v].indices();
    let Some(&first) = indices.first() else { return 0 };
    let Some(one) = plain_adj(l3, g.pool.meta(first).adj()) else { return 0 };
    // Toward the first packet's adjacency, then (from the first packet toward another) any.
    let same = rewrite_while_plain(&mut g.pool, indices, |adj| (adj == one.adj).then_some(one), &edit);
    let rest = &indices[same..];
    match rest.first() {
        Some(&i) if g.pool.meta(i).adj() != one.adj => {
            same + rewrite_while_plain(&mut g.pool, rest, |adj| plain_adj(l3, adj), &edit)
        }
        _ => same,
    }
}

/// [`plain_rewrite_prefix`]'s loop over the packets in buffers `indices`, each adjacency
/// resolved by `resolve`.
#[inline(always)]
fn rewrite_while_plain<'t, const N: usize>(
    pool: &mut BufferPool,
    indices: &[u32],
    mut resolve: impl FnMut(u32) -> Option<PlainAdj<'t>>,
    edit: impl Fn(&mut [u8; N], usize) -> bool,
) -> usize {
    for (k, &i) in indices.iter().enumerate() {
        let Some(PlainAdj { tx_if, mtu, macs, .. }) = resolve(pool.meta(i).adj()) else {
            return k;
        };
        let l3 = usize::from(pool.meta(i).l3_offset);
        let frame = pool.frame_mut(i);
        let Some(ip) = frame.get_mut(l3..l3 + N).and_then(|h| <&mut [u8; N]>::try_from(h).ok()) else { return k };
        if !edit(ip, mtu) {
            return k;
        }
        frame[..12].copy_from_slice(macs);
        pool.meta_mut(i).tx_if = tx_if;
    }
    indices.len()
}

/// For a node whose fast pass took the first `plain` packets of vector `v` for `next`: when
/// that was all of them, hands the whole vector on and returns false; otherwise marks those
/// packets for `next` and returns true (the caller takes the rest one by one, then splits).
#[inline(always)]
pub(crate) fn rest_after_plain<F: L3Worker>(g: &mut Graph<F>, v: VecHandle, plain: usize, next: NodeId) -> bool {
    if plain == g.vectors[v].len() {
        g.forward(v, next);
        return false;
    }
    g.nexts[..plain].fill(next);
    true
}

/// The end of [`validate`] once the fast pass said whether every packet is good (`all_ok`).
#[inline(always)]
pub(crate) fn validated<F: L3Worker>(
    g: &mut Graph<F>,
    v: VecHandle,
    all_ok: bool,
    check: fn(&[u8]) -> Result<(), DropReason>,
    truncated: DropReason,
    next: NodeId,
) {
    if all_ok {
        g.forward(v, next);
    } else {
        classify_each(g, v, check, truncated, next);
    }
}

/// The second pass of [`validate`]: each packet to `next` or dropped for `check`'s reason
/// (`truncated` when the frame ends before its network header).
#[cold]
fn classify_each<F: L3Worker>(
    g: &mut Graph<F>,
    v: VecHandle,
    check: fn(&[u8]) -> Result<(), DropReason>,
    truncated: DropReason,
    next: NodeId,
) {
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let l3 = usize::from(g.pool.meta(i).l3_offset);
        match g.pool.frame(i).get(l3..).map_or(Err(truncated), check) {
            Ok(()) => g.nexts[k] = next,
            Err(reason) => g.mark_drop(k, i, reason),
        }
    }
    g.split(v);
}

/// Pushes `push` in front of the packet in buffer `i` (each label with `ttl`, the last one
/// bottom of stack), makes the ethertype MPLS and moves `l3_offset` past the labels. Returns
/// the frame, its MACs still to write; `None`, the frame unchanged, when the driver left too
/// little headroom (the generator leaves 64 bytes, 8 labels).
pub(crate) fn push_labels<'a>(pool: &'a mut BufferPool, i: u32, push: &LabelStack, ttl: u8) -> Option<&'a mut [u8]> {
    let n = push.labels().len();
    let f = pool.grow_head(i, 4 * n)?;
    for (j, &label) in push.labels().iter().enumerate() {
        let bos = if j + 1 == n { 0x100 } else { 0 };
        f[14 + 4 * j..18 + 4 * j].copy_from_slice(&((label << 12) | bos | u32::from(ttl)).to_be_bytes());
    }
    f[ethernet::ETHERTYPE].copy_from_slice(&EtherType::MPLS.to_be_bytes());
    pool.meta_mut(i).l3_offset += 4 * n as u16;
    Some(pool.frame_mut(i))
}

/// The rewrite toward a neighbor on `tx_if` with `mac`: its MAC as destination, the
/// interface's own as source.
pub(crate) fn macs_toward<F: L3Worker>(g: &Graph<F>, tx_if: u16, mac: [u8; 6]) -> [u8; 12] {
    let mut r = [0u8; 12];
    r[..6].copy_from_slice(&mac);
    r[6..].copy_from_slice(&g.features.interfaces().get(tx_if).mac.0);
    r
}

/// What `ip4-arp` and `ip6-nd` share: how each family asks for a next hop's MAC.
pub(crate) struct Resolver<F: Features> {
    /// The packets' family (an MPLS-popped packet of it counts as one).
    pub family: Payload,
    /// Makes the request for a next hop on an interface, broadcast (multicast) or to a MAC,
    /// in a fresh buffer; `None` when no buffer is free.
    pub request: fn(&mut Graph<F>, u16, IpAddr, Option<MacAddr>) -> Option<u32>,
    /// Where packets toward a next hop whose resolution failed go for an unreachable.
    pub icmp: NodeId,
}

/// The next hop buffer `i` waits for: an MPLS swap's, a route's, or (connected subnet) the
/// packet's own destination.
fn next_hop<F: L3Worker>(g: &Graph<F>, i: u32) -> Option<IpAddr> {
    let m = g.pool.meta(i);
    let l3 = &g.features.l3();
    let adj = match l3.entry(m.label_entry()) {
        Some(LabelEntry::Swap { adj, .. }) => *adj,
        _ => m.adj(),
    };
    match l3.adjs.get(adj as usize)? {
        Adjacency::Via { next_hop, .. } => Some(*next_hop),
        Adjacency::Glean { .. } => match g.pool.frame(i).get(usize::from(m.l3_offset))? >> 4 {
            4 => Some(crate::l3::ipv4(&g.pool, i)?.dst().into()),
            6 => Some(crate::l3::ipv6(&g.pool, i)?.dst().into()),
            _ => None,
        },
        _ => None,
    }
}

/// Packets whose next hop has no MAC: each is dropped (`no-neighbor`; as VPP, no packet is held)
/// or, toward a next hop whose resolution failed, handed to `r.icmp` (packets of `r.family` only)
/// for an unreachable. A request goes out for each other next hop, at most one per next hop per
/// second ([`crate::neighbor::punt::Punt::resolve_allowed`]), and the main thread is told a
/// resolution started.
pub(crate) fn resolve_misses<F: L3Worker>(g: &mut Graph<F>, v: VecHandle, r: &Resolver<F>) {
    let now = crate::runtime::tsc::now();
    let mut requests = Outbox::new(crate::interface::nodes::INTERFACE_OUTPUT);
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let (tx_if, native) = {
            let m = g.pool.meta(i);
            let entry = g.features.l3().entry(m.label_entry());
            (m.tx_if, entry.is_none_or(|e| matches!(e, LabelEntry::Pop { payload, .. } if *payload == r.family)))
        };
        g.nexts[k] = crate::interface::nodes::ERROR_DROP;
        // A subnet's network or broadcast address is nobody's: no ARP for it.
        let nobody = |g: &Graph<F>, h: IpAddr| matches!(h, IpAddr::V4(a) if g.features.interfaces().is_subnet_edge(a));
        let Some(hop) = next_hop(g, i).filter(|&h| !nobody(g, h)) else { continue };
        if g.features.l3().unreachable.contains(&(tx_if, hop)) {
            if native {
                g.nexts[k] = r.icmp;
            }
            continue;
        }
        if g.features.punt().resolve_allowed(tx_if, hop, now)
            && let Some(req) = (r.request)(g, tx_if, hop, None)
        {
            requests.push(g, req);
            g.features.punt().report(Event::Resolving { interface: tx_if, address: hop }, g.counters.punt());
        }
    }
    requests.finish(g);
    g.split(v);
}

/// Makes a frame this router originates toward `dst_mac` out of interface `tx_if`: the MACs
/// and `ethertype`, then `l3` (the network packet), into a fresh buffer; `None` when none is
/// free.
pub(crate) fn originate<F: L3Worker>(
    g: &mut Graph<F>,
    tx_if: u16,
    dst_mac: MacAddr,
    ethertype: u16,
    l3: &[u8],
) -> Option<u32> {
    let i = g.alloc_buffer()?;
    let mut frame = [0u8; 14 + 1500];
    let len = (14 + l3.len()).max(60); // the Ethernet minimum, zero padded
    frame[..6].copy_from_slice(&dst_mac.0);
    frame[ethernet::SRC].copy_from_slice(&g.features.interfaces().get(tx_if).mac.0);
    frame[ethernet::ETHERTYPE].copy_from_slice(&ethertype.to_be_bytes());
    frame[14..14 + l3.len()].copy_from_slice(l3);
    g.pool.write_frame(i, &frame[..len]);
    g.pool.meta_mut(i).tx_if = tx_if;
    Some(i)
}

/// An ICMP or ICMPv6 error: type, code and its 32-bit parameter (an MTU, or 0).
pub(crate) type IcmpMessage = (u8, u8, u32);

/// What `icmp4-error` and `icmp6-error` share: how each family makes its errors.
pub(crate) struct IcmpErrors<F: Features> {
    /// The error a buffer's drop reason calls for, if any.
    pub message: fn(&Graph<F>, u32) -> Option<IcmpMessage>,
    /// True unless the family's rules forbid an error of this type about the buffer.
    pub may_answer: fn(&Graph<F>, u32, u8) -> bool,
    /// Builds the error (type, code, parameter) about the buffer in a fresh buffer; `None`
    /// when none is free or there is no address to send it from.
    pub build: fn(&mut Graph<F>, u32, u8, u8, u32) -> Option<u32>,
    /// The lookup node errors are routed through.
    pub lookup: NodeId,
}

/// Every packet of `v` ends in `error-drop` under the reason it came with; for each whose
/// reason calls for an error the rules allow, an error goes to `e.lookup` within the worker's
/// ICMP rate limit (`icmp_limited` counts what it withheld).
pub(crate) fn send_errors<F: L3Worker>(g: &mut Graph<F>, v: VecHandle, e: &IcmpErrors<F>) {
    let now = crate::runtime::tsc::now();
    let mut errors = Outbox::new(e.lookup);
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let Some((kind, code, param)) = (e.message)(g, i) else { continue };
        if !(e.may_answer)(g, i, kind) {
            continue;
        }
        match g.features.punt().icmp_allowed(now).then(|| (e.build)(g, i, kind, code, param)).flatten() {
            Some(b) => {
                errors.push(g, b);
                g.counters.punt().icmp_sent.add(1);
            }
            None => g.counters.punt().icmp_limited.add(1),
        }
    }
    errors.finish(g);
    g.forward(v, crate::interface::nodes::ERROR_DROP);
}

/// Replaces the FIB value of every packet of `v` that matched a multipath route (a
/// load-balance object, [`crate::l3::multipath::LB`]) with the adjacency its flow's bucket
/// names: `hash` ([`crate::l3::multipath::hash4`] or [`crate::l3::multipath::hash6`]) reads
/// the IP header at the packet's layer 3 offset. Nothing is written but the packet's metadata.
#[inline(never)]
pub fn choose_paths<F: L3Worker>(g: &mut Graph<F>, v: VecHandle, hash: impl Fn(&[u8]) -> u32) {
    use crate::l3::multipath::{LB, LoadBalance};
    let tables = g.features.snapshot().clone();
    // Packets of a vector mostly share their route's object: it is looked up once per run.
    let mut last: (u32, Option<&LoadBalance>) = (u32::MAX, None);
    for &i in g.vectors[v].indices() {
        let (value, l3) = {
            let m = g.pool.meta(i);
            (m.adj(), usize::from(m.l3_offset))
        };
        if value & LB != 0 {
            if value != last.0 {
                last = (value, tables.l3().lbs.get((value & !LB) as usize).map(|lb| &**lb));
            }
            let h = hash(&g.pool.frame(i)[l3..]);
            g.pool.meta_mut(i).set_adj(last.1.map_or(crate::l3::ADJ_DROP, |lb| lb.pick(h)));
        }
    }
}

/// Drops buffer `i` (slot `k` of the vector) that matched a reject route `reject` under its
/// reason of `reasons` (in [`Reject`] order); through `icmp_error` when the reject answers
/// (all but a blackhole).
#[cold]
pub fn mark_reject<F: L3Worker>(
    g: &mut Graph<F>,
    k: usize,
    i: u32,
    reject: Reject,
    reasons: &[DropReason; 3],
    icmp_error: NodeId,
) {
    g.mark_drop(k, i, reasons[reject as usize]);
    if reject != Reject::Blackhole {
        g.nexts[k] = icmp_error;
    }
}
