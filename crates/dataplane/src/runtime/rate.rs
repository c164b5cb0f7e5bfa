//! A token bucket on the TSC, for the limits on what a worker sends or hands up.

/// `rate` tokens a second, at most `burst` saved up; starts full. Credit is kept in tokens
/// times TSC ticks a second, so that refilling is one multiply and no division.
#[derive(Debug, Clone, Copy)]
pub struct TokenBucket {
    rate: u64,
    burst: u64,
    hz: u64,
    credit: u64,
    last: u64,
}

impl TokenBucket {
    /// A full bucket of `burst` tokens refilled at `rate` a second (0: no limit), on a TSC of
    /// `hz` ticks a second.
    pub fn new(rate: u64, burst: u64, hz: u64) -> Self {
        let hz = hz.max(1);
        TokenBucket { rate, burst, hz, credit: burst * hz, last: 0 }
    }

    /// True (and one token spent) when there is a token at TSC `now`.
    pub fn take(&mut self, now: u64) -> bool {
        if self.rate == 0 {
            return true;
        }
        // At most a second's refill at once: no overflow, and a long pause fills the bucket.
        let elapsed = now.saturating_sub(self.last).min(self.hz);
        self.last = now;
        self.credit = (self.credit + elapsed * self.rate).min(self.burst * self.hz);
        if self.credit < self.hz {
            return false;
        }
        self.credit -= self.hz;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_rate() {
        let hz = 1_000_000;
        let mut b = TokenBucket::new(1000, 100, hz);
        assert_eq!((0..1000).filter(|_| b.take(10)).count(), 100, "the burst, then nothing at the same instant");
        assert_eq!((0..1000).filter(|_| b.take(10 + hz)).count(), 100, "a second later: full again, not more");
        assert_eq!((0..1000).filter(|_| b.take(10 + hz + hz / 100)).count(), 10, "10 ms later: 10 tokens");
        let mut unlimited = TokenBucket::new(0, 0, hz);
        assert!((0..10_000).all(|_| unlimited.take(0)));
    }
}
