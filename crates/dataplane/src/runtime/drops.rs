//! Drop reasons as the runtime sees them: an index into the list the features declare
//! together (each feature its own reasons, `ip4::drops::TRUNCATED`, with
//! `interface::declare_drops!`, which gives each its name, the node that drops and the counter
//! it feeds). Every node that drops a packet sets its [`DropReason`] in the buffer metadata
//! and sends it to the error node ([`crate::runtime::graph::Graph::mark_drop`]), which counts
//! it per input interface and per reason.

/// Why a packet was dropped: its index in the declared list of reasons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DropReason(u16);

impl DropReason {
    /// The reason at `index` of the declared list (also how a buffer's metadata holds it).
    pub const fn new(index: u16) -> Self {
        DropReason(index)
    }

    /// Its index in the declared list (of per-reason counters).
    #[inline(always)]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// Its index as the buffer metadata's `error` field holds it.
    #[inline(always)]
    pub const fn raw(self) -> u16 {
        self.0
    }
}
