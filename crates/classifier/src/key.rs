//! Flow keys and masks: the header fields rules match on, packed in three 64-bit words so that
//! masking, comparing and hashing a key is three operations each.

/// A field of a [`FlowKey`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Field {
    /// The input interface (vecflow's interface index).
    InPort,
    /// The ethertype (after an 802.1Q tag, if any).
    Ethertype,
    /// The 802.1Q VLAN id; 0 when untagged.
    Vlan,
    /// IPv4 source address.
    NwSrc,
    /// IPv4 destination address.
    NwDst,
    /// IP protocol.
    NwProto,
    /// Fragment flags: [`FRAG_ANY`] for any fragment, plus [`FRAG_LATER`] for one that is not
    /// the first.
    Frag,
    /// L4 (TCP, UDP, SCTP) source port; 0 in a later fragment.
    TpSrc,
    /// L4 destination port; 0 in a later fragment.
    TpDst,
}

/// [`Field::Frag`] bit: the packet is a fragment.
pub const FRAG_ANY: u64 = 1;
/// [`Field::Frag`] bit: the packet is a fragment other than the first (no L4 header).
pub const FRAG_LATER: u64 = 2;

impl Field {
    /// Every field, in key order.
    pub const ALL: [Field; 9] = [
        Field::InPort,
        Field::Ethertype,
        Field::Vlan,
        Field::NwSrc,
        Field::NwDst,
        Field::NwProto,
        Field::Frag,
        Field::TpSrc,
        Field::TpDst,
    ];

    /// (word, shift, width in bits) of the field in a key.
    const fn place(self) -> (usize, u32, u32) {
        match self {
            Field::InPort => (0, 48, 16),
            Field::Ethertype => (0, 32, 16),
            Field::Vlan => (0, 16, 16),
            Field::NwProto => (0, 8, 8),
            Field::Frag => (0, 0, 8),
            Field::NwSrc => (1, 32, 32),
            Field::NwDst => (1, 0, 32),
            Field::TpSrc => (2, 48, 16),
            Field::TpDst => (2, 32, 16),
        }
    }

    /// The field's width in bits.
    pub const fn width(self) -> u32 {
        self.place().2
    }

    /// All ones over the field's width.
    pub const fn full(self) -> u64 {
        (1u64 << self.width()) - 1
    }
}

/// The fields of one packet (or, masked, of a set of packets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct FlowKey {
    /// The packed fields.
    pub words: [u64; 3],
}

impl FlowKey {
    /// The value of `field`.
    #[inline(always)]
    pub fn get(&self, field: Field) -> u64 {
        let (w, shift, width) = field.place();
        (self.words[w] >> shift) & ((1u64 << width) - 1)
    }

    /// Sets `field` to `value` (cut to the field's width).
    pub fn set(&mut self, field: Field, value: u64) {
        let (w, shift, width) = field.place();
        let m = ((1u64 << width) - 1) << shift;
        self.words[w] = (self.words[w] & !m) | ((value << shift) & m);
    }

    /// This key with `field` set to `value`.
    pub fn with(mut self, field: Field, value: u64) -> Self {
        self.set(field, value);
        self
    }

    /// The key under `mask`: only the bits the mask has.
    #[inline(always)]
    pub fn masked(&self, mask: &Mask) -> FlowKey {
        let (k, m) = (&self.words, &mask.0.words);
        FlowKey { words: [k[0] & m[0], k[1] & m[1], k[2] & m[2]] }
    }
}

/// Which bits of a [`FlowKey`] matter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct Mask(pub FlowKey);

impl Mask {
    /// No bit matters (matches every key).
    pub const EMPTY: Mask = Mask(FlowKey { words: [0; 3] });

    /// The mask's bits of `field`.
    pub fn get(&self, field: Field) -> u64 {
        self.0.get(field)
    }

    /// Sets the mask's bits of `field`.
    pub fn set(&mut self, field: Field, bits: u64) {
        self.0.set(field, bits);
    }

    /// This mask and `other`'s bits.
    #[inline(always)]
    pub fn union(&self, other: &Mask) -> Mask {
        let (a, b) = (&self.0.words, &other.0.words);
        Mask(FlowKey { words: [a[0] | b[0], a[1] | b[1], a[2] | b[2]] })
    }

    /// True when this mask has every bit of `other`.
    pub fn covers(&self, other: &Mask) -> bool {
        self.union(other) == *self
    }

    /// The prefix length of `field`'s mask when it is a prefix mask (ones, then zeros), `None`
    /// otherwise or when it is empty.
    pub fn prefix_len(&self, field: Field) -> Option<u32> {
        let bits = self.get(field);
        let width = field.width();
        let len = (bits << (64 - width)).leading_ones();
        (len > 0 && bits == prefix_bits(field, len)).then_some(len)
    }
}

/// The mask bits of the first `len` bits of `field` (most significant first).
pub fn prefix_bits(field: Field, len: u32) -> u64 {
    let width = field.width();
    if len == 0 { 0 } else { field.full() & !((1u64 << (width - len.min(width))) - 1) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_do_not_overlap_and_round_trip() {
        let mut k = FlowKey::default();
        for (n, f) in Field::ALL.iter().enumerate() {
            k.set(*f, f.full() - n as u64);
        }
        for (n, f) in Field::ALL.iter().enumerate() {
            assert_eq!(k.get(*f), f.full() - n as u64, "{f:?}");
        }
        let total: u32 = Field::ALL.iter().map(|f| f.width()).sum();
        let used: u32 = k.words.iter().map(|w| w.count_ones()).sum::<u32>()
            + Field::ALL.iter().enumerate().map(|(n, _)| (n as u64).count_ones()).sum::<u32>();
        assert_eq!(used, total, "every field bit in its own place");
    }

    #[test]
    fn prefix_masks() {
        let mut m = Mask::EMPTY;
        assert_eq!(m.prefix_len(Field::NwSrc), None);
        m.set(Field::NwSrc, prefix_bits(Field::NwSrc, 9));
        assert_eq!((m.get(Field::NwSrc), m.prefix_len(Field::NwSrc)), (0xff80_0000, Some(9)));
        m.set(Field::NwSrc, 0x00ff_0000);
        assert_eq!(m.prefix_len(Field::NwSrc), None, "not a prefix");
        assert_eq!(prefix_bits(Field::NwDst, 32), 0xffff_ffff);
    }
}
