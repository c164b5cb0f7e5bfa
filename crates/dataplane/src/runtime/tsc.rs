//! The CPU time-stamp counter: cheap cycle timestamps for per-node accounting.

use std::time::{Duration, Instant};

/// Reads the time-stamp counter (about 22 ticks on the reference machine).
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no memory effects and is available on every x86-64 CPU.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        use std::sync::OnceLock;
        static START: OnceLock<Instant> = OnceLock::new();
        START.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// Ticks from `earlier` to `later`, 0 when the counter stepped back (an unpinned thread that
/// migrated to a CPU whose TSC is behind): never a panic, never a huge bogus interval.
#[inline(always)]
pub fn ticks(earlier: u64, later: u64) -> u64 {
    later.saturating_sub(earlier)
}

/// Measures the TSC frequency in Hz against the monotonic clock over `window`.
pub fn measure_hz(window: Duration) -> u64 {
    let (t0, c0) = (Instant::now(), now());
    std::thread::sleep(window);
    let (t1, c1) = (Instant::now(), now());
    (ticks(c0, c1) as f64 / (t1 - t0).as_secs_f64()) as u64
}

/// The TSC frequency, measured once per process (50 ms) and cached.
pub fn hz() -> u64 {
    use std::sync::OnceLock;
    static HZ: OnceLock<u64> = OnceLock::new();
    *HZ.get_or_init(|| measure_hz(Duration::from_millis(50)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_backward_step_is_zero_ticks() {
        assert_eq!(super::ticks(10, 25), 15);
        assert_eq!(super::ticks(25, 10), 0);
    }
}
