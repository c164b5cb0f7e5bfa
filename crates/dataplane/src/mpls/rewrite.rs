//! `mpls-rewrite`: carries out the local-label entry chosen by `mpls-lookup`.
//!
//! - Swap: the top label is replaced by the entry's out-labels (more than one grows the frame
//!   into the headroom). Each new label takes the old top label's traffic class and TTL − 1;
//!   the last one keeps its bottom-of-stack bit. Then the next hop's and the output interface's
//!   MACs are written and the frame goes to `interface-output` (`no-neighbor` through
//!   `ip4-arp`, which asks for the MAC, when there is none; `no-headroom` when the frame has
//!   no room for the extra labels).
//!   A swap to no label (implicit null: penultimate-hop popping) pops the top label instead,
//!   what was under it taking its TTL − 1 if that is smaller, and sends the frame on; at the
//!   end of the stack the IP version says whether that is IPv4 or IPv6.
//! - Pop: the label is removed. With more labels under it, the next label's TTL is lowered to
//!   the popped one's TTL if that is smaller and the frame goes back to `mpls-input` for
//!   the next label (an egress provider edge pops the transport label, then the VPN label),
//!   at most [`MAX_POPS`] times per packet (`too-many-pops` after that).
//!   At the end of the stack the ethertype becomes the entry's payload, IPv4 or IPv6, the IPv4
//!   TTL (IPv6 hop limit) is lowered to the label's TTL − 1 if that is smaller (uniform TTL
//!   model; for IPv4 with an incremental checksum update), and the packet goes to `ip4-input` (`ip6-input`) to be
//!   validated and routed in the entry's VRF ([`RouteMeta::lookup_vrf`]) or, without one, its
//!   input interface's.

use crate::l3::L3Tables;
use crate::l3::RouteMeta;
use crate::l3::{Adjacency, LabelEntry, LabelStack};
use crate::mpls::MplsWorker;
use crate::mpls::{drops, nodes};
use crate::net::Payload;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;
use wire::ethernet::field as ethernet;
use wire::{EtherType, checksum, field_u16, ipv4, ipv6};

/// The most labels popped from one packet with labels still under them (a transport label
/// and a few service labels, as label stacks go); the next such pop drops it as
/// `too-many-pops`, so that a stack of pop labels cannot keep a packet going round.
pub const MAX_POPS: u8 = 8;

/// The plain swaps at the start of vector `v`: each one's entry swaps the top label for one
/// label toward a resolved next hop; done in place. Returns how many it took; the packet after
/// them (if any) needs the full treatment. An entry is resolved once for a run of packets that
/// share it.
#[inline(always)]
fn plain_prefix<F: MplsWorker>(g: &mut Graph<F>, v: VecHandle) -> usize {
    let tables = g.features.snapshot();
    let indices = g.vectors[v].indices();
    // The entry resolved last: its number, output interface, MACs and out-label.
    let mut cached: Option<(u16, u16, &[u8; 12], u32)> = None;
    for (k, &i) in indices.iter().enumerate() {
        let m = g.pool.meta(i);
        let (entry, l3) = (m.label_entry(), usize::from(m.l3_offset));
        let (tx_if, macs, label) = match cached {
            Some((e, tx_if, macs, label)) if e == entry => (tx_if, macs, label),
            _ => match tables.l3().entry(entry) {
                Some(LabelEntry::Swap { adj, out }) => match (out.labels(), tables.l3().adjs.get(*adj as usize)) {
                    (&[label], Some(Adjacency::Via { tx_if, rewrite: Some(macs), .. })) => {
                        cached = Some((entry, *tx_if, macs, label));
                        (*tx_if, macs, label)
                    }
                    _ => return k,
                },
                _ => return k,
            },
        };
        if !swap_one(g.pool.frame_mut(i), l3, label, macs) {
            return k;
        }
        g.pool.meta_mut(i).tx_if = tx_if;
    }
    indices.len()
}

/// Processes one vector: the plain swaps at its start in one tight pass ([`plain_prefix`]),
/// the rest one by one. Entries and adjacencies are read in place (through a handle on the
/// tables taken once per vector), never copied per packet.
#[inline(never)]
pub fn run<F: MplsWorker>(g: &mut Graph<F>, v: VecHandle) {
    let plain = plain_prefix(g, v);
    if !crate::l3::shared::rest_after_plain(g, v, plain, crate::interface::nodes::INTERFACE_OUTPUT) {
        return;
    }
    let n = g.vectors[v].len();
    let tables = g.features.snapshot().clone();
    let mut all_swapped = true;
    for k in plain..n {
        let i = g.vectors[v].indices()[k];
        let entry = tables.l3().entry(g.pool.meta(i).label_entry());
        if let Some(LabelEntry::Swap { adj, out }) = entry
            && let Some(Adjacency::Via { tx_if, rewrite: Some(macs), .. }) = tables.l3().adjs.get(*adj as usize)
        {
            if swap(g, i, *tx_if, macs, out) {
                g.nexts[k] = crate::interface::nodes::INTERFACE_OUTPUT;
            } else {
                g.mark_drop(k, i, drops::MPLS_NO_HEADROOM);
                all_swapped = false;
            }
            continue;
        }
        all_swapped = false;
        match entry {
            Some(LabelEntry::Swap { adj, .. }) => {
                let mut resolve = F::NEXT.ip4_arp;
                if let Some(Adjacency::Via { tx_if, next_hop, .. }) = tables.l3().adjs.get(*adj as usize) {
                    g.pool.meta_mut(i).tx_if = *tx_if;
                    if next_hop.is_ipv6() {
                        resolve = F::NEXT.ip6_nd;
                    }
                }
                g.mark_drop(k, i, drops::MPLS_NO_NEIGHBOR);
                g.nexts[k] = resolve;
            }
            Some(&LabelEntry::Pop { payload, vrf }) => {
                g.nexts[k] = match pop(g, i, Some(payload)) {
                    EtherType::IPV4 => F::NEXT.ip4_input,
                    EtherType::IPV6 => F::NEXT.ip6_input,
                    _ => nodes::MPLS_INPUT,
                };
                let m = g.pool.meta_mut(i);
                m.set_lookup_vrf(vrf);
                if g.nexts[k] == nodes::MPLS_INPUT {
                    // Each such pop costs the packet a pass of the MPLS nodes: a bounded few.
                    m.set_labels_popped(m.labels_popped() + 1);
                    if m.labels_popped() > MAX_POPS {
                        g.mark_drop(k, i, drops::TOO_MANY_POPS);
                    }
                }
            }
            // mpls-lookup sends only packets with an entry.
            None => g.mark_drop(k, i, drops::NO_LABEL),
        }
    }
    if all_swapped { g.forward(v, crate::interface::nodes::INTERFACE_OUTPUT) } else { g.split(v) }
}

/// Replaces the top label of buffer `i` with `out` and writes `macs`; out of `tx_if`. Returns
/// false, the frame unfit to send, when the headroom cannot hold the extra labels.
#[must_use]
fn swap<F: MplsWorker>(g: &mut Graph<F>, i: u32, tx_if: u16, macs: &[u8; 12], out: &LabelStack) -> bool {
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    g.pool.meta_mut(i).tx_if = tx_if;
    match out.labels() {
        [label] => return swap_one(g.pool.frame_mut(i), l3, *label, macs),
        [] => {
            pop(g, i, None);
            g.pool.frame_mut(i)[..12].copy_from_slice(macs);
            return true;
        }
        _ => {}
    }
    let f = g.pool.frame(i);
    let old = u32::from_be_bytes([f[l3], f[l3 + 1], f[l3 + 2], f[l3 + 3]]);
    let keep = (old & 0xe00) | ((old & 0xff) - 1); // traffic class and TTL − 1
    let n = out.labels().len();
    // The generator leaves 64 bytes of headroom (7 extra labels); another driver may leave less.
    let Some(f) = g.pool.grow_head(i, 4 * (n - 1)) else { return false };
    for (j, &label) in out.labels().iter().enumerate() {
        let bos = if j + 1 == n { old & 0x100 } else { 0 };
        f[l3 + 4 * j..l3 + 4 * j + 4].copy_from_slice(&((label << 12) | keep | bos).to_be_bytes());
    }
    f[..12].copy_from_slice(macs);
    f[ethernet::ETHERTYPE].copy_from_slice(&EtherType::MPLS.to_be_bytes());
    true
}

/// The plain swap of frame `f`'s top label (at `l3`) for `label`, in place: one 4-byte
/// read-modify-write (traffic class and bottom of stack kept, TTL − 1), then the MACs (the
/// ethertype is already MPLS). False when the frame ends before the label.
#[inline(always)]
fn swap_one(f: &mut [u8], l3: usize, label: u32, macs: &[u8; 12]) -> bool {
    let Some(top) = f.get_mut(l3..l3 + 4) else { return false };
    let old = u32::from_be_bytes([top[0], top[1], top[2], top[3]]);
    let new = (label << 12) | (old & 0xf00) | ((old & 0xff) - 1);
    top.copy_from_slice(&new.to_be_bytes());
    f[..12].copy_from_slice(macs);
    true
}

/// Removes the top label of buffer `i` and returns the frame's new ethertype: MPLS when more
/// labels follow, else that of `payload` (`None`, a swap to implicit null: read from the IP
/// version, 6 or else 4). What is under the label takes the label's TTL when that is smaller
/// (uniform TTL model): the next label's TTL, the IPv4 TTL (with an incremental checksum
/// update) or the IPv6 hop limit. Less one where this router is done with the label stack
/// (it sends the frame on, or routes what the last label held); not for a label popped
/// before the next one is looked up here, which counts the hop itself. Not cold: an egress
/// provider edge pops every packet it receives from the core.
fn pop<F: MplsWorker>(g: &mut Graph<F>, i: u32, payload: Option<Payload>) -> u16 {
    let l3 = usize::from(g.pool.meta(i).l3_offset);
    let f = g.pool.frame_mut(i);
    let bottom = f[l3 + 2] & 1 != 0;
    let ttl = f[l3 + 3] - u8::from(bottom || payload.is_none());
    f.copy_within(0..12, 4);
    let f = g.pool.shrink_head(i, 4).expect("the frame holds the label it pops");
    let version = f.get(l3).map(|b| b >> 4);
    let ethertype = match (bottom, payload) {
        (false, _) => EtherType::MPLS,
        (true, Some(Payload::Ip6)) => EtherType::IPV6,
        (true, None) if version == Some(6) => EtherType::IPV6,
        (true, _) => EtherType::IPV4,
    };
    f[ethernet::ETHERTYPE].copy_from_slice(&ethertype.to_be_bytes());
    match ethertype {
        EtherType::MPLS => {
            if let Some(next) = f.get_mut(l3 + 3).filter(|t| **t > ttl) {
                *next = ttl;
            }
        }
        EtherType::IPV6 => {
            if let Some(ip) = f
                .get_mut(l3..l3 + 8)
                .filter(|ip| ip[ipv6::field::VERSION_TC] >> 4 == 6 && ip[ipv6::field::HOP_LIMIT] > ttl)
            {
                ip[ipv6::field::HOP_LIMIT] = ttl; // no header checksum in IPv6
            }
        }
        _ => lower_ip4_ttl(f, l3, ttl),
    }
    ethertype
}

/// Lowers the TTL of the IPv4 header at `l3` in frame `f` to `ttl` if that is smaller, with
/// an incremental checksum update (nothing when no IPv4 header is there).
fn lower_ip4_ttl(f: &mut [u8], l3: usize, ttl: u8) {
    use ipv4::field;
    if let Some(ip) = f.get_mut(l3..l3 + 20).filter(|ip| ip[field::VERSION_IHL] >> 4 == 4 && ip[field::TTL] > ttl) {
        let old = field_u16(ip, field::TTL_PROTOCOL);
        let new = (u16::from(ttl) << 8) | u16::from(ip[field::PROTOCOL]);
        let csum = checksum::update16(field_u16(ip, field::CHECKSUM), old, new);
        ip[field::TTL] = ttl;
        ip[field::CHECKSUM].copy_from_slice(&csum.to_be_bytes());
    }
}
