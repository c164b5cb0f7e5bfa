//! Counters that wrap (sample pools, drops, interface counters), accumulated step by step: the
//! total is the sum of the differences between consecutive readings, each taken modulo the
//! counter's width, so any number of wraps is counted as long as no two consecutive readings
//! are a whole width apart.

/// A wrapping counter of `bits` bits and the total it advanced by.
#[derive(Debug, Default, Clone, Copy)]
pub struct Accumulated {
    last: Option<u64>,
    total: u128,
}

impl Accumulated {
    /// Adds the step from the previous reading to `now` modulo 2^`bits` (32 or 64); the first
    /// reading only sets the baseline.
    pub fn advance(&mut self, now: u64, bits: u32) {
        if let Some(last) = self.last {
            let mask = u64::MAX >> (64 - bits);
            self.total += u128::from(now.wrapping_sub(last) & mask);
        }
        self.last = Some(now);
    }

    /// Takes `now` as the new baseline without adding a step (the sender restarted).
    pub fn rebase(&mut self, now: u64) {
        self.last = Some(now);
    }

    /// The sum of all steps.
    pub fn total(&self) -> u128 {
        self.total
    }

    /// The sum of all steps, as u64 (saturating; 2⁶⁴ packets is beyond any capture).
    pub fn total_u64(&self) -> u64 {
        u64::try_from(self.total).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_of_32_and_64_bits() {
        let mut a = Accumulated::default();
        for v in [u64::from(u32::MAX) - 5, 4, 3_000_000_000, 10] {
            a.advance(v, 32);
        }
        assert_eq!(a.total(), 10 + 3_000_000_000 - 4 + (1 << 32) - 3_000_000_000 + 10);
        let mut b = Accumulated::default();
        for v in [u64::MAX, 1, u64::MAX - 1] {
            b.advance(v, 64);
        }
        assert_eq!(b.total(), 2 + u128::from(u64::MAX) - 2);
        b.rebase(7);
        b.advance(9, 64);
        assert_eq!(b.total(), u128::from(u64::MAX) + 2);
    }
}
