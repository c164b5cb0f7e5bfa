//! ICMPv6 (RFC 4443) and neighbor discovery (RFC 4861): the messages vecflow answers, sends
//! and learns from, their checksum over the IPv6 pseudo-header, and the addresses ND uses.

use crate::checksum;
use crate::ethernet::MacAddr;
use std::net::Ipv6Addr;

/// The IPv6 next-header value of ICMPv6.
pub const PROTOCOL: u8 = 58;
/// Destination unreachable (codes: 0 no route, 3 address unreachable).
pub const DEST_UNREACHABLE: u8 = 1;
/// Packet too big, with the next-hop MTU.
pub const PACKET_TOO_BIG: u8 = 2;
/// Time exceeded (code 0: hop limit exceeded in transit).
pub const TIME_EXCEEDED: u8 = 3;
/// Parameter problem.
pub const PARAMETER_PROBLEM: u8 = 4;
/// Echo request.
pub const ECHO_REQUEST: u8 = 128;
/// Echo reply.
pub const ECHO_REPLY: u8 = 129;
/// Router solicitation.
pub const ROUTER_SOLICITATION: u8 = 133;
/// Router advertisement.
pub const ROUTER_ADVERTISEMENT: u8 = 134;
/// Neighbor solicitation.
pub const NEIGHBOR_SOLICITATION: u8 = 135;
/// Neighbor advertisement.
pub const NEIGHBOR_ADVERTISEMENT: u8 = 136;
/// Redirect.
pub const REDIRECT: u8 = 137;

/// Destination unreachable code: no route to destination.
pub const NO_ROUTE: u8 = 0;
/// Destination unreachable code: communication with the destination administratively
/// prohibited.
pub const ADMIN_PROHIBITED: u8 = 1;
/// Destination unreachable code: address unreachable (the neighbor did not answer).
pub const ADDRESS_UNREACHABLE: u8 = 3;

/// Length of the ICMPv6 header (type, code, checksum, 4 bytes of message body).
pub const HEADER_LEN: usize = 8;
/// Length of a neighbor solicitation or advertisement without options.
pub const ND_LEN: usize = 24;
/// Length of a link-layer address option for Ethernet.
pub const LINK_OPTION_LEN: usize = 8;
/// The hop limit every ND message is sent with and must arrive with (RFC 4861 §7.1).
pub const ND_HOP_LIMIT: u8 = 255;

/// Neighbor advertisement flag: the sender is a router.
pub const FLAG_ROUTER: u8 = 0x80;
/// Neighbor advertisement flag: an answer to a solicitation.
pub const FLAG_SOLICITED: u8 = 0x40;
/// Neighbor advertisement flag: the link-layer address replaces a cached one.
pub const FLAG_OVERRIDE: u8 = 0x20;

/// The all-nodes multicast address ff02::1.
pub const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
/// The all-routers multicast address ff02::2.
pub const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);

/// True for the error messages (types 0–127), about which no error is ever sent
/// (RFC 4443 §2.4(e)).
pub fn is_error(icmp_type: u8) -> bool {
    icmp_type < 128
}

/// The ICMPv6 checksum of `message` (its checksum field zero, or the received value to
/// verify: then 0 means good) from `src` to `dst`: the one's complement of the sum over the
/// pseudo-header (RFC 8200 §8.1) and the message.
pub fn checksum(src: Ipv6Addr, dst: Ipv6Addr, message: &[u8]) -> u16 {
    let mut sum = checksum::sum_words(&src.octets(), 0);
    sum = checksum::sum_words(&dst.octets(), sum);
    let len = message.len() as u32;
    sum += (len >> 16) + (len & 0xffff) + u32::from(PROTOCOL);
    !checksum::fold(checksum::sum_words(message, sum))
}

/// Computes and writes the checksum of `message` (bytes 2..4) from `src` to `dst`.
pub fn fill_checksum(src: Ipv6Addr, dst: Ipv6Addr, message: &mut [u8]) {
    message[2..4].copy_from_slice(&[0, 0]);
    let c = checksum(src, dst, message);
    message[2..4].copy_from_slice(&c.to_be_bytes());
}

/// The solicited-node multicast address of `addr`: ff02::1:ff00:0/104 with its low 24 bits
/// (RFC 4291 §2.7.1).
pub fn solicited_node(addr: Ipv6Addr) -> Ipv6Addr {
    let o = addr.octets();
    Ipv6Addr::from([0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, o[13], o[14], o[15]])
}

/// True for a solicited-node multicast address (ff02::1:ff00:0/104).
pub fn is_solicited_node(addr: Ipv6Addr) -> bool {
    u128::from(addr) >> 24 == u128::from(solicited_node(Ipv6Addr::UNSPECIFIED)) >> 24
}

/// The Ethernet multicast MAC of IPv6 multicast address `group`: 33:33 and its low 32 bits
/// (RFC 2464 §7).
pub fn multicast_mac(group: Ipv6Addr) -> MacAddr {
    let o = group.octets();
    MacAddr([0x33, 0x33, o[12], o[13], o[14], o[15]])
}

/// The link-local address of an interface with `mac`: fe80::/64 and the modified EUI-64
/// interface identifier (RFC 4291 appendix A: ff:fe in the middle, the universal/local bit
/// flipped).
pub fn link_local_from_mac(mac: MacAddr) -> Ipv6Addr {
    let m = mac.0;
    Ipv6Addr::from([0xfe, 0x80, 0, 0, 0, 0, 0, 0, m[0] ^ 2, m[1], m[2], 0xff, 0xfe, m[3], m[4], m[5]])
}

/// A neighbor solicitation or advertisement (RFC 4861 §4.3, §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NeighborMessage {
    /// [`NEIGHBOR_SOLICITATION`] or [`NEIGHBOR_ADVERTISEMENT`].
    pub kind: u8,
    /// Advertisement flags ([`FLAG_ROUTER`], [`FLAG_SOLICITED`], [`FLAG_OVERRIDE`]); 0 in a
    /// solicitation.
    pub flags: u8,
    /// The address solicited or advertised.
    pub target: Ipv6Addr,
    /// The sender's (solicitation) or target's (advertisement) link-layer address option.
    pub link_addr: Option<MacAddr>,
}

/// Why an ND message is invalid (RFC 4861 §7.1.1, §7.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NdError {
    /// Shorter than 24 bytes, a code other than 0, an option of length 0 or running past
    /// the end, or a multicast target.
    Malformed,
}

impl NeighborMessage {
    /// Parses the ICMPv6 message `m` (type NS or NA, checksum already verified): the fixed
    /// part, the target, and the source (NS) or target (NA) link-layer address option.
    pub fn parse(m: &[u8]) -> Result<Self, NdError> {
        if m.len() < ND_LEN || m[1] != 0 || !matches!(m[0], NEIGHBOR_SOLICITATION | NEIGHBOR_ADVERTISEMENT) {
            return Err(NdError::Malformed);
        }
        let target = Ipv6Addr::from(<[u8; 16]>::try_from(&m[8..24]).expect("16 bytes"));
        if target.is_multicast() {
            return Err(NdError::Malformed);
        }
        let wanted = if m[0] == NEIGHBOR_SOLICITATION { 1 } else { 2 };
        let mut link_addr = None;
        let mut opts = &m[ND_LEN..];
        while !opts.is_empty() {
            let len = 8 * usize::from(*opts.get(1).ok_or(NdError::Malformed)?);
            if len == 0 || len > opts.len() {
                return Err(NdError::Malformed);
            }
            if opts[0] == wanted && len == LINK_OPTION_LEN {
                link_addr = Some(MacAddr(opts[2..8].try_into().expect("6 bytes")));
            }
            opts = &opts[len..];
        }
        let flags = if m[0] == NEIGHBOR_ADVERTISEMENT { m[4] & 0xe0 } else { 0 };
        Ok(NeighborMessage { kind: m[0], flags, target, link_addr })
    }

    /// Writes the message, its link-layer option included when it has one, into the start
    /// of `buf` (checksum zero: see [`fill_checksum`]); returns its length.
    pub fn write(&self, buf: &mut [u8]) -> usize {
        let len = ND_LEN + self.link_addr.map_or(0, |_| LINK_OPTION_LEN);
        let m = &mut buf[..len];
        m.fill(0);
        m[0] = self.kind;
        m[4] = self.flags;
        m[8..24].copy_from_slice(&self.target.octets());
        if let Some(mac) = self.link_addr {
            m[24] = if self.kind == NEIGHBOR_SOLICITATION { 1 } else { 2 };
            m[25] = 1;
            m[26..32].copy_from_slice(&mac.0);
        }
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_nd_uses() {
        let a: Ipv6Addr = "2001:db8::1:2:3".parse().unwrap();
        assert_eq!(solicited_node(a), "ff02::1:ff02:3".parse::<Ipv6Addr>().unwrap());
        assert!(is_solicited_node(solicited_node(a)) && !is_solicited_node(ALL_NODES));
        assert_eq!(multicast_mac(solicited_node(a)), MacAddr([0x33, 0x33, 0xff, 0x02, 0, 3]));
        let mac = MacAddr([0x02, 0xfe, 0, 0, 0, 1]);
        assert_eq!(link_local_from_mac(mac), "fe80::fe:ff:fe00:1".parse::<Ipv6Addr>().unwrap());
        assert!(is_error(1) && is_error(127) && !is_error(ECHO_REQUEST) && !is_error(NEIGHBOR_SOLICITATION));
    }

    #[test]
    fn neighbor_messages_round_trip_and_checksum() {
        let na = NeighborMessage {
            kind: NEIGHBOR_ADVERTISEMENT,
            flags: FLAG_ROUTER | FLAG_SOLICITED | FLAG_OVERRIDE,
            target: "2001:db8::1".parse().unwrap(),
            link_addr: Some(MacAddr([2, 0, 0, 0, 0, 9])),
        };
        let mut b = [0u8; 64];
        let n = na.write(&mut b);
        assert_eq!(n, 32);
        let (s, d) = ("2001:db8::1".parse().unwrap(), "2001:db8::2".parse().unwrap());
        fill_checksum(s, d, &mut b[..n]);
        assert_eq!(checksum(s, d, &b[..n]), 0, "verifies");
        assert_ne!(checksum(d, d, &b[..n]), 0, "the pseudo-header counts");
        assert_eq!(NeighborMessage::parse(&b[..n]), Ok(na));
        let ns = NeighborMessage { kind: NEIGHBOR_SOLICITATION, flags: 0, link_addr: None, ..na };
        let n = ns.write(&mut b);
        assert_eq!((n, NeighborMessage::parse(&b[..n])), (24, Ok(ns)));
    }

    #[test]
    fn malformed_neighbor_messages_are_refused() {
        let ns = NeighborMessage {
            kind: NEIGHBOR_SOLICITATION,
            flags: 0,
            target: "fe80::1".parse().unwrap(),
            link_addr: Some(MacAddr([2, 0, 0, 0, 0, 9])),
        };
        let mut b = [0u8; 40];
        let n = ns.write(&mut b);
        assert!(NeighborMessage::parse(&b[..23]).is_err(), "short");
        let mut zero_option = b;
        zero_option[25] = 0;
        assert!(NeighborMessage::parse(&zero_option[..n]).is_err(), "option of length 0");
        assert!(NeighborMessage::parse(&b[..n + 2]).is_err(), "option past the end");
        let mut coded = b;
        coded[1] = 1;
        assert!(NeighborMessage::parse(&coded[..n]).is_err(), "code not 0");
        let mut multicast = b;
        multicast[8] = 0xff;
        assert!(NeighborMessage::parse(&multicast[..n]).is_err(), "multicast target");
    }
}
