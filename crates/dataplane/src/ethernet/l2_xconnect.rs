//! `l2-xconnect`: sets each frame's output interface to the peer its input interface is
//! cross-connected to, and sends the whole vector to `interface-output`. Frames are not
//! modified. Drops nothing (`ethernet-input` only sends frames of cross-connected interfaces).

use crate::ethernet::EthernetWorker;
use crate::interface::RxMode;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;

/// The cross-connect peer of interface `rx_if` (0 when it has none: index 0 is never up, so
/// `interface-output` then drops the frame as `tx-interface-down` rather than guessing).
#[inline(always)]
fn peer<F: EthernetWorker>(g: &Graph<F>, rx_if: u16) -> u16 {
    match g.features.interfaces().get(rx_if).mode {
        RxMode::L2Xconnect { peer } => peer,
        RxMode::L3 => 0,
    }
}

/// Processes one vector. Frames received on the vector's own port (all of them, until
/// sub-interfaces exist) share one lookup.
#[inline(never)]
pub fn run<F: EthernetWorker>(g: &mut Graph<F>, v: VecHandle) {
    let port = g.vectors[v].port;
    let port_peer = peer(g, port);
    for &i in g.vectors[v].indices() {
        let rx_if = g.pool.meta(i).rx_if;
        let tx_if = if rx_if == port { port_peer } else { peer(g, rx_if) };
        g.pool.meta_mut(i).tx_if = tx_if;
    }
    g.forward(v, crate::interface::nodes::INTERFACE_OUTPUT);
}
