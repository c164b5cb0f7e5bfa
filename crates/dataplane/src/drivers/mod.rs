//! Drivers: where frames enter (rx input nodes) and leave (tx nodes) the graph.
//!
//! Each driver is an rx input node, polled by the worker that owns the queue, and a tx node,
//! reached through vectors: `interface-output` picks it per vector from the output
//! interface ([`crate::interface::DriverKind::tx_node`]). The driver decides where a frame
//! sits in its buffer (the headroom in front of it); the nodes between never depend on the
//! driver.

pub mod af_packet;
pub mod generator;
pub mod host;

use crate::graph::{Graph, NodeId};
use crate::vector::VecHandle;

/// One rx queue a worker polls.
pub enum RxPort {
    /// A generator interface.
    Generator(generator::GeneratorPort),
    /// An AF_PACKET socket's rx ring.
    AfPacket(af_packet::RxQueue),
}

impl RxPort {
    /// Polls the queue once (`now` = TSC, for paced generators): a vector of received frames,
    /// or `None` when there were none.
    #[inline]
    pub fn poll(&mut self, g: &mut Graph, now: u64) -> Option<VecHandle> {
        match self {
            RxPort::Generator(p) => p.poll(g, now),
            RxPort::AfPacket(q) => q.poll(g),
        }
    }

    /// The input node charged with its polls.
    pub fn node(&self) -> NodeId {
        match self {
            RxPort::Generator(_) => NodeId::GeneratorInput,
            RxPort::AfPacket(_) => NodeId::AfPacketInput,
        }
    }
}
