//! Ethernet: `ethernet-input` (frame checks, destination MAC, 802.1Q, dispatch by interface
//! mode and ethertype) and `l2-xconnect`.

pub mod dst;
pub mod fused;
pub mod input;
pub mod l2_xconnect;

use crate::interface::InterfaceWorker;
use crate::l3::HostCopy;
use crate::runtime::buffer::BufferPool;
use crate::runtime::graph::Features;
use crate::runtime::isa::Isa;
use crate::runtime::vector::Vector;
use fused::RxTally;
use wire::MacAddr;

/// A worker's state as `ethernet-input` and `l2-xconnect` see it: the interfaces, the
/// receive sampler, whether a host (linux-cp) takes the router's control traffic, and the
/// layer 3 inputs' halves of the fused fast paths ([`fused`]).
pub trait EthernetWorker: InterfaceWorker + RxSampling + HostCopy {
    /// The fused `ethernet-input` → `ip4-input` pass over the frames `indices` of `pool`,
    /// received on an interface with IPv4 and MAC `mac` that accepts frames of 14 to
    /// `max_frame` bytes: what `ethernet-input` counts of them when every one is a plain IPv4
    /// packet, `None` as soon as one is not. `isa` picks the variant.
    fn plain_ip4(isa: Isa, pool: &BufferPool, indices: &[u32], max_frame: u16, mac: MacAddr) -> Option<RxTally>;

    /// The same for `ip6-input` on an interface with IPv6.
    fn plain_ip6(pool: &BufferPool, indices: &[u32], max_frame: u16, mac: MacAddr) -> Option<RxTally>;
}

/// What `ethernet-input` asks of packet sampling (sFlow), as a trait the composition of the
/// features (`datapath`) implements: the node names no sampler, and with sampling off a call
/// costs the one `Option` test it costs today.
pub trait RxSampling: Features {
    /// Samples the packets of vector `v`, received on `port`, at that port's rate.
    fn sample_rx(&mut self, pool: &mut BufferPool, v: &mut Vector, port: u16, counters: &Self::Counters);
}
