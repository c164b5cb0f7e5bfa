//! The worker side above the runtime and the features: the state each feature keeps per
//! worker ([`Features`]), the `match` that runs a node on a vector (the one place that knows
//! every node), the worker's counters and the worker threads.

mod counters;
mod hooks;
pub mod registry;
mod tables;
mod views;
pub mod worker;

pub use counters::WorkerCounters;
pub use tables::Tables;

use crate::l3::fib::Fibs;
use crate::runtime::buffer::BufferPool;
use crate::runtime::graph::NodeId;
use crate::runtime::vector::VecHandle;
use crate::{drivers, ethernet, flows, interface, ip4, ip6, lcp, mpls, neighbor, sflow};
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

    const ERROR_DROP: NodeId = interface::nodes::ERROR_DROP;

    fn dispatch(g: &mut Graph, node: NodeId, v: VecHandle) {
        match node {
            ethernet::nodes::ETHERNET_INPUT => ethernet::input::run(g, v),
            ethernet::nodes::L2_XCONNECT => ethernet::l2_xconnect::run(g, v),
            ip4::nodes::IP4_INPUT => ip4::input::run(g, v),
            ip4::nodes::IP4_LOOKUP => ip4::lookup::run(g, v),
            ip4::nodes::IP4_REWRITE => ip4::rewrite::run(g, v),
            mpls::nodes::MPLS_INPUT => mpls::input::run(g, v),
            mpls::nodes::MPLS_LOOKUP => mpls::lookup::run(g, v),
            mpls::nodes::MPLS_REWRITE => mpls::rewrite::run(g, v),
            interface::nodes::INTERFACE_OUTPUT => interface::output::run(g, v),
            ip4::nodes::IP4_LOCAL => ip4::local::run(g, v),
            ip4::nodes::IP4_ARP => ip4::arp::run(g, v),
            ip4::nodes::IP4_FRAG => ip4::frag::run(g, v),
            ip4::nodes::ICMP4_ERROR => ip4::icmp_error::run(g, v),
            ip4::nodes::ARP_INPUT => ip4::arp_input::run(g, v),
            ip6::nodes::IP6_INPUT => ip6::input::run(g, v),
            ip6::nodes::IP6_LOOKUP => ip6::lookup::run(g, v),
            ip6::nodes::IP6_REWRITE => ip6::rewrite::run(g, v),
            flows::nodes::FLOW_CLASSIFY => flows::classify::run(g, v),
            ip6::nodes::IP6_LOCAL => ip6::local::run(g, v),
            ip6::nodes::IP6_ND => ip6::nd::run(g, v),
            ip6::nodes::ICMP6_ERROR => ip6::icmp_error::run(g, v),
            lcp::nodes::LINUX_CP_PUNT => lcp::worker::punt(g, v),
            drivers::nodes::GENERATOR_TX => drivers::generator::sink(g, v),
            drivers::nodes::AF_PACKET_TX => drivers::af_packet::tx(g, v),
            drivers::nodes::AF_XDP_TX => drivers::af_xdp::tx(g, v),
            drivers::nodes::PCAP_TX => drivers::pcap::tx(g, v),
            interface::nodes::ERROR_DROP => interface::error_drop::run(g, v),
            // Input nodes are polled, not queued; every other declared node has its arm above
            // (a test dispatches each).
            other => unreachable!("node {} ({}) is not queued", other.index(), registry::NODES[other.index()].name),
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
