//! The routing tables the agent looks a sampled packet's source up in, for the source prefix
//! length of its `extended_router` record: the default table's, and each VRF's as the main
//! thread publishes them.

use crate::l3::fib::Fibs;
use crate::l3::vrf::{PublishedVrfs, VrfTables};
use std::net::IpAddr;
use std::sync::Arc;

/// The default table and the VRFs' tables, followed live.
pub struct SourceRoutes {
    fib: Fibs,
    published: Arc<PublishedVrfs>,
    seen: u64,
    vrfs: VrfTables,
}

impl SourceRoutes {
    /// The default table `fib` and the VRFs' tables as `published` gives them.
    pub fn new(fib: Fibs, published: Arc<PublishedVrfs>) -> Self {
        let mut seen = 0;
        let vrfs = published.changed_since(&mut seen).unwrap_or_default();
        SourceRoutes { fib, published, seen, vrfs }
    }

    /// Takes the VRFs' tables published since the last call, if any.
    pub fn refresh(&mut self) {
        if let Some(v) = self.published.changed_since(&mut self.seen) {
            self.vrfs = v;
        }
    }

    /// The length of the prefix `src` matches in the tables of the VRF of interface `input`;
    /// 0 without a match.
    pub fn prefix_len(&self, input: u16, src: IpAddr) -> u8 {
        self.vrfs.longest(&self.fib, self.vrfs.of(input), src).map_or(0, |l| l.prefix_len)
    }
}
