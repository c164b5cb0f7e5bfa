//! Ethernet II frames and 802.1Q tags.

use crate::{WireError, be16, check_len};

/// A 48-bit MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// The broadcast address ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);

    /// True for group (multicast or broadcast) addresses: the I/G bit of the first octet.
    pub fn is_group(&self) -> bool {
        self.0[0] & 1 == 1
    }

    /// True for ff:ff:ff:ff:ff:ff.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// The address as the low 48 bits of a `u64` (first octet most significant).
    pub fn to_u64(self) -> u64 {
        let mut b = [0u8; 8];
        b[2..].copy_from_slice(&self.0);
        u64::from_be_bytes(b)
    }

    /// The address whose octets are the low 48 bits of `v`.
    pub fn from_u64(v: u64) -> Self {
        let b = v.to_be_bytes();
        MacAddr([b[2], b[3], b[4], b[5], b[6], b[7]])
    }
}

impl core::fmt::Display for MacAddr {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let m = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", m[0], m[1], m[2], m[3], m[4], m[5])
    }
}

impl core::str::FromStr for MacAddr {
    type Err = String;

    /// Parses `aa:bb:cc:dd:ee:ff` (or `-` separated).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.split([':', '-']).collect();
        if parts.len() != 6 {
            return Err(format!("'{s}' is not a MAC address (want six hex octets, aa:bb:cc:dd:ee:ff)"));
        }
        let mut out = [0u8; 6];
        for (o, p) in out.iter_mut().zip(parts) {
            if p.is_empty() || p.len() > 2 {
                return Err(format!("'{s}' is not a MAC address (octet '{p}')"));
            }
            *o = u8::from_str_radix(p, 16).map_err(|_| format!("'{s}' is not a MAC address (octet '{p}')"))?;
        }
        Ok(MacAddr(out))
    }
}

/// Ethertype values vecflow knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EtherType;

impl EtherType {
    /// IPv4.
    pub const IPV4: u16 = 0x0800;
    /// ARP.
    pub const ARP: u16 = 0x0806;
    /// 802.1Q VLAN tag.
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad service tag (QinQ outer tag).
    pub const QINQ: u16 = 0x88a8;
    /// IPv6.
    pub const IPV6: u16 = 0x86dd;
    /// MPLS unicast.
    pub const MPLS: u16 = 0x8847;
    /// LLDP (IEEE 802.1AB).
    pub const LLDP: u16 = 0x88cc;
}

/// The ethertype of Ethernet frame `frame` after at most `max_tags` 802.1Q or 802.1ad tags, and
/// the offset of what follows it (the network header); a further tag is returned as the
/// ethertype. `None` when the frame ends first.
pub fn inner_ethertype(frame: &[u8], max_tags: usize) -> Option<(u16, usize)> {
    let mut at = 12;
    loop {
        let t = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
        if !matches!(t, EtherType::VLAN | EtherType::QINQ) || (at - 12) / 4 >= max_tags {
            return Some((t, at + 2));
        }
        at += 4;
    }
}

/// Length of an untagged Ethernet header.
pub const HEADER_LEN: usize = 14;

/// Where the header's fields lie, as byte ranges from the frame's start; a tagged frame's
/// 802.1Q tag follows the source address ([`field::TPID`] takes the ethertype's place).
pub mod field {
    use std::ops::Range;

    /// Destination MAC.
    pub const DST: Range<usize> = 0..6;
    /// Source MAC.
    pub const SRC: Range<usize> = 6..12;
    /// Ethertype (of an untagged frame).
    pub const ETHERTYPE: Range<usize> = 12..14;
    /// The tag protocol identifier of a tagged frame (802.1Q: 0x8100).
    pub const TPID: Range<usize> = 12..14;
    /// The tag control information of a tagged frame: priority, DEI and the VLAN id (low 12
    /// bits).
    pub const TCI: Range<usize> = 14..16;
}
/// Length of one 802.1Q tag.
pub const VLAN_TAG_LEN: usize = 4;

/// A view over an Ethernet II frame (without FCS).
#[derive(Debug, Clone, Copy)]
pub struct EthernetFrame<T> {
    buf: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Wraps `buf`, checking it holds a full 14-byte header.
    pub fn new_checked(buf: T) -> Result<Self, WireError> {
        check_len(buf.as_ref(), HEADER_LEN)?;
        Ok(Self { buf })
    }

    /// Destination MAC address.
    pub fn dst(&self) -> MacAddr {
        let b = self.buf.as_ref();
        MacAddr([b[0], b[1], b[2], b[3], b[4], b[5]])
    }

    /// Source MAC address.
    pub fn src(&self) -> MacAddr {
        let b = self.buf.as_ref();
        MacAddr([b[6], b[7], b[8], b[9], b[10], b[11]])
    }

    /// The ethertype field right after the addresses (0x8100 for a tagged frame).
    pub fn ethertype(&self) -> u16 {
        be16(self.buf.as_ref(), 12)
    }

    /// The outer 802.1Q tag, when the frame is tagged and long enough to hold it.
    pub fn vlan(&self) -> Option<VlanTag> {
        let b = self.buf.as_ref();
        if self.ethertype() == EtherType::VLAN && b.len() >= HEADER_LEN + VLAN_TAG_LEN {
            Some(VlanTag { tci: be16(b, 14), inner_ethertype: be16(b, 16) })
        } else {
            None
        }
    }

    /// The bytes after the 14-byte header.
    pub fn payload(&self) -> &[u8] {
        &self.buf.as_ref()[HEADER_LEN..]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination MAC address.
    pub fn set_dst(&mut self, mac: MacAddr) {
        self.buf.as_mut()[0..6].copy_from_slice(&mac.0);
    }

    /// Sets the source MAC address.
    pub fn set_src(&mut self, mac: MacAddr) {
        self.buf.as_mut()[6..12].copy_from_slice(&mac.0);
    }

    /// Sets the ethertype field.
    pub fn set_ethertype(&mut self, ethertype: u16) {
        self.buf.as_mut()[12..14].copy_from_slice(&ethertype.to_be_bytes());
    }
}

/// An 802.1Q tag: priority, DEI and VLAN id (the TCI) plus the ethertype it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanTag {
    /// Tag control information: PCP (3 bits), DEI (1 bit), VID (12 bits).
    pub tci: u16,
    /// The ethertype after the tag.
    pub inner_ethertype: u16,
}

impl VlanTag {
    /// The 12-bit VLAN id.
    pub fn vid(&self) -> u16 {
        self.tci & 0x0fff
    }

    /// The 3-bit priority code point.
    pub fn pcp(&self) -> u8 {
        (self.tci >> 13) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_inner_ethertype_is_found_past_tags_up_to_the_bound() {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x81, 0x00, 0, 10, 0x88, 0xa8, 0, 20, 0x81, 0x00, 0, 30, 0x08, 0x00]);
        assert_eq!(inner_ethertype(&f, usize::MAX), Some((EtherType::IPV4, 26)));
        assert_eq!(inner_ethertype(&f, 2), Some((EtherType::VLAN, 22)), "a third tag is the ethertype");
        assert_eq!(inner_ethertype(&f, 0), Some((EtherType::VLAN, 14)));
        assert_eq!(inner_ethertype(&f[..24], usize::MAX), None, "cut short");
    }

    #[test]
    fn parses_tagged_frame() {
        let mut f = [0u8; 22];
        f[0..6].copy_from_slice(&[0xff; 6]);
        f[6..12].copy_from_slice(&[2, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&0x8100u16.to_be_bytes());
        f[14..16].copy_from_slice(&0x6064u16.to_be_bytes()); // PCP 3, VID 100
        f[16..18].copy_from_slice(&0x0800u16.to_be_bytes());
        let e = EthernetFrame::new_checked(&f[..]).unwrap();
        assert!(e.dst().is_broadcast() && e.dst().is_group());
        assert!(!e.src().is_group());
        let t = e.vlan().unwrap();
        assert_eq!((t.vid(), t.pcp(), t.inner_ethertype), (100, 3, 0x0800));
    }

    #[test]
    fn rejects_short() {
        for n in 0..HEADER_LEN {
            assert_eq!(
                EthernetFrame::new_checked(&[0u8; 14][..n]).unwrap_err(),
                WireError::Truncated { need: 14, have: n }
            );
        }
    }

    #[test]
    fn mac_text_round_trip() {
        let m: MacAddr = "00:1b:21:06:00:0a".parse().unwrap();
        assert_eq!(m.to_string(), "00:1b:21:06:00:0a");
        assert_eq!(MacAddr::from_u64(m.to_u64()), m);
        assert!("00:1b:21:06:00".parse::<MacAddr>().is_err());
        assert!("00:1b:21:06:00:zz".parse::<MacAddr>().is_err());
    }
}
