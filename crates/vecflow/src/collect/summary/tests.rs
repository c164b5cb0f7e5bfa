use super::*;
use std::borrow::Cow;
use std::net::Ipv4Addr;

/// A 64-bit PRNG (splitmix64) so the synthetic traffic is the same on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

fn frame(class: u16, len: u16) -> Vec<u8> {
    let mut f = vec![0u8; 64];
    f[12..14].copy_from_slice(&[8, 0]);
    wire::ipv4::write_header(
        &mut f[14..],
        len - 18,
        64,
        17,
        Ipv4Addr::new(16, 0, 0, 1),
        Ipv4Addr::new(48, 0, (class >> 8) as u8, class as u8),
    );
    f[34..38].copy_from_slice(&[4, 0, 8, 0]);
    f
}

/// Synthetic traffic: 20 classes with skewed sizes, sampled at 1:N with uniform skips on
/// [1, 2N−1]; each class estimate must be within its 196/√c % bound (95 % confidence, so
/// a few misses are expected: at most 2 of 20 are allowed, and none beyond twice the bound).
fn check_rate(n: u32, packets: u64, seed: u64) {
    let mut rng = Rng(seed);
    let classes = 20u16;
    let mut truth = vec![(0u64, 0u64); classes as usize];
    let mut summary = Summary::default();
    let mut skip = 1 + rng.next() % (2 * u64::from(n) - 1);
    let (mut pool, mut seq) = (0u32, 0u32);
    for _ in 0..packets {
        // Class k carries weight k+1.
        let r = rng.next() % u64::from(classes * (classes + 1) / 2);
        let (mut k, mut acc) = (0u16, 0u64);
        while acc + u64::from(k + 1) <= r {
            acc += u64::from(k + 1);
            k += 1;
        }
        let len = 64 + 64 * k;
        truth[k as usize].0 += 1;
        truth[k as usize].1 += u64::from(len);
        pool = pool.wrapping_add(1);
        skip -= 1;
        if skip == 0 {
            skip = 1 + rng.next() % (2 * u64::from(n) - 1);
            seq += 1;
            let s = Sample::Flow(FlowSample {
                sequence: seq,
                source: DataSource::interface(1),
                sampling_rate: n,
                sample_pool: pool,
                drops: 0,
                input: Interface::Index(1),
                output: Interface::Index(2),
                records: vec![FlowRecord::RawHeader(RawHeader {
                    protocol: 1,
                    frame_length: u32::from(len),
                    stripped: 4,
                    header: Cow::Owned(frame(k, len)),
                })],
            });
            summary.add(&Datagram {
                agent: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1)),
                sub_agent_id: 0,
                sequence: seq,
                uptime_ms: seq,
                samples: vec![s],
            });
        }
    }
    let report = summary.report(usize::MAX);
    assert_eq!(report.flows.len(), classes as usize);
    let (mut misses, mut far) = (0, 0);
    for f in &report.flows {
        let k = u16::from(f.key.dst.to_string().rsplit('.').next().unwrap().parse::<u8>().unwrap());
        let (true_pkts, true_bytes) = truth[k as usize];
        for (est, t) in [(f.estimate.packets, true_pkts), (f.estimate.bytes, true_bytes)] {
            let err = 100.0 * (est - t as f64).abs() / t as f64;
            misses += usize::from(err > f.error_pct);
            far += usize::from(err > 2.0 * f.error_pct);
        }
    }
    assert!(misses <= 4 && far == 0, "rate {n}: {misses} of 40 estimates outside the bound, {far} beyond twice it");
    // The first sample comes within 2N−1 packets of the start and the last within 2N−1 of
    // the end, so Δpool is the packet count less at most 4N−2.
    let total: u64 = truth.iter().map(|t| t.0).sum();
    let pool = report.interfaces[0].pool_packets;
    assert!(pool <= total && pool + 4 * u64::from(n) >= total, "pool {pool}, total {total}");
}

#[test]
fn estimates_fall_inside_the_error_bound_at_1_in_10() {
    check_rate(10, 200_000, 1);
}

#[test]
fn estimates_fall_inside_the_error_bound_at_1_in_100() {
    check_rate(100, 2_000_000, 2);
}

#[test]
fn estimates_fall_inside_the_error_bound_at_1_in_1000() {
    check_rate(1000, 10_000_000, 3);
}

#[test]
fn sequence_gaps_and_restarts_are_noticed() {
    let mut s = Summary::default();
    let agent = IpAddr::V4(Ipv4Addr::LOCALHOST);
    for (seq, up) in [(1, 10), (2, 20), (5, 50), (4, 40), (1, 5), (2, 6)] {
        s.add(&Datagram { agent, sub_agent_id: 0, sequence: seq, uptime_ms: up, samples: vec![] });
    }
    let r = s.report(10);
    assert_eq!(
        (r.agents[0].datagrams, r.agents[0].lost_datagrams, r.agents[0].out_of_order, r.agents[0].restarts),
        (6, 1, 1, 1),
        "3 is lost; 4 came late, so it is out of order and not lost"
    );
}

/// A flow sample of data source 1, of a flow numbered `flow`.
fn sample(sequence: u32, sample_pool: u32, input: u32, output: u32, flow: u32) -> Sample<'static> {
    let mut header = frame(flow as u16, 64);
    header[34..36].copy_from_slice(&((flow >> 16) as u16).to_be_bytes());
    Sample::Flow(FlowSample {
        sequence,
        source: DataSource::interface(1),
        sampling_rate: 10,
        sample_pool,
        drops: sequence / 2,
        input: Interface::Index(input),
        output: Interface::Index(output),
        records: vec![FlowRecord::RawHeader(RawHeader {
            protocol: 1,
            frame_length: 64,
            stripped: 4,
            header: Cow::Owned(header),
        })],
    })
}

fn datagram(agent: IpAddr, sequence: u32, uptime_ms: u32, samples: Vec<Sample<'static>>) -> Datagram<'static> {
    Datagram { agent, sub_agent_id: 0, sequence, uptime_ms, samples }
}

#[test]
fn a_restart_starts_pools_and_sequences_over() {
    let agent = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut s = Summary::default();
    for (seq, up, pool) in [(1, 1_000, 100), (2, 2_000, 300), (3, 60_000, 4_000_000_000)] {
        s.add(&datagram(agent, seq, up, vec![sample(seq, pool, 1, 2, 1)]));
    }
    // Restarted: uptime and every sequence back near the start.
    for (seq, up, pool) in [(1, 500, 50), (2, 900, 250)] {
        s.add(&datagram(agent, seq, up, vec![sample(seq, pool, 1, 2, 1)]));
    }
    let r = s.report(10);
    assert_eq!((r.agents[0].restarts, r.agents[0].lost_datagrams, r.agents[0].out_of_order), (1, 0, 0));
    let i = &r.interfaces[0];
    assert_eq!(
        (i.pool_packets, i.dropped_samples, i.sequence_gaps, i.out_of_order, i.ingress.samples),
        (4_000_000_000 - 100 + 200, 2, 0, 0, 5)
    );
}

#[test]
fn tx_toward_a_sub_interface_is_egress() {
    let agent = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut s = Summary::default();
    // Port 1 samples rx and tx; 11 is its sub-interface 1.100, 2 another port.
    let mut tx = sample(1, 10, 2, 11, 1);
    if let Sample::Flow(f) = &mut tx {
        f.records.push(FlowRecord::Switch(ExtendedSwitch {
            src_vlan: 0,
            src_priority: 0,
            dst_vlan: 100,
            dst_priority: 0,
        }));
    }
    s.add(&datagram(agent, 1, 1, vec![tx, sample(2, 20, 1, 2, 2)]));
    let r = s.report(10);
    let i = &r.interfaces[0];
    assert_eq!((i.ingress.samples, i.egress.samples), (1, 1));
    assert_eq!(r.flows.len(), 1, "the agent sends ingress samples, so its egress ones are left out of the flows");
}

#[test]
fn state_is_capped_and_the_overflow_counted() {
    let mut s = Summary::default();
    let agent = |k: usize| IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + k as u32));
    for k in 0..=MAX_AGENTS {
        s.add(&datagram(agent(k), 1, 1, vec![]));
    }
    let one = agent(0);
    for k in 0..=MAX_FLOWS {
        s.add(&datagram(one, 2 + k as u32, 2, vec![sample(1 + k as u32, 0, 1, 2, k as u32)]));
    }
    let mut seq = 2 + MAX_FLOWS as u32;
    for k in 1..=MAX_SOURCES {
        let mut x = sample(1, 0, 1, 2, 0);
        if let Sample::Flow(f) = &mut x {
            f.source.index = 1 + k as u32;
        }
        seq += 1;
        s.add(&datagram(one, seq, 2, vec![x]));
    }
    for k in 0..=MAX_REASONS as u32 {
        let discard = Sample::Discard(DiscardSample {
            sequence: k,
            source: DataSource::interface(1),
            drops: 0,
            input: 1,
            output: 0,
            reason: 256 + k,
            records: vec![],
        });
        seq += 1;
        s.add(&datagram(one, seq, 2, vec![discard]));
    }
    let r = s.report(1);
    assert_eq!((r.agents.len(), r.interfaces.len()), (MAX_AGENTS, MAX_SOURCES));
    let o = &r.overflow;
    assert_eq!((o.agents, o.sources, o.flows, o.reasons, o.interfaces), (1, 1, 1, 1, 0));
    assert_eq!(r.interfaces[0].discards.len(), MAX_REASONS);
    assert_eq!(r.interfaces[0].ingress.samples, MAX_FLOWS as u64 + 1, "still counted for the source");
    let text = r.text();
    assert!(text.contains("1 datagrams (over 1024 agents), 1 samples (over 16384 sources)"), "{text}");
}
