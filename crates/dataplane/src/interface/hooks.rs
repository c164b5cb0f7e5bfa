//! What `interface-output` and `error-drop` ask of packet sampling (sFlow), as a trait the
//! composition of the features (`datapath`) implements: the nodes name no sampler, and with
//! sampling off each call costs the one `Option` test it costs today.

use crate::runtime::buffer::BufferPool;
use crate::runtime::graph::Features;
use crate::runtime::vector::Vector;

/// Sampling of what leaves by an interface, and of what is dropped.
pub trait TxSampling: Features {
    /// True when packets are sampled (sFlow is on).
    fn sampling(&self) -> bool;

    /// Samples the packets of vector `v`, all sent out of `port`, at that port's rate.
    fn sample_tx(&mut self, pool: &mut BufferPool, v: &mut Vector, port: u16, counters: &Self::Counters);

    /// Samples packet `i`, sent out of `port`, at that port's rate.
    fn sample_tx_one(&mut self, pool: &mut BufferPool, i: u32, port: u16, counters: &Self::Counters);

    /// Tells the sampler of the input port of interface `rx_if` that a packet it received was
    /// taken by this router, not forwarded (sFlow's `drops` of that port's sampler).
    fn not_forwarded(&self, rx_if: u16, counters: &Self::Counters);

    /// Takes discard samples of the packets of vector `v`, about to be dropped.
    fn sample_drops(&mut self, pool: &BufferPool, v: &Vector, counters: &Self::Counters);
}
