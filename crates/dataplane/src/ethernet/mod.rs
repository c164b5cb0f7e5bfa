//! Ethernet: `ethernet-input` (frame checks, destination MAC, 802.1Q, dispatch by interface
//! mode and ethertype) and `l2-xconnect`.

pub mod drops;
pub mod dst;
pub mod fused;
pub mod input;
pub mod l2_xconnect;
pub mod nodes;

use crate::interface::InterfaceWorker;
use crate::l3::HostCopy;
use crate::runtime::buffer::BufferPool;
use crate::runtime::graph::{Features, NodeId};
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

    /// The same for `mpls-input` on an interface with MPLS.
    fn plain_mpls(pool: &BufferPool, indices: &[u32], max_frame: u16, mac: MacAddr) -> Option<RxTally>;

    /// The nodes of other features `ethernet-input` hands frames to.
    const NEXT: EthernetNext;
}

/// The nodes `ethernet-input` hands frames to beyond its own folder, as `datapath` wires them:
/// the features that own them stand above Ethernet, so it names none of them.
#[derive(Debug, Clone, Copy)]
pub struct EthernetNext {
    /// IPv4 frames.
    pub ip4_input: NodeId,
    /// Plain IPv4 frames, once the fused pass checked them for `ip4-input`.
    pub ip4_lookup: NodeId,
    /// ARP frames.
    pub arp_input: NodeId,
    /// IPv6 frames.
    pub ip6_input: NodeId,
    /// Plain IPv6 frames, once the fused pass checked them for `ip6-input`.
    pub ip6_lookup: NodeId,
    /// MPLS frames.
    pub mpls_input: NodeId,
    /// Plain MPLS frames, once the fused pass checked them for `mpls-input`.
    pub mpls_lookup: NodeId,
    /// Frames of interfaces with flow rules.
    pub flow_classify: NodeId,
    /// LLDP, up the interface's TAP when linux-cp is on.
    pub linux_cp_punt: NodeId,
}

/// What `ethernet-input` asks of packet sampling (sFlow), as a trait the composition of the
/// features (`datapath`) implements: the node names no sampler, and with sampling off a call
/// costs the one `Option` test it costs today.
pub trait RxSampling: Features {
    /// Samples the packets of vector `v`, received on `port`, at that port's rate.
    fn sample_rx(&mut self, pool: &mut BufferPool, v: &mut Vector, port: u16, counters: &Self::Counters);
}
