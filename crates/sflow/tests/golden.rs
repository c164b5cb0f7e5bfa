//! Golden byte vectors written by hand from the sFlow v5 specification (and sflow_drops.txt),
//! one per structure. Each vector is decoded to the expected model and the model is encoded
//! back to the same bytes.

use sflow::*;
use std::borrow::Cow;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Parses hex written as words, ignoring whitespace and `# comments` to the end of a line.
fn hex(text: &str) -> Vec<u8> {
    let digits: String = text
        .lines()
        .map(|l| l.split('#').next().unwrap())
        .collect::<String>()
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    assert!(digits.len().is_multiple_of(2), "odd number of hex digits");
    (0..digits.len()).step_by(2).map(|i| u8::from_str_radix(&digits[i..i + 2], 16).unwrap()).collect()
}

fn agent() -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))
}

/// Header: version 5, agent 192.0.2.1, sub-agent 1, sequence 42, uptime 123456, N samples.
fn header(n: u32) -> String {
    format!(
        "00000005 00000001 c0000201 # version 5, address type 1 (IPv4), 192.0.2.1
         00000001 0000002a 0001e240 # sub-agent 1, sequence 42, uptime 123456 ms
         {n:08x}                    # samples
"
    )
}

fn datagram(samples: Vec<Sample<'static>>) -> Datagram<'static> {
    Datagram { agent: agent(), sub_agent_id: 1, sequence: 42, uptime_ms: 123456, samples }
}

/// Decodes `bytes` to `want` and encodes `want` back to `bytes`.
fn check(bytes: &[u8], want: &Datagram<'_>) {
    let got = decode(bytes).unwrap();
    assert_eq!(&got, want);
    let mut buf = vec![0u8; 2048];
    let n = encode(want, &mut buf).unwrap();
    assert_eq!(&buf[..n], bytes, "encoding differs from the golden bytes");
}

const FRAME: &str = "020000000002 020000000001 0800 4500002e00004000401100000a0000010a000002"; // 34 bytes

#[test]
fn empty_datagram_is_28_bytes() {
    let b = hex(&header(0));
    assert_eq!(b.len(), 28);
    check(&b, &datagram(vec![]));
}

#[test]
fn ipv6_agent_header_is_40_bytes() {
    let b = hex("00000005 00000002 20010db8000000000000000000000001 00000000 00000001 00000002 00000000");
    assert_eq!(b.len(), 40);
    let want =
        Datagram { agent: "2001:db8::1".parse().unwrap(), sub_agent_id: 0, sequence: 1, uptime_ms: 2, samples: vec![] };
    check(&b, &want);
}

#[test]
fn compact_flow_sample_with_raw_header_and_switch() {
    let b = hex(&format!(
        "{}
         00000001 00000074             # sample 0:1 flow_sample, 116 bytes = 32 + 60 + 24
         00000007 00000003             # sequence 7, source_id class 0 index 3
         000003e8 0001e240 00000000    # rate 1000, pool 123456, drops 0
         00000003 00000005             # input 3, output 5
         00000002                      # 2 records
         00000001 00000034             # record 0:1 sampled_header, 52 bytes
         00000001 00000026 00000004    # protocol 1 Ethernet, frame_length 38, stripped 4
         00000022 {FRAME} 0000         # header length 34, 34 bytes, 2 bytes pad
         000003e9 00000010             # record 0:1001 extended_switch, 16 bytes
         0000000a 00000000 00000014 00000000 # src vlan 10 prio 0, dst vlan 20 prio 0",
        header(1)
    ));
    let sample = Sample::Flow(FlowSample {
        sequence: 7,
        source: DataSource::interface(3),
        sampling_rate: 1000,
        sample_pool: 123456,
        drops: 0,
        input: Interface::Index(3),
        output: Interface::Index(5),
        records: vec![
            FlowRecord::RawHeader(RawHeader {
                protocol: 1,
                frame_length: 38,
                stripped: 4,
                header: Cow::Owned(hex(FRAME)),
            }),
            FlowRecord::Switch(ExtendedSwitch { src_vlan: 10, src_priority: 0, dst_vlan: 20, dst_priority: 0 }),
        ],
    });
    check(&b, &datagram(vec![sample]));
}

#[test]
fn compact_interface_formats_internal_discarded_multiple() {
    let b = hex(&format!(
        "{}
         00000001 00000020 00000001 00000004 00000064 000000c8 00000001
         3fffffff 80000007 00000000    # input internal, output 7 interfaces, 0 records
         00000001 00000020 00000002 00000004 00000064 0000012c 00000002
         00000002 40000102 00000000    # input 2, output discarded reason 258",
        header(2)
    ));
    let f = |sequence, sample_pool, drops, input, output| {
        Sample::Flow(FlowSample {
            sequence,
            source: DataSource::interface(4),
            sampling_rate: 100,
            sample_pool,
            drops,
            input,
            output,
            records: vec![],
        })
    };
    let want = datagram(vec![
        f(1, 200, 1, Interface::Internal, Interface::Multiple(7)),
        f(2, 300, 2, Interface::Index(2), Interface::Discarded(258)),
    ]);
    check(&b, &want);
}

#[test]
fn expanded_flow_sample_when_the_index_needs_it() {
    let b = hex(&format!(
        "{}
         00000003 0000002c             # sample 0:3 flow_sample_expanded, 44 bytes
         00000009 00000000 01000005    # sequence 9, ds_class 0, ds_index 0x01000005
         00000064 000003e8 00000003    # rate 100, pool 1000, drops 3
         00000000 ffffffff             # input: format 0, internal
         00000002 00000007             # output: format 2 (multiple), 7
         00000000                      # 0 records",
        header(1)
    ));
    let sample = Sample::Flow(FlowSample {
        sequence: 9,
        source: DataSource { class: 0, index: 0x0100_0005 },
        sampling_rate: 100,
        sample_pool: 1000,
        drops: 3,
        input: Interface::Internal,
        output: Interface::Multiple(7),
        records: vec![],
    });
    check(&b, &datagram(vec![sample]));
}

fn generic() -> IfCounters {
    IfCounters {
        if_index: 3,
        if_type: 6,
        if_speed: 10_000_000_000,
        if_direction: 1,
        if_status: 3,
        in_octets: 1_234_567_890_123,
        in_ucast_pkts: 1_000_001,
        in_multicast_pkts: 2002,
        in_broadcast_pkts: 303,
        in_discards: 4,
        in_errors: 5,
        in_unknown_protos: 6,
        out_octets: 9_876_543_210,
        out_ucast_pkts: 700_007,
        out_multicast_pkts: 808,
        out_broadcast_pkts: 909,
        out_discards: 10,
        out_errors: 11,
        promiscuous_mode: 0,
    }
}

const GENERIC: &str = "
    00000001 00000058                 # record 0:1 generic if_counters, 88 bytes
    00000003 00000006 00000002540be400 # ifIndex 3, ifType 6, ifSpeed 10e9
    00000001 00000003                 # direction full-duplex, status admin+oper up
    0000011f71fb04cb 000f4241 000007d2 0000012f # inOctets, inUcast, inMcast, inBcast
    00000004 00000005 00000006        # inDiscards, inErrors, inUnknownProtos
    000000024cb016ea 000aae67 00000328 0000038d # outOctets, outUcast, outMcast, outBcast
    0000000a 0000000b 00000000        # outDiscards, outErrors, promiscuous";

#[test]
fn compact_counter_sample_with_generic_counters() {
    let b = hex(&format!("{} 00000002 0000006c 0000000b 00000003 00000001 {GENERIC}", header(1)));
    let want = datagram(vec![Sample::Counters(CountersSample {
        sequence: 11,
        source: DataSource::interface(3),
        records: vec![CounterRecord::Generic(generic())],
    })]);
    check(&b, &want);
}

#[test]
fn expanded_counter_sample_with_ethernet_vlan_and_port_name() {
    let b = hex(&format!(
        "{}
         00000004 00000088             # sample 0:4 counters_sample_expanded, 136 bytes = 16 + 60 + 36 + 24
         0000000c 00000000 01000005    # sequence 12, ds_class 0, ds_index 0x01000005
         00000003                      # 3 records
         00000002 00000034             # record 0:2 ethernet_counters, 52 bytes
         00000064 00000065 00000066 00000067 00000068 00000069 0000006a
         0000006b 0000006c 0000006d 0000006e 0000006f 00000070
         00000005 0000001c             # record 0:5 vlan_counters, 28 bytes
         00000064 0000000000001000 00000001 00000002 00000003 00000004
         000003ed 00000010             # record 0:1005 port_name, 16 bytes
         00000009 6470302f706f727435 000000 # \"dp0/port5\", 9 bytes + 3 pad",
        header(1)
    ));
    let e = EthernetCounters {
        alignment_errors: 100,
        fcs_errors: 101,
        single_collision_frames: 102,
        multiple_collision_frames: 103,
        sqe_test_errors: 104,
        deferred_transmissions: 105,
        late_collisions: 106,
        excessive_collisions: 107,
        internal_mac_transmit_errors: 108,
        carrier_sense_errors: 109,
        frame_too_longs: 110,
        internal_mac_receive_errors: 111,
        symbol_errors: 112,
    };
    let v =
        VlanCounters { vlan_id: 100, octets: 4096, ucast_pkts: 1, multicast_pkts: 2, broadcast_pkts: 3, discards: 4 };
    let want = datagram(vec![Sample::Counters(CountersSample {
        sequence: 12,
        source: DataSource { class: 0, index: 0x0100_0005 },
        records: vec![
            CounterRecord::Ethernet(e),
            CounterRecord::Vlan(v),
            CounterRecord::PortName(Cow::Borrowed(b"dp0/port5")),
        ],
    })]);
    check(&b, &want);
}

#[test]
fn discard_sample_with_raw_header() {
    let b = hex(&format!(
        "{}
         00000005 0000005c             # sample 0:5 discarded_packet, 92 bytes = 32 + 60
         00000001 00000000 00000003    # sequence 1, ds_class 0, ds_index 3
         00000002 00000003 00000000    # drops 2, input 3, output 0
         00000102 00000001             # reason 258 (acl), 1 record
         00000001 00000034 00000001 00000026 00000004 00000022 {FRAME} 0000",
        header(1)
    ));
    let want = datagram(vec![Sample::Discard(DiscardSample {
        sequence: 1,
        source: DataSource::interface(3),
        drops: 2,
        input: 3,
        output: 0,
        reason: 258,
        records: vec![FlowRecord::RawHeader(RawHeader {
            protocol: 1,
            frame_length: 38,
            stripped: 4,
            header: Cow::Owned(hex(FRAME)),
        })],
    })]);
    check(&b, &want);
}

#[test]
fn sampled_ethernet_ipv4_ipv6_router_and_mpls_records() {
    let b = hex(&format!(
        "{}
         00000001 00000104 00000001 00000001 00000001 00000001 00000000 00000001 00000002 # 260 bytes
         00000006                      # 6 records
         00000002 00000018             # 0:2 sampled_ethernet, 24 bytes
         00000040 020000000001 0000 020000000002 0000 00000800 # length 64, src+pad, dst+pad, type
         00000003 00000020             # 0:3 sampled_ipv4, 32 bytes
         0000002e 00000011 0a000001 0a000002 00000400 00000800 00000000 00000000
         00000004 00000038             # 0:4 sampled_ipv6, 56 bytes
         00000040 00000006 20010db8000000000000000000000001 20010db8000000000000000000000002
         00000050 0000c000 00000012 00000000 # ports 80 -> 49152, flags SYN+ACK, priority 0
         000003ea 00000010 00000001 0a000001 00000018 00000010 # 0:1002 router v4 via 10.0.0.1, /24 /16
         000003ea 0000001c 00000002 20010db8000000000000000000000009 00000030 00000040 # router v6
         000003ee 00000018 00000001 64400001 # 0:1006 mpls, next hop 100.64.0.1
         00000001 00011140 00000001 00012140 # in [16/bos/ttl64]... out [18/bos/ttl64]",
        header(1)
    ));
    let v6 = |x: u16| Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, x);
    let records = vec![
        FlowRecord::Ethernet(SampledEthernet {
            length: 64,
            src: [2, 0, 0, 0, 0, 1],
            dst: [2, 0, 0, 0, 0, 2],
            eth_type: 0x800,
        }),
        FlowRecord::Ipv4(SampledIpv4 {
            length: 46,
            protocol: 17,
            src: Ipv4Addr::new(10, 0, 0, 1),
            dst: Ipv4Addr::new(10, 0, 0, 2),
            src_port: 1024,
            dst_port: 2048,
            tcp_flags: 0,
            tos: 0,
        }),
        FlowRecord::Ipv6(SampledIpv6 {
            length: 64,
            protocol: 6,
            src: v6(1),
            dst: v6(2),
            src_port: 80,
            dst_port: 49152,
            tcp_flags: 0x12,
            priority: 0,
        }),
        FlowRecord::Router(ExtendedRouter {
            next_hop: IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)),
            src_mask_len: 24,
            dst_mask_len: 16,
        }),
        FlowRecord::Router(ExtendedRouter { next_hop: IpAddr::V6(v6(9)), src_mask_len: 48, dst_mask_len: 64 }),
        FlowRecord::Mpls(ExtendedMpls {
            next_hop: IpAddr::V4(Ipv4Addr::new(100, 64, 0, 1)),
            in_stack: vec![0x0001_1140],
            out_stack: vec![0x0001_2140],
        }),
    ];
    let want = datagram(vec![Sample::Flow(FlowSample {
        sequence: 1,
        source: DataSource::interface(1),
        sampling_rate: 1,
        sample_pool: 1,
        drops: 0,
        input: Interface::Index(1),
        output: Interface::Index(2),
        records,
    })]);
    check(&b, &want);
}

#[test]
fn unknown_next_hop_address_type_reads_as_unspecified() {
    // Type 0 has no address body: the record is 4 + 4 + 4 = 12 bytes.
    let b = hex(&format!(
        "{}
         00000001 00000034 00000001 00000001 00000001 00000001 00000000 00000001 00000002
         00000001 000003ea 0000000c    # one record 0:1002, 12 bytes
         00000000 00000018 00000010    # address type 0 (unknown), src /24, dst /16",
        header(1)
    ));
    let got = decode(&b).unwrap();
    let Sample::Flow(f) = &got.samples[0] else { panic!("flow") };
    assert_eq!(
        f.records[0],
        FlowRecord::Router(ExtendedRouter {
            next_hop: IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            src_mask_len: 24,
            dst_mask_len: 16
        })
    );
}

#[test]
fn unknown_samples_and_records_are_skipped_by_length_and_kept() {
    let b = hex(&format!(
        "{}
         010cc3ea 00000008 deadbeef cafef00d   # sample 4300:1002 (vendor: 4300 << 12 | 1002), 8 bytes
         00000002 00000028 00000001 00000003 00000002 # counters, 40 bytes = 12 + 12 + 16
         000007d1 00000004 12345678            # counter record 0:2001, unknown here
         000003ed 00000008 00000003 657468 00  # port name \"eth\"",
        header(2)
    ));
    let got = decode(&b).unwrap();
    assert_eq!(got.samples.len(), 2);
    assert_eq!(
        got.samples[0],
        Sample::Unknown {
            format: DataFormat { enterprise: 4300, format: 1002 },
            data: Cow::Owned(hex("deadbeef cafef00d"))
        }
    );
    let Sample::Counters(c) = &got.samples[1] else { panic!("counters") };
    assert_eq!(
        c.records[0],
        CounterRecord::Unknown { format: DataFormat::standard(2001), data: Cow::Owned(hex("12345678")) }
    );
    assert_eq!(c.records[1], CounterRecord::PortName(Cow::Borrowed(b"eth")));
    let mut buf = [0u8; 256];
    let n = encode(&got, &mut buf).unwrap();
    assert_eq!(&buf[..n], &b[..]);
}

#[test]
fn malformed_inputs_are_errors_not_panics() {
    let ok = hex(&format!("{} 00000002 0000006c 0000000b 00000003 00000001 {GENERIC}", header(1)));
    for n in 0..ok.len() {
        assert!(decode(&ok[..n]).is_err(), "truncated to {n} bytes accepted");
    }
    let mut v4 = ok.clone();
    v4[3] = 4;
    assert_eq!(decode(&v4).unwrap_err(), DecodeError::Version(4));
    let mut bad_agent = ok.clone();
    bad_agent[7] = 9;
    assert_eq!(decode(&bad_agent).unwrap_err(), DecodeError::AddressType { at: 4, kind: 9 });
    let mut trailing = ok.clone();
    trailing.extend_from_slice(&[0, 0, 0, 0]);
    assert_eq!(decode(&trailing).unwrap_err(), DecodeError::Trailing(4));
    // The generic record claims 92 bytes inside a sample that has room for them.
    let long = hex(&format!(
        "{} 00000002 00000070 0000000b 00000003 00000001 00000001 0000005c {}\n 00000000",
        header(1),
        &GENERIC[GENERIC.find("00000003 00000006").unwrap()..]
    ));
    let e = decode(&long).unwrap_err().to_string();
    assert!(e.contains("counter record 0:1 with length 92: 4 bytes left over"), "{e}");
    // XDR bodies are padded: a length that is not a multiple of 4 is malformed.
    let odd = hex(&format!("{} 010cc3ea 00000005 deadbeef 01000000", header(1)));
    assert!(decode(&odd).unwrap_err().to_string().contains("structure 4300:1002 with length 5: not a multiple of 4"));
    // A sample count far beyond the data: fails on the first missing sample, allocates nothing big.
    let many = hex(&header(u32::MAX));
    assert!(matches!(decode(&many).unwrap_err(), DecodeError::Truncated { at: 28, .. }));
}

#[test]
fn builder_reports_a_sample_that_does_not_fit_and_keeps_the_datagram() {
    let mut buf = [0u8; 200];
    let mut b = DatagramBuilder::new(&mut buf, agent(), 1, 42, 123456).unwrap();
    let c = Sample::Counters(CountersSample {
        sequence: 11,
        source: DataSource::interface(3),
        records: vec![CounterRecord::Generic(generic())],
    });
    b.push(&c).unwrap(); // 28 + 116
    let before = b.len();
    assert_eq!(b.push(&c), Err(EncodeError::WouldNotFit { need: 116, free: 200 - 144 }));
    assert_eq!(b.len(), before);
    let n = b.finish();
    assert_eq!(decode(&buf[..n]).unwrap(), datagram(vec![c]));
    assert!(DatagramBuilder::new(&mut [0u8; 27], agent(), 0, 0, 0).is_err());
}
