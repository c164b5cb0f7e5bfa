//! Links: what the kernel says of the host interfaces (link state, speed, ring drops), the
//! link state of each interface, and paths that follow it.

use crate::control::engine::Dataplane;
use crate::interface::{LinkState, MAX_INTERFACES};
use std::time::Instant;

impl Dataplane {
    /// Re-reads what the kernel says of each AF_PACKET interface: link state and speed, and
    /// the frames its rx rings dropped since the last call (added to `rx-miss`). Call it
    /// about once a second.
    pub fn refresh_links(&mut self) {
        let counts = self.interfaces.iter().map(|i| (i.index, self.interface_stats(i.index))).collect();
        self.rate_samples = [self.rate_samples[1].take(), Some((Instant::now(), counts))];
        for (index, link, stats) in &mut self.hosts {
            let was_up = link.oper_up;
            link.refresh();
            if link.oper_up != was_up {
                tracing::info!("host interface {}: link {}", link.name, if link.oper_up { "up" } else { "down" });
            }
            let state = &self.links[usize::from(*index)];
            state.oper_up.set(u64::from(link.oper_up));
            state.speed.set(link.speed);
            for drops in stats.iter_mut() {
                match drops.take() {
                    Ok(n) => state.rx_miss.set(state.rx_miss.get() + n),
                    Err(e) => tracing::warn!("host interface {}: {e}", link.name),
                }
            }
        }
        self.follow_liveness();
        self.sync_taps();
    }

    /// Moves the buckets of load-balance objects whose paths went down or came back, and
    /// publishes them.
    pub(super) fn follow_liveness(&mut self) {
        let live = self.liveness();
        if self.rib.objects.set_live(&live) {
            self.rib.objects.take_changed();
            self.republish();
        }
    }

    /// The link state of interface `index` (a sub-interface has its parent's link).
    pub fn link(&self, index: u16) -> &LinkState {
        let port = self.tables.get(index).port;
        &self.links[usize::from(port) % MAX_INTERFACES]
    }
}
