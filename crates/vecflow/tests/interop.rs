//! Interop with real sFlow decoders fed by a running dataplane: every datagram must decode
//! with no malformed part, and the decoded values must equal what vecflow sent.

mod common;

use base64::prelude::*;
use common::{Daemon, require};
use pcap_file::pcap::{PcapPacket, PcapWriter};
use std::net::{IpAddr, Ipv4Addr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The lab's routed, cross-connected and label-switched pairs with sFlow at 1:100 (port0, port2
/// and port4), counters every second and drop monitoring on port0, which also receives a
/// trickle of TTL-1 packets. port4 receives labels [16, 99] and swaps 16 for [17, 18]. port6
/// routes IPv6 (66-byte frames from 2001:db8:16::/48 to 2001:db8:48::1) out of port7, sampled.
fn config(port: u16) -> dataplane::Config {
    dataplane::Config::load(&format!(
        "
workers: {{count: 2}}
sflow: {{sampling-rate: 100, polling-interval: 1, agent-address: 192.0.2.1, collectors: [{{address: 127.0.0.1, port: {port}}}]}}
interfaces:
  port0:
    mac: 9c:69:b4:61:a1:dc
    addresses: [100.64.0.1/31]
    sflow: {{drop-monitoring: true}}
    generator:
      streams:
        - {{src-mac: 00:1b:21:06:00:00, src-ip: 16.0.0.1, src-range: {{count: 200}}, dst-ip: 48.0.0.1, rate-pps: 50000}}
        - {{src-mac: 00:1b:21:06:00:00, src-ip: 16.0.0.1, dst-ip: 48.0.0.9, ttl: 1, rate-pps: 200}}
  port1: {{mac: 9c:69:b4:61:a1:dd, addresses: [100.64.1.1/31]}}
  port2: {{l2xc: port3, sflow: {{}}, generator: {{streams: [{{vlan: 100, rate-pps: 50000}}]}}}}
  port3: {{l2xc: port2}}
  port4:
    mac: 9c:69:b4:61:a1:de
    addresses: [100.64.4.1/31]
    mpls: true
    sflow: {{}}
    generator: {{streams: [{{template: mpls, labels: [16, 99], src-range: {{count: 1}}, rate-pps: 20000}}]}}
  port5: {{mac: 9c:69:b4:61:a1:df, addresses: [100.64.5.1/31], mpls: true}}
  port6:
    mac: 9c:69:b4:61:a1:e0
    addresses: ['2001:db8:100::1/64']
    sflow: {{}}
    generator:
      streams:
        - {{template: ipv6-udp, frame-size: 66, src-mac: 00:1b:21:06:00:06, src-range: {{count: 200}}, rate-pps: 20000}}
  port7: {{mac: 9c:69:b4:61:a1:e1, addresses: ['2001:db8:101::1/64']}}
routes:
  - {{prefix: 16.0.0.0/24, via: 100.64.0.0}}
  - {{prefix: 48.0.0.0/24, via: 100.64.1.0}}
  - {{prefix: '2001:db8:16::/48', via: '2001:db8:100::2'}}
  - {{prefix: '2001:db8:48::/48', via: '2001:db8:101::2'}}
neighbors:
  - {{interface: port0, address: 100.64.0.0, mac: 00:1b:21:06:00:00}}
  - {{interface: port1, address: 100.64.1.0, mac: 00:1b:21:06:00:01}}
  - {{interface: port5, address: 100.64.5.0, mac: 00:1b:21:06:00:05}}
  - {{interface: port6, address: '2001:db8:100::2', mac: 00:1b:21:06:00:06}}
  - {{interface: port7, address: '2001:db8:101::2', mac: 00:1b:21:06:00:07}}
mpls:
  local-labels:
    - {{label: 16, via: 100.64.5.0, interface: port5, out-labels: [17, 18]}}
"
    ))
    .unwrap()
}

/// Runs the dataplane for 1.5 s and returns the datagrams a UDP listener received.
fn capture() -> Vec<Vec<u8>> {
    let listener = UdpSocket::bind("127.0.0.1:0").unwrap();
    listener.set_read_timeout(Some(Duration::from_millis(500))).unwrap();
    let port = listener.local_addr().unwrap().port();
    let reader = std::thread::spawn(move || {
        let mut got = vec![];
        let mut buf = [0u8; 9000];
        while let Ok(n) = listener.recv(&mut buf) {
            got.push(buf[..n].to_vec());
        }
        got
    });
    let mut dp = dataplane::Dataplane::start(&config(port)).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    dp.stop().unwrap();
    reader.join().unwrap()
}

/// Writes the datagrams as Ethernet/IPv4/UDP 127.0.0.1:40000 → 127.0.0.1:6343.
fn write_pcap(path: &Path, datagrams: &[Vec<u8>]) {
    let mut w = PcapWriter::new(std::fs::File::create(path).unwrap()).unwrap();
    for (k, d) in datagrams.iter().enumerate() {
        let mut f = vec![0u8; 42 + d.len()];
        f[12..14].copy_from_slice(&[8, 0]);
        let lo = Ipv4Addr::LOCALHOST;
        wire::ipv4::write_header(&mut f[14..34], (28 + d.len()) as u16, 64, 17, lo, lo);
        f[42..].copy_from_slice(d);
        wire::udp::write_header(&mut f[34..], lo, lo, 40000, 6343);
        w.write_packet(&PcapPacket::new(Duration::from_millis(k as u64), f.len() as u32, &f)).unwrap();
    }
}

/// A tshark field as a list of strings (tshark -T ek gives a value or a list).
fn field(layer: &serde_json::Value, name: &str) -> Vec<String> {
    let text = |v: &serde_json::Value| v.as_str().map_or(v.to_string(), str::to_string);
    match layer.get(name) {
        None => vec![],
        Some(serde_json::Value::Array(a)) => a.iter().map(text).collect(),
        Some(v) => vec![text(v)],
    }
}

/// Every key anywhere in `v`.
fn keys(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => m.iter().for_each(|(k, v)| {
            out.push(k.clone());
            keys(v, out);
        }),
        serde_json::Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
        _ => {}
    }
}

/// What tshark makes of `datagrams` (written to a capture as UDP to port 6343): one JSON
/// document (`-T ek`) per datagram.
fn tshark_ek(tshark: &Path, datagrams: &[Vec<u8>]) -> Vec<serde_json::Value> {
    let dir = std::env::temp_dir().join(format!("vecflow-interop-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("sflow.pcap");
    write_pcap(&pcap, datagrams);
    let out = Command::new(tshark)
        .args(["-r", pcap.to_str().unwrap(), "-T", "ek", "-d", "udp.port==6343,sflow"])
        .output()
        .unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("{\"timestamp\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// tshark reads every datagram of a running dataplane (flow, counter and discard samples)
/// without a malformed part, and shows the values vecflow sent. Its known gaps (reference/
/// sflow.md, B.8): discard samples (0:5) and the port-name record (0:1005) are "unknown".
#[test]
fn tshark_decodes_what_vecflow_sends() {
    let Some(tshark) = require("tshark", &[], "./test.sh --full installs it: apt-get install tshark") else { return };
    let datagrams = capture();
    assert!(datagrams.len() > 20, "{} datagrams", datagrams.len());
    let docs = tshark_ek(&tshark, &datagrams);
    assert_eq!(docs.len(), datagrams.len());
    let (mut flows, mut counters, mut discards, mut mpls, mut routed6) = (0, 0, 0, 0, 0);
    for (k, (doc, bytes)) in docs.iter().zip(&datagrams).enumerate() {
        let mut all = vec![];
        keys(doc, &mut all);
        assert!(!all.iter().any(|k| k.contains("malformed") || k.contains("expert")), "datagram {k}: {all:?}");
        let sf = &doc["layers"]["sflow"];
        let ours = sflow::decode(bytes).unwrap();
        let one = |name: &str| field(sf, name).first().cloned().unwrap_or_default();
        assert_eq!(one("sflow_sflow_245_agent"), "192.0.2.1");
        assert_eq!(one("sflow_sflow_245_sequence_number"), ours.sequence.to_string());
        assert_eq!(one("sflow_sflow_245_numsamples"), ours.samples.len().to_string());
        let (mut rate, mut pool, mut input, mut output, mut frame_len, mut ifindex, mut inoct, mut unknown) =
            (vec![], vec![], vec![], vec![], vec![], vec![], vec![], 0);
        let (mut in_labels, mut out_labels) = (vec![], vec![]);
        let (mut hops6, mut src_masks, mut dst_masks) = (vec![], vec![], vec![]);
        for s in &ours.samples {
            match s {
                sflow::Sample::Flow(f) => {
                    flows += 1;
                    rate.push(f.sampling_rate.to_string());
                    pool.push(f.sample_pool.to_string());
                    input.push(match f.input {
                        sflow::Interface::Index(i) => i.to_string(),
                        _ => unreachable!(),
                    });
                    output.push(match f.output {
                        sflow::Interface::Index(i) => i.to_string(),
                        _ => unreachable!(),
                    });
                    for r in &f.records {
                        match r {
                            sflow::FlowRecord::RawHeader(h) => frame_len.push(h.frame_length.to_string()),
                            sflow::FlowRecord::Router(r) => {
                                if let IpAddr::V6(hop) = r.next_hop {
                                    hops6.push(hop.to_string());
                                }
                                src_masks.push(r.src_mask_len.to_string());
                                dst_masks.push(r.dst_mask_len.to_string());
                            }
                            sflow::FlowRecord::Mpls(m) => {
                                mpls += 1;
                                in_labels.extend(m.in_stack.iter().map(u32::to_string));
                                out_labels.extend(m.out_stack.iter().map(u32::to_string));
                            }
                            _ => {}
                        }
                    }
                }
                sflow::Sample::Counters(c) => {
                    counters += 1;
                    for r in &c.records {
                        match r {
                            sflow::CounterRecord::Generic(g) => {
                                ifindex.push(g.if_index.to_string());
                                inoct.push(g.in_octets.to_string());
                            }
                            sflow::CounterRecord::PortName(_) => unknown += 1,
                            _ => {}
                        }
                    }
                }
                sflow::Sample::Discard(_) => {
                    discards += 1;
                    unknown += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(field(sf, "sflow_sflow_flow_sample_sampling_rate"), rate, "datagram {k}");
        assert_eq!(field(sf, "sflow_sflow_flow_sample_sample_pool"), pool);
        assert_eq!(field(sf, "sflow_sflow_flow_sample_input_interface"), input);
        assert_eq!(field(sf, "sflow_sflow_flow_sample_output_interface_value"), output);
        assert_eq!(field(sf, "sflow_sflow_245_header_frame_length"), frame_len);
        assert_eq!(field(sf, "sflow_sflow_245_ifindex"), ifindex);
        assert_eq!(field(sf, "sflow_sflow_245_ifinoct"), inoct);
        assert_eq!(field(sf, "sflow_sflow_245_extended_mpls_in_label"), in_labels, "datagram {k}");
        assert_eq!(field(sf, "sflow_sflow_245_extended_mpls_out_label"), out_labels, "datagram {k}");
        assert_eq!(field(sf, "sflow_sflow_245_nexthop_v6"), hops6, "datagram {k}");
        assert_eq!(field(sf, "sflow_sflow_245_nexthop_src_mask"), src_masks, "datagram {k}");
        assert_eq!(field(sf, "sflow_sflow_245_nexthop_dst_mask"), dst_masks, "datagram {k}");
        routed6 += hops6.len();
        let unknown_seen = field(sf, "text").iter().filter(|t| t.contains("Unknown sample format")).count();
        assert_eq!(unknown_seen, unknown, "only the known gaps are unknown to tshark, datagram {k}");
    }
    assert!(flows > 100 && counters >= 4 && discards > 0, "flows {flows}, counters {counters}, discards {discards}");
    assert!(mpls > 20, "{mpls} label-switched samples");
    assert!(routed6 > 20, "{routed6} samples routed by IPv6");
    let seqs: Vec<u32> = datagrams.iter().map(|d| sflow::decode(d).unwrap().sequence).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "datagram sequence without gaps");
}

/// The ifIndex of an input or output that vecflow always sends as an index.
fn if_index(i: sflow::Interface) -> u64 {
    match i {
        sflow::Interface::Index(x) => u64::from(x),
        other => panic!("not an ifIndex: {other:?}"),
    }
}

/// The XDR body of an extended_mpls record (IPv4 next hop), as sFlow v5 lays it out.
fn mpls_xdr(r: &sflow::FlowRecord<'_>) -> Option<Vec<u8>> {
    let sflow::FlowRecord::Mpls(m) = r else { return None };
    let IpAddr::V4(hop) = m.next_hop else { panic!("vecflow's next hops are IPv4") };
    let mut b = [1u32.to_be_bytes(), hop.octets()].concat();
    for stack in [&m.in_stack, &m.out_stack] {
        b.extend_from_slice(&(stack.len() as u32).to_be_bytes());
        stack.iter().for_each(|l| b.extend_from_slice(&l.to_be_bytes()));
    }
    Some(b)
}

/// Feeds `datagrams` to goflow2 in `mode` (`raw` or `sample`) and returns its JSON lines.
fn goflow2_decode(bin: &Path, mode: &str, datagrams: &[Vec<u8>]) -> Vec<serde_json::Value> {
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    // Its output goes to a file: a pipe nobody reads until the end could fill and block it.
    let out = tempfile::NamedTempFile::new().unwrap();
    let goflow2 = Daemon::spawn(
        Command::new(bin)
            .args(["-listen", &format!("sflow://127.0.0.1:{port}"), "-produce", mode, "-format", "json"])
            .stdout(out.reopen().unwrap())
            .stderr(Stdio::null()),
    );
    common::wait_udp_bound(port);
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for d in datagrams {
        tx.send_to(d, ("127.0.0.1", port)).unwrap();
        std::thread::sleep(Duration::from_micros(500));
    }
    std::thread::sleep(Duration::from_millis(800));
    // SIGTERM, not kill(): goflow2 flushes its buffered output when it exits cleanly.
    goflow2.stop(libc::SIGTERM, Duration::from_secs(10));
    let stdout = std::fs::read(out.path()).unwrap();
    // Its two workers write concurrently: objects are not always one per line.
    serde_json::Deserializer::from_slice(&stdout).into_iter::<serde_json::Value>().map(Result::unwrap).collect()
}

/// Checks goflow2's flow view (sample mode) of each input port of the capture: addresses,
/// interfaces, next hop, prefixes, VLAN and labels. Returns how many flows were routed by IPv6.
fn check_flow_view(view: &[serde_json::Value]) -> usize {
    let mut routed6 = 0;
    for f in view {
        let frame = if f["in_if"].as_u64() == Some(7) { 66 } else { 64 };
        assert_eq!(
            (f["sampler_address"].as_str(), f["sampling_rate"].as_u64(), f["bytes"].as_u64()),
            (Some("192.0.2.1"), Some(100), Some(frame))
        );
        match f["in_if"].as_u64() {
            Some(1) => {
                // Routed: 16.0.0.0/24 -> 48.0.0.0/24 via 100.64.1.0 out of port1.
                assert_eq!((f["out_if"].as_u64(), f["next_hop"].as_str()), (Some(2), Some("100.64.1.0")));
                assert_eq!(
                    (f["src_net"].as_str(), f["dst_net"].as_str(), f["proto"].as_str()),
                    (Some("16.0.0.0/24"), Some("48.0.0.0/24"), Some("UDP"))
                );
                assert!(f["src_addr"].as_str().unwrap().starts_with("16.0.0."));
            }
            Some(3) => assert_eq!(
                (f["out_if"].as_u64(), f["vlan_id"].as_u64()),
                (Some(4), Some(100)),
                "the tagged cross-connect"
            ),
            Some(5) => assert_eq!(
                (f["out_if"].as_u64(), f["mpls_label"].as_array().cloned()),
                (Some(6), Some(vec![16.into(), 99.into()])),
                "the label-switched pair: the labels received"
            ),
            Some(7) => {
                // Routed by IPv6: 2001:db8:16::/48 -> 2001:db8:48::/48 via 2001:db8:101::2.
                routed6 += 1;
                assert_eq!((f["out_if"].as_u64(), f["next_hop"].as_str()), (Some(8), Some("2001:db8:101::2")));
                assert_eq!(
                    (f["src_net"].as_str(), f["dst_net"].as_str(), f["proto"].as_str(), f["etype"].as_str()),
                    (Some("2001:db8:16::/48"), Some("2001:db8:48::/48"), Some("UDP"), Some("IPv6"))
                );
                assert_eq!(f["dst_addr"].as_str(), Some("2001:db8:48::1"));
                assert!(f["src_addr"].as_str().unwrap().starts_with("2001:db8:16::"), "{f}");
            }
            other => panic!("input {other:?}"),
        }
    }
    routed6
}

/// goflow2 2.2.6 decodes every datagram (raw mode: all sample types) with the values vecflow
/// sent, and its flow view (sample mode) shows addresses, interfaces, next hop, prefixes and
/// VLAN. Its known gaps (reference/sflow.md, B.6): only Ethernet raw headers are parsed, and
/// `vlan_id` is the whole TCI (vecflow tags with priority 0, so it equals the VLAN id).
#[test]
fn goflow2_decodes_what_vecflow_sends() {
    // Where `go install` puts it, which a PATH may lack.
    let gopath = std::env::var_os("GOPATH").map(PathBuf::from);
    let home_go = std::env::var_os("HOME").map(|h| PathBuf::from(h).join("go"));
    let gobin: Vec<PathBuf> = gopath.into_iter().chain(home_go).map(|p| p.join("bin")).collect();
    let install = "./test.sh --full installs it: go install github.com/netsampler/goflow2/v2/cmd/goflow2@v2.2.6";
    let Some(bin) = require("goflow2", &gobin, install) else { return };
    let datagrams = capture();
    let ours: Vec<sflow::Datagram<'_>> = datagrams.iter().map(|d| sflow::decode(d).unwrap()).collect();
    let raw = goflow2_decode(&bin, "raw", &datagrams);
    assert_eq!(raw.len(), datagrams.len(), "goflow2 decoded every datagram");
    // goflow2 decodes on two workers: its output order is not the datagrams' order.
    let by_seq: std::collections::BTreeMap<u64, &serde_json::Value> =
        raw.iter().map(|g| (g["message"]["sequence-number"].as_u64().unwrap(), &g["message"])).collect();
    assert_eq!(by_seq.len(), raw.len(), "no duplicates");
    let (mut flows, mut counters, mut discards, mut mpls) = (0, 0, 0, 0);
    for o in &ours {
        let m = by_seq[&u64::from(o.sequence)];
        assert_eq!((m["version"].as_u64(), m["agent-ip"].as_str()), (Some(5), Some("192.0.2.1")));
        assert_eq!(m["sequence-number"].as_u64(), Some(u64::from(o.sequence)));
        let samples = m["samples"].as_array().unwrap();
        assert_eq!(samples.len(), o.samples.len());
        for (gs, os) in samples.iter().zip(&o.samples) {
            let h = &gs["header"];
            match os {
                sflow::Sample::Flow(f) => {
                    flows += 1;
                    assert_eq!(h["format"].as_u64(), Some(1));
                    assert_eq!(h["sample-sequence-number"].as_u64(), Some(u64::from(f.sequence)));
                    assert_eq!(h["source-id-value"].as_u64(), Some(u64::from(f.source.index)));
                    let got = |k: &str| gs[k].as_u64().unwrap();
                    assert_eq!(
                        (got("sampling-rate"), got("sample-pool"), got("drops")),
                        (u64::from(f.sampling_rate), u64::from(f.sample_pool), u64::from(f.drops))
                    );
                    assert_eq!((got("input"), got("output")), (if_index(f.input), if_index(f.output)));
                    let frame = if if_index(f.input) == 7 { 66 } else { 64 };
                    assert_eq!(gs["records"][0]["data"]["frame-length"].as_u64(), Some(frame));
                    // goflow2 leaves extended_mpls (0:1006) undecoded, as base64: the bytes must be
                    // the record vecflow sent.
                    let raw_mpls: Vec<Vec<u8>> = gs["records"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .filter(|r| r["header"]["data-format"].as_u64() == Some(1006))
                        .map(|r| BASE64_STANDARD.decode(r["data"]["data"].as_str().unwrap()).unwrap())
                        .collect();
                    let ours_mpls: Vec<Vec<u8>> = f.records.iter().filter_map(mpls_xdr).collect();
                    assert_eq!(raw_mpls, ours_mpls);
                    mpls += ours_mpls.len();
                }
                sflow::Sample::Counters(c) => {
                    counters += 1;
                    assert_eq!(
                        (h["format"].as_u64(), h["source-id-value"].as_u64()),
                        (Some(2), Some(u64::from(c.source.index)))
                    );
                    assert_eq!(h["sample-sequence-number"].as_u64(), Some(u64::from(c.sequence)));
                }
                sflow::Sample::Discard(d) => {
                    discards += 1;
                    assert_eq!(
                        (h["format"].as_u64(), h["sample-sequence-number"].as_u64()),
                        (Some(5), Some(u64::from(d.sequence)))
                    );
                }
                other => panic!("{other:?}"),
            }
        }
    }
    assert!(flows > 100 && counters >= 4 && discards > 0, "flows {flows}, counters {counters}, discards {discards}");
    assert!(mpls > 20, "{mpls} extended_mpls records");

    let view = goflow2_decode(&bin, "sample", &datagrams);
    assert_eq!(view.len(), flows, "one flow per flow sample");
    let routed6 = check_flow_view(&view);
    assert!(routed6 > 20, "{routed6} IPv6 flows");
}

/// Every JSON object of a file of JSON lines (empty when the file is missing).
fn json_lines(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read(path).unwrap_or_default();
    serde_json::Deserializer::from_slice(&text).into_iter::<serde_json::Value>().map(Result::unwrap).collect()
}

/// pmacct's sfacctd 1.7.7 (print plugin and counter log, reference/sflow.md B.4) accounts
/// every flow sample to the right interfaces, hosts and VLAN, and logs every counter sample
/// with the values vecflow sent. Its known gap: it stops reading a datagram at a discard
/// sample, which is why vecflow sends discard samples in datagrams of their own.
#[test]
fn sfacctd_decodes_what_vecflow_sends() {
    // Debian installs it in /usr/sbin, which a non-root PATH may lack.
    let install = "./test.sh --full installs Debian's pmacct: apt-get install pmacct";
    let Some(bin) = require("sfacctd", &["/usr/sbin".into()], install) else { return };
    let datagrams = capture();
    let ours: Vec<sflow::Datagram<'_>> = datagrams.iter().map(|d| sflow::decode(d).unwrap()).collect();
    let dir = tempfile::tempdir().unwrap();
    let (flows_file, counters_file) = (dir.path().join("flows.json"), dir.path().join("counters.json"));
    let port = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let conf = dir.path().join("sfacctd.conf");
    std::fs::write(
        &conf,
        format!(
            "daemonize: false\nsfacctd_ip: 127.0.0.1\nsfacctd_port: {port}\nplugins: print[p]\n\
             aggregate[p]: peer_src_ip, in_iface, out_iface, vlan, src_host, dst_host, proto, sampling_rate\n\
             print_output[p]: json\nprint_output_file[p]: {}\nprint_output_file_append[p]: true\nprint_refresh_time[p]: 1\n\
             sfacctd_counter_file: {}\nsfacctd_counter_output: json\n",
            flows_file.display(),
            counters_file.display()
        ),
    )
    .unwrap();
    let log_file = dir.path().join("sfacctd.log");
    let sfacctd = Daemon::spawn(
        Command::new(&bin).arg("-f").arg(&conf).stdout(Stdio::null()).stderr(std::fs::File::create(&log_file).unwrap()),
    );
    common::wait_udp_bound(port);
    let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
    for d in &datagrams {
        tx.send_to(d, ("127.0.0.1", port)).unwrap();
        std::thread::sleep(Duration::from_micros(500));
    }
    std::thread::sleep(Duration::from_millis(2500));
    // SIGINT: sfacctd writes what it holds and exits.
    sfacctd.stop(libc::SIGINT, Duration::from_secs(10));
    let log = std::fs::read_to_string(&log_file).unwrap();
    let flows = json_lines(&flows_file);
    let counters = json_lines(&counters_file);

    // Flows: every flow sample is accounted, once, to its interfaces, VLAN and hosts.
    let mut sampled: std::collections::BTreeMap<(u64, u64), u64> = Default::default();
    let mut counted = sampled.clone();
    let (mut generic_polls, mut discard_datagrams) = (vec![], 0);
    for d in &ours {
        discard_datagrams += usize::from(d.samples.iter().any(|s| matches!(s, sflow::Sample::Discard(_))));
        for s in &d.samples {
            match s {
                // sfacctd 1.7.7 accounts none of port4's samples, whose raw headers are MPLS, with
                // this print plugin and aggregate (a gap of its own; tshark and goflow2 check them).
                sflow::Sample::Flow(f) if if_index(f.input) != 5 => {
                    *sampled.entry((if_index(f.input), if_index(f.output))).or_default() += 1;
                }
                sflow::Sample::Counters(c) => {
                    for r in &c.records {
                        if let sflow::CounterRecord::Generic(g) = r {
                            generic_polls.push((c.sequence, *g));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    for f in &flows {
        let (input, output, packets) =
            (f["iface_in"].as_u64().unwrap(), f["iface_out"].as_u64().unwrap(), f["packets"].as_u64().unwrap());
        *counted.entry((input, output)).or_default() += packets;
        let (frame, dst, src) =
            if input == 7 { (66, "2001:db8:48::1", "2001:db8:16::") } else { (64, "48.0.0.1", "16.0.") };
        assert_eq!(
            (f["peer_ip_src"].as_str(), f["sampling_rate"].as_u64(), f["bytes"].as_u64()),
            (Some("192.0.2.1"), Some(100), Some(frame * packets))
        );
        assert_eq!((f["ip_dst"].as_str(), f["ip_proto"].as_str()), (Some(dst), Some("udp")), "{f}");
        // The generator's default sources: 16.0.0.0 (2001:db8:16::1) upwards.
        assert!(f["ip_src"].as_str().unwrap().starts_with(src), "{f}");
        let vlan = if input == 3 { 100 } else { 0 };
        assert_eq!(f["vlan"].as_u64(), Some(vlan), "{f}");
    }
    assert!(sampled.values().sum::<u64>() > 100, "{sampled:?}");
    assert_eq!(counted, sampled, "sfacctd's packets per (input, output) = vecflow's flow samples");

    // Counters: one log entry per generic record, with the values vecflow sent.
    let logged: Vec<&serde_json::Value> =
        counters.iter().filter(|c| c["sf_cnt_type"].as_str() == Some("sflow_cnt_generic")).collect();
    assert_eq!(logged.len(), generic_polls.len(), "every generic counter record logged");
    assert!(generic_polls.len() >= 4);
    for (seq, g) in &generic_polls {
        let c = logged
            .iter()
            .find(|c| {
                c["source_id_index"].as_u64() == Some(u64::from(g.if_index))
                    && c["sflow_cnt_seq"].as_u64() == Some(u64::from(*seq))
            })
            .unwrap_or_else(|| panic!("no log entry for ifIndex {} poll {seq}", g.if_index));
        let got = |k: &str| c[k].as_u64().unwrap();
        assert_eq!(
            [got("ifInOctets"), got("ifInUcastPkts"), got("ifOutOctets"), got("ifOutUcastPkts")],
            [g.in_octets, u64::from(g.in_ucast_pkts), g.out_octets, u64::from(g.out_ucast_pkts)]
        );
        assert_eq!(
            [got("ifInDiscards"), got("ifStatus"), got("ifType"), got("ifPromiscuousMode")],
            [u64::from(g.in_discards), u64::from(g.if_status), u64::from(g.if_type), u64::from(g.promiscuous_mode)]
        );
    }
    let ethernet = counters.iter().filter(|c| c["sf_cnt_type"].as_str() == Some("sflow_cnt_ethernet")).count();
    assert_eq!(ethernet, generic_polls.len(), "an Ethernet record beside every port's generic record");

    // The known gap: each datagram of discard samples is dropped whole, and only those.
    assert!(discard_datagrams > 0);
    assert_eq!(log.matches("discarding unknown v5 sample").count(), discard_datagrams, "{log}");
}
