//! The linux-cp controller, the main thread's side: it takes what the netlink listeners found
//! changed in the kernel views, one per namespace ([`super::LinuxCp::take_kernel_changes`]), in bounded
//! batches and time-bounded slices, and drives the dataplane through the narrow
//! [`KernelFollower`] it implements: routes to the RIB ([`RouteSink`]), neighbor entries to
//! the neighbor table, TAP links to the interfaces.

use super::LinuxCp;
use super::listener::LinkFacts;
use super::mirror::{KernelRoutes, RouteSink};
use super::neighbors::{KernelNeighbor, Trust};
use crate::neighbor::punt::{Event, Learn};
use std::net::IpAddr;
use std::time::{Duration, Instant};

/// Routes taken from the kernel view per batch: one RIB batch, one FIB batch, one grace
/// period.
pub const ROUTE_BATCH: usize = 1024;

/// How long the main thread mirrors routes before it answers API calls again (it goes on at
/// once after them while routes wait).
pub const SLICE: Duration = Duration::from_millis(2);

/// What following the kernel needs of the dataplane, besides its routes ([`RouteSink`]).
pub trait KernelFollower: RouteSink {
    /// The running linux-cp, when there is one.
    fn linux_cp(&self) -> Option<&LinuxCp>;
    /// The counts of the kernel's routes mirrored (by kind) and not (by why).
    fn kernel_routes_mut(&mut self) -> &mut KernelRoutes;
    /// Takes `event` (what the kernel has for a neighbor on a TAP) into the neighbor table;
    /// true when what workers forward with changed.
    fn neighbor_event(&mut self, event: Event) -> bool;
    /// Sets the static neighbor entries again: the kernel's permanent ones changed.
    fn refresh_static_neighbors(&mut self);
    /// Takes in what Linux changed on the TAPs: addresses (read from the view, as
    /// kernel-owned), MTUs and, with `link-sync`, admin states (`links`: the TAPs whose state
    /// differs from what vecflow last set, by interface index).
    fn follow_taps(&mut self, links: &[(u16, LinkFacts)]);
}

/// Takes in what Linux changed since the last call: routes, neighbor entries on the TAPs,
/// and the TAPs' links and addresses. Routes are taken in batches of [`ROUTE_BATCH`] for at
/// most [`SLICE`], so that API calls wait little behind a table that loads (call it again at
/// once while [`LinuxCp::view_counts`] says routes wait). True when the neighbor table
/// changed what workers forward with.
pub fn follow_kernel(dataplane: &mut impl KernelFollower) -> bool {
    let started = Instant::now();
    let mut neighbors = false;
    while let Some(update) = dataplane.linux_cp().and_then(|l| l.take_kernel_changes(ROUTE_BATCH)) {
        let full = update.routes.len() == ROUTE_BATCH;
        let mut routes = std::mem::take(dataplane.kernel_routes_mut());
        routes.mirror(dataplane, update.vrf, update.routes);
        *dataplane.kernel_routes_mut() = routes;
        neighbors |= mirror_neighbors(dataplane, &update.neighbors);
        if update.taps {
            dataplane.follow_taps(&update.links);
        }
        if !full || started.elapsed() >= SLICE {
            break;
        }
    }
    dataplane.kernel_routes_mut().note_slice(started.elapsed());
    neighbors
}

/// Takes in the kernel's neighbor entries on the TAPs: a confirmed one as a confirmation, a
/// stale one as overheard (it updates an entry vecflow has), a permanent one as a static
/// entry (the configuration's win). True when what workers forward with changed.
fn mirror_neighbors(dataplane: &mut impl KernelFollower, entries: &[(u16, IpAddr, Option<KernelNeighbor>)]) -> bool {
    let mut changed = false;
    let mut statics = false;
    for &(interface, address, entry) in entries {
        let how = match entry.map(|n| n.trust) {
            Some(Trust::Confirmed) => Learn::Confirmed,
            Some(Trust::Stale) => Learn::Overheard,
            // A permanent entry that came or went (or changed to another state).
            Some(Trust::Permanent) | None => {
                statics = true;
                continue;
            }
        };
        let mac = wire::MacAddr(entry.map_or([0; 6], |n| n.mac));
        changed |= dataplane.neighbor_event(Event::Learned { interface, address, mac, how });
    }
    if statics {
        dataplane.refresh_static_neighbors();
        changed = true;
    }
    changed
}
