//! What the agent reads back from a sampled frame's header bytes: the 802.1Q priority and the
//! IPv4 or IPv6 addresses (after up to two VLAN tags and any MPLS label stack). Headers are
//! truncated copies, so every read is checked and a short header gives `None` / 0.

use crate::l3::LabelStack;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The 802.1Q priority (PCP) of the outer tag, 0 for an untagged frame.
pub fn priority(h: &[u8]) -> u8 {
    match (h.get(12..14), h.get(14)) {
        (Some([0x81, 0x00] | [0x88, 0xa8]), Some(&tci_high)) => tci_high >> 5,
        _ => 0,
    }
}

/// VLAN tags looked past to find the ethertype.
const MAX_TAGS: usize = 2;

/// The label stack starting at `at`: its first 8 labels, and where the packet under the
/// bottom of the stack starts (`None` when the header ends before the bottom).
fn stack(h: &[u8], mut at: usize) -> (LabelStack, Option<usize>) {
    let mut labels = [0u32; 8];
    let mut n = 0;
    while let Some(&[a, b, c, d]) = h.get(at..at + 4) {
        let entry = u32::from_be_bytes([a, b, c, d]);
        if n < labels.len() {
            labels[n] = entry >> 12;
            n += 1;
        }
        at += 4;
        if entry & 0x100 != 0 {
            return (LabelStack::new(&labels[..n]), Some(at));
        }
    }
    (LabelStack::new(&labels[..n]), None)
}

/// The MPLS label stack of an Ethernet frame (after up to two VLAN tags), outermost first:
/// up to 8 labels, as many as the header holds; empty when the frame is not MPLS.
pub fn labels(h: &[u8]) -> LabelStack {
    match wire::ethernet::inner_ethertype(h, MAX_TAGS) {
        Some((0x8847, at)) => stack(h, at).0,
        _ => LabelStack::EMPTY,
    }
}

/// The IP (source, destination) of an Ethernet frame carrying IPv4 or IPv6, directly or under
/// MPLS (where the version nibble tells which).
pub fn ip_addresses(h: &[u8]) -> Option<(IpAddr, IpAddr)> {
    let (version, ip) = match wire::ethernet::inner_ethertype(h, MAX_TAGS)? {
        (0x0800, at) => (4, at),
        (0x86dd, at) => (6, at),
        (0x8847, at) => {
            let ip = stack(h, at).1?;
            (*h.get(ip)? >> 4, ip)
        }
        _ => return None,
    };
    match version {
        4 => {
            let a: [u8; 8] = h.get(ip + 12..ip + 20)?.try_into().ok()?;
            let (s, d) = (<[u8; 4]>::try_from(&a[..4]).ok()?, <[u8; 4]>::try_from(&a[4..]).ok()?);
            Some((Ipv4Addr::from(s).into(), Ipv4Addr::from(d).into()))
        }
        6 => {
            let s: [u8; 16] = h.get(ip + 8..ip + 24)?.try_into().ok()?;
            let d: [u8; 16] = h.get(ip + 24..ip + 40)?.try_into().ok()?;
            Some((Ipv6Addr::from(s).into(), Ipv6Addr::from(d).into()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ipv4(after: &[u8]) -> Vec<u8> {
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[12..20].copy_from_slice(&[16, 0, 0, 1, 48, 0, 0, 5]);
        [&[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2][..], after, &ip].concat()
    }

    #[test]
    fn addresses_after_tags_and_labels_and_none_when_cut_short() {
        let want = Some((Ipv4Addr::new(16, 0, 0, 1).into(), Ipv4Addr::new(48, 0, 0, 5).into()));
        assert_eq!(ip_addresses(&ipv4(&[8, 0])), want);
        assert_eq!(ip_addresses(&ipv4(&[0x81, 0, 0xa0, 100, 8, 0])), want);
        assert_eq!(ip_addresses(&ipv4(&[0x88, 0x47, 0, 1, 0, 64, 0, 1, 1, 64])), want);
        let full = ipv4(&[0x88, 0x47, 0, 1, 0, 64, 0, 1, 1, 64]);
        assert_eq!(ip_addresses(&full[..full.len() - 1]), None);
        assert_eq!(ip_addresses(&ipv4(&[0x86, 0xdd])), None, "version 4 under the IPv6 ethertype: cut short");
        // A stack with no bottom within the header.
        assert_eq!(ip_addresses(&[&full[..14], &[0, 1, 0, 64].repeat(8)].concat()), None);
    }

    #[test]
    fn ipv6_addresses_directly_and_under_labels() {
        let mut ip = [0u8; 40];
        ip[0] = 0x60;
        ip[8..24].copy_from_slice(&"2001:db8:16::1".parse::<Ipv6Addr>().unwrap().octets());
        ip[24..40].copy_from_slice(&"2001:db8:48::5".parse::<Ipv6Addr>().unwrap().octets());
        let want: Option<(IpAddr, IpAddr)> =
            Some(("2001:db8:16::1".parse().unwrap(), "2001:db8:48::5".parse().unwrap()));
        let macs = [2u8, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
        let direct = [&macs[..], &[0x86, 0xdd], &ip].concat();
        assert_eq!(ip_addresses(&direct), want);
        let labelled = [&macs[..], &[0x88, 0x47, 0, 1, 1, 64], &ip].concat();
        assert_eq!(ip_addresses(&labelled), want, "the version nibble under the stack says IPv6");
        assert_eq!(ip_addresses(&direct[..direct.len() - 1]), None);
    }

    #[test]
    fn label_stacks_to_the_bottom_or_the_end_of_the_header() {
        let two = [&[0u8; 12][..], &[0x81, 0, 0, 5, 0x88, 0x47], &[0, 16, 0, 64, 0, 17, 1, 64], &[0x45; 20]].concat();
        assert_eq!(labels(&two).labels(), [256, 272]);
        assert_eq!(labels(&two[..22]).labels(), [256], "cut after the first label");
        assert!(labels(&ipv4(&[8, 0])).is_empty());
        let nine = [&[0u8; 12][..], &[0x88, 0x47], &[0, 16, 0, 64].repeat(9)].concat();
        assert_eq!(labels(&nine).labels().len(), 8, "at most 8");
    }

    #[test]
    fn priority_of_the_outer_tag() {
        assert_eq!(priority(&ipv4(&[0x81, 0, 0xa0, 100, 8, 0])), 5);
        assert_eq!(priority(&ipv4(&[0x81, 0, 0xe0, 7, 8, 0])), 7);
        assert_eq!(priority(&ipv4(&[8, 0])), 0);
        assert_eq!(priority(&[0; 13]), 0);
    }
}
