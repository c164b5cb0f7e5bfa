//! The pcap driver through `vecflow run`: a capture replayed through an L2 cross-connect is
//! written back byte for byte (pcap and pcapng, in and out), and the run ends by itself once
//! the capture is read.

use pcap_file::DataLink;
use pcap_file::pcap::{PcapPacket, PcapReader, PcapWriter};
use pcap_file::pcapng::blocks::Block;
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
use pcap_file::pcapng::{PcapNgReader, PcapNgWriter};
use std::borrow::Cow;
use std::fs::File;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// `n` Ethernet frames of 14 to 1514 bytes (some 802.1Q-tagged), bytes from a fixed seed.
fn frames(n: usize) -> Vec<Vec<u8>> {
    let mut x: u64 = 0x5eed_1234_abcd_0001;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..n)
        .map(|k| {
            let len = match k % 4 {
                0 => 60,
                1 => 14 + (next() % 1501) as usize,
                2 => 1514,
                _ => 64 + (next() % 200) as usize,
            };
            let mut f: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            if k % 5 == 0 {
                f[12..14].copy_from_slice(&[0x81, 0x00]);
            }
            f
        })
        .collect()
}

fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut w = PcapWriter::new(File::create(path).unwrap()).unwrap();
    for (k, f) in frames.iter().enumerate() {
        w.write_packet(&PcapPacket::new(Duration::from_micros(k as u64), f.len() as u32, f)).unwrap();
    }
}

/// A pcapng whose interface 0 is Ethernet (carrying `frames`) and interface 1 Linux cooked
/// (carrying `others`, interleaved).
fn write_pcapng(path: &Path, frames: &[Vec<u8>], others: usize) {
    let mut w = PcapNgWriter::new(File::create(path).unwrap()).unwrap();
    for linktype in [DataLink::ETHERNET, DataLink::LINUX_SLL] {
        w.write_pcapng_block(InterfaceDescriptionBlock { linktype, snaplen: 0, options: vec![] }).unwrap();
    }
    let epb = |interface_id, data: &[u8]| EnhancedPacketBlock {
        interface_id,
        timestamp: Duration::ZERO,
        original_len: data.len() as u32,
        data: Cow::Owned(data.to_vec()),
        options: vec![],
    };
    for (k, f) in frames.iter().enumerate() {
        if k < others {
            w.write_pcapng_block(epb(1, &[0u8; 40])).unwrap();
        }
        w.write_pcapng_block(epb(0, f)).unwrap();
    }
}

/// The frames of a pcap or pcapng file (Ethernet interfaces only, for pcapng).
fn read_frames(path: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(path).unwrap();
    let mut out = Vec::new();
    if bytes.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a]) {
        let mut r = PcapNgReader::new(&bytes[..]).unwrap();
        while let Some(b) = r.next_block() {
            if let Block::EnhancedPacket(p) = b.unwrap().into_owned() {
                assert_eq!(r.packet_interface(&p).unwrap().linktype, DataLink::ETHERNET);
                out.push(p.data.to_vec());
            }
        }
    } else {
        let mut r = PcapReader::new(&bytes[..]).unwrap();
        assert_eq!(r.header().datalink, DataLink::ETHERNET);
        while let Some(p) = r.next_packet() {
            out.push(p.unwrap().data.to_vec());
        }
    }
    out
}

/// Runs `vecflow run --show-at-exit` on `config` (in `dir`) to its own end; its stdout.
fn run_to_end(dir: &Path, config: &str) -> String {
    let path = dir.join("replay.yaml");
    std::fs::write(&path, config).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_vecflow"))
        .args(["run", "--show-at-exit", "-c", path.to_str().unwrap(), "--socket", "api.sock"])
        .current_dir(dir)
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "vecflow run failed\n{stdout}\n{stderr}");
    assert!(stderr.contains("every capture has been replayed"), "{stderr}");
    stdout.into_owned()
}

/// The L2XC replay config: `in0` reads `input`, its frames leave through `out0`, written to
/// `output`.
fn l2xc_config(input: &str, output: &str) -> String {
    format!(
        "workers: {{count: 2}}
metrics: {{enabled: false}}
interfaces:
  in0: {{driver: pcap, pcap: {{read: {input}}}, l2xc: out0}}
  out0: {{driver: pcap, pcap: {{write: {output}}}, l2xc: in0}}
"
    )
}

#[test]
fn pcap_replayed_through_l2xc_is_written_back_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let sent = frames(3000);
    write_pcap(&dir.path().join("in.pcap"), &sent);
    let show = run_to_end(dir.path(), &l2xc_config("in.pcap", "out.pcap"));
    let got = read_frames(&dir.path().join("out.pcap"));
    assert_eq!(got.len(), sent.len(), "{show}");
    assert!(got == sent, "frames differ");
    assert!(show.contains("pcap-input") && show.contains("pcap-tx"), "{show}");
}

#[test]
fn pcapng_replay_keeps_ethernet_frames_and_counts_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut sent = frames(1000);
    // Larger than a buffer: dropped as frame-too-long, like the non-Ethernet frames.
    sent.insert(500, vec![0xab; 9000]);
    write_pcapng(&dir.path().join("in.pcapng"), &sent, 7);
    let show = run_to_end(dir.path(), &l2xc_config("in.pcapng", "out.pcapng"));
    let got = read_frames(&dir.path().join("out.pcapng"));
    sent.remove(500);
    assert_eq!(got.len(), sent.len(), "{show}");
    assert!(got == sent, "frames differ");
    let errors = |reason: &str| {
        show.lines().find(|l| l.contains(reason)).and_then(|l| l.split_whitespace().next()?.parse::<u64>().ok())
    };
    assert_eq!(errors("not-ethernet"), Some(7), "{show}");
    assert_eq!(errors("frame-too-long"), Some(1), "{show}");
}

#[test]
fn a_capture_that_cannot_be_read_stops_the_start_naming_the_field() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.pcap"), b"this is not a capture").unwrap();
    for (input, says) in [("missing.pcap", "No such file"), ("bad.pcap", "not a pcap or pcapng file")] {
        let path = dir.path().join("bad.yaml");
        std::fs::write(&path, l2xc_config(input, "out.pcap")).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_vecflow"))
            .args(["run", "-c", path.to_str().unwrap(), "--socket", "api.sock"])
            .current_dir(dir.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(stderr.contains(&format!("interfaces.in0.pcap.read: {input}: ")) && stderr.contains(says), "{stderr}");
    }
}

#[test]
fn jumbo_frames_replay_whole_up_to_the_buffer_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut sent = frames(40);
    for (k, f) in sent.iter_mut().enumerate() {
        // 9212: the largest untagged frame at MTU 9198 (a tagged one may have 4 bytes more).
        f.resize([9000, 9212, 1514, 60][k % 4], k as u8);
    }
    let mut with_long = sent.clone();
    with_long.push(vec![7u8; 9300]); // more than a 9216-byte buffer holds
    write_pcap(&dir.path().join("in.pcap"), &with_long);
    let config = "buffers: {data-size: 9216}
metrics: {enabled: false}
interfaces:
  in0: {driver: pcap, pcap: {read: in.pcap}, l2xc: out0, mtu: 9198}
  out0: {driver: pcap, pcap: {write: out.pcap}, l2xc: in0, mtu: 9198}
";
    let show = run_to_end(dir.path(), config);
    let got = read_frames(&dir.path().join("out.pcap"));
    assert!(got == sent, "the jumbo frames, byte for byte ({} of {})\n{show}", got.len(), sent.len());
    assert!(show.contains("frame-too-long"), "the 9300-byte frame is counted, not cut\n{show}");
}
