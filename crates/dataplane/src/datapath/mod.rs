//! The worker side above the runtime and the features: the state each feature keeps per
//! worker ([`Features`]), the `match` that runs a node on a vector (the one place that knows
//! every node), the worker's counters and the worker threads.

mod counters;
mod hooks;
mod tables;
mod views;
pub mod worker;

pub use counters::WorkerCounters;
pub use tables::Tables;

use crate::l3::fib::Fibs;
use crate::runtime::buffer::BufferPool;
use crate::runtime::graph::NodeId;
use crate::runtime::vector::VecHandle;
use crate::{drivers, ethernet, flows, interface, ip4, ip6, mpls, neighbor, sflow};
use std::sync::Arc;

/// One worker's graph, with every feature's state.
pub type Graph = crate::runtime::graph::Graph<Features>;

/// The state each feature keeps per worker, one field per feature.
pub struct Features {
    /// The transmit side of its ports: AF_XDP and AF_PACKET sockets, capture files.
    pub drivers: drivers::WorkerPorts,
    /// Forwarding tables: interfaces and adjacencies (an immutable snapshot).
    pub tables: Arc<Tables>,
    /// The IPv4 and IPv6 FIBs (updated in place by the main thread).
    pub fib: Fibs,
    /// sFlow samplers and sample ring, when sFlow is on.
    pub sflow: Option<sflow::SflowWorker<WorkerCounters>>,
    /// The worker's megaflow cache for `flow-classify`.
    pub flow_cache: flows::classify::WorkerCache,
    /// Its line to the main thread and the limits on packets it makes itself.
    pub punt: neighbor::punt::Punt,
    /// Its channels to linux-cp's control thread, when linux-cp is on.
    pub lcp: Option<crate::lcp::LcpWorker>,
}

impl crate::runtime::graph::Features for Features {
    type Counters = WorkerCounters;

    fn dispatch(g: &mut Graph, node: NodeId, v: VecHandle) {
        match node {
            NodeId::EthernetInput => ethernet::input::run(g, v),
            NodeId::L2Xconnect => ethernet::l2_xconnect::run(g, v),
            NodeId::Ip4Input => ip4::input::run(g, v),
            NodeId::Ip4Lookup => ip4::lookup::run(g, v),
            NodeId::Ip4Rewrite => ip4::rewrite::run(g, v),
            NodeId::MplsInput => mpls::input::run(g, v),
            NodeId::MplsLookup => mpls::lookup::run(g, v),
            NodeId::MplsRewrite => mpls::rewrite::run(g, v),
            NodeId::InterfaceOutput => interface::output::run(g, v),
            NodeId::Ip4Local => ip4::local::run(g, v),
            NodeId::Ip4Arp => ip4::arp::run(g, v),
            NodeId::Ip4Frag => ip4::frag::run(g, v),
            NodeId::Icmp4Error => ip4::icmp_error::run(g, v),
            NodeId::ArpInput => ip4::arp_input::run(g, v),
            NodeId::Ip6Input => ip6::input::run(g, v),
            NodeId::Ip6Lookup => ip6::lookup::run(g, v),
            NodeId::Ip6Rewrite => ip6::rewrite::run(g, v),
            NodeId::FlowClassify => flows::classify::run(g, v),
            NodeId::Ip6Local => ip6::local::run(g, v),
            NodeId::Ip6Nd => ip6::nd::run(g, v),
            NodeId::Icmp6Error => ip6::icmp_error::run(g, v),
            NodeId::LcpPunt => crate::lcp::worker::punt(g, v),
            NodeId::GeneratorTx => drivers::generator::sink(g, v),
            NodeId::AfPacketTx => drivers::af_packet::tx(g, v),
            NodeId::AfXdpTx => drivers::af_xdp::tx(g, v),
            NodeId::PcapTx => drivers::pcap::tx(g, v),
            NodeId::ErrorDrop => interface::error_drop::run(g, v),
            NodeId::GeneratorInput | NodeId::AfPacketInput | NodeId::AfXdpInput | NodeId::PcapInput => {
                unreachable!("input nodes are polled, not queued")
            }
        }
    }
}

impl Graph {
    /// A graph over the packet buffers of `pool`, forwarding with `tables` and `fib`.
    pub fn new(pool: BufferPool, tables: Arc<Tables>, fib: Fibs, counters: Arc<WorkerCounters>) -> Self {
        let features = Features {
            drivers: Default::default(),
            tables,
            fib,
            sflow: None,
            flow_cache: None,
            punt: neighbor::punt::Punt::new(None, None, crate::runtime::tsc::hz()),
            lcp: None,
        };
        Self::with_pool(pool, features, counters)
    }

    /// A graph over `pool` forwarding with the tables and FIB `config` builds, with counters
    /// of its own: for the crate's tests.
    #[cfg(test)]
    pub(crate) fn of_config(config: &crate::config::Config, pool: BufferPool) -> Self {
        let qsbr = Arc::new(crate::runtime::qsbr::Qsbr::new(1));
        let f = crate::control::routes::build_forwarding(config, qsbr).expect("a configuration that builds");
        Self::new(pool, f.tables, f.fib.fibs(), Arc::new(WorkerCounters::new()))
    }
}
