//! Pacing: how many packets an rx input node may emit now to keep a configured rate.

use crate::runtime::vector::VECTOR_SIZE;

/// A token bucket on the TSC, releasing at least ~100 µs of packets at a time (a burst is
/// capped at one vector).
#[derive(Debug, Clone)]
pub struct Rate {
    pps: u64,
    hz: u64,
    credit: u64,
    last: u64,
    min_release: u64,
}

impl Rate {
    /// Paces `pps` packets per second on a TSC ticking at `hz`.
    pub fn new(pps: u64, hz: u64) -> Self {
        Rate { pps, hz, credit: 0, last: 0, min_release: (pps / 10_000).clamp(1, VECTOR_SIZE as u64) }
    }

    /// Packets allowed now, at most `want`.
    pub fn take(&mut self, now: u64, want: usize) -> usize {
        if self.last == 0 {
            self.last = now;
        }
        let dt = now.saturating_sub(self.last).min(self.hz);
        self.last = now;
        self.credit = (self.credit + dt * self.pps).min(VECTOR_SIZE as u64 * self.hz);
        let avail = self.credit / self.hz;
        if avail < self.min_release.min(want as u64) {
            return 0;
        }
        let n = avail.min(want as u64);
        self.credit -= n * self.hz;
        n as usize
    }

    /// Gives back packets that were allowed but not sent.
    pub fn refund(&mut self, n: usize) {
        self.credit += n as u64 * self.hz;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_releases_at_the_configured_pace() {
        let hz = 1_000_000_000;
        let mut r = Rate::new(1_000_000, hz);
        assert_eq!(r.take(1, 256), 0);
        // 1 ms at 1 Mpps = 1000 packets, capped at one vector.
        assert_eq!(r.take(1 + 1_000_000, 256), 256);
        let mut sent = 0;
        let mut t = 1 + 1_000_000;
        for _ in 0..1000 {
            t += 10_000; // 10 µs = 10 packets of credit each
            sent += r.take(t, 256);
        }
        // 10 ms -> 10 000 packets, plus what was left over from the first millisecond.
        assert!((10_000..=10_744).contains(&sent), "sent {sent}");
    }
}
