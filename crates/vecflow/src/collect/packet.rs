//! What a collector reads out of a sampled header: addresses, VLAN and the 5-tuple.

use serde::Serialize;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use wire::{EtherType, EthernetFrame, Ipv4Packet, MacAddr};

/// The fields of a sampled Ethernet header that identify its flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Default)]
pub struct Decoded {
    /// Destination MAC.
    pub dst_mac: [u8; 6],
    /// Source MAC.
    pub src_mac: [u8; 6],
    /// Outer 802.1Q VLAN id.
    pub vlan: Option<u16>,
    /// Ethertype after any VLAN tags and MPLS labels.
    pub ethertype: u16,
    /// The IP part, when the header reaches it.
    pub ip: Option<IpFields>,
}

/// IP and transport fields of a sampled header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct IpFields {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// IP protocol / next header.
    pub protocol: u8,
    /// IP total length (IPv4) or payload length + 40 (IPv6).
    pub length: u16,
    /// TTL / hop limit.
    pub ttl: u8,
    /// TOS / traffic class.
    pub tos: u8,
    /// TCP/UDP source port, when present.
    pub src_port: Option<u16>,
    /// TCP/UDP destination port, when present.
    pub dst_port: Option<u16>,
}

/// Decodes an Ethernet header (header protocol 1) as far as it goes.
pub fn decode_ethernet(h: &[u8]) -> Option<Decoded> {
    let e = EthernetFrame::new_checked(h).ok()?;
    let mut d = Decoded { dst_mac: e.dst().0, src_mac: e.src().0, ethertype: e.ethertype(), ..Decoded::default() };
    let mut at = 14;
    while matches!(d.ethertype, EtherType::VLAN | EtherType::QINQ) && h.len() >= at + 4 {
        d.vlan.get_or_insert(u16::from_be_bytes([h[at], h[at + 1]]) & 0x0fff);
        d.ethertype = u16::from_be_bytes([h[at + 2], h[at + 3]]);
        at += 4;
    }
    if d.ethertype == EtherType::MPLS {
        // Skip the label stack; what follows the bottom label is IPv4 or IPv6 by its version.
        while h.len() >= at + 4 {
            let bos = h[at + 2] & 1 == 1;
            at += 4;
            if bos {
                break;
            }
        }
        d.ethertype = match h.get(at).map(|b| b >> 4) {
            Some(4) => EtherType::IPV4,
            Some(6) => EtherType::IPV6,
            _ => d.ethertype,
        };
    }
    d.ip = match d.ethertype {
        EtherType::IPV4 => ipv4(&h[at..]),
        EtherType::IPV6 => ipv6(&h[at..]),
        _ => None,
    };
    Some(d)
}

fn ports(protocol: u8, l4: &[u8]) -> (Option<u16>, Option<u16>) {
    match (protocol, l4) {
        (6 | 17, [a, b, c, d, ..]) => (Some(u16::from_be_bytes([*a, *b])), Some(u16::from_be_bytes([*c, *d]))),
        _ => (None, None),
    }
}

fn ipv4(b: &[u8]) -> Option<IpFields> {
    let p = Ipv4Packet::new_checked(b).ok()?;
    let hl = p.header_len();
    let (src_port, dst_port) =
        if p.version() == 4 && hl >= 20 && b.len() > hl { ports(p.protocol(), &b[hl..]) } else { (None, None) };
    Some(IpFields {
        src: IpAddr::V4(p.src()),
        dst: IpAddr::V4(p.dst()),
        protocol: p.protocol(),
        length: p.total_len(),
        ttl: p.ttl(),
        tos: p.tos(),
        src_port,
        dst_port,
    })
}

fn ipv6(b: &[u8]) -> Option<IpFields> {
    let h: &[u8; 40] = b.get(..40)?.try_into().ok()?;
    let addr = |at: usize| IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(&h[at..at + 16]).expect("16 bytes")));
    let (protocol, l4) = wire::ipv6::upper_layer(b);
    let (src_port, dst_port) = l4.and_then(|at| b.get(at..)).map_or((None, None), |l4| ports(protocol, l4));
    Some(IpFields {
        src: addr(8),
        dst: addr(24),
        protocol,
        length: u16::from_be_bytes([h[4], h[5]]).saturating_add(40),
        ttl: h[7],
        tos: ((u16::from_be_bytes([h[0], h[1]]) >> 4) & 0xff) as u8,
        src_port,
        dst_port,
    })
}

/// A MAC address as `aa:bb:cc:dd:ee:ff`.
pub fn mac(m: [u8; 6]) -> String {
    MacAddr(m).to_string()
}

/// The IPv4 address 0.0.0.0, for keys without an IP part.
pub const NO_IP: IpAddr = IpAddr::V4(Ipv4Addr::UNSPECIFIED);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_vlan_mpls_ipv4_udp() {
        let mut h = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x81, 0, 0x60, 100, 0x88, 0x47, 0, 1, 1, 64];
        let mut ip = [0u8; 28];
        wire::ipv4::write_header(&mut ip, 28, 64, 17, Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::new(48, 0, 0, 1));
        ip[20..24].copy_from_slice(&[4, 0, 8, 0]);
        h.extend_from_slice(&ip);
        let d = decode_ethernet(&h).unwrap();
        assert_eq!(d.vlan, Some(100));
        assert_eq!(d.ethertype, EtherType::IPV4);
        let i = d.ip.unwrap();
        assert_eq!(
            (i.src, i.dst, i.protocol, i.src_port, i.dst_port),
            (
                IpAddr::V4(Ipv4Addr::new(16, 0, 0, 1)),
                IpAddr::V4(Ipv4Addr::new(48, 0, 0, 1)),
                17,
                Some(1024),
                Some(2048)
            )
        );
        for n in 0..h.len() {
            let _ = decode_ethernet(&h[..n]);
        }
    }

    /// An IPv6 header, then `ext` (extension headers), then UDP ports 1024 → 2048.
    fn ipv6_frame(first: u8, ext: &[u8]) -> Vec<u8> {
        let mut h = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x86, 0xdd];
        let mut ip = [0u8; 40];
        let (s, d): (Ipv6Addr, Ipv6Addr) = ("2001:db8:16::1".parse().unwrap(), "2001:db8:48::1".parse().unwrap());
        wire::ipv6::write_header(&mut ip, (ext.len() + 8) as u16, first, 63, s, d);
        h.extend_from_slice(&ip);
        h.extend_from_slice(ext);
        h.extend_from_slice(&[4, 0, 8, 0, 0, 8, 0, 0]);
        h
    }

    #[test]
    fn ipv6_five_tuples_through_extension_headers() {
        let five = |h: &[u8]| decode_ethernet(h).and_then(|d| d.ip).map(|i| (i.protocol, i.src_port, i.dst_port));
        assert_eq!(five(&ipv6_frame(17, &[])), Some((17, Some(1024), Some(2048))));
        // Hop-by-hop (8 bytes), destination options (16 bytes), then a first fragment.
        let chain = [
            &[60, 0, 1, 4, 0, 0, 0, 0][..],
            &[44, 1, 1, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            &[17, 0, 0, 1, 0, 0, 0, 7],
        ]
        .concat();
        assert_eq!(five(&ipv6_frame(0, &chain)), Some((17, Some(1024), Some(2048))));
        // A later fragment has no ports; AH is skipped by its own length unit.
        assert_eq!(five(&ipv6_frame(44, &[17, 0, 0, 0x10, 0, 0, 0, 7])), Some((17, None, None)));
        assert_eq!(five(&ipv6_frame(51, &[17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1])), Some((17, Some(1024), Some(2048))));
        // Cut inside the chain: addresses, no ports.
        let cut = ipv6_frame(0, &chain);
        assert_eq!(five(&cut[..14 + 40 + 12]), Some((44, None, None)), "the last header the cut header names");
        for n in 0..cut.len() {
            let _ = decode_ethernet(&cut[..n]);
        }
    }
}
