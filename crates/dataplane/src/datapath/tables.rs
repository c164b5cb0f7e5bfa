//! The snapshot workers forward with, composed here from one table per feature: the
//! interfaces (facts, VLANs, addresses), the layer 3 tables and the flow rules. The main
//! thread publishes a new one as a whole; a worker takes it between vectors.

use crate::drivers;
use crate::flows::Flows;
use crate::interface::{Interface, InterfaceTable};
use crate::l3::L3;
use std::sync::Arc;

/// The immutable tables a worker forwards with. Replaced as a whole (never edited in place)
/// when the configuration, a neighbor or a route's objects change.
#[derive(Debug, Clone)]
pub struct Tables {
    /// The interfaces: each one's facts, the VLANs, the addresses.
    pub interfaces: InterfaceTable,
    /// Adjacencies, load-balance objects, neighbors and labels.
    pub l3: L3,
    /// The flow rules (`flow-classify`); shared between snapshots (they change only with
    /// the configuration).
    pub flows: Arc<Flows>,
}

impl Tables {
    /// The snapshot of `interfaces`, `l3` and `flows`.
    pub fn new(interfaces: &[Interface], l3: L3, flows: Arc<Flows>) -> Self {
        Self { interfaces: InterfaceTable::new(interfaces, |i| flows.inputs.has(i), drivers::tx_node), l3, flows }
    }
}
