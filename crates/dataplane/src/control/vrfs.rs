//! The VRFs of a running dataplane as `show vrf` and the metrics report them.

use super::engine::Dataplane;
use crate::l3::vrf::DEFAULT_VRF;
use serde::Serialize;

/// The default table's id, as Linux numbers its main table.
pub const MAIN_TABLE: u32 = 254;

/// One routing table: the default one or a VRF's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VrfSummary {
    /// Its name (`default` for the default table).
    pub name: String,
    /// Its table id ([`MAIN_TABLE`] for the default table).
    pub table: u32,
    /// IPv4 routes in its FIB.
    pub ipv4_routes: usize,
    /// IPv6 routes in its FIB.
    pub ipv6_routes: usize,
    /// The interfaces and sub-interfaces in it, by index.
    pub interfaces: Vec<String>,
}

impl Dataplane {
    /// The default table, then each VRF by name.
    pub fn vrf_summaries(&self) -> Vec<VrfSummary> {
        let default = std::iter::once(("default", DEFAULT_VRF, MAIN_TABLE));
        let fib = &self.routing.fib;
        default
            .chain(self.routing.vrfs.iter())
            .map(|(name, index, table)| {
                let (ipv4_routes, ipv6_routes) = match index {
                    DEFAULT_VRF => (fib.ip4.len(), fib.ip6.len()),
                    _ => (fib.vrf_ip4(index).map_or(0, |w| w.len()), fib.vrf_ip6(index).map_or(0, |w| w.len())),
                };
                let interfaces = self.interfaces.iter().filter(|i| i.vrf == index).map(|i| i.name.clone()).collect();
                VrfSummary { name: name.to_string(), table, ipv4_routes, ipv6_routes, interfaces }
            })
            .collect()
    }
}
