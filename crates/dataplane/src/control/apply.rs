//! Live changes of a running dataplane: a whole new configuration applied all or nothing, and
//! the plan of what it would change.

use super::engine::{ApplyError, Dataplane};
use super::ports::with_kernel_mtus;
use super::sflow::sflow_settings;
use crate::config::Config;
use crate::interface::build::build_interfaces;
use crate::l3::configured;
use crate::l3::rib::Source;
use crate::l3::vrf::VrfIds;
use std::time::Instant;

impl Dataplane {
    /// Changes the running dataplane to `new`, all or nothing: the whole configuration is
    /// validated first, and a change only a restart can make refuses it all. Interface facts,
    /// adjacencies, labels and neighbors change through one table snapshot swap, routes
    /// through the FIB's batch; a worker never sees a FIB entry naming an adjacency its
    /// snapshot does not have, so interfaces the change does not touch lose no packets.
    pub fn apply(&mut self, new: &Config) -> Result<(), ApplyError> {
        self.apply_running(new)?;
        self.assert_tap_addresses();
        Ok(())
    }

    /// [`Dataplane::apply`], but the configured addresses are not set on the TAPs again
    /// (a change that comes from Linux leaves Linux's addresses as they are).
    pub(super) fn apply_running(&mut self, new: &Config) -> Result<(), ApplyError> {
        let new = self.admissible(new)?;
        let vrfs = self.routing.vrfs.assign(&new.vrfs);
        let interfaces =
            build_interfaces(&self.with_kernel_addresses(&new).interfaces, new.workers.count, |v| vrfs.index(v));
        let mut batch = crate::l3::changes(
            &crate::l3::connected(&self.interfaces, self.config.linux_cp.is_some()),
            &crate::l3::connected(&interfaces, new.linux_cp.is_some()),
            Source::Connected,
        );
        batch.extend(crate::l3::changes(
            &configured(&self.config.routes, &self.interfaces, &self.routing.vrfs),
            &configured(&new.routes, &interfaces, &vrfs),
            Source::Config,
        ));
        // The tables of the VRFs of both configurations while routes move between them; those
        // of removed VRFs go once their routes have.
        let indices = |ids: &VrfIds| ids.iter().map(|(_, i, _)| i).collect::<Vec<u16>>();
        let (old_vrfs, new_vrfs) = (indices(&self.routing.vrfs), indices(&vrfs));
        self.routing.fib.set_vrfs(&[&old_vrfs[..], &new_vrfs[..]].concat()).map_err(ApplyError::Tables)?;
        let now = Instant::now();
        let old_statics = self.static_neighbors(&self.config, &self.interfaces);
        let live = self.liveness();
        let objects = &mut self.routing.rib.objects;
        let (base, label_refs) = match super::tables::build_l3(&new, &interfaces, &vrfs, objects, &live) {
            Ok(built) => built,
            Err(e) => {
                self.routing.fib.set_vrfs(&old_vrfs).expect("only tables are dropped");
                return Err(e.into());
            }
        };
        let applied = match self.routing.rib.apply(&batch, &live) {
            Ok(a) => a,
            Err(e) => {
                label_refs.into_iter().for_each(|r| self.routing.rib.objects.release(r));
                self.routing.fib.set_vrfs(&old_vrfs).expect("only tables are dropped");
                return Err(e.into());
            }
        };
        self.neighbors.table.set_statics(self.static_neighbors(&new, &interfaces), now);
        let old_tables = self.tables.clone();
        let flows = super::tables::build_flows(&new, &interfaces);
        self.publish_tables(&interfaces, &base, flows);
        if let Err(e) = self.routing.fib.apply(&applied.fib) {
            let back = self.routing.rib.rollback(applied);
            self.put_back(&back);
            label_refs.into_iter().for_each(|r| self.routing.rib.objects.release(r));
            self.neighbors.table.set_statics(old_statics, now);
            self.publisher.publish((*old_tables).clone());
            self.tables = self.publisher.current();
            self.routing.fib.set_vrfs(&old_vrfs).expect("only tables are dropped");
            return Err(e.into());
        }
        self.routing.rib.commit(applied);
        for r in std::mem::replace(&mut self.routing.label_refs, label_refs) {
            self.routing.rib.objects.release(r);
        }
        for i in &interfaces {
            let link = &self.ports.links[usize::from(i.index)];
            link.admin_up.set(u64::from(i.admin_up));
            if self.ports.host(i.index).is_none() {
                link.oper_up.set(u64::from(i.admin_up));
            }
        }
        if let Some(sf) = &mut self.sflow {
            let settings = sflow_settings(&new, &interfaces);
            sf.sources.clone_from(&settings.sources);
            sf.live.set(settings);
        }
        self.interfaces = interfaces;
        self.routing.vrfs = vrfs;
        if new.flows != self.config.flows {
            self.cleared.flows = self.flow_hits_total();
        }
        self.config = new;
        // Subnets may have come or gone: so may host routes. Then no FIB entry names what
        // this change left unused, and once no worker holds a lookup made before, it is freed.
        self.sync_host_routes();
        self.follow_liveness();
        self.routing.fib.synchronize();
        self.routing.rib.objects.settle();
        if old_vrfs.iter().any(|i| !new_vrfs.contains(i)) {
            // Removed VRFs: no interface and no route is in them any more.
            self.routing.fib.set_vrfs(&new_vrfs).expect("only tables are dropped");
            self.republish();
        }
        self.sync_taps();
        Ok(())
    }

    /// `new` as this dataplane would run it (af-packet MTUs taken from the kernel), if it
    /// is valid and changes nothing only a restart can.
    fn admissible(&self, new: &Config) -> Result<Config, ApplyError> {
        new.validate()?;
        let hosts = self
            .ports
            .hosts
            .iter()
            .filter_map(|h| Some((&self.interfaces.iter().find(|x| x.index == h.index)?.name, &h.link)));
        let new = with_kernel_mtus(new, hosts);
        new.validate()?;
        match self.config.needs_restart(&new) {
            Some(field) => Err(ApplyError::NeedsRestart(field)),
            None => Ok(new),
        }
    }

    /// What [`Dataplane::apply`] of `new` would change, as the commands that would make the
    /// same change one by one; nothing is changed.
    pub fn plan(&self, new: &Config) -> Result<Vec<String>, ApplyError> {
        Ok(crate::control::plan::plan(&self.config, &self.admissible(new)?))
    }
}
