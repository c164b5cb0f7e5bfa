//! What a sender left to offload, done in software: frames a packet socket hands over with a
//! `virtio_net_hdr` in front (`PACKET_VNET_HDR`) may be GSO/GRO super-frames (one TCP or UDP
//! header over up to 64 KiB of payload, to be cut into segments of `gso_size` bytes) or carry
//! a partial checksum (the sum of the pseudo-header, to be completed over the rest of the
//! segment). [`Plan`] cuts a super-frame into the segments that would have been on the wire
//! (TCP over IPv4 and IPv6, UDP with `GSO_UDP_L4`), each with its own lengths, IPv4 id, TCP
//! sequence number and flags, and checksums; [`complete_partial`] completes a partial checksum
//! of any protocol at the offsets the header names. Both work on plain byte slices.

use wire::checksum;

/// Bytes of a `virtio_net_hdr`.
pub const VNET_HDR_LEN: usize = 10;

/// A `virtio_net_hdr` (little-endian, as packet sockets write it on little-endian hosts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct VnetHdr {
    /// [`VnetHdr::NEEDS_CSUM`] and others.
    pub flags: u8,
    /// [`VnetHdr::GSO_TCPV4`] and the others, with [`VnetHdr::GSO_ECN`] possibly or'ed in.
    pub gso_type: u8,
    /// Bytes of headers (advisory: segmentation finds them itself).
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    /// Where the checksummed part starts (from the frame's first byte).
    pub csum_start: u16,
    /// Where, from `csum_start`, the checksum field is.
    pub csum_offset: u16,
}

impl VnetHdr {
    /// The checksum at `csum_start` + `csum_offset` is partial: the pseudo-header's sum.
    pub const NEEDS_CSUM: u8 = 1;
    /// Not a super-frame.
    pub const GSO_NONE: u8 = 0;
    /// TCP over IPv4.
    pub const GSO_TCPV4: u8 = 1;
    /// UDP fragmentation offload (IPv4 fragments; not cut here).
    pub const GSO_UDP: u8 = 3;
    /// TCP over IPv6.
    pub const GSO_TCPV6: u8 = 4;
    /// UDP segmentation (each segment a datagram of its own).
    pub const GSO_UDP_L4: u8 = 5;
    /// The first segment's TCP header has CWR set.
    pub const GSO_ECN: u8 = 0x80;

    /// Reads a header.
    pub fn parse(b: &[u8; VNET_HDR_LEN]) -> Self {
        let u16_at = |k: usize| u16::from_le_bytes([b[k], b[k + 1]]);
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        }
    }

    /// The header's bytes.
    pub fn to_bytes(self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0u8; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        for (k, v) in [self.hdr_len, self.gso_size, self.csum_start, self.csum_offset].into_iter().enumerate() {
            b[2 + 2 * k..4 + 2 * k].copy_from_slice(&v.to_le_bytes());
        }
        b
    }

    /// The GSO kind, without the ECN bit.
    pub fn gso(&self) -> u8 {
        self.gso_type & !Self::GSO_ECN
    }
}

/// How one super-frame is cut into segments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Offset of the IP header.
    l3: usize,
    /// Offset of the TCP or UDP header.
    l4: usize,
    /// End of the headers every segment repeats.
    headers: usize,
    /// Payload bytes per segment (the last may have fewer).
    mss: usize,
    /// Bytes of the whole super-frame.
    len: usize,
    /// Segments.
    count: usize,
    ipv4: bool,
    tcp: bool,
}

impl Plan {
    /// The plan for super-frame `frame` with header `h` (its `csum_start` relative to `frame`),
    /// whose segments must each fit `largest` bytes; `None` when it is not a TCP or UDP
    /// super-frame over IPv4 or IPv6 this can cut (or is inconsistent with its header).
    pub fn new(frame: &[u8], h: &VnetHdr, largest: usize) -> Option<Self> {
        let (ethertype, l3) = wire::ethernet::inner_ethertype(frame, usize::MAX)?;
        let (ipv4, tcp) = match h.gso() {
            VnetHdr::GSO_TCPV4 => (true, true),
            VnetHdr::GSO_TCPV6 => (false, true),
            VnetHdr::GSO_UDP_L4 => (ethertype == 0x0800, false),
            _ => return None,
        };
        let ip = frame.get(l3..)?;
        let l4 = if ipv4 {
            let ihl = usize::from(ip.first()? & 0x0f) * 4;
            let not_fragment = u16::from_be_bytes([*ip.get(6)?, *ip.get(7)?]) & 0x3fff == 0;
            let proto = *ip.get(9)?;
            let ok = ethertype == 0x0800 && ip[0] >> 4 == 4 && ihl >= 20 && not_fragment;
            (ok && proto == if tcp { 6 } else { 17 }).then_some(l3 + ihl)?
        } else {
            // Extension headers may sit between: the checksum's start says where TCP or UDP is.
            let at = if h.flags & VnetHdr::NEEDS_CSUM != 0 { usize::from(h.csum_start) } else { l3 + 40 };
            (ethertype == 0x86dd && ip.first()? >> 4 == 6 && at >= l3 + 40).then_some(at)?
        };
        let headers = if tcp { l4 + usize::from(frame.get(l4 + 12)? >> 4) * 4 } else { l4 + 8 };
        let mss = usize::from(h.gso_size);
        let ok = (!tcp || headers >= l4 + 20) && headers < frame.len() && mss > 0 && headers + mss <= largest;
        ok.then(|| Plan {
            l3,
            l4,
            headers,
            mss,
            len: frame.len(),
            count: (frame.len() - headers).div_ceil(mss),
            ipv4,
            tcp,
        })
    }

    /// Segments the super-frame becomes.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Writes segment `k` (0-based, below [`Plan::count`]) of `frame` (the super-frame the plan
    /// was made for) into `out` and returns its length.
    ///
    /// # Panics
    /// When `out` is shorter than the segment (the plan's `largest` guarantees it is not).
    pub fn write(&self, frame: &[u8], k: usize, out: &mut [u8]) -> usize {
        let (l3, l4, end) = (self.l3, self.l4, self.headers);
        let from = end + k * self.mss;
        let payload = self.mss.min(self.len - from);
        let seg_len = end + payload;
        out[..end].copy_from_slice(&frame[..end]);
        out[end..seg_len].copy_from_slice(&frame[from..from + payload]);
        let l4_len = seg_len - l4;
        let pseudo = if self.ipv4 {
            let ihl = l4 - l3;
            out[l3 + 2..l3 + 4].copy_from_slice(&((seg_len - l3) as u16).to_be_bytes());
            let id = u16::from_be_bytes([out[l3 + 4], out[l3 + 5]]).wrapping_add(k as u16);
            out[l3 + 4..l3 + 6].copy_from_slice(&id.to_be_bytes());
            out[l3 + 10..l3 + 12].copy_from_slice(&[0, 0]);
            let sum = checksum::checksum(&out[l3..l3 + ihl]);
            out[l3 + 10..l3 + 12].copy_from_slice(&sum.to_be_bytes());
            checksum::sum_words(&out[l3 + 12..l3 + 20], u32::from(out[l3 + 9]) + l4_len as u32)
        } else {
            out[l3 + 4..l3 + 6].copy_from_slice(&((seg_len - l3 - 40) as u16).to_be_bytes());
            checksum::sum_words(&out[l3 + 8..l3 + 40], if self.tcp { 6 } else { 17 } + l4_len as u32)
        };
        let field = if self.tcp {
            let seq = u32::from_be_bytes([out[l4 + 4], out[l4 + 5], out[l4 + 6], out[l4 + 7]]);
            let seq = seq.wrapping_add((k * self.mss) as u32);
            out[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
            // CWR only on the first segment, FIN and PSH only on the last (as the kernel cuts).
            if k > 0 {
                out[l4 + 13] &= !0x80;
            }
            if k + 1 < self.count {
                out[l4 + 13] &= !0x09;
            }
            l4 + 16
        } else {
            out[l4 + 4..l4 + 6].copy_from_slice(&(l4_len as u16).to_be_bytes());
            l4 + 6
        };
        out[field..field + 2].copy_from_slice(&[0, 0]);
        let sum = match !checksum::fold(checksum::sum_words(&out[l4..seg_len], pseudo)) {
            0 => 0xffff, // a computed zero is sent as all ones (UDP's zero means "none")
            c => c,
        };
        out[field..field + 2].copy_from_slice(&sum.to_be_bytes());
        seg_len
    }
}

/// Completes the partial checksum of `frame`: the field at `start + offset` holds the
/// pseudo-header's sum, and the checksum covers everything from `start` to the end. False
/// (frame unchanged) when the offsets lie outside the frame.
pub fn complete_partial(frame: &mut [u8], start: usize, offset: usize) -> bool {
    let field = start + offset;
    if start >= frame.len() || field + 2 > frame.len() {
        return false;
    }
    let sum = match !checksum::fold(checksum::sum_words(&frame[start..], 0)) {
        0 => 0xffff,
        c => c,
    };
    frame[field..field + 2].copy_from_slice(&sum.to_be_bytes());
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TCP super-frame over IPv4 (`v4`) or IPv6 with `payload` bytes, ECN's CWR and
    /// FIN|PSH set, partial checksum as a sender leaves it.
    fn super_frame(v4: bool, payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[wire::ethernet::field::ETHERTYPE].copy_from_slice(if v4 { &[8, 0] } else { &[0x86, 0xdd] });
        let l4_len = 20 + payload;
        if v4 {
            let mut ip = [0u8; 20];
            wire::ipv4::write_header(&mut ip, (20 + l4_len) as u16, 64, 6, [10, 0, 1, 2].into(), [10, 0, 2, 2].into());
            ip[4..6].copy_from_slice(&[0xff, 0xfe]); // the id wraps
            f.extend_from_slice(&ip);
        } else {
            let mut ip = [0u8; 40];
            ip[0] = 0x60;
            ip[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
            ip[6] = 6;
            ip[7] = 64;
            ip[8..24].copy_from_slice(&"fd00:1::2".parse::<std::net::Ipv6Addr>().unwrap().octets());
            ip[24..40].copy_from_slice(&"fd00:2::2".parse::<std::net::Ipv6Addr>().unwrap().octets());
            f.extend_from_slice(&ip);
        }
        let mut tcp = [0u8; 20];
        tcp[4..8].copy_from_slice(&0xffff_f000u32.to_be_bytes()); // the sequence wraps
        tcp[12] = 5 << 4;
        tcp[13] = 0x80 | 0x10 | 0x08 | 0x01; // CWR ACK PSH FIN
        f.extend_from_slice(&tcp);
        f.extend((0..payload).map(|k| (k % 251) as u8));
        f
    }

    /// The pseudo-header checksum a sender leaves in the field (not inverted).
    fn leave_partial(f: &mut [u8], v4: bool) -> VnetHdr {
        let (l4, src) = if v4 { (34, 26..34) } else { (54, 22..54) };
        let sum = checksum::sum_words(&f[src], 6 + (f.len() - l4) as u32);
        f[l4 + 16..l4 + 18].copy_from_slice(&checksum::fold(sum).to_be_bytes());
        VnetHdr {
            flags: VnetHdr::NEEDS_CSUM,
            gso_type: if v4 { VnetHdr::GSO_TCPV4 } else { VnetHdr::GSO_TCPV6 } | VnetHdr::GSO_ECN,
            hdr_len: l4 as u16 + 20,
            gso_size: 1448,
            csum_start: l4 as u16,
            csum_offset: 16,
        }
    }

    #[test]
    fn a_tcp_super_frame_becomes_the_segments_of_the_wire() {
        for v4 in [true, false] {
            let mut f = super_frame(v4, 5000);
            let h = leave_partial(&mut f, v4);
            assert_eq!(VnetHdr::parse(&h.to_bytes()), h);
            let plan = Plan::new(&f, &h, 2048).unwrap();
            assert_eq!(plan.count(), 4, "5000 bytes in 1448-byte segments");
            let (l3, l4) = (14, if v4 { 34 } else { 54 });
            let mut data = Vec::new();
            for k in 0..plan.count() {
                let mut out = [0u8; 2048];
                let n = plan.write(&f, k, &mut out);
                let seg = &out[..n];
                let payload = if k < 3 { 1448 } else { 5000 - 3 * 1448 };
                assert_eq!(n, l4 + 20 + payload);
                if v4 {
                    let ip = wire::Ipv4Packet::new_checked(&seg[l3..]).unwrap();
                    assert!(ip.checksum_ok());
                    assert_eq!(usize::from(ip.total_len()), n - l3);
                    assert_eq!(u16::from_be_bytes([seg[18], seg[19]]), 0xfffeu16.wrapping_add(k as u16), "ids go on");
                } else {
                    assert_eq!(usize::from(u16::from_be_bytes([seg[18], seg[19]])), n - l3 - 40);
                }
                let seq = u32::from_be_bytes(seg[l4 + 4..l4 + 8].try_into().unwrap());
                assert_eq!(seq, 0xffff_f000u32.wrapping_add(k as u32 * 1448));
                let flags = seg[l4 + 13];
                assert_eq!(flags & 0x80 != 0, k == 0, "CWR on the first only");
                assert_eq!(flags & 0x09, if k == 3 { 0x09 } else { 0 }, "FIN and PSH on the last only");
                assert_eq!(flags & 0x10, 0x10, "ACK on all");
                let pseudo = if v4 {
                    checksum::sum_words(&seg[26..34], 6 + (n - l4) as u32)
                } else {
                    checksum::sum_words(&seg[22..54], 6 + (n - l4) as u32)
                };
                assert_eq!(checksum::fold(checksum::sum_words(&seg[l4..], pseudo)), 0xffff, "TCP checksum");
                data.extend_from_slice(&seg[l4 + 20..]);
            }
            assert_eq!(data, f[l4 + 20..], "the payload, whole and in order");
        }
    }

    #[test]
    fn udp_super_frames_become_datagrams_each_with_its_length_and_checksum() {
        let mut f = super_frame(true, 3000);
        f[23] = 17; // UDP, the TCP header's first 8 bytes as the UDP header
        let h = VnetHdr { gso_type: VnetHdr::GSO_UDP_L4, gso_size: 1000, ..VnetHdr::default() };
        let plan = Plan::new(&f, &h, 2048).unwrap();
        assert_eq!(plan.count(), 4, "3012 bytes after the UDP header in 1000-byte datagrams");
        for k in 0..4 {
            let mut out = [0u8; 2048];
            let n = plan.write(&f, k, &mut out);
            let udp_len = usize::from(u16::from_be_bytes([out[38], out[39]]));
            assert_eq!(udp_len, n - 34);
            let pseudo = checksum::sum_words(&out[26..34], 17 + udp_len as u32);
            assert_eq!(checksum::fold(checksum::sum_words(&out[34..n], pseudo)), 0xffff);
        }
    }

    #[test]
    fn what_cannot_be_cut_is_refused() {
        let mut f = super_frame(true, 5000);
        let h = leave_partial(&mut f, true);
        assert!(Plan::new(&f, &h, 1500).is_none(), "a segment larger than a buffer");
        assert!(Plan::new(&f, &VnetHdr { gso_size: 0, ..h }, 2048).is_none(), "no segment size");
        assert!(Plan::new(&f, &VnetHdr { gso_type: VnetHdr::GSO_UDP, ..h }, 2048).is_none(), "UFO");
        assert!(Plan::new(&f, &VnetHdr { gso_type: VnetHdr::GSO_TCPV6, ..h }, 2048).is_none(), "not IPv6");
        assert!(Plan::new(&f[..40], &h, 2048).is_none(), "cut short");
        let mut frag = f.clone();
        frag[20] = 0x20; // more fragments
        assert!(Plan::new(&frag, &h, 2048).is_none(), "a fragment");
    }

    #[test]
    fn a_partial_checksum_is_completed_where_the_header_says() {
        for v4 in [true, false] {
            let mut f = super_frame(v4, 300);
            let h = leave_partial(&mut f, v4);
            assert!(complete_partial(&mut f, usize::from(h.csum_start), usize::from(h.csum_offset)));
            let l4 = usize::from(h.csum_start);
            let pseudo = if v4 {
                checksum::sum_words(&f[26..34], 6 + (f.len() - l4) as u32)
            } else {
                checksum::sum_words(&f[22..54], 6 + (f.len() - l4) as u32)
            };
            assert_eq!(checksum::fold(checksum::sum_words(&f[l4..], pseudo)), 0xffff);
            assert!(!complete_partial(&mut f, 10_000, 16), "outside the frame");
        }
    }
}
