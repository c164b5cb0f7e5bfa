//! What a drop reason is beside its id: the name `show errors` prints, what it means, the
//! node that drops for it, the interface counter it feeds and the sFlow discard code it is
//! reported with. Each feature declares its own reasons with [`declare_drops!`];
//! `datapath` gathers them into one list whose indices run from 0 without a gap.

use crate::runtime::drops::DropReason;
use crate::runtime::graph::NodeId;

/// The most drop reasons there can be: the width of the per-reason tables that are sized
/// before the features' list is known (sFlow's discard budget).
pub const MAX_REASONS: usize = 128;

/// The interface counter a drop is charged to (the IF-MIB / sFlow generic counter names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropClass {
    /// ifInDiscards: a good frame dropped on input (policy, state, resources).
    InDiscards,
    /// ifInErrors: a malformed frame.
    InErrors,
    /// ifInUnknownProtos: a protocol the interface does not handle.
    InUnknownProtos,
    /// ifOutDiscards: dropped on the way out.
    OutDiscards,
    /// ifOutErrors: the driver could not send it.
    OutErrors,
    /// Not a discard: a packet for this router's control plane, consumed (an ARP reply, a
    /// request for someone else), or a frame for another host that only a promiscuous port
    /// sees. Counted in `show errors` only.
    Punt,
}

/// One drop reason, as declared by the feature whose node drops for it.
#[derive(Debug, Clone, Copy)]
pub struct DropInfo {
    /// Its id.
    pub id: DropReason,
    /// Its counter name, e.g. `truncated-ethernet`; unique within its node.
    pub name: &'static str,
    /// One line saying what it means.
    pub description: &'static str,
    /// The node that drops for it.
    pub node: NodeId,
    /// The interface counter it is charged to.
    pub class: DropClass,
    /// The sFlow discard reason code (sflow_drops.txt) reported for it.
    pub sflow_code: u32,
}

/// Declares a feature's drop reasons: for each
/// `CONST = index, "name", Class, node, sflow-code, "what it means";` a
/// `pub const CONST: DropReason` (documented by its meaning), and `DROPS`, the list of their
/// [`DropInfo`] that `datapath` gathers with every other feature's.
macro_rules! declare_drops {
    ($($konst:ident = $index:literal, $name:literal, $class:ident, $node:expr, $code:literal, $desc:literal;)*) => {
        $(
            #[doc = $desc]
            pub const $konst: $crate::runtime::drops::DropReason = $crate::runtime::drops::DropReason::new($index);
        )*

        /// The drop reasons declared here.
        pub const DROPS: &[$crate::interface::DropInfo] = &[$($crate::interface::DropInfo {
            id: $konst,
            name: $name,
            description: $desc,
            node: $node,
            class: $crate::interface::DropClass::$class,
            sflow_code: $code,
        }),*];
    };
}
pub(crate) use declare_drops;
