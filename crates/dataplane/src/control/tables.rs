//! What the configuration alone decides of the workers' L3 tables and flow rules, built on
//! the main thread at start and on every apply.

use crate::config::Config;
use crate::interface::Interface;
use crate::l3::objects::{Liveness, NextHop, Objects, Target};
use crate::l3::rib::RouteError;
use crate::l3::vrf::VrfIds;
use crate::l3::{L3, LabelEntry, LabelStack, LabelTable};
use crate::mpls::config::IMPLICIT_NULL;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

/// Builds what the configuration alone decides of the layer 3 tables: the static neighbors
/// and the label table (a pop names its VRF by its index in `vrfs`; a swap takes its
/// adjacency from `objects`, and the references are returned, to release when the labels are
/// replaced; none is kept when one cannot be made). Adjacencies and load-balance objects
/// come from `objects` when the tables are published ([`L3::with_objects`]).
pub fn build_l3(
    config: &Config,
    interfaces: &[Interface],
    vrfs: &VrfIds,
    objects: &mut Objects,
    live: Liveness,
) -> Result<(L3, Vec<u32>), RouteError> {
    let index: BTreeMap<&str, u16> = interfaces.iter().map(|i| (i.name.as_str(), i.index)).collect();
    let mut l3 = L3::default();
    for n in &config.neighbors {
        let i = index[n.interface.as_str()];
        match n.address {
            IpAddr::V4(a) => l3.neighbors.insert((i, a), n.mac.0),
            IpAddr::V6(a) => l3.neighbors6.insert((i, a), n.mac.0),
        };
    }
    let mut labels = Vec::new();
    let mut held = Vec::new();
    for l in &config.mpls.local_labels {
        let entry = match (l.via, &l.interface) {
            (Some(via), Some(n)) => {
                let hop = NextHop { via, tx_if: index[n.as_str()], weight: 1 };
                let target = Target::Paths { hops: vec![hop], push: LabelStack::EMPTY };
                let adj = match objects.acquire(&target, None, live) {
                    Ok(adj) => adj,
                    Err(full) => {
                        held.into_iter().for_each(|a| objects.release(a));
                        return Err(full.into());
                    }
                };
                held.push(adj);
                let out = if l.out_labels == [IMPLICIT_NULL] { &[][..] } else { &l.out_labels[..] };
                LabelEntry::Swap { adj, out: LabelStack::new(out) }
            }
            _ => LabelEntry::Pop { payload: l.payload, vrf: vrfs.index(l.vrf.as_deref()) },
        };
        l3.label_entries.push(entry);
        l3.entry_labels.push(l.label);
        labels.push((l.label, l3.label_entries.len() as u16));
    }
    l3.labels = LabelTable::new(labels);
    Ok((l3, held))
}

/// The flow rules of `config` over `interfaces`, as the workers' snapshot shares them.
pub fn build_flows(config: &Config, interfaces: &[Interface]) -> Arc<crate::flows::Flows> {
    Arc::new(crate::flows::build(&config.flows, &config.flow_cache, interfaces))
}
