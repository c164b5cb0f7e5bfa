//! MPLS label stack entries (RFC 3032).

/// Length of one label stack entry.
pub const ENTRY_LEN: usize = 4;

/// One MPLS label stack entry: label (20 bits), traffic class (3), bottom of stack (1), TTL (8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MplsLabel {
    /// The 20-bit label value.
    pub label: u32,
    /// Traffic class (EXP) bits.
    pub tc: u8,
    /// Bottom-of-stack flag.
    pub bos: bool,
    /// Time to live.
    pub ttl: u8,
}

impl MplsLabel {
    /// Decodes an entry from its 32-bit wire value.
    pub fn from_u32(v: u32) -> Self {
        MplsLabel { label: v >> 12, tc: ((v >> 9) & 7) as u8, bos: (v >> 8) & 1 == 1, ttl: v as u8 }
    }

    /// Encodes the entry to its 32-bit wire value.
    pub fn to_u32(self) -> u32 {
        ((self.label & 0xfffff) << 12)
            | (u32::from(self.tc & 7) << 9)
            | (u32::from(self.bos) << 8)
            | u32::from(self.ttl)
    }

    /// Decodes the entry at the start of `buf`, if it holds 4 bytes.
    pub fn parse(buf: &[u8]) -> Option<Self> {
        buf.get(..ENTRY_LEN).map(|b| Self::from_u32(u32::from_be_bytes([b[0], b[1], b[2], b[3]])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let l = MplsLabel { label: 0xfffff, tc: 5, bos: true, ttl: 64 };
        assert_eq!(MplsLabel::from_u32(l.to_u32()), l);
        assert_eq!(MplsLabel::from_u32(0x0001_0140), MplsLabel { label: 16, tc: 0, bos: true, ttl: 64 });
        assert_eq!(MplsLabel::parse(&[0, 1, 1]), None);
    }
}
