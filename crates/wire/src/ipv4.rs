//! IPv4 headers.

use crate::{WireError, be16, be32, check_len, checksum};
use std::net::Ipv4Addr;

/// Length of an IPv4 header without options.
pub const HEADER_LEN: usize = 20;

/// Where each field of the fixed header is (RFC 791 §3.1), as byte offsets and ranges into
/// the header, for code that reads and writes headers in place.
pub mod field {
    use std::ops::Range;

    /// Version (high nibble) and IHL, the header length in 32-bit words (low nibble).
    pub const VERSION_IHL: usize = 0;
    /// Type of service (DSCP and ECN).
    pub const TOS: usize = 1;
    /// Total length of the packet, header included.
    pub const TOTAL_LEN: Range<usize> = 2..4;
    /// Flags (high 3 bits: reserved, don't fragment, more fragments) and fragment offset.
    pub const FLAGS_FRAGMENT: Range<usize> = 6..8;
    /// The byte of the flags and the fragment offset's high bits.
    pub const FLAGS: usize = 6;
    /// Time to live.
    pub const TTL: usize = 8;
    /// Protocol of the payload.
    pub const PROTOCOL: usize = 9;
    /// Time to live (high byte) and protocol (low byte), the 16-bit word a TTL decrement
    /// updates the checksum by.
    pub const TTL_PROTOCOL: Range<usize> = 8..10;
    /// Header checksum.
    pub const CHECKSUM: Range<usize> = 10..12;
    /// Source address.
    pub const SRC: Range<usize> = 12..16;
    /// Destination address.
    pub const DST: Range<usize> = 16..20;
}

/// The don't-fragment bit of [`field::FLAGS`].
pub const DONT_FRAGMENT: u8 = 0x40;

/// IP protocol numbers vecflow knows by name.
pub mod protocol {
    /// ICMP.
    pub const ICMP: u8 = 1;
    /// TCP.
    pub const TCP: u8 = 6;
    /// UDP.
    pub const UDP: u8 = 17;
}

/// A view over an IPv4 packet.
#[derive(Debug, Clone, Copy)]
pub struct Ipv4Packet<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps `buf`, checking it holds the 20-byte fixed header.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        check_len(buf.as_ref(), HEADER_LEN)?;
        Ok(Self { buf })
    }

    /// The version field (4 for IPv4).
    pub fn version(&self) -> u8 {
        self.buf.as_ref()[0] >> 4
    }

    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buf.as_ref()[0] & 0x0f) * 4
    }

    /// The type-of-service (DSCP + ECN) byte.
    pub fn tos(&self) -> u8 {
        self.buf.as_ref()[1]
    }

    /// Total length of the packet per the header.
    pub fn total_len(&self) -> u16 {
        be16(self.buf.as_ref(), 2)
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.buf.as_ref()[8]
    }

    /// The don't-fragment flag.
    pub fn dont_fragment(&self) -> bool {
        self.buf.as_ref()[6] & 0x40 != 0
    }

    /// The more-fragments flag.
    pub fn more_fragments(&self) -> bool {
        self.buf.as_ref()[6] & 0x20 != 0
    }

    /// The fragment offset, in units of 8 bytes.
    pub fn fragment_offset(&self) -> u16 {
        be16(self.buf.as_ref(), 6) & 0x1fff
    }

    /// True for a fragment: more fragments follow or it is not the first.
    pub fn is_fragment(&self) -> bool {
        self.more_fragments() || self.fragment_offset() != 0
    }

    /// Protocol of the payload.
    pub fn protocol(&self) -> u8 {
        self.buf.as_ref()[9]
    }

    /// Header checksum field.
    pub fn header_checksum(&self) -> u16 {
        be16(self.buf.as_ref(), 10)
    }

    /// Source address.
    pub fn src(&self) -> Ipv4Addr {
        Ipv4Addr::from(be32(self.buf.as_ref(), 12))
    }

    /// Destination address.
    pub fn dst(&self) -> Ipv4Addr {
        Ipv4Addr::from(be32(self.buf.as_ref(), 16))
    }

    /// The bytes after the header up to the total length, if the buffer holds them.
    pub fn payload(&self) -> Option<&[u8]> {
        self.buf.as_ref().get(self.header_len()..usize::from(self.total_len()))
    }

    /// True when the header checksum verifies (the header must be fully present).
    pub fn checksum_ok(&self) -> bool {
        let hl = self.header_len();
        let b = self.buf.as_ref();
        hl >= HEADER_LEN && b.len() >= hl && checksum::checksum(&b[..hl]) == 0
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets the source address (the checksum is not updated).
    pub fn set_src(&mut self, a: Ipv4Addr) {
        self.buf.as_mut()[12..16].copy_from_slice(&a.octets());
    }

    /// Sets the destination address (the checksum is not updated).
    pub fn set_dst(&mut self, a: Ipv4Addr) {
        self.buf.as_mut()[16..20].copy_from_slice(&a.octets());
    }

    /// Sets the time to live (the checksum is not updated).
    pub fn set_ttl(&mut self, ttl: u8) {
        self.buf.as_mut()[8] = ttl;
    }

    /// Recomputes and stores the header checksum.
    pub fn fill_checksum(&mut self) {
        let hl = self.header_len().max(HEADER_LEN).min(self.buf.as_ref().len());
        let b = self.buf.as_mut();
        b[10..12].copy_from_slice(&[0, 0]);
        let c = checksum::checksum(&b[..hl]);
        b[10..12].copy_from_slice(&c.to_be_bytes());
    }
}

/// Writes a 20-byte IPv4 header without options into `out[..20]`, checksum filled.
pub fn write_header(out: &mut [u8], total_len: u16, ttl: u8, protocol: u8, src: Ipv4Addr, dst: Ipv4Addr) {
    out[..HEADER_LEN].copy_from_slice(&[0u8; HEADER_LEN]);
    out[0] = 0x45;
    out[2..4].copy_from_slice(&total_len.to_be_bytes());
    out[6] = 0x40; // don't fragment
    out[8] = ttl;
    out[9] = protocol;
    let mut p = Ipv4Packet { buf: &mut out[..HEADER_LEN] };
    p.set_src(src);
    p.set_dst(dst);
    p.fill_checksum();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragment_fields() {
        let mut b = [0u8; 20];
        write_header(&mut b, 46, 64, protocol::UDP, Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::new(48, 0, 0, 1));
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert!(p.dont_fragment() && !p.more_fragments() && !p.is_fragment());
        b[6..8].copy_from_slice(&(0x2000u16 | 185).to_be_bytes());
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert!(!p.dont_fragment() && p.more_fragments() && p.is_fragment());
        assert_eq!(p.fragment_offset(), 185);
        assert_eq!(p.payload(), None, "total length 46 beyond a 20-byte buffer");
        let mut b = [0u8; 30];
        write_header(&mut b, 24, 64, protocol::UDP, Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::new(48, 0, 0, 1));
        assert_eq!(Ipv4Packet::new_checked(&b[..]).unwrap().payload().map(<[u8]>::len), Some(4));
    }

    #[test]
    fn header_round_trip() {
        let mut b = [0u8; 20];
        write_header(&mut b, 46, 64, protocol::UDP, Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::new(48, 0, 0, 1));
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!((p.version(), p.header_len(), p.total_len(), p.ttl()), (4, 20, 46, 64));
        assert_eq!((p.src(), p.dst()), (Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::new(48, 0, 0, 1)));
        assert!(p.checksum_ok());
        b[8] = 63;
        assert!(!Ipv4Packet::new_checked(&b[..]).unwrap().checksum_ok());
    }
}
