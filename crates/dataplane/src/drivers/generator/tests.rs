use super::*;
use crate::interface::stream_config::AddrRange;
use wire::{EthernetFrame, Ipv4Packet, UdpDatagram};

fn frames(cfg: &StreamConfig, n: usize) -> Vec<Vec<u8>> {
    let mut pool = BufferPool::new(64).unwrap();
    let mut s = Stream::new(cfg, MacAddr([2, 0xfe, 0, 0, 0, 1]), 2_600_000_000);
    let mut ids = vec![0u32; n];
    pool.alloc(&mut ids);
    s.fill(&mut pool, &ids, 3);
    ids.iter()
        .map(|&i| {
            assert_eq!(pool.meta(i).rx_if, 3);
            pool.frame(i).to_vec()
        })
        .collect()
}

#[test]
fn ipv4_udp_frames_increment_and_checksum() {
    let mut cfg = StreamConfig::new(Template::Ipv4Udp);
    cfg.src_range = AddrRange { count: 3, mode: RangeMode::Increment };
    let out = frames(&cfg, 5);
    let srcs: Vec<_> = out
        .iter()
        .map(|f| {
            assert_eq!(f.len(), 60, "64-byte frame = 60 bytes + FCS");
            let e = EthernetFrame::new_checked(&f[..]).unwrap();
            assert_eq!(
                (e.ethertype(), e.dst(), e.src()),
                (0x0800, MacAddr([2, 0xfe, 0, 0, 0, 1]), MacAddr([2, 0, 0, 0, 0, 1]))
            );
            let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
            assert!(ip.checksum_ok());
            assert_eq!(ip.total_len(), 46);
            assert_eq!(ip.dst(), Ipv4Addr::new(48, 0, 0, 1));
            let u = UdpDatagram::new_checked(&f[34..]).unwrap();
            assert_ne!(u.checksum(), 0);
            assert!(u.checksum_ok(ip.src(), ip.dst()));
            ip.src().octets()[3]
        })
        .collect();
    assert_eq!(srcs, [1, 2, 3, 1, 2]);
}

#[test]
fn ipv6_udp_frames_walk_the_last_bits_and_destination_lists_with_valid_udp_checksums() {
    let mut cfg = StreamConfig::new(Template::Ipv6Udp);
    cfg.frame_size = 66;
    cfg.src_ip = Some("2001:db8:16::ffff:fffe".parse().unwrap());
    cfg.src_range = AddrRange { count: 3, mode: RangeMode::Increment };
    let list: Vec<Ipv6Addr> =
        ["2001:db8:48::1", "2400:cb00::7", "2a00:1450:4001::"].iter().map(|a| a.parse().unwrap()).collect();
    cfg.dst_addresses = list.clone();
    let out = frames(&cfg, 4);
    let got: Vec<(Ipv6Addr, Ipv6Addr)> = out
        .iter()
        .map(|f| {
            assert_eq!(f.len(), 62);
            assert_eq!(&f[12..14], &[0x86, 0xdd]);
            let ip = wire::Ipv6Packet::new_checked(&f[14..]).unwrap();
            assert_eq!((ip.version(), ip.payload_len(), ip.next_header(), ip.hop_limit()), (6, 8, 17, 64));
            let u = UdpDatagram::new_checked(&f[54..]).unwrap();
            assert!(u.checksum_ok(ip.src(), ip.dst()), "{} -> {}", ip.src(), ip.dst());
            (ip.src(), ip.dst())
        })
        .collect();
    let src = |s: &str| s.parse::<Ipv6Addr>().unwrap();
    assert_eq!(
        got,
        [
            (src("2001:db8:16::ffff:fffe"), list[0]),
            (src("2001:db8:16::ffff:ffff"), list[1]),
            (src("2001:db8:16::1:0:0"), list[2]),
            (src("2001:db8:16::ffff:fffe"), list[0]),
        ],
        "the source carries into the upper bits; the destinations come from the list in turn"
    );
}

#[test]
fn mpls_vlan_and_l2_templates() {
    let mut cfg = StreamConfig::new(Template::Mpls);
    cfg.labels = vec![16, 17];
    cfg.vlan = Some(100);
    cfg.frame_size = 128;
    let f = &frames(&cfg, 1)[0];
    assert_eq!(f.len(), 124);
    assert_eq!(&f[12..18], &[0x81, 0x00, 0x00, 100, 0x88, 0x47]);
    assert_eq!(MplsLabel::parse(&f[18..]).unwrap(), MplsLabel { label: 16, tc: 0, bos: false, ttl: 64 });
    assert_eq!(MplsLabel::parse(&f[22..]).unwrap(), MplsLabel { label: 17, tc: 0, bos: true, ttl: 64 });
    let ip = Ipv4Packet::new_checked(&f[26..]).unwrap();
    assert!(ip.checksum_ok());
    assert_eq!(usize::from(ip.total_len()), 124 - 26);
    let u = UdpDatagram::new_checked(&f[46..]).unwrap();
    assert!(u.checksum_ok(ip.src(), ip.dst()));

    let mut cfg = StreamConfig::new(Template::L2);
    cfg.src_range = AddrRange { count: 1000, mode: RangeMode::Random };
    let out = frames(&cfg, 20);
    let mut macs: Vec<_> = out.iter().map(|f| EthernetFrame::new_checked(&f[..]).unwrap().src().to_u64()).collect();
    assert!(macs.iter().all(|&m| (0x0200_0000_0001..0x0200_0000_0001 + 1000).contains(&m)));
    macs.sort();
    macs.dedup();
    assert!(macs.len() > 10, "random walk gives distinct addresses");
    assert_eq!(u16::from_be_bytes([out[0][12], out[0][13]]), L2_ETHERTYPE);
}

#[test]
fn label_ranges_walk_the_top_label_and_keep_the_rest_of_the_stack() {
    let mut cfg = StreamConfig::new(Template::Mpls);
    cfg.labels = vec![1000, 17];
    cfg.label_range = Some(AddrRange { count: 3, mode: RangeMode::Increment });
    let out = frames(&cfg, 5);
    let top = |f: &Vec<u8>| MplsLabel::parse(&f[14..]).unwrap();
    let tops: Vec<_> = out.iter().map(top).collect();
    let want = |label| MplsLabel { label, tc: 0, bos: false, ttl: 64 };
    assert_eq!(tops, [1000, 1001, 1002, 1000, 1001].map(want));
    for f in &out {
        assert_eq!(MplsLabel::parse(&f[18..]).unwrap(), MplsLabel { label: 17, tc: 0, bos: true, ttl: 64 });
        assert!(Ipv4Packet::new_checked(&f[22..]).unwrap().checksum_ok());
    }

    cfg.labels = vec![16];
    cfg.label_range = Some(AddrRange { count: 40, mode: RangeMode::Random });
    let mut labels: Vec<_> = frames(&cfg, 64).iter().map(top).collect();
    assert!(labels.iter().all(|l| (16..56).contains(&l.label) && l.bos && l.ttl == 64), "{labels:?}");
    labels.dedup();
    assert!(labels.len() > 20, "random walk gives labels in turn: {labels:?}");
}
