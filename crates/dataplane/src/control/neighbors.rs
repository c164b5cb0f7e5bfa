//! The neighbor table of a running dataplane: what workers learn reaches it over a bounded
//! channel, its entries age, stale ones are probed by worker 0, and what changed is published
//! to the workers.

use super::engine::Dataplane;
use crate::neighbor::Neighbors;
use crate::neighbor::punt::{Event, Probe};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::Instant;

/// Room in the channel that carries workers' events to the main thread.
const EVENT_QUEUE: usize = 4096;
/// Room in the channel that carries refresh probes to worker 0.
const PROBE_QUEUE: usize = 1024;

/// The neighbor table and its channels to and from the workers.
pub(super) struct NeighborState {
    /// The neighbor table behind the snapshots' neighbors.
    pub(super) table: Neighbors,
    /// What workers report (ARP learned, resolutions started).
    pub(super) events: Receiver<Event>,
    /// Refresh probes for worker 0 to send.
    pub(super) probes: SyncSender<Probe>,
}

/// The workers' ends of the channels a [`NeighborState`] keeps the other end of.
pub(super) struct WorkerEnds {
    /// Where every worker reports.
    pub(super) events: SyncSender<Event>,
    /// The probes worker 0 sends.
    pub(super) probes: Receiver<Probe>,
}

impl NeighborState {
    /// A table of `table`'s entries with fresh channels, and the workers' ends of them.
    pub(super) fn new(table: Neighbors) -> (Self, WorkerEnds) {
        let (events_tx, events) = sync_channel(EVENT_QUEUE);
        let (probes, probes_rx) = sync_channel(PROBE_QUEUE);
        (Self { table, events, probes }, WorkerEnds { events: events_tx, probes: probes_rx })
    }
}

impl Dataplane {
    /// Follows the host links' state; looks after the neighbor table: takes in what workers
    /// learned, ages entries, has stale ones probed, and publishes a new table snapshot when
    /// what workers forward with changed. Call it often (every 10 ms or so): workers' events
    /// wait in a bounded queue.
    pub fn service(&mut self) {
        self.follow_carriers();
        let mut changed = crate::lcp::follow::follow_kernel(self);
        let now = Instant::now();
        while let Ok(event) = self.neighbors.events.try_recv() {
            changed |= self.neighbors.table.on_event(event, now);
        }
        let (aged, probes) = self.neighbors.table.age(now);
        for p in probes {
            self.send_probe(p);
        }
        if changed || aged {
            let live = self.liveness();
            self.routing.rib.objects.set_live(&live);
            self.routing.rib.objects.take_changed();
            // The MACs changed: publish them, unless the host routes' batch already did.
            let before = self.tables.clone();
            self.sync_host_routes();
            if Arc::ptr_eq(&before, &self.tables) {
                self.republish();
            }
        }
    }

    /// Has worker 0 send probe `p` (dropped, and logged, when its queue is full).
    pub(super) fn send_probe(&self, p: Probe) {
        if self.neighbors.probes.try_send(p).is_err() {
            tracing::debug!("probe queue full: {p:?} not sent");
        }
    }
}
