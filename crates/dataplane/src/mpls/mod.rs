//! MPLS label switching: `mpls-input`, `mpls-lookup` and `mpls-rewrite`, and the `mpls`
//! section of the configuration.

pub mod config;
pub mod drops;
pub mod input;
pub mod lookup;
pub mod nodes;
pub mod rewrite;

use crate::l3::L3Worker;
use crate::runtime::graph::NodeId;

/// A worker's state as `mpls-rewrite` sees it: the layer 3 tables, and the nodes of the IP
/// features it hands popped packets to.
pub trait MplsWorker: L3Worker {
    /// The nodes of other features `mpls-rewrite` hands packets to.
    const NEXT: MplsNext;
}

/// The nodes `mpls-rewrite` hands packets to beyond its own folder, as `datapath` wires them:
/// the IP features stand above MPLS, so it names none of their nodes.
#[derive(Debug, Clone, Copy)]
pub struct MplsNext {
    /// A popped IPv4 packet.
    pub ip4_input: NodeId,
    /// A popped IPv6 packet.
    pub ip6_input: NodeId,
    /// An IPv4 next hop to resolve.
    pub ip4_arp: NodeId,
    /// An IPv6 next hop to resolve.
    pub ip6_nd: NodeId,
}
