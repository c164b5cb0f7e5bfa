//! Codec scenarios of `vecflow bench`: sFlow samples encoded and decoded per second on one
//! core, each sample a flow sample with a 128-byte raw header, extended switch and router
//! records — what the agent sends for a sampled IPv4 packet.

use sflow::{
    DataSource, DatagramBuilder, ExtendedRouter, ExtendedSwitch, FlowRecord, FlowSample, Interface, RawHeader, Sample,
    decode,
};
use std::borrow::Cow;
use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

/// The bytes of a 128-byte IPv4/UDP frame header.
fn header_bytes() -> Vec<u8> {
    (0..128u8).collect()
}

/// A typical flow sample with sequence `seq`.
fn sample(seq: u32, header: &[u8]) -> Sample<'_> {
    Sample::Flow(FlowSample {
        sequence: seq,
        source: DataSource::interface(3),
        sampling_rate: 1000,
        sample_pool: seq.wrapping_mul(1000),
        drops: 0,
        input: Interface::Index(3),
        output: Interface::Index(5),
        records: vec![
            FlowRecord::RawHeader(RawHeader {
                protocol: 1,
                frame_length: 1504,
                stripped: 4,
                header: Cow::Borrowed(header),
            }),
            FlowRecord::Switch(ExtendedSwitch { src_vlan: 100, src_priority: 0, dst_vlan: 200, dst_priority: 0 }),
            FlowRecord::Router(ExtendedRouter {
                next_hop: IpAddr::V4(Ipv4Addr::new(100, 64, 1, 0)),
                src_mask_len: 24,
                dst_mask_len: 22,
            }),
        ],
    })
}

/// Samples per second encoded into 1400-byte datagrams, measured for `window`.
pub fn encode_rate(window: Duration) -> f64 {
    let header = header_bytes();
    let samples: Vec<Sample<'_>> = (0..64).map(|k| sample(k, &header)).collect();
    let mut buf = [0u8; sflow::DEFAULT_DATAGRAM_SIZE];
    let (mut encoded, mut seq) = (0u64, 0u32);
    let start = Instant::now();
    while start.elapsed() < window {
        for _ in 0..1000 {
            let mut b = DatagramBuilder::new(&mut buf, agent(), 0, seq, 0).expect("header fits");
            for s in &samples {
                if b.push(s).is_err() {
                    break;
                }
            }
            encoded += u64::from(b.samples());
            black_box(b.finish());
            seq += 1;
        }
    }
    encoded as f64 / start.elapsed().as_secs_f64()
}

/// Samples per second decoded from a full 1400-byte datagram, measured for `window`.
pub fn decode_rate(window: Duration) -> f64 {
    let header = header_bytes();
    let mut buf = [0u8; sflow::DEFAULT_DATAGRAM_SIZE];
    let mut b = DatagramBuilder::new(&mut buf, agent(), 0, 0, 0).expect("header fits");
    let mut k = 0;
    while b.push(&sample(k, &header)).is_ok() {
        k += 1;
    }
    let n = b.finish();
    let datagram = &buf[..n];
    let mut decoded = 0u64;
    let start = Instant::now();
    while start.elapsed() < window {
        for _ in 0..1000 {
            decoded += decode(black_box(datagram)).expect("valid datagram").samples.len() as u64;
        }
    }
    decoded as f64 / start.elapsed().as_secs_f64()
}

fn agent() -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1))
}
