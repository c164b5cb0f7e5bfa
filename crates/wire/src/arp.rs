//! ARP for IPv4 over Ethernet (RFC 826): the 28-byte packet after the Ethernet header.

use crate::{MacAddr, WireError, be16, check_len};
use std::net::Ipv4Addr;

/// Length of an Ethernet/IPv4 ARP packet.
pub const LEN: usize = 28;
/// Operation: request.
pub const REQUEST: u16 = 1;
/// Operation: reply.
pub const REPLY: u16 = 2;

/// An Ethernet/IPv4 ARP packet, read from the bytes after the Ethernet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arp {
    /// Operation ([`REQUEST`] or [`REPLY`]).
    pub op: u16,
    /// Sender hardware address.
    pub sha: MacAddr,
    /// Sender protocol address.
    pub spa: Ipv4Addr,
    /// Target hardware address.
    pub tha: MacAddr,
    /// Target protocol address.
    pub tpa: Ipv4Addr,
}

/// Why bytes are not an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArpError {
    /// Fewer than 28 bytes.
    Truncated(WireError),
    /// Hardware type not Ethernet, protocol not IPv4, wrong address lengths, or an operation
    /// other than request or reply.
    Unsupported,
}

fn mac(b: &[u8]) -> MacAddr {
    MacAddr([b[0], b[1], b[2], b[3], b[4], b[5]])
}

fn ip(b: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

impl Arp {
    /// Parses the ARP packet at the start of `b`.
    pub fn parse(b: &[u8]) -> Result<Arp, ArpError> {
        check_len(b, LEN).map_err(ArpError::Truncated)?;
        let op = be16(b, 6);
        if be16(b, 0) != 1 || be16(b, 2) != crate::EtherType::IPV4 || b[4] != 6 || b[5] != 4 || !(1..=2).contains(&op) {
            return Err(ArpError::Unsupported);
        }
        Ok(Arp { op, sha: mac(&b[8..]), spa: ip(&b[14..]), tha: mac(&b[18..]), tpa: ip(&b[24..]) })
    }

    /// Writes the packet into the first [`LEN`] bytes of `out` (which must hold them).
    pub fn write(&self, out: &mut [u8]) {
        out[..8].copy_from_slice(&[0, 1, 0x08, 0x00, 6, 4, 0, self.op as u8]);
        out[8..14].copy_from_slice(&self.sha.0);
        out[14..18].copy_from_slice(&self.spa.octets());
        out[18..24].copy_from_slice(&self.tha.0);
        out[24..28].copy_from_slice(&self.tpa.octets());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rejects() {
        let a = Arp {
            op: REQUEST,
            sha: MacAddr([2, 0, 0, 0, 0, 1]),
            spa: Ipv4Addr::new(10, 0, 0, 1),
            tha: MacAddr([0; 6]),
            tpa: Ipv4Addr::new(10, 0, 0, 2),
        };
        let mut b = [0u8; LEN];
        a.write(&mut b);
        assert_eq!(&b[..8], &[0, 1, 8, 0, 6, 4, 0, 1]);
        assert_eq!(Arp::parse(&b), Ok(a));
        assert!(matches!(Arp::parse(&b[..27]), Err(ArpError::Truncated(_))));
        b[7] = 3;
        assert_eq!(Arp::parse(&b), Err(ArpError::Unsupported));
    }
}
