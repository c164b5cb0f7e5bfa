use super::*;
use crate::drivers::af_xdp::kernel_tests::in_new_netns;
use crate::drivers::drops;
use crate::drivers::offload::VnetHdr;
use crate::sflow::ring::Ring;
use crate::sflow::{DropBudget, RX, SflowWorker, WorkerBudget};
use wire::checksum;

/// A TCP super-frame to p0's MAC, 10.0.1.2 → 10.0.2.2, with `payload` bytes, its
/// checksum left partial, and the `virtio_net_hdr` a sender with TSO puts in front.
fn super_frame(payload: usize) -> Vec<u8> {
    let mut f = vec![2, 0xfe, 0, 0, 0, 1, 2, 0, 0, 0, 0, 9, 8, 0];
    let mut ip = [0u8; 20];
    let (src, dst) = ([10, 0, 1, 2].into(), [10, 0, 2, 2].into());
    wire::ipv4::write_header(&mut ip, (40 + payload) as u16, 64, 6, src, dst);
    f.extend_from_slice(&ip);
    let mut tcp = [0u8; 20];
    tcp[4..8].copy_from_slice(&1000u32.to_be_bytes());
    (tcp[12], tcp[13]) = (5 << 4, 0x18); // ACK PSH
    let pseudo = checksum::sum_words(&ip[12..20], 6 + (20 + payload) as u32);
    tcp[16..18].copy_from_slice(&checksum::fold(pseudo).to_be_bytes());
    f.extend_from_slice(&tcp);
    f.extend((0..payload).map(|k| (k % 253) as u8));
    let h = VnetHdr {
        flags: VnetHdr::NEEDS_CSUM,
        gso_type: VnetHdr::GSO_TCPV4,
        hdr_len: 54,
        gso_size: 1448,
        csum_start: 34,
        csum_offset: 16,
    };
    [&h.to_bytes()[..], &f].concat()
}

#[test]
fn a_super_frame_becomes_segments_each_forwarded_and_sampled_as_on_the_wire() {
    in_new_netns(|| {
        let config = crate::config::Config::load(
            "
interfaces:
  p0: {index: 1, mac: '02:fe:00:00:00:01', addresses: [10.0.1.1/24]}
  p1: {index: 2, mac: '02:fe:00:00:00:02', addresses: [10.0.2.1/24]}
neighbors: [{interface: p1, address: 10.0.2.2, mac: '02:00:00:00:00:09'}]
",
        )
        .unwrap();
        let mut g = Graph::of_config(&config, BufferPool::new(1024).unwrap());
        let counters = g.counters.clone();
        let (producer, mut consumer) = Ring::new(64).split();
        let budget = WorkerBudget::new(DropBudget::new(1), 0);
        g.features.sflow = Some(SflowWorker::new(
            &[crate::sflow::DataSource { port: 1, rate: 1, stages: RX }],
            &[],
            budget,
            128,
            3,
            producer,
            vec![counters],
        ));
        let mut rx = RxQueue::open(1, 1, &AfPacketConfig::default(), None).unwrap();

        // Sent on lo through a packet socket with a virtio_net_hdr: the kernel keeps it one
        // GSO frame (lo segments nothing) and hands it to the rx ring whole.
        let tx = packet_socket(0).unwrap();
        set_packet_opt(tx.as_raw_fd(), libc::PACKET_VNET_HDR, &1 as &libc::c_int, "PACKET_VNET_HDR").unwrap();
        bind(tx.as_raw_fd(), 1, 0).unwrap();
        let frame = super_frame(5000);
        // SAFETY: a send of the bytes of `frame`, which lives across the call.
        let sent = unsafe { libc::send(tx.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        assert_eq!(sent, frame.len() as isize, "{}", io::Error::last_os_error());

        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let v = loop {
            if let Some(v) = rx.poll(&mut g) {
                break v;
            }
            assert!(std::time::Instant::now() < deadline, "nothing reached the ring");
            std::thread::sleep(std::time::Duration::from_millis(5));
        };
        let segments: Vec<Vec<u8>> = g.vectors[v].indices().iter().map(|&i| g.pool.frame(i).to_vec()).collect();
        let payloads = [1448, 1448, 1448, 656];
        assert_eq!(segments.len(), 4, "5000 bytes in 1448-byte segments");
        for (k, s) in segments.iter().enumerate() {
            assert_eq!(s.len(), 54 + payloads[k]);
            let ip = wire::Ipv4Packet::new_checked(&s[14..]).unwrap();
            assert!(ip.checksum_ok() && usize::from(ip.total_len()) == s.len() - 14);
            let seq = u32::from_be_bytes(s[38..42].try_into().unwrap());
            assert_eq!(seq, 1000 + 1448 * k as u32);
            assert_eq!(s[47] & 0x08 != 0, k == 3, "PSH on the last segment only");
            let pseudo = checksum::sum_words(&s[26..34], 6 + (s.len() - 34) as u32);
            assert_eq!(checksum::fold(checksum::sum_words(&s[34..], pseudo)), 0xffff, "TCP checksum");
        }
        g.forward(v, crate::ethernet::nodes::ETHERNET_INPUT);
        g.run(0);
        g.features.sflow.as_mut().unwrap().publish(&g.pool, &g.features.tables.interfaces, &g.features.tables.l3);
        let mut lengths = Vec::new();
        consumer.drain(usize::MAX, |s| {
            lengths.push(usize::from(s.frame_len));
            true
        });
        assert_eq!(lengths, payloads.map(|p| 54 + p), "each segment sampled as the frame it is on the wire");
        let mut stats = crate::interface::IfStats::default();
        g.counters.interface(2).add_to(&mut stats);
        assert_eq!(stats.tx_packets, 4, "each segment forwarded");
    });
}

#[test]
fn a_frame_larger_than_a_buffer_that_is_no_super_frame_is_rx_truncated() {
    in_new_netns(|| {
        let mut g = Graph::of_config(&crate::config::Config::default(), BufferPool::new(1024).unwrap());
        let mut rx = RxQueue::open(1, 1, &AfPacketConfig::default(), None).unwrap();
        let tx = packet_socket(0).unwrap();
        bind(tx.as_raw_fd(), 1, 0).unwrap();
        // 3000 bytes on lo (MTU 65536) in one plain frame: more than a 2048-byte buffer.
        let mut frame = vec![0u8; 3000];
        frame[12..14].copy_from_slice(&[0x08, 0x00]);
        // SAFETY: a send of the bytes of `frame`, which lives across the call.
        let sent = unsafe { libc::send(tx.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        assert_eq!(sent, 3000, "{}", io::Error::last_os_error());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while g.counters.error(1, drops::RX_TRUNCATED).get() == 0 {
            assert!(rx.poll(&mut g).is_none(), "nothing is kept");
            g.run(0);
            assert!(std::time::Instant::now() < deadline, "the frame was never seen");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(g.counters.error(1, drops::RX_TRUNCATED).get(), 1);
    });
}
