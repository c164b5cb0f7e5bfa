//! Routes of a running dataplane: the RIB and the FIB writers in step, batches applied all or
//! nothing, the configured routes changed one by one, the host routes of resolved neighbors,
//! and the workers' table snapshots published when the objects routes point at change.

use super::engine::{ApplyError, Dataplane, StartError};
use crate::config::Config;
use crate::datapath::Tables;
use crate::flows::Flows;
use crate::interface::Interface;
use crate::interface::build::build_interfaces;
use crate::l3::fib::{FibError, FibInsert, FibWriters, Fibs};
use crate::l3::objects::{NextHop, Target};
use crate::l3::rib::{Rib, RouteChange, Source};
use crate::l3::vrf::{VrfIds, VrfTables};
use crate::l3::{L3, LabelStack, Routes, configured};
use crate::lcp::mirror::KernelRoutes;
use crate::runtime::qsbr::Qsbr;
use std::net::IpAddr;
use std::sync::Arc;

/// The routing state of a running dataplane, owned by the main thread.
pub(super) struct Routing {
    /// Every source's routes and the objects they point at.
    pub(super) rib: Rib,
    /// The FIBs' writers (workers and the sFlow agent hold the readers).
    pub(super) fib: FibWriters,
    /// The adjacencies the label table's swaps hold (released when the labels change).
    pub(super) label_refs: Vec<u32>,
    /// The host routes of resolved neighbors on connected subnets (source neighbor).
    pub(super) host_routes: Routes,
    /// The kernel's routes mirrored into the FIB (source kernel), and those not mirrored.
    pub(super) kernel: KernelRoutes,
    /// Each VRF's index.
    pub(super) vrfs: VrfIds,
}

/// What workers forward with, built from a validated configuration.
pub struct Forwarding {
    /// The interfaces, by index.
    pub interfaces: Vec<Interface>,
    /// Interface facts, adjacencies and neighbors.
    pub tables: Arc<Tables>,
    /// The FIBs with the interface addresses and routes installed.
    pub fib: FibWriters,
    /// The routes (connected and config) and the objects they point at.
    pub rib: Rib,
    /// The adjacencies the label table's swaps hold.
    pub label_refs: Vec<u32>,
    /// Each VRF's index.
    pub vrfs: VrfIds,
}

/// Builds interfaces, tables and the FIB of a validated `config`; the FIB's readers announce
/// quiescent states through `qsbr`.
pub fn build_forwarding(config: &Config, qsbr: Arc<Qsbr>) -> Result<Forwarding, StartError> {
    let vrfs = VrfIds::default().assign(&config.vrfs);
    let interfaces = build_interfaces(&config.interfaces, config.workers.count, |v| vrfs.index(v));
    let mut rib = Rib::default();
    let up = |_: u16, _: IpAddr| true;
    let (base, label_refs) = super::tables::build_l3(config, &interfaces, &vrfs, &mut rib.objects, &up)?;
    let mut batch = crate::l3::changes(
        &Routes::new(),
        &crate::l3::connected(&interfaces, config.linux_cp.is_some()),
        Source::Connected,
    );
    batch.extend(crate::l3::changes(&Routes::new(), &configured(&config.routes, &interfaces, &vrfs), Source::Config));
    let applied = rib.apply(&batch, &up)?;
    // With linux-cp a full table may come: the IPv4 table's pages are made resident now,
    // before the API answers, not on the first routes.
    let fibs = Fibs::new(config.fib.tbl8_groups, config.linux_cp.is_some())?;
    let mut fib = FibWriters::new(&fibs, config.fib.vrf_tbl8_groups, qsbr);
    fib.set_vrfs(&vrfs.iter().map(|(_, i, _)| i).collect::<Vec<_>>())?;
    fib.apply(&applied.fib)?;
    rib.commit(applied);
    rib.objects.take_changed();
    let flows = super::tables::build_flows(config, &interfaces);
    let l3 = L3 { vrfs: VrfTables::new(&interfaces, fib.vrf_fibs()), ..base.with_objects(&rib.objects, &interfaces) };
    let tables = Arc::new(Tables::new(&interfaces, l3, flows));
    Ok(Forwarding { interfaces, tables, fib, rib, label_refs, vrfs })
}

impl Dataplane {
    /// Applies a batch of route changes, each naming its source, all or nothing and without
    /// stopping the workers: the adjacencies and load-balance objects it makes reach the
    /// workers' tables first, then the FIB changes; the objects no route uses any more are
    /// freed once every worker has moved on. Returns when workers forward on the new routes.
    /// Config-sourced changes do not edit the configuration (its commands do that).
    pub fn apply_routes(&mut self, batch: &[RouteChange]) -> Result<(), ApplyError> {
        let live = self.liveness();
        let applied = self.routing.rib.apply(batch, &live)?;
        if self.routing.rib.objects.take_changed() {
            self.republish();
        }
        if let Err(e) = self.routing.fib.apply(&applied.fib) {
            let back = self.routing.rib.rollback(applied);
            self.put_back(&back);
            return Err(e.into());
        }
        self.routing.rib.commit(applied);
        self.routing.fib.synchronize();
        self.routing.rib.objects.settle();
        Ok(())
    }

    /// Sets (`Some`) or removes (`None`) the configured route to `prefix` in VRF `vrf_name`
    /// (`None`: the default table): the configuration changes and is validated whole, the FIB
    /// by one change; nothing else is rebuilt.
    pub fn set_config_route(
        &mut self,
        vrf_name: Option<&str>,
        prefix: crate::config::IpPrefix,
        route: Option<crate::config::Route>,
    ) -> Result<(), ApplyError> {
        let mut new = self.config.clone();
        let at = new.routes.iter().position(|r| {
            r.vrf.as_deref() == vrf_name && (r.prefix.masked(), r.prefix.len) == (prefix.masked(), prefix.len)
        });
        match (at, route) {
            (Some(k), Some(r)) => new.routes[k] = r,
            (None, Some(r)) => new.routes.push(r),
            (Some(k), None) => {
                new.routes.remove(k);
            }
            (None, None) => return Ok(()),
        }
        new.validate()?;
        let (prefix, len) = (prefix.masked(), prefix.len);
        let vrf = self.routing.vrfs.index(vrf_name);
        let target = new
            .routes
            .iter()
            .find(|r| r.vrf.as_deref() == vrf_name && (r.prefix.masked(), r.prefix.len) == (prefix, len))
            .map(|r| crate::l3::configured_route(r, &self.routing.vrfs, &self.interfaces));
        self.apply_routes(&[RouteChange { vrf, prefix, len, source: Source::Config, target }])?;
        self.config.routes = new.routes;
        Ok(())
    }

    /// Whether a next hop takes traffic now: its link is up and its neighbor did not fail to
    /// resolve.
    pub(super) fn liveness(&self) -> impl Fn(u16, IpAddr) -> bool + 'static {
        let failed = self.neighbors.table.failed();
        let up: Vec<bool> = (0..crate::net::MAX_INTERFACES).map(|i| self.link(i as u16).oper_up.get() != 0).collect();
        move |tx_if: u16, via: IpAddr| up[usize::from(tx_if) % up.len()] && !failed.contains(&(tx_if, via))
    }

    /// Publishes the workers' tables: `interfaces`, `base`'s labels, the flow rules `flows`,
    /// the current adjacencies and load-balance objects, the neighbor table's MACs, the links
    /// that are down.
    pub(super) fn publish_tables(&mut self, interfaces: &[Interface], base: &L3, flows: Arc<Flows>) {
        let objects = &self.routing.rib.objects;
        let l3 = L3 { adjs: objects.adjs().to_vec(), lbs: objects.lbs().to_vec(), ..base.clone() }.with_neighbors(
            interfaces,
            self.neighbors.table.macs(),
            self.neighbors.table.failed(),
        );
        let l3 = L3 { vrfs: VrfTables::new(interfaces, self.routing.fib.vrf_fibs()), ..l3 };
        if let Some(sf) = &self.sflow {
            sf.vrfs.set(l3.vrfs.clone());
        }
        let mut tables = Tables::new(interfaces, l3, flows);
        self.ports.hosts.iter().filter(|h| !h.link.oper_up).for_each(|h| tables.interfaces.link_down(h.index));
        self.publisher.publish(tables);
        self.tables = self.publisher.current();
    }

    /// Publishes the workers' tables again with what changed beside the configuration: the
    /// objects, the buckets, the neighbor table's MACs.
    pub(super) fn republish(&mut self) {
        let interfaces = std::mem::take(&mut self.interfaces);
        self.publish_tables(&interfaces, &self.tables.l3.clone(), self.tables.flows.clone());
        self.interfaces = interfaces;
    }

    /// Puts FIB entries back after a refused batch, one by one (a delete of an entry the
    /// refused batch never made is no error).
    pub(super) fn put_back(&mut self, back: &[FibInsert]) {
        for change in back {
            match self.routing.fib.apply(std::slice::from_ref(change)) {
                Ok(()) | Err(FibError::NoSuchRoute(..)) => {}
                Err(undo) => tracing::error!("putting a route back after a refused change failed too: {undo}"),
            }
        }
    }

    /// Keeps a host route (source neighbor) to every neighbor with a MAC inside a connected
    /// subnet of its interface, in the interface's VRF, so traffic to connected hosts takes
    /// the next-hop path.
    pub(super) fn sync_host_routes(&mut self) {
        let vrf_on_subnet = |i: u16, a: IpAddr| {
            let x = self.interfaces.iter().find(|x| x.index == i)?;
            x.addresses.iter().any(|p| p.contains(a) && p.addr != a).then_some(x.vrf)
        };
        let want: Routes = self
            .neighbors
            .table
            .macs()
            .into_keys()
            .filter(|&(_, a)| !crate::net::is_link_local(a))
            .filter_map(|(tx_if, via)| {
                let vrf = vrf_on_subnet(tx_if, via)?;
                let hop = NextHop { via, tx_if, weight: 1 };
                Some((
                    (vrf, via, if via.is_ipv4() { 32 } else { 128 }),
                    Target::Paths { hops: vec![hop], push: LabelStack::EMPTY },
                ))
            })
            .collect();
        let batch = crate::l3::changes(&self.routing.host_routes, &want, Source::Neighbor);
        if batch.is_empty() {
            return;
        }
        match self.apply_routes(&batch) {
            Ok(()) => self.routing.host_routes = want,
            Err(e) => tracing::warn!("host routes of neighbors: {e}"),
        }
    }
}
