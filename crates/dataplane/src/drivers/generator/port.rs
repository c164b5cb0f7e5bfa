//! The `generator-input` node: one interface's generator, its streams taken in turn, each
//! filling the vector as its rate and the free buffers allow.

use super::Stream;
use crate::drivers::DriversWorker;
use crate::drivers::GeneratorCounting;
use crate::runtime::graph::Graph;
use crate::runtime::vector::{VECTOR_SIZE, VecHandle};

/// The generator of one interface: its streams, taken in turn.
#[derive(Debug, Clone)]
pub struct GeneratorPort {
    /// Interface index.
    pub port: u16,
    streams: Vec<Stream>,
    next: usize,
}

impl GeneratorPort {
    /// A generator for interface `port` with compiled `streams`.
    pub fn new(port: u16, streams: Vec<Stream>) -> Self {
        GeneratorPort { port, streams, next: 0 }
    }

    /// The `generator-input` node: fills one vector (up to 256 frames) as the streams' rates
    /// and the free buffers allow. Returns `None` when there was nothing to send.
    pub fn poll<F: DriversWorker>(&mut self, g: &mut Graph<F>, now: u64) -> Option<VecHandle> {
        if self.streams.is_empty() {
            return None;
        }
        let v = g.vectors.alloc(self.port);
        let mut n = 0;
        for _ in 0..self.streams.len() {
            let k = self.next;
            self.next = (k + 1) % self.streams.len();
            let s = &mut self.streams[k];
            let want = (VECTOR_SIZE - n).min(usize::try_from(s.remaining).unwrap_or(usize::MAX));
            let allowed = match &mut s.rate {
                Some(r) => r.take(now, want),
                None => want,
            };
            let slots = &mut g.vectors[v].slots_mut()[n..n + allowed];
            let got = g.pool.alloc(slots);
            if got < allowed {
                g.counters.generator().no_buffer.add(1);
                if let Some(r) = &mut s.rate {
                    r.refund(allowed - got);
                }
            }
            s.fill(&mut g.pool, &g.vectors[v].slots_mut()[n..n + got], self.port);
            s.remaining -= got as u64;
            n += got;
            if n == VECTOR_SIZE {
                break;
            }
        }
        if n == 0 {
            g.vectors.free(v);
            return None;
        }
        g.vectors[v].set_len(n);
        g.counters.generator().generated.add(n as u64);
        Some(v)
    }
}
