//! sFlow settings that change while the dataplane runs (`sflow sampling-rate`, `sflow enable`,
//! …): the main thread publishes them here; each worker's samplers and the agent take them
//! between rounds, after one atomic load that finds nothing new.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

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

/// The current [`Settings`] and a generation that moves at every change.
#[derive(Debug, Default)]
pub struct LiveSettings {
    generation: AtomicU64,
    settings: Mutex<Settings>,
}

impl LiveSettings {
    /// Settings starting as `s`.
    pub fn new(s: Settings) -> Self {
        LiveSettings { generation: AtomicU64::new(1), settings: Mutex::new(s) }
    }

    /// Publishes `s`.
    pub fn set(&self, s: Settings) {
        *self.settings.lock().unwrap_or_else(|p| p.into_inner()) = s;
        self.generation.fetch_add(1, Relaxed);
    }

    /// The settings, if they changed since generation `seen` (which is then updated).
    #[inline]
    pub fn changed_since(&self, seen: &mut u64) -> Option<Settings> {
        let g = self.generation.load(Relaxed);
        if g == *seen {
            return None;
        }
        *seen = g;
        Some(self.settings.lock().unwrap_or_else(|p| p.into_inner()).clone())
    }
}
