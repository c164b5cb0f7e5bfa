//! `interface-output`: the last node before a driver's tx.
//!
//! For each frame it checks the output interface (`tx_if` in the metadata) is up and the frame
//! fits its MTU (+ the 14-byte Ethernet header, + 4 for a frame that carries a tag: what a
//! Linux device accepts), counts it as forwarded on its input
//! interface, tags it with the VLAN id when the output is a sub-interface, runs the output
//! port's sFlow sampler when it samples transmitted packets, and hands it to the output
//! interface's driver tx node, which counts what it
//! sends (see [`crate::interface::TxRun`]). The fast path — every frame of the vector with the
//! same (input, output) pair, the usual case — reads only the metadata and looks the output
//! interface up once.
//!
//! Drops: `tx-interface-down`, `mtu-exceeded`, `no-headroom` (no room for a sub-interface's
//! tag).

use crate::interface::InterfaceCounters;
use crate::interface::InterfaceTables;
use crate::interface::InterfaceWorker;
use crate::interface::{drops, nodes};
use crate::runtime::graph::Graph;
use crate::runtime::graph::NodeId;
use crate::runtime::vector::VecHandle;
use wire::EtherType;
use wire::ethernet::VLAN_TAG_LEN;
use wire::ethernet::field;

/// Processes one vector.
#[inline(never)]
pub fn run<F: InterfaceWorker>(g: &mut Graph<F>, v: VecHandle) {
    let idx = g.vectors[v].indices();
    let Some(&first) = idx.first() else {
        g.vectors.free(v);
        return;
    };
    let m0 = *g.pool.meta(first);
    let (mut mixed, mut longest) = (false, 0u16);
    for &i in idx {
        let m = g.pool.meta(i);
        mixed |= (m.rx_if, m.tx_if) != (m0.rx_if, m0.tx_if);
        longest = longest.max(m.len());
    }
    let out = *g.features.interfaces().get(m0.tx_if);
    // Untagged frames may carry MTU + 14 bytes; longer ones (tagged, or too big) are
    // checked frame by frame.
    if !mixed && out.tx_node != nodes::ERROR_DROP && longest <= out.max_frame.saturating_sub(TAG) && out.vlan == 0 {
        g.counters.interface(m0.rx_if).rx_forwarded.add(idx.len() as u64);
        g.features.sample_tx(&mut g.pool, &mut g.vectors[v], out.port, &g.counters);
        g.forward(v, out.tx_node);
    } else if !g.features.sampling() && plain_outputs(g, v, m0.rx_if, out.tx_node) {
        g.counters.interface(m0.rx_if).rx_forwarded.add(idx.len() as u64);
        g.forward(v, out.tx_node);
    } else {
        each_frame(g, v);
    }
}

/// True when every frame of `v` came in on `rx_if` and goes out of an interface that is up,
/// untagged and served by `tx_node`, within its MTU (+14): the frames of a multipath route,
/// spread over several ports of one driver. Branch-free over the frames, as the outputs
/// interleave at random.
fn plain_outputs<F: InterfaceWorker>(g: &Graph<F>, v: VecHandle, rx_if: u16, tx_node: NodeId) -> bool {
    let tables = g.features.snapshot();
    let mut ok = tx_node != nodes::ERROR_DROP;
    for &i in g.vectors[v].indices() {
        let m = g.pool.meta(i);
        let out = tables.interfaces().get(m.tx_if);
        ok &= (m.rx_if == rx_if)
            & (out.tx_node == tx_node)
            & (out.vlan == 0)
            & (m.len() <= out.max_frame.saturating_sub(TAG));
    }
    ok
}

/// The bytes an 802.1Q tag adds to a frame's limit.
const TAG: u16 = VLAN_TAG_LEN as u16;

/// True when frame `i` carries an 802.1Q or 802.1ad tag.
fn is_tagged<F: InterfaceWorker>(g: &Graph<F>, i: u32) -> bool {
    let l = g.pool.line(i);
    matches!(u16::from_be_bytes([l[12], l[13]]), EtherType::VLAN | EtherType::QINQ)
}

/// Tags frame `i` with 802.1Q VLAN `vid` (priority 0) for a sub-interface: the addresses move
/// 4 bytes down into the headroom and the tag goes between them and the ethertype. Returns
/// false (frame unchanged) when the headroom has no 4 bytes left.
#[must_use]
fn push_tag<F: InterfaceWorker>(g: &mut Graph<F>, i: u32, vid: u16) -> bool {
    let Some(f) = g.pool.grow_head(i, VLAN_TAG_LEN) else { return false };
    f.copy_within(VLAN_TAG_LEN..VLAN_TAG_LEN + 12, 0);
    f[field::TPID].copy_from_slice(&EtherType::VLAN.to_be_bytes());
    f[field::TCI].copy_from_slice(&vid.to_be_bytes());
    true
}

/// The general path: per-frame output checks, tags for sub-interfaces, split by next node.
/// The output interface's facts are read once per run of frames toward it, and the frames
/// forwarded are counted once per run of frames from one input interface.
#[cold]
fn each_frame<F: InterfaceWorker>(g: &mut Graph<F>, v: VecHandle) {
    let mut first = None;
    let mut same = true;
    let mut out = *g.features.interfaces().get(g.pool.meta(g.vectors[v].indices()[0]).tx_if);
    let mut out_if = g.pool.meta(g.vectors[v].indices()[0]).tx_if;
    let (mut rx_if, mut forwarded) = (0u16, 0u64);
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let m = *g.pool.meta(i);
        if m.tx_if != out_if {
            out_if = m.tx_if;
            out = *g.features.interfaces().get(m.tx_if);
        }
        // Untagged frames may carry MTU + 14 bytes, tagged ones 4 more.
        let fits = m.len() <= out.max_frame.saturating_sub(TAG) || (m.len() <= out.max_frame && is_tagged(g, i));
        let verdict = if out.tx_node == nodes::ERROR_DROP {
            Err(drops::TX_INTERFACE_DOWN)
        } else if !fits {
            Err(drops::MTU_EXCEEDED)
        } else if out.vlan != 0 && !push_tag(g, i, out.vlan) {
            Err(drops::TAG_NO_HEADROOM)
        } else {
            Ok(out.tx_node)
        };
        let next = match verdict {
            Ok(tx_node) => {
                if m.rx_if != rx_if {
                    g.counters.interface(rx_if).rx_forwarded.add(forwarded);
                    (rx_if, forwarded) = (m.rx_if, 0);
                }
                forwarded += 1;
                g.features.sample_tx_one(&mut g.pool, i, out.port, &g.counters);
                tx_node
            }
            Err(reason) => {
                g.pool.meta_mut(i).error = reason.raw();
                nodes::ERROR_DROP
            }
        };
        g.nexts[k] = next;
        same &= *first.get_or_insert(next) == next;
    }
    g.counters.interface(rx_if).rx_forwarded.add(forwarded);
    match first {
        Some(next) if same => g.forward(v, next),
        _ => g.split(v),
    }
}
