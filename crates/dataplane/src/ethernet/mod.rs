//! Ethernet: `ethernet-input` (frame checks, destination MAC, 802.1Q, dispatch by interface
//! mode and ethertype) and `l2-xconnect`.

pub mod dst;
pub mod input;
pub mod l2_xconnect;

use crate::runtime::buffer::BufferPool;
use crate::runtime::graph::Features;
use crate::runtime::vector::Vector;

/// What `ethernet-input` asks of packet sampling (sFlow), as a trait the composition of the
/// features (`datapath`) implements: the node names no sampler, and with sampling off a call
/// costs the one `Option` test it costs today.
pub trait RxSampling: Features {
    /// Samples the packets of vector `v`, received on `port`, at that port's rate.
    fn sample_rx(&mut self, pool: &mut BufferPool, v: &mut Vector, port: u16, counters: &Self::Counters);
}
