//! The running dataplane and its Linux control plane in step: what Linux changes on a TAP
//! (addresses, MTU, with `linux-cp.link-sync` its admin state) reaches the interface, and
//! the interfaces' state and configured addresses reach the TAPs.

use crate::config::{AdminState, Config};
use crate::control::cli::settings;
use crate::control::engine::Dataplane;
use crate::l3::rib::{RouteChange, Source};

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

    /// Takes in what Linux changed on the TAPs since the last call: addresses (applied as
    /// kernel-owned), an MTU (the interface's MTU, when the configuration takes it) and, with
    /// `link-sync`, the admin state. A change the interface cannot take is undone on the TAP.
    /// Call it often.
    pub(super) fn follow_kernel(&mut self) {
        let Some(update) = self.lcp.as_mut().and_then(|l| l.take_kernel_changes()) else { return };
        self.mirror_routes(&update.routes);
        if !update.taps {
            return;
        }
        let link_sync = self.config.linux_cp.as_ref().is_some_and(|c| c.link_sync);
        let mut proposed = self.config.clone();
        for &(index, facts) in &update.links {
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

    /// Mirrors the kernel's routes to `prefixes` (main table, lowest metric) into the FIB as
    /// source `kernel`, in one batch; when the batch is refused, route by route, leaving out
    /// (and logging) the ones the FIB refuses.
    fn mirror_routes(&mut self, prefixes: &[crate::config::IpPrefix]) {
        let Some(lcp) = &self.lcp else { return };
        let mut batch = Vec::new();
        for &p in prefixes {
            let want = lcp.kernel_target(p).unwrap_or_else(|why| {
                tracing::debug!("linux-cp: not mirroring the kernel's route to {p}: {why}");
                None
            });
            if self.kernel_routes.get(&(p.addr, p.len)) != want.as_ref() {
                batch.push(RouteChange { prefix: p.addr, len: p.len, source: Source::Kernel, target: want });
            }
        }
        if batch.is_empty() {
            return;
        }
        let done = match self.apply_routes(&batch) {
            Ok(()) => batch,
            Err(_) => batch
                .into_iter()
                .filter(|c| {
                    self.apply_routes(std::slice::from_ref(c))
                        .map_err(|e| tracing::warn!("linux-cp: the kernel's route is not mirrored: {e}"))
                        .is_ok()
                })
                .collect(),
        };
        for c in done {
            match c.target {
                Some(t) => self.kernel_routes.insert((c.prefix, c.len), t),
                None => self.kernel_routes.remove(&(c.prefix, c.len)),
            };
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
