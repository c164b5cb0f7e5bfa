//! sFlow settings that change while the dataplane runs (`sflow sampling-rate`, `sflow enable`,
//! …): the main thread publishes them; each worker's samplers and the agent take them
//! between rounds, after one atomic load that finds nothing new.

/// A port the samplers sample: its 1-in-N rate and which packets (stages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataSource {
    /// The port (interface index).
    pub port: u16,
    /// One packet in `rate` is sampled.
    pub rate: u32,
    /// The packets sampled: [`super::RX`], [`super::TX`] or both.
    pub stages: u8,
}

/// The settings samplers and the agent follow.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Settings {
    /// The ports sampled.
    pub sources: Vec<DataSource>,
    /// Ports whose drops become discard samples.
    pub monitored: Vec<u16>,
    /// Bytes of each sampled frame exported.
    pub header_bytes: u16,
    /// Seconds between counter samples (0 = none).
    pub polling_interval: u32,
}

/// The current [`Settings`], published by the main thread.
pub type LiveSettings = crate::runtime::published::Published<Settings>;
