//! Jumbo frames end to end: the routed lab of `netns.rs` with MTU 9000 on both hosts' links
//! (set before vecflow starts, which takes its ports' MTU from them) and `buffers.data-size:
//! 9216`, on AF_PACKET and on AF_XDP (multi-buffer: a 9014-byte frame is three 4 KiB chunks).
//!
//! ```text
//!  ns A: vfa0 10.0.1.2/24 fd00:1::2/64 ──veth (MTU 9000)── wa ┐
//!                                                              ns R: vecflow run
//!  ns B: vfb0 10.0.2.2/24 fd00:2::2/64 ──veth (MTU 9000)── wb ┤
//!        vfc0 10.0.3.2/24 fd00:3::2/64 ──veth (MTU 1500)── wc ┘
//! ```
//!
//! Checks 8 972-byte pings with DF both ways (8 952 bytes in IPv6), TCP iperf3 at MTU 9000, and
//! an 8 972-byte ping toward the 1500-byte link answered with fragmentation needed (MTU 1500)
//! and, in IPv6, packet too big (MTU 1500); then that vecflow saw no frame it had to cut.
//! Needs root, `ip`, `ping`, `ethtool`, `iperf3` and `python3` (`./test.sh` installs them);
//! everything it creates has names unique to the run and is removed when it ends.

mod common;

#[path = "netns/lab.rs"]
#[allow(dead_code)] // the routed labs' helpers this lab does not use
mod lab;

use lab::*;

#[test]
fn jumbo_frames_through_af_packet() {
    jumbo_lab(Port::AfPacket);
}

#[test]
fn jumbo_frames_through_af_xdp() {
    jumbo_lab(Port::AfXdp);
}

/// The jumbo lab with all of vecflow's ports on driver `port`.
fn jumbo_lab(port: Port) {
    if !can_run() {
        return;
    }
    let lab = Lab::with_mtus("9000", "9000", true);
    let (vfc0, vfc1) = lab.extra_link("b", "c", true);
    lab.facing("a", port);
    lab.facing("b", port);
    if port == Port::AfXdp {
        lab.offloads(&lab.b, &vfc0, &["tx", "off"]);
    }
    lab.address("a", "10.0.1.2/24", Some("10.0.1.1"));
    lab.address("b", "10.0.2.2/24", Some("10.0.2.1"));
    must("ip", &["-n", &lab.a, "addr", "add", "fd00:1::2/64", "dev", &lab.veth("a", 0)]);
    must("ip", &["-n", &lab.a, "route", "add", "default", "via", "fd00:1::1"]);
    must("ip", &["-n", &lab.b, "addr", "add", "fd00:2::2/64", "dev", &lab.veth("b", 0)]);
    must("ip", &["-n", &lab.b, "route", "add", "default", "via", "fd00:2::1"]);
    for addr in ["10.0.3.2/24", "fd00:3::2/64"] {
        must("ip", &["-n", &lab.b, "addr", "add", addr, "dev", &vfc0]);
    }
    // Three AF_XDP ports with two queues each lend the kernel more than the default 16384
    // buffers at the default ring size: smaller rings.
    let driver = match port {
        Port::AfXdp => "driver: af-xdp, af-xdp: {queues: 2, ring-size: 512}, rx-mode: adaptive".to_string(),
        Port::AfPacket => port.yaml(1, "adaptive"),
    };
    let config = format!(
        "workers: {{count: 1}}
buffers: {{data-size: 9216}}
metrics: {{enabled: false}}
interfaces:
  wa: {{index: 1, {driver}, host-interface: {}, addresses: [10.0.1.1/24, 'fd00:1::1/64']}}
  wb: {{index: 2, {driver}, host-interface: {}, addresses: [10.0.2.1/24, 'fd00:2::1/64']}}
  wc: {{index: 3, {driver}, host-interface: {vfc1}, addresses: [10.0.3.1/24, 'fd00:3::1/64']}}
",
        lab.veth("a", 1),
        lab.veth("b", 1),
    );
    let dir = tempfile::tempdir().unwrap();
    let (vecflow, started) = lab.start_vecflow(dir.path(), &config);
    assert!(started.contains("MTU 9000"), "wa and wb take the kernel's MTU:\n{started}");
    assert!(started.contains("of 9216 bytes of frame (9280-byte slots)"), "the buffers are reported:\n{started}");
    if port == Port::AfXdp {
        // veth refuses native XDP at this MTU to a program not loaded for multi-buffer frames.
        assert!(started.contains("XDP native mode"), "{started}");
    }

    // The first packet toward an unresolved host is dropped while vecflow resolves it.
    for to in ["10.0.2.2", "fd00:2::2", "10.0.3.2", "fd00:3::2"] {
        lab.ping(&lab.a, &["-c", "2", "-i", "0.3", "-W", "1", to]);
    }
    for (from, to, size) in [
        (&lab.a, "10.0.2.2", "8972"),
        (&lab.b, "10.0.1.2", "8972"),
        (&lab.a, "fd00:2::2", "8952"),
        (&lab.b, "fd00:1::2", "8952"),
        (&lab.a, "10.0.1.1", "8972"),
    ] {
        let (ok, out) = lab.ping(from, &["-c", "3", "-i", "0.2", "-W", "2", "-M", "do", "-s", size, to]);
        assert!(
            ok && out.contains("3 received")
                && out.contains(&format!("{} bytes from", size.parse::<u32>().unwrap() + 8)),
            "ping -s {size} {to} from {from}:\n{out}"
        );
    }
    let (bytes, _) = lab.iperf3("10.0.2.2", &["-M", "8900"]);
    assert!(bytes > 1_000_000, "iperf3 TCP at MTU 9000 moved {bytes} bytes");

    // Toward the 1500-byte link: fragmentation needed, packet too big, both with MTU 1500.
    let (_, out) = lab.ping(&lab.a, &["-c", "1", "-M", "do", "-s", "8972", "-W", "2", "10.0.3.2"]);
    assert!(out.contains("From 10.0.1.1") && out.contains("Frag needed and DF set (mtu = 1500)"), "{out}");
    let (_, out) = lab.ping(&lab.a, &["-c", "1", "-M", "do", "-s", "8952", "-W", "2", "fd00:3::2"]);
    assert!(out.contains("Packet too big: mtu=1500"), "{out}");
    // Without DF, vecflow cuts the 9000-byte datagram into 1500-byte fragments.
    let (ok, out) = lab.ping(&lab.a, &["-c", "2", "-i", "0.3", "-M", "dont", "-s", "8972", "-W", "2", "10.0.3.2"]);
    assert!(ok && out.contains("2 received"), "fragmented by vecflow:\n{out}");

    let buffers = ctl(dir.path(), &["show", "buffers"]);
    assert!(buffers.contains("16384 buffers per worker of 9216 bytes of frame"), "{buffers}");
    let errors = ctl(dir.path(), &["show", "errors"]);
    assert!(!errors.contains("rx-truncated"), "no frame was cut:\n{errors}");
    lab.stop_vecflow(vecflow, dir.path());
}
