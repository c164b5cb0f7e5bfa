//! One line per traced packet: what its first bytes hold, for `show trace`.

/// The headers of a frame's first bytes in words: MACs, 802.1Q tags, MPLS labels, IPv4 or
/// IPv6 addresses, protocol (next header) and TTL (hop limit), or ARP.
pub fn summary(head: &[u8]) -> String {
    use std::fmt::Write;
    use wire::{EtherType, EthernetFrame, Ipv4Packet, Ipv6Packet, mpls::MplsLabel};
    let Ok(e) = EthernetFrame::new_checked(head) else { return format!("{} bytes, not Ethernet", head.len()) };
    let mut out = format!("{} > {}", e.src(), e.dst());
    let (mut ethertype, mut at) = (u16::from_be_bytes([head[12], head[13]]), 14);
    while matches!(ethertype, EtherType::VLAN | EtherType::QINQ) && head.len() >= at + 4 {
        let _ = write!(out, " vlan {}", u16::from_be_bytes([head[at], head[at + 1]]) & 0xfff);
        ethertype = u16::from_be_bytes([head[at + 2], head[at + 3]]);
        at += 4;
    }
    if ethertype == EtherType::MPLS {
        while let Some(l) = head.get(at..).and_then(MplsLabel::parse) {
            let _ = write!(out, " label {} ttl {}", l.label, l.ttl);
            at += 4;
            if l.bos {
                // Under the stack, the version nibble tells IPv4 from IPv6.
                ethertype = match head.get(at).map(|b| b >> 4) {
                    Some(6) => EtherType::IPV6,
                    _ => EtherType::IPV4,
                };
                break;
            }
        }
    }
    match ethertype {
        EtherType::IPV4 => match Ipv4Packet::new_checked(&head[at.min(head.len())..]) {
            Ok(ip) => {
                let _ = write!(out, ", IPv4 {} > {} proto {} ttl {}", ip.src(), ip.dst(), ip.protocol(), ip.ttl());
            }
            Err(_) => out.push_str(", IPv4 (cut short)"),
        },
        EtherType::IPV6 => match Ipv6Packet::new_checked(&head[at.min(head.len())..]) {
            Ok(ip) => {
                let (src, dst, nh, hl) = (ip.src(), ip.dst(), ip.next_header(), ip.hop_limit());
                let _ = write!(out, ", IPv6 {src} > {dst} next-header {nh} hop-limit {hl}");
            }
            Err(_) => out.push_str(", IPv6 (cut short)"),
        },
        EtherType::ARP => out.push_str(", ARP"),
        other => {
            let _ = write!(out, ", ethertype 0x{other:04x}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::summary;

    #[test]
    fn ipv6_headers_are_summarised_directly_and_under_labels() {
        let mut ip = [0u8; 40];
        let (s, d) = ("2001:db8:16::1".parse().unwrap(), "2001:db8:48::5".parse().unwrap());
        wire::ipv6::write_header(&mut ip, 0, 17, 63, s, d);
        let macs = [2u8, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
        let want = ", IPv6 2001:db8:16::1 > 2001:db8:48::5 next-header 17 hop-limit 63";
        let direct = [&macs[..], &[0x86, 0xdd], &ip].concat();
        assert!(summary(&direct).ends_with(want), "{}", summary(&direct));
        let labelled = [&macs[..], &[0x88, 0x47, 0x00, 0x25, 0x91, 0x09], &ip].concat();
        assert!(summary(&labelled).ends_with(&format!(" label 601 ttl 9{want}")), "{}", summary(&labelled));
        assert!(summary(&direct[..40]).ends_with(", IPv6 (cut short)"));
    }
}
