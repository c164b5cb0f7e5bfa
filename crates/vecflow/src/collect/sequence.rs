//! Sequence numbers in serial-number arithmetic (RFC 1982): a 32-bit number that wraps, where
//! "ahead" means less than 2³¹ steps forward. A number that is not ahead of the highest one
//! seen is late (reordered) or repeated, never a gap; a late number within the last
//! [`WINDOW`] fills the gap its absence had opened.

/// How many numbers behind the highest are remembered, to tell a late arrival from a repeat.
pub const WINDOW: u32 = 128;

/// Where a sequence number falls relative to the highest one seen so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The first number seen (or the first after [`Sequence::restart`]).
    First,
    /// Ahead of the highest so far; `missed` numbers were skipped.
    Ahead {
        /// Numbers between the previous highest and this one that were not seen (yet).
        missed: u32,
    },
    /// At or behind the highest so far.
    Behind {
        /// True when it fills a gap counted earlier (a late arrival within the window); false
        /// for a repeat, or a number older than the window.
        filled: bool,
    },
}

/// The highest sequence number seen of one stream, and which of the [`WINDOW`] numbers below
/// it were seen.
#[derive(Debug, Default, Clone, Copy)]
pub struct Sequence {
    highest: Option<u32>,
    /// Bit k: number `highest − k` was seen.
    seen: u128,
}

/// Steps forward by at least this much count as behind (serial-number arithmetic).
const HALF: u32 = 1 << 31;

impl Sequence {
    /// True when `seq` would be [`Step::Behind`].
    pub fn is_behind(&self, seq: u32) -> bool {
        self.highest.is_some_and(|h| {
            let d = seq.wrapping_sub(h);
            d == 0 || d >= HALF
        })
    }

    /// Places `seq` and, unless it is behind, makes it the highest.
    pub fn step(&mut self, seq: u32) -> Step {
        let Some(h) = self.highest else {
            self.restart(seq);
            return Step::First;
        };
        if self.is_behind(seq) {
            let back = h.wrapping_sub(seq);
            let bit = if back < WINDOW { 1u128 << back } else { 0 };
            let filled = self.seen & bit == 0 && bit != 0;
            self.seen |= bit;
            return Step::Behind { filled };
        }
        let ahead = seq.wrapping_sub(h);
        self.seen = if ahead < WINDOW { (self.seen << ahead) | 1 } else { 1 };
        self.highest = Some(seq);
        Step::Ahead { missed: ahead - 1 }
    }

    /// Starts over at `seq` (the sender restarted). Numbers below it were never counted
    /// missing, so they are marked seen.
    pub fn restart(&mut self, seq: u32) {
        self.highest = Some(seq);
        self.seen = u128::MAX;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_reordering_and_wrap() {
        let mut s = Sequence::default();
        assert_eq!(s.step(u32::MAX - 2), Step::First);
        assert_eq!(s.step(u32::MAX - 3), Step::Behind { filled: false }, "never counted missing");
        assert_eq!(s.step(u32::MAX), Step::Ahead { missed: 1 });
        assert_eq!(s.step(u32::MAX - 1), Step::Behind { filled: true }, "late, not a gap of 2^32 - 2");
        assert_eq!(s.step(u32::MAX - 1), Step::Behind { filled: false }, "repeated");
        assert_eq!(s.step(u32::MAX), Step::Behind { filled: false }, "repeated");
        assert_eq!(s.step(1), Step::Ahead { missed: 1 }, "across the wrap: 0 was skipped");
        assert_eq!(s.step(0), Step::Behind { filled: true });
        assert!(s.is_behind(1) && !s.is_behind(2));
        assert_eq!(s.step(1 + WINDOW + 5), Step::Ahead { missed: WINDOW + 4 });
        assert_eq!(s.step(3), Step::Behind { filled: false }, "older than the window");
        assert_eq!(s.step(7), Step::Behind { filled: true }, "inside the window");
        s.restart(10);
        assert_eq!(s.step(9), Step::Behind { filled: false });
        assert_eq!(s.step(11), Step::Ahead { missed: 0 });
    }
}
