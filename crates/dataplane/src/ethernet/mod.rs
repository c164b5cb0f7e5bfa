//! Ethernet: `ethernet-input` (frame checks, destination MAC, 802.1Q, dispatch by interface
//! mode and ethertype) and `l2-xconnect`.

pub mod dst;
pub mod input;
pub mod l2_xconnect;

use crate::interface::InterfaceWorker;
use crate::l3::HostCopy;
use crate::runtime::buffer::BufferPool;
use crate::runtime::graph::Features;
use crate::runtime::vector::Vector;

/// A worker's state as `ethernet-input` and `l2-xconnect` see it: the interfaces, the
/// receive sampler and whether a host (linux-cp) takes the router's control traffic.
pub trait EthernetWorker: InterfaceWorker + RxSampling + HostCopy {}

impl<F: InterfaceWorker + RxSampling + HostCopy> EthernetWorker for F {}

/// What `ethernet-input` asks of packet sampling (sFlow), as a trait the composition of the
/// features (`datapath`) implements: the node names no sampler, and with sampling off a call
/// costs the one `Option` test it costs today.
pub trait RxSampling: Features {
    /// Samples the packets of vector `v`, received on `port`, at that port's rate.
    fn sample_rx(&mut self, pool: &mut BufferPool, v: &mut Vector, port: u16, counters: &Self::Counters);
}
