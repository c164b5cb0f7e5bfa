//! Links: what the kernel says of the host interfaces (link state, speed, ring drops), the
//! link state of each interface, and paths that follow it.

use crate::config::PollMode;
use crate::control::engine::Dataplane;
use crate::drivers::host::HostPort;
use crate::interface::{DriverKind, LinkState};
use crate::net::MAX_INTERFACES;

impl Dataplane {
    /// Re-reads what the kernel says of each host interface: link speed, and the frames its
    /// rx rings dropped since the last call (added to `rx-miss`); follows the link state too.
    /// Call it about once a second.
    pub fn refresh_links(&mut self) {
        let counts = self.interfaces.iter().map(|i| (i.index, self.interface_stats(i.index))).collect();
        self.rate_samples.push(counts);
        for HostPort { index, link, queues } in &mut self.ports.hosts {
            link.refresh_speed();
            let state = &self.ports.links[usize::from(*index)];
            state.speed.set(link.speed);
            for drops in queues.iter_mut() {
                match drops.take() {
                    Ok(n) => state.rx_miss.set(state.rx_miss.get() + n),
                    Err(e) => tracing::warn!("host interface {}: {e}", link.name),
                }
            }
        }
        self.follow_carriers();
        self.follow_liveness();
        self.sync_taps();
        self.follow_busy_poll();
    }

    /// Re-reads each host interface's link state (one system call each: call it every tick)
    /// and, when one changed, follows it at once: `interface-output` drops what would leave
    /// by a link that is down (`tx-interface-down`, rather than handing it to a kernel that
    /// refuses it), load-balance objects move its paths' buckets, its TAP's carrier follows.
    pub fn follow_carriers(&mut self) {
        let mut changed = false;
        for HostPort { index, link, .. } in &mut self.ports.hosts {
            if link.refresh_carrier() {
                tracing::info!("host interface {}: link {}", link.name, if link.oper_up { "up" } else { "down" });
                changed = true;
            }
            self.ports.links[usize::from(*index)].oper_up.set(u64::from(link.oper_up));
        }
        if changed {
            self.republish();
            self.follow_liveness();
            self.sync_taps();
        }
    }

    /// Sets up or takes down busy polling on each AF_XDP interface as its `rx-mode` says.
    fn follow_busy_poll(&mut self) {
        for HostPort { index, link, queues } in &self.ports.hosts {
            let Some(i) = self.interfaces.iter().find(|i| i.index == *index && i.driver == DriverKind::AfXdp) else {
                continue;
            };
            let config = self.config.interfaces.get(&i.name);
            let want =
                config.filter(|c| c.rx_mode == PollMode::BusyPoll).map(|c| c.af_xdp.unwrap_or_default().busy_poll);
            let sockets: Vec<_> = queues.iter().filter_map(|q| Some((q.xsk_fd()?, q.napi_id()?))).collect();
            self.ports.busy_poll.follow(*index, (&link.name, link.ifindex), &sockets, want);
        }
    }

    /// The NAPI instances set for busy polling on interface `index`.
    pub fn busy_poll_napis(&self, index: u16) -> Vec<u32> {
        self.ports.busy_poll.napis_of(index)
    }

    /// Moves the buckets of load-balance objects whose paths went down or came back, and
    /// publishes them.
    pub(super) fn follow_liveness(&mut self) {
        let live = self.liveness();
        if self.routing.rib.objects.set_live(&live) {
            self.routing.rib.objects.take_changed();
            self.republish();
        }
    }

    /// The link state of interface `index` (a sub-interface has its parent's link).
    pub fn link(&self, index: u16) -> &LinkState {
        let port = self.tables.interfaces.get(index).port;
        &self.ports.links[usize::from(port) % MAX_INTERFACES]
    }
}
