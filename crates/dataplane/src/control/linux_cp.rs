//! The running dataplane and its Linux control plane in step: the dataplane's side of
//! linux-cp's controller ([`crate::lcp::follow`]: the [`KernelFollower`] and [`RouteSink`] it
//! drives), through which the kernel's routes and neighbor entries and what Linux changes on
//! a TAP (addresses, MTU, with `linux-cp.link-sync` its admin state) reach the interfaces;
//! and the interfaces' state and configured addresses set on the TAPs.

use crate::config::{AdminState, Config};
use crate::control::cli::settings;
use crate::control::engine::Dataplane;
use crate::interface::Interface;
use crate::l3::objects::Target;
use crate::l3::rib::RouteChange;
use crate::lcp::LinuxCp;
use crate::lcp::follow::KernelFollower;
use crate::lcp::listener::LinkFacts;
use crate::lcp::mirror::{KernelRoutes, RouteSink};
use crate::neighbor::punt::{Event, Probe};
use crate::net::IpPrefix;
use std::net::IpAddr;
use std::time::Instant;
use wire::MacAddr;

impl Dataplane {
    /// `config` with the addresses Linux owns on each TAP added to its interface. An address
    /// the configuration would refuse (one another interface has, one on a cross-connected
    /// interface) is left out, and logged.
    pub(super) fn with_kernel_addresses(&self, config: &Config) -> Config {
        let Some(lcp) = &self.lcp else { return config.clone() };
        let owned: Vec<(&str, crate::config::IpPrefix)> = self
            .interfaces
            .iter()
            .flat_map(|i| lcp.kernel_owned(i.index, &config.addresses_of(&i.name)).into_iter().map(|a| (&*i.name, a)))
            .collect();
        let with = |mut c: Config, name: &str, a| {
            if let Ok(s) = settings(&mut c, name) {
                s.addresses.push(a);
            }
            c
        };
        // All at once, validated once; only when that is refused, one by one to find which.
        let all = owned.iter().fold(config.clone(), |c, &(name, a)| with(c, name, a));
        if owned.is_empty() || all.validate().is_ok() {
            return all;
        }
        owned.into_iter().fold(config.clone(), |out, (name, a)| {
            let trial = with(out.clone(), name, a);
            match trial.validate() {
                Ok(()) => trial,
                Err(e) => {
                    tracing::warn!("linux-cp: not using {a}, set on {name}'s TAP: {e}");
                    out
                }
            }
        })
    }

    /// True when routes the kernel changed wait to be mirrored (more than one slice of
    /// [`follow_kernel`](crate::lcp::follow::follow_kernel) took).
    pub fn kernel_routes_waiting(&self) -> bool {
        self.lcp.as_ref().is_some_and(|l| l.view_counts().waiting > 0)
    }

    /// The static neighbor entries: the configuration's (`config`, on `interfaces`) and the
    /// kernel's permanent ones on the TAPs for addresses the configuration does not have.
    pub(super) fn static_neighbors(&self, config: &Config, interfaces: &[Interface]) -> Vec<(u16, IpAddr, MacAddr)> {
        let index = |name: &str| interfaces.iter().find(|i| i.name == name).map(|i| i.index);
        let mut out: Vec<(u16, IpAddr, MacAddr)> =
            config.neighbors.iter().filter_map(|n| Some((index(&n.interface)?, n.address, n.mac.0))).collect();
        let kernel = self.lcp.as_ref().map(|l| l.permanent_neighbors()).unwrap_or_default();
        for k in kernel {
            if !out.iter().any(|o| (o.0, o.1) == (k.0, k.1)) {
                out.push(k);
            }
        }
        out
    }

    /// The ifIndex sFlow reports for each interface: with `sflow.if-index: linux`, its TAP's
    /// Linux ifindex.
    pub(super) fn sflow_if_indices(&self) -> crate::sflow::IfIndices {
        let linux = self.config.sflow.as_ref().is_some_and(|s| s.if_index == crate::sflow::IfIndexSource::Linux);
        match &self.lcp {
            Some(lcp) if linux => {
                crate::sflow::IfIndices::mapped(lcp.pairs().map(|(index, _, ifindex, _)| (index, ifindex)))
            }
            _ => crate::sflow::IfIndices::default(),
        }
    }

    /// Brings the TAPs in step with the interfaces: admin state, MTU, carrier.
    pub(super) fn sync_taps(&mut self) {
        let Some(mut lcp) = self.lcp.take() else { return };
        lcp.sync(&self.interfaces, |i| self.link(i).oper_up.get() != 0);
        self.lcp = Some(lcp);
    }

    /// Sets the configured addresses on the TAPs (again: one removed in Linux is back), and
    /// removes those the configuration no longer has.
    pub(super) fn assert_tap_addresses(&mut self) {
        let Some(lcp) = &mut self.lcp else { return };
        let names: Vec<(u16, &str)> = self.interfaces.iter().map(|i| (i.index, i.name.as_str())).collect();
        lcp.assert_addresses(|index| {
            let name = names.iter().find(|(i, _)| *i == index).map_or("", |(_, n)| n);
            self.config.addresses_of(name)
        });
    }
}

impl KernelFollower for Dataplane {
    fn linux_cp(&self) -> Option<&LinuxCp> {
        self.lcp.as_ref()
    }

    fn kernel_routes_mut(&mut self) -> &mut KernelRoutes {
        &mut self.routing.kernel
    }

    fn neighbor_event(&mut self, event: Event) -> bool {
        self.neighbors.table.on_event(event, Instant::now())
    }

    fn refresh_static_neighbors(&mut self) {
        let all = self.static_neighbors(&self.config, &self.interfaces);
        self.neighbors.table.set_statics(all, Instant::now());
    }

    /// A change the interface cannot take is undone on the TAP.
    fn follow_taps(&mut self, links: &[(u16, LinkFacts)]) {
        let link_sync = self.config.linux_cp.as_ref().is_some_and(|c| c.link_sync);
        let mut proposed = self.config.clone();
        for &(index, facts) in links {
            let Some(i) = self.interfaces.iter().find(|i| i.index == index) else { continue };
            // The TAP is taken as it is: where the interface does not follow it, the sync at
            // the end of the apply sets it back.
            if let Some(lcp) = &mut self.lcp {
                lcp.put_back(index, facts);
            }
            let Ok(s) = settings(&mut proposed, &i.name) else { continue };
            if facts.mtu != u32::from(i.mtu) {
                *s.mtu = Some(u16::try_from(facts.mtu).unwrap_or(u16::MAX));
            }
            if link_sync && facts.up != i.admin_up {
                *s.state = if facts.up { AdminState::Up } else { AdminState::Down };
            }
        }
        if let Err(e) = self.apply_running(&proposed) {
            tracing::warn!("linux-cp: a TAP's MTU or state was refused and is set back: {e}");
            if let Err(e) = self.apply_running(&self.config.clone()) {
                tracing::warn!("linux-cp: {e}");
            }
        }
    }
}

impl RouteSink for Dataplane {
    fn apply_routes(&mut self, batch: &[RouteChange]) -> Result<(), String> {
        Dataplane::apply_routes(self, batch).map_err(|e| e.to_string())
    }

    fn kernel_route_kind(&self, vrf: u16, prefix: IpPrefix) -> Option<usize> {
        crate::lcp::mirror::kernel_route_kind(&self.routing.rib, vrf, prefix)
    }

    /// Has worker 0 ask for the MAC of each next hop the neighbor table has no entry for (an
    /// ARP request, a neighbor solicitation), so that a route learned from the kernel is
    /// resolved before its first packet rather than by dropping that packet.
    fn resolve_next_hops(&mut self, targets: &[&Target]) {
        let now = Instant::now();
        let mut asked = std::collections::BTreeSet::new();
        for t in targets {
            let Target::Paths { hops, .. } = t else { continue };
            for h in hops {
                if self.neighbors.table.knows(h.tx_if, h.via) || !asked.insert((h.tx_if, h.via)) {
                    continue;
                }
                self.neighbors.table.on_event(Event::Resolving { interface: h.tx_if, address: h.via }, now);
                self.send_probe(Probe { interface: h.tx_if, address: h.via, mac: None });
            }
        }
    }
}
