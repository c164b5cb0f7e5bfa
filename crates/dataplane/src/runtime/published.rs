//! A value the main thread publishes and worker-side readers pick up between rounds: the
//! reader keeps the generation it last took, and finding nothing new costs it one atomic
//! load. Used for trace requests and live sFlow settings.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A published value and a generation that moves at every change.
#[derive(Debug, Default)]
pub struct Published<T> {
    generation: AtomicU64,
    value: Mutex<T>,
}

impl<T: Clone> Published<T> {
    /// Starts with `value`, already published (a reader that has seen nothing takes it).
    pub fn new(value: T) -> Self {
        Published { generation: AtomicU64::new(1), value: Mutex::new(value) }
    }

    /// Publishes `value`.
    pub fn set(&self, value: T) {
        *self.value.lock().unwrap_or_else(|p| p.into_inner()) = value;
        self.generation.fetch_add(1, Relaxed);
    }

    /// The value, if it changed since generation `seen` (which is then updated).
    #[inline]
    pub fn changed_since(&self, seen: &mut u64) -> Option<T> {
        let g = self.generation.load(Relaxed);
        if g == *seen {
            return None;
        }
        *seen = g;
        Some(self.value.lock().unwrap_or_else(|p| p.into_inner()).clone())
    }
}
