//! `vecflow collect` end to end: a pcap of datagrams made by our encoder, and live UDP over
//! IPv4 and IPv6 loopback on a random high port.

mod common;

use pcap_file::pcap::{PcapPacket, PcapWriter};
use sflow::*;
use std::borrow::Cow;
use std::io::{BufRead, BufReader, Read};
use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::process::{Command, Stdio};
use std::time::Duration;

fn vecflow() -> Command {
    Command::new(env!("CARGO_BIN_EXE_vecflow"))
}

/// A 64-byte IPv4/UDP frame 16.0.0.1:1024 -> 48.0.0.<k>:2048.
fn frame(k: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..12].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[8, 0]);
    wire::ipv4::write_header(&mut f[14..34], 46, 64, 17, Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::new(48, 0, 0, k));
    wire::udp::write_header(&mut f[34..], Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::new(48, 0, 0, k), 1024, 2048);
    f
}

/// Flow sample `sequence` of data source 3 (in 3, out 5) of a 64-byte frame.
fn flow_sample(sequence: u32, sampling_rate: u32, sample_pool: u32, drops: u32, frame: &[u8]) -> Sample<'_> {
    Sample::Flow(FlowSample {
        sequence,
        source: DataSource::interface(3),
        sampling_rate,
        sample_pool,
        drops,
        input: Interface::Index(3),
        output: Interface::Index(5),
        records: vec![FlowRecord::RawHeader(RawHeader {
            protocol: 1,
            frame_length: 64,
            stripped: 4,
            header: Cow::Borrowed(frame),
        })],
    })
}

/// Counter sample `sequence` of data source 3 with generic counters `c`.
fn counter_sample(sequence: u32, c: IfCounters) -> Sample<'static> {
    Sample::Counters(CountersSample {
        sequence,
        source: DataSource::interface(3),
        records: vec![CounterRecord::Generic(c)],
    })
}

/// Datagram `seq` of agent 192.0.2.1, sent at uptime `seq` seconds, encoded.
fn agent_datagram(seq: u32, samples: Vec<Sample<'_>>) -> Vec<u8> {
    encoded(&Datagram {
        agent: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
        sub_agent_id: 0,
        sequence: seq,
        uptime_ms: seq * 1000,
        samples,
    })
}

/// Datagram `seq` with flow samples for destinations 1..=k and one counter sample.
fn datagram(seq: u32, k: u8) -> Vec<u8> {
    let frames: Vec<Vec<u8>> = (1..=k).map(frame).collect();
    let mut samples: Vec<Sample<'_>> = frames
        .iter()
        .enumerate()
        .map(|(i, f)| flow_sample(seq * 10 + i as u32, 100, (seq * 10 + i as u32) * 100, 0, f))
        .collect();
    let generic =
        IfCounters { if_index: 3, in_octets: u64::from(seq) * 1000, in_ucast_pkts: seq * 10, ..IfCounters::default() };
    samples.push(counter_sample(seq, generic));
    agent_datagram(seq, samples)
}

/// `d` encoded.
fn encoded(d: &Datagram<'_>) -> Vec<u8> {
    let mut buf = vec![0u8; 1400];
    let n = encode(d, &mut buf).unwrap();
    buf.truncate(n);
    buf
}

/// Wraps a UDP payload in Ethernet/IPv4/UDP 127.0.0.1:40000 -> 127.0.0.1:`port`.
fn udp_frame(payload: &[u8], port: u16) -> Vec<u8> {
    let mut f = vec![0u8; 42 + payload.len()];
    f[12..14].copy_from_slice(&[8, 0]);
    let lo = Ipv4Addr::LOCALHOST;
    wire::ipv4::write_header(&mut f[14..34], (28 + payload.len()) as u16, 64, 17, lo, lo);
    f[42..].copy_from_slice(payload);
    wire::udp::write_header(&mut f[34..], lo, lo, 40000, port);
    f
}

struct TempDir(std::path::PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A pcap of `frames`, one second apart from 1 700 000 000, in a directory removed on drop.
fn write_frames(name: &str, frames: &[Vec<u8>]) -> (TempDir, std::path::PathBuf) {
    let dir = TempDir(std::env::temp_dir().join(format!("vecflow-collect-{name}-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let path = dir.0.join("sflow.pcap");
    let mut w = PcapWriter::new(std::fs::File::create(&path).unwrap()).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.write_packet(&PcapPacket::new(Duration::from_secs(1_700_000_000 + i as u64), f.len() as u32, f)).unwrap();
    }
    (dir, path)
}

fn write_pcap(name: &str) -> (TempDir, std::path::PathBuf) {
    // Datagrams 1, 2 and 4 (3 is lost), one unrelated UDP packet, one malformed sFlow payload.
    write_frames(
        name,
        &[
            udp_frame(&datagram(1, 3), 6343),
            udp_frame(&datagram(2, 3), 6343),
            udp_frame(b"not sflow", 53),
            udp_frame(&datagram(4, 3), 6343),
            udp_frame(&[0, 0, 0, 5, 0], 6343),
        ],
    )
}

fn run(args: &[&str]) -> String {
    let out = vecflow().args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn pcap_to_json_lines() {
    let (_dir, path) = write_pcap("json");
    let out = run(&["collect", "--pcap", path.to_str().unwrap(), "--json"]);
    let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 4, "3 datagrams and 1 decode error; the DNS packet is not ours:\n{out}");
    assert_eq!(lines[0]["source"], "127.0.0.1:40000");
    assert_eq!(lines[0]["unix_secs"], 1_700_000_000u64);
    let d = &lines[0]["datagram"];
    assert_eq!((d["agent"].as_str(), d["sequence"].as_u64()), (Some("192.0.2.1"), Some(1)));
    let flow = &d["samples"][0]["flow"];
    assert_eq!((flow["sampling_rate"].as_u64(), flow["input"]["index"].as_u64()), (Some(100), Some(3)));
    assert_eq!(flow["records"][0]["raw_header"]["frame_length"], 64);
    assert!(lines[3]["error"].as_str().unwrap().contains("truncated"), "{}", lines[3]);
}

#[test]
fn pcap_to_sflowtool_style_text() {
    let (_dir, path) = write_pcap("text");
    let out = run(&["collect", "--pcap", path.to_str().unwrap(), "--count", "1"]);
    for line in [
        "startDatagram =================================",
        "agent 192.0.2.1",
        "packetSequenceNo 1",
        "samplesInPacket 4",
        "sampleType FLOWSAMPLE",
        "meanSkipCount 100",
        "inputPort 3",
        "sampledPacketSize 64",
        "srcIP 16.0.0.1",
        "dstIP 48.0.0.2",
        "UDPSrcPort 1024",
        "UDPDstPort 2048",
        "sampleType COUNTERSSAMPLE",
        "ifInOctets 1000",
        "endDatagram   =================================",
    ] {
        assert!(out.lines().any(|l| l == line), "missing '{line}' in\n{out}");
    }
    assert_eq!(out.matches("startDatagram").count(), 1, "--count 1");
}

#[test]
fn pcap_summary_estimates_and_gaps() {
    let (_dir, path) = write_pcap("summary");
    let out = run(&["collect", "--pcap", path.to_str().unwrap(), "--summary", "--json"]);
    let r: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(r["decode_errors"], 1);
    assert_eq!((r["agents"][0]["datagrams"].as_u64(), r["agents"][0]["lost_datagrams"].as_u64()), (Some(3), Some(1)));
    let flows = r["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 3);
    // Each destination: 3 samples at 1:100 of 64-byte frames -> 300 packets, 19 200 bytes, ±113 %.
    for f in flows {
        assert_eq!(f["estimate"]["samples"], 3);
        assert_eq!(f["estimate"]["packets"], 300.0);
        assert_eq!(f["estimate"]["bytes"], 19200.0);
        assert!((f["error_pct"].as_f64().unwrap() - 196.0 / 3f64.sqrt()).abs() < 1e-9);
        assert_eq!(f["key"]["dst_port"], 2048);
    }
    assert_eq!(r["interfaces"][0]["ingress"]["samples"], 9);
    let c = &r["counters"][0];
    assert_eq!(
        (
            c["if_index"].as_u64(),
            c["polls"].as_u64(),
            c["in_octets"].as_u64(),
            c["in_packets"].as_u64(),
            c["seconds"].as_f64()
        ),
        (Some(3), Some(3), Some(3000), Some(30), Some(3.0))
    );
    let text = run(&["collect", "--pcap", path.to_str().unwrap(), "--summary"]);
    assert!(text.contains("== top 3 flows by bytes") && text.contains("16.0.0.1:1024 > 48.0.0.1:2048 p17"), "{text}");
}

/// A sampled IPv6 frame whose UDP header sits behind a hop-by-hop options header: the
/// summary's flow key is the IPv6 5-tuple, ports included.
#[test]
fn summary_reads_ipv6_five_tuples_through_extension_headers() {
    let (src, dst): (std::net::Ipv6Addr, std::net::Ipv6Addr) =
        ("2001:db8:16::1".parse().unwrap(), "2001:db8:48::7".parse().unwrap());
    let mut f = vec![0u8; 14 + 40 + 8 + 8];
    f[..12].copy_from_slice(&[2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    wire::ipv6::write_header(&mut f[14..54], 16, 0, 64, src, dst);
    f[54..62].copy_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]); // hop-by-hop: PadN, then UDP
    wire::udp::write_header(&mut f[62..], src, dst, 4242, 53);
    let datagrams: Vec<Vec<u8>> =
        (1..=2).map(|seq| agent_datagram(seq, vec![flow_sample(seq, 10, seq * 10, 0, &f)])).collect();
    let frames: Vec<Vec<u8>> = datagrams.iter().map(|d| udp_frame(d, 6343)).collect();
    let (_dir, path) = write_frames("ipv6", &frames);
    let r: serde_json::Value =
        serde_json::from_str(run(&["collect", "--pcap", path.to_str().unwrap(), "--summary", "--json"]).trim())
            .unwrap();
    let flows = r["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 1, "{r}");
    let k = &flows[0]["key"];
    assert_eq!(
        (k["src"].as_str(), k["dst"].as_str(), k["protocol"].as_u64(), k["src_port"].as_u64(), k["dst_port"].as_u64()),
        (Some("2001:db8:16::1"), Some("2001:db8:48::7"), Some(17), Some(4242), Some(53)),
        "{k}"
    );
    assert_eq!(flows[0]["estimate"]["samples"], 2);
    let text = run(&["collect", "--pcap", path.to_str().unwrap(), "--summary"]);
    assert!(text.contains("2001:db8:16::1") && text.contains("4242") && text.contains("p17"), "{text}");
}

#[test]
fn listens_on_ipv4_and_ipv6_loopback() {
    // Port 0: the collector binds a port the kernel picks and names it on its first line (a port
    // probed here and freed could be taken by a parallel test before the collector binds it).
    let mut collector = common::Daemon::spawn(
        vecflow()
            .args(["collect", "--port", "0", "--json", "--count", "2", "--duration", "20"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let mut err = BufReader::new(collector.child().stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let port: u16 = line
        .trim()
        .strip_prefix("vecflow collect: listening on ")
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
        .unwrap_or_else(|| panic!("not a listening line: {line}"))
        .port();
    assert_ne!(port, 0, "{line}");
    let v4 = UdpSocket::bind("127.0.0.1:0").unwrap();
    v4.send_to(&datagram(7, 1), ("127.0.0.1", port)).unwrap();
    let sent_v6 = UdpSocket::bind("[::1]:0").and_then(|s| s.send_to(&datagram(8, 1), ("::1", port)).map(|_| s));
    if sent_v6.is_err() {
        common::skip("its IPv6 part: no IPv6 loopback on this machine");
        v4.send_to(&datagram(8, 1), ("127.0.0.1", port)).unwrap();
    }
    let out = collector.wait_with_output();
    let mut rest = String::new();
    err.read_to_string(&mut rest).unwrap();
    assert!(out.status.success(), "{rest}");
    let lines: Vec<serde_json::Value> =
        String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0]["source"].as_str().unwrap().starts_with("127.0.0.1:"), "{}", lines[0]);
    assert_eq!(lines[0]["datagram"]["sequence"], 7);
    assert_eq!(lines[1]["datagram"]["sequence"], 8);
    if sent_v6.is_ok() {
        assert!(lines[1]["source"].as_str().unwrap().starts_with("[::1]:"), "{}", lines[1]);
    }
}

#[test]
fn bad_pcap_is_a_clear_error() {
    let dir = TempDir(std::env::temp_dir().join(format!("vecflow-collect-bad-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let p = dir.0.join("x.pcap");
    std::fs::write(&p, b"hello").unwrap();
    let out = vecflow().args(["collect", "--pcap", p.to_str().unwrap()]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a pcap file"));
}

#[test]
fn pcap_takes_sflow_on_any_udp_port_unless_port_is_given() {
    let frames: Vec<Vec<u8>> =
        (1..=3).map(|seq| udp_frame(&datagram(seq, 1), 16399)).chain([udp_frame(b"not sflow", 53)]).collect();
    let (_dir, path) = write_frames("anyport", &frames);
    let p = path.to_str().unwrap();
    let seqs = |out: String| -> Vec<u64> {
        out.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["datagram"]["sequence"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(seqs(run(&["collect", "--pcap", p, "--json"])), [1, 2, 3], "any port; the DNS packet is not sFlow");
    assert_eq!(seqs(run(&["collect", "--pcap", p, "--json", "--port", "16399"])), [1, 2, 3]);
    assert_eq!(run(&["collect", "--pcap", p, "--json", "--port", "6343"]), "", "--port selects");
}

#[test]
fn hostile_port_name_cannot_forge_lines_or_drive_the_terminal() {
    let name = b"eth0\nendDatagram   =================================\nagent 6.6.6.6\r\x1b[2J\x1b]0;owned\x07\xff";
    let d = agent_datagram(
        1,
        vec![Sample::Counters(CountersSample {
            sequence: 1,
            source: DataSource::interface(3),
            records: vec![CounterRecord::PortName(Cow::Borrowed(name))],
        })],
    );
    let (_dir, path) = write_frames("hostile", &[udp_frame(&d, 6343)]);
    let out = vecflow().args(["collect", "--pcap", path.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success());
    assert!(!out.stdout.iter().any(|&b| b < 0x20 && b != b'\n'), "control bytes in the output");
    let out = String::from_utf8(out.stdout).expect("valid UTF-8");
    let forged = |l: &&str| l.starts_with("endDatagram") || l.starts_with("agent 6.6.6.6");
    assert_eq!(out.lines().filter(forged).count(), 1, "only the real endDatagram line:\n{out}");
    let escaped = "portName eth0\\nendDatagram   =================================\\nagent 6.6.6.6\\r\\x1b[2J\\x1b]0;owned\\x07\\xff";
    assert!(out.lines().any(|l| l == escaped), "missing '{escaped}' in\n{out}");
}

/// A synthetic stream whose sample pool, drops and 32-bit packet counter wrap three times and
/// whose 64-bit octet counter wraps three times, with datagrams 5 and 6 swapped.
#[test]
fn summary_accumulates_across_three_wraps_and_counts_reordering_as_late() {
    const POOL_STEP: u32 = 1_400_000_000;
    const DROP_STEP: u32 = 1_300_000_000;
    const OCTET_STEP: u64 = 6_456_360_425_798_343_065; // 0.35 × 2^64
    let frame = frame(1);
    let datagram = |seq: u32| {
        let k = seq - 1;
        let generic = IfCounters {
            if_index: 3,
            in_octets: (u64::MAX - 100).wrapping_add(u64::from(k).wrapping_mul(OCTET_STEP)),
            in_ucast_pkts: k.wrapping_mul(POOL_STEP).wrapping_add(7),
            ..IfCounters::default()
        };
        let flow = flow_sample(
            k.wrapping_sub(6), // the sample sequence wraps too
            1000,
            k.wrapping_mul(POOL_STEP).wrapping_add(5),
            k.wrapping_mul(DROP_STEP),
            &frame,
        );
        agent_datagram(seq, vec![flow, counter_sample(seq, generic)])
    };
    let order = [1, 2, 3, 4, 6, 5, 7, 8, 9, 10, 11];
    let frames: Vec<Vec<u8>> = order.iter().map(|&seq| udp_frame(&datagram(seq), 6343)).collect();
    let (_dir, path) = write_frames("wraps", &frames);
    let out = run(&["collect", "--pcap", path.to_str().unwrap(), "--summary", "--json"]);
    let r: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let a = &r["agents"][0];
    assert_eq!(
        (&a["datagrams"], &a["lost_datagrams"], &a["out_of_order"], &a["restarts"]),
        (&11.into(), &0.into(), &1.into(), &0.into())
    );
    let i = &r["interfaces"][0];
    // 10 steps from the first sample to the last: 14·10⁹ packets, the pool wrapped 3 times.
    assert_eq!(i["pool_packets"].as_u64(), Some(10 * u64::from(POOL_STEP)));
    assert!(10 * u64::from(POOL_STEP) > 3 << 32 && 10 * u64::from(DROP_STEP) > 3 << 32);
    assert_eq!(i["dropped_samples"].as_u64(), Some(10 * u64::from(DROP_STEP)));
    assert_eq!((i["sequence_gaps"].as_u64(), i["out_of_order"].as_u64()), (Some(0), Some(1)));
    assert_eq!(i["ingress"]["samples"], 11, "a late sample still counts in the estimate");
    let c = &r["counters"][0];
    assert_eq!(
        (c["polls"].as_u64(), c["out_of_order"].as_u64(), c["seconds"].as_f64()),
        (Some(11), Some(1), Some(10.0))
    );
    assert_eq!(c["in_packets"].as_u64(), Some(10 * u64::from(POOL_STEP)));
    let octets = 10 * u128::from(OCTET_STEP);
    assert!(octets > 3 << 64 && octets < 4 << 64);
    assert!(out.contains(&format!("\"in_octets\":{octets},")), "in_octets {octets} in {out}");
}

#[test]
fn overflow_of_the_agent_table_is_shown() {
    let frames: Vec<Vec<u8>> = (0..1025u32)
        .map(|k| {
            let d = Datagram {
                agent: IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + k)),
                sub_agent_id: 0,
                sequence: 1,
                uptime_ms: 1,
                samples: vec![],
            };
            udp_frame(&encoded(&d), 6343)
        })
        .collect();
    let (_dir, path) = write_frames("overflow", &frames);
    let p = path.to_str().unwrap();
    let r: serde_json::Value =
        serde_json::from_str(run(&["collect", "--pcap", p, "--summary", "--json"]).trim()).unwrap();
    assert_eq!(r["agents"].as_array().unwrap().len(), 1024);
    assert_eq!(r["overflow"]["agents"], 1);
    assert_eq!((&r["overflow"]["sources"], &r["overflow"]["flows"]), (&0.into(), &0.into()));
    let text = run(&["collect", "--pcap", p, "--summary"]);
    assert!(text.contains("left out at the state limits: 1 datagrams (over 1024 agents)"), "{text}");
}

/// A `vecflow collect --reuse-port --json` on 127.0.0.1 (port 0: the kernel picks one), its
/// port, and a thread collecting the sequence numbers of the datagrams it prints.
fn sharing_collector(port: u16) -> (common::Daemon, u16, std::thread::JoinHandle<Vec<u64>>) {
    let mut c = common::Daemon::spawn(
        vecflow()
            .args(["collect", "--bind", "127.0.0.1", "--port", &port.to_string(), "--reuse-port", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let mut err = BufReader::new(c.child().stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let port = line
        .trim()
        .strip_prefix("vecflow collect: listening on ")
        .and_then(|a| a.parse::<std::net::SocketAddr>().ok())
        .unwrap_or_else(|| panic!("not a listening line: {line}"))
        .port();
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let out = BufReader::new(c.child().stdout.take().unwrap());
    let lines = std::thread::spawn(move || {
        out.lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(&l.unwrap()).unwrap()["datagram"]["sequence"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    });
    (c, port, lines)
}

#[test]
fn collectors_sharing_a_port_take_over_from_one_that_stops_and_lose_nothing() {
    let (a, port, a_seqs) = sharing_collector(0);
    let (b, _, b_seqs) = sharing_collector(port);
    // 64 routers (source ports); each round every one sends a datagram numbered round * 100 + i.
    let routers: Vec<UdpSocket> = (0..64).map(|_| UdpSocket::bind("127.0.0.1:0").unwrap()).collect();
    let mut sent = Vec::new();
    let mut send_round = |round: u32| {
        for (i, r) in routers.iter().enumerate() {
            let seq = round * 100 + i as u32;
            r.send_to(&datagram(seq, 1), ("127.0.0.1", port)).unwrap();
            sent.push(u64::from(seq));
        }
    };
    send_round(0);
    // SIGTERM to A while the routers go on sending: what A had queued it drains, what comes
    // after goes to B.
    let stopping = std::thread::spawn(move || a.stop(libc::SIGTERM, Duration::from_secs(10)));
    for round in 1..40 {
        send_round(round);
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(stopping.join().unwrap().success());
    for round in 40..45 {
        send_round(round);
    }
    std::thread::sleep(Duration::from_millis(200));
    assert!(b.stop(libc::SIGTERM, Duration::from_secs(10)).success());
    let (a_got, b_got) = (a_seqs.join().unwrap(), b_seqs.join().unwrap());
    assert!(a_got.iter().any(|&s| s < 100) && b_got.iter().any(|&s| s < 100), "the kernel spread the routers");
    assert!(a_got.iter().all(|&s| s < 4000), "nothing reached A after it stopped");
    let mut got: Vec<u64> = a_got.iter().chain(&b_got).copied().collect();
    got.sort_unstable();
    sent.sort_unstable();
    assert_eq!(got.len(), sent.len(), "A took {}, B {}", a_got.len(), b_got.len());
    assert_eq!(got, sent);
}
