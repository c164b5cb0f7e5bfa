//! Every node and every drop reason the features declare, gathered into the two lists the
//! runtime's ids index (`show runtime` and `show errors` read them here). The gathering is
//! done at compile time and fails the build when two nodes (or reasons) share an index, or
//! an index is beyond the count (so the indices run from 0 without a gap).

use crate::interface::{DropClass, DropInfo, MAX_REASONS};
use crate::runtime::drops::DropReason;
use crate::runtime::graph::{MAX_NODES, NodeId, NodeInfo};
use crate::runtime::vector::VectorPool;
use crate::{drivers, ethernet, flows, interface, ip4, ip6, lcp, mpls};

/// Each feature's nodes.
const NODE_LISTS: &[&[NodeInfo]] = &[
    drivers::nodes::NODES,
    ethernet::nodes::NODES,
    ip4::nodes::NODES,
    ip6::nodes::NODES,
    flows::nodes::NODES,
    lcp::nodes::NODES,
    mpls::nodes::NODES,
    interface::nodes::NODES,
];

/// Each feature's drop reasons.
const DROP_LISTS: &[&[DropInfo]] = &[
    interface::drops::DROPS,
    drivers::drops::DROPS,
    ethernet::drops::DROPS,
    ip4::drops::DROPS,
    ip6::drops::DROPS,
    mpls::drops::DROPS,
    lcp::drops::DROPS,
    flows::drops::DROPS,
];

/// How many items `lists` hold together.
const fn total<T>(lists: &[&[T]]) -> usize {
    let (mut n, mut k) = (0, 0);
    while k < lists.len() {
        n += lists[k].len();
        k += 1;
    }
    n
}

/// Number of graph nodes.
pub const N_NODES: usize = total(NODE_LISTS);
/// Number of drop reasons (the width of a per-interface error counter row).
pub const N_REASONS: usize = total(DROP_LISTS);

const _: () = assert!(N_NODES <= MAX_NODES, "more nodes than the runtime's split table holds");
const _: () = assert!(N_NODES * N_NODES < VectorPool::CAPACITY, "more nodes than the vector pool covers");
const _: () = assert!(N_REASONS <= MAX_REASONS, "more drop reasons than interface::MAX_REASONS");

/// Every node, at its index.
pub static NODES: [NodeInfo; N_NODES] = {
    let mut out = [NodeInfo { id: NodeId::new(u8::MAX), name: "", description: "" }; N_NODES];
    let mut k = 0;
    while k < NODE_LISTS.len() {
        let mut j = 0;
        while j < NODE_LISTS[k].len() {
            let node = NODE_LISTS[k][j];
            assert!(node.id.index() < N_NODES, "a node's index is beyond the count of nodes");
            assert!(out[node.id.index()].name.is_empty(), "two nodes share an index");
            out[node.id.index()] = node;
            j += 1;
        }
        k += 1;
    }
    out
};

/// Every drop reason, at its index.
pub static DROPS: [DropInfo; N_REASONS] = {
    let unset = DropInfo {
        id: DropReason::new(u16::MAX),
        name: "",
        description: "",
        node: NodeId::new(u8::MAX),
        class: DropClass::InDiscards,
        sflow_code: 0,
    };
    let mut out = [unset; N_REASONS];
    let mut k = 0;
    while k < DROP_LISTS.len() {
        let mut j = 0;
        while j < DROP_LISTS[k].len() {
            let reason = DROP_LISTS[k][j];
            assert!(reason.id.index() < N_REASONS, "a drop reason's index is beyond the count of reasons");
            assert!(out[reason.id.index()].name.is_empty(), "two drop reasons share an index");
            out[reason.id.index()] = reason;
            j += 1;
        }
        k += 1;
    }
    out
};

/// What the lists say of a node.
pub trait NodeFacts {
    /// Its declaration.
    fn info(self) -> &'static NodeInfo;

    /// Its name, as `show runtime` prints it.
    fn name(self) -> &'static str;
}

impl NodeFacts for NodeId {
    fn info(self) -> &'static NodeInfo {
        &NODES[self.index()]
    }

    fn name(self) -> &'static str {
        self.info().name
    }
}

/// What the lists say of a drop reason.
pub trait DropFacts {
    /// Its declaration.
    fn info(self) -> &'static DropInfo;

    /// Its counter name, e.g. `truncated-ethernet`.
    fn name(self) -> &'static str;
}

impl DropFacts for DropReason {
    fn info(self) -> &'static DropInfo {
        &DROPS[self.index()]
    }

    fn name(self) -> &'static str {
        self.info().name
    }
}

/// The reason a buffer's metadata names (its `error` field), if it names one.
pub fn drop_reason(raw: u16) -> Option<DropReason> {
    DROPS.get(usize::from(raw)).map(|d| d.id)
}

/// Every node, in index order.
pub fn all_nodes() -> impl Iterator<Item = NodeId> {
    NODES.iter().map(|n| n.id)
}

/// Every drop reason, in index order.
pub fn all_drops() -> impl Iterator<Item = DropReason> {
    DROPS.iter().map(|d| d.id)
}
