//! UDP datagrams.

use crate::{WireError, be16, check_len, checksum};
use std::net::IpAddr;

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

/// A view over a UDP datagram.
#[derive(Debug, Clone, Copy)]
pub struct UdpDatagram<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> UdpDatagram<T> {
    /// Wraps `buf`, checking it holds the 8-byte header.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        check_len(buf.as_ref(), HEADER_LEN)?;
        Ok(Self { buf })
    }

    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(self.buf.as_ref(), 0)
    }

    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(self.buf.as_ref(), 2)
    }

    /// Length field (header + payload).
    pub fn len(&self) -> u16 {
        be16(self.buf.as_ref(), 4)
    }

    /// True when the length field says there is no payload.
    pub fn is_empty(&self) -> bool {
        self.len() as usize <= HEADER_LEN
    }

    /// Checksum field (0 = not computed).
    pub fn checksum(&self) -> u16 {
        be16(self.buf.as_ref(), 6)
    }

    /// True when the checksum verifies over the pseudo-header of `src` and `dst`, or is
    /// absent (0), which only IPv4 allows (RFC 8200 §8.1).
    pub fn checksum_ok(&self, src: impl Into<IpAddr>, dst: impl Into<IpAddr>) -> bool {
        let (src, dst) = (src.into(), dst.into());
        let b = self.buf.as_ref();
        let n = usize::from(self.len()).min(b.len());
        (self.checksum() == 0 && src.is_ipv4())
            || checksum::fold(pseudo_sum(src, dst, self.len()) + checksum::sum_words(&b[..n], 0)) == 0xffff
    }
}

/// The one's-complement sum of the IPv4 or IPv6 pseudo-header for UDP of length `udp_len`
/// (the two differ only in the width of the fields, which does not change the sum).
fn pseudo_sum(src: IpAddr, dst: IpAddr, udp_len: u16) -> u32 {
    let octets = |a: IpAddr| match a {
        IpAddr::V4(a) => a.octets().to_vec(),
        IpAddr::V6(a) => a.octets().to_vec(),
    };
    let s = checksum::sum_words(&octets(src), 0);
    let s = checksum::sum_words(&octets(dst), s);
    s + u32::from(crate::ipv4::protocol::UDP) + u32::from(udp_len)
}

/// Writes a UDP header and computes the checksum over `datagram` (header + payload; the
/// payload must already be in place), using the pseudo-header of `src` and `dst`.
pub fn write_header(datagram: &mut [u8], src: impl Into<IpAddr>, dst: impl Into<IpAddr>, src_port: u16, dst_port: u16) {
    let (src, dst) = (src.into(), dst.into());
    let len = datagram.len() as u16;
    datagram[0..2].copy_from_slice(&src_port.to_be_bytes());
    datagram[2..4].copy_from_slice(&dst_port.to_be_bytes());
    datagram[4..6].copy_from_slice(&len.to_be_bytes());
    datagram[6..8].copy_from_slice(&[0, 0]);
    let mut c = !checksum::fold(pseudo_sum(src, dst, len) + checksum::sum_words(datagram, 0));
    if c == 0 {
        c = 0xffff; // RFC 768: a computed zero is sent as all ones
    }
    datagram[6..8].copy_from_slice(&c.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    #[test]
    fn checksum_verifies_over_the_ipv6_pseudo_header_and_zero_is_invalid_there() {
        let (s, d): (Ipv6Addr, Ipv6Addr) = ("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap());
        let mut b = [0u8; 12];
        b[8..].copy_from_slice(b"v6!!");
        write_header(&mut b, s, d, 7, 9);
        assert!(UdpDatagram::new_checked(&b[..]).unwrap().checksum_ok(s, d));
        assert!(!UdpDatagram::new_checked(&b[..]).unwrap().checksum_ok(d, "2001:db8::3".parse::<Ipv6Addr>().unwrap()));
        b[6..8].copy_from_slice(&[0, 0]);
        assert!(!UdpDatagram::new_checked(&b[..]).unwrap().checksum_ok(s, d));
    }

    #[test]
    fn checksum_verifies() {
        let (s, d) = (Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::new(48, 0, 0, 1));
        let mut b = [0u8; 26];
        b[8..].copy_from_slice(b"vecflow generator!");
        write_header(&mut b, s, d, 1024, 2048);
        let u = UdpDatagram::new_checked(&b[..]).unwrap();
        assert_eq!((u.src_port(), u.dst_port(), u.len()), (1024, 2048, 26));
        assert!(u.checksum_ok(s, d));
        assert!(!u.checksum_ok(Ipv4Addr::new(16, 0, 0, 2), d));
    }
}
