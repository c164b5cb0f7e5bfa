//! sFlow settings that change while the dataplane runs (`sflow sampling-rate`, `sflow enable`,
//! …): the main thread publishes them; each worker's samplers and the agent take them
//! between rounds, after one atomic load that finds nothing new.

/// The settings samplers and the agent follow.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Settings {
    /// Data sources: (port, 1-in-N, stages [`super::RX`] | [`super::TX`]).
    pub sources: Vec<(u16, u32, u8)>,
    /// Ports whose drops become discard samples.
    pub monitored: Vec<u16>,
    /// Bytes of each sampled frame exported.
    pub header_bytes: u16,
    /// Seconds between counter samples (0 = none).
    pub polling_interval: u32,
}

/// The current [`Settings`], published by the main thread.
pub type LiveSettings = crate::runtime::published::Published<Settings>;
