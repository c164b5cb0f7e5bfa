//! IPv6 headers (RFC 8200): the fixed 40-byte header; extension headers are payload here.

use crate::{WireError, be16, check_len};
use std::net::Ipv6Addr;

/// Length of the fixed IPv6 header.
pub const HEADER_LEN: usize = 40;

/// Where the fixed header's fields lie, as byte offsets and ranges from its start.
pub mod field {
    use std::ops::Range;

    /// Version (high nibble), traffic class and the flow label's high nibble.
    pub const VERSION_TC: usize = 0;
    /// Length of what follows the fixed header.
    pub const PAYLOAD_LEN: Range<usize> = 4..6;
    /// The next header's protocol number.
    pub const NEXT_HEADER: usize = 6;
    /// Hop limit.
    pub const HOP_LIMIT: usize = 7;
    /// Source address.
    pub const SRC: Range<usize> = 8..24;
    /// Destination address.
    pub const DST: Range<usize> = 24..40;
}

/// A view over an IPv6 packet.
#[derive(Debug, Clone, Copy)]
pub struct Ipv6Packet<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// Wraps `buf`, checking it holds the 40-byte fixed header.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        check_len(buf.as_ref(), HEADER_LEN)?;
        Ok(Self { buf })
    }

    /// The version field (6 for IPv6).
    pub fn version(&self) -> u8 {
        self.buf.as_ref()[0] >> 4
    }

    /// The traffic class.
    pub fn traffic_class(&self) -> u8 {
        (be16(self.buf.as_ref(), 0) >> 4) as u8
    }

    /// Bytes after the fixed header (extension headers included), per the header.
    pub fn payload_len(&self) -> u16 {
        be16(self.buf.as_ref(), 4)
    }

    /// The first extension header's or the upper layer's protocol number.
    pub fn next_header(&self) -> u8 {
        self.buf.as_ref()[6]
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.buf.as_ref()[7]
    }

    /// Source address.
    pub fn src(&self) -> Ipv6Addr {
        Ipv6Addr::from(<[u8; 16]>::try_from(&self.buf.as_ref()[8..24]).expect("16 bytes"))
    }

    /// Destination address.
    pub fn dst(&self) -> Ipv6Addr {
        Ipv6Addr::from(<[u8; 16]>::try_from(&self.buf.as_ref()[24..40]).expect("16 bytes"))
    }
}

/// Writes a fixed IPv6 header (traffic class and flow label 0) into the first 40 bytes of
/// `buf`, for `payload_len` bytes of `next_header` after it.
pub fn write_header(buf: &mut [u8], payload_len: u16, next_header: u8, hop_limit: u8, src: Ipv6Addr, dst: Ipv6Addr) {
    let h = &mut buf[..HEADER_LEN];
    h[0..4].copy_from_slice(&[0x60, 0, 0, 0]);
    h[4..6].copy_from_slice(&payload_len.to_be_bytes());
    h[6] = next_header;
    h[7] = hop_limit;
    h[8..24].copy_from_slice(&src.octets());
    h[24..40].copy_from_slice(&dst.octets());
}

/// The upper-layer protocol of IPv6 `packet` (from its fixed header on) after its extension
/// headers, and where that protocol's header starts: `None` for the start when the packet ends
/// first, when it is a fragment other than the first (the upper-layer header is in the first),
/// or after 8 extension headers.
pub fn upper_layer(packet: &[u8]) -> (u8, Option<usize>) {
    let Some(&first) = packet.get(6) else { return (0, None) };
    let (mut next, mut at) = (first, HEADER_LEN);
    for _ in 0..8 {
        match next {
            // Hop-by-hop, routing, destination options: length in 8-byte units after the first 8.
            0 | 43 | 60 => {
                let Some(&[n, len]) = packet.get(at..at + 2) else { return (next, None) };
                (next, at) = (n, at + 8 + 8 * usize::from(len));
            }
            // Fragment: 8 bytes; only the first fragment carries the upper-layer header.
            44 => {
                let Some(&[n, _, hi, lo]) = packet.get(at..at + 4) else { return (next, None) };
                if u16::from_be_bytes([hi, lo]) & 0xfff8 != 0 {
                    return (n, None);
                }
                (next, at) = (n, at + 8);
            }
            // Authentication header: length in 4-byte units after the first 8.
            51 => {
                let Some(&[n, len]) = packet.get(at..at + 2) else { return (next, None) };
                (next, at) = (n, at + 8 + 4 * usize::from(len));
            }
            _ => return (next, Some(at)),
        }
    }
    (next, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        let (s, d): (Ipv6Addr, Ipv6Addr) = ("2001:db8::1".parse().unwrap(), "2001:db8:48::5".parse().unwrap());
        let mut b = [0u8; 48];
        write_header(&mut b, 8, 17, 64, s, d);
        let p = Ipv6Packet::new_checked(&b[..]).unwrap();
        assert_eq!(
            (p.version(), p.traffic_class(), p.payload_len(), p.next_header(), p.hop_limit()),
            (6, 0, 8, 17, 64)
        );
        assert_eq!((p.src(), p.dst()), (s, d));
        assert!(Ipv6Packet::new_checked(&b[..39]).is_err());
    }
}
