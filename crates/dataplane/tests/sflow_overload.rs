//! Overload: every packet of a full-rate pair sampled (1:1) on the worker that also forwards a
//! rate-limited pair without sFlow. Memory stays bounded, samples lost to full rings are
//! counted and exported in `drops`, and the other pair loses nothing: a fixed count of its
//! packets all arrive, as they do when the full-rate pair is not sampled. A count, not a rate:
//! a worker descheduled on a busy machine takes longer to send them, never fewer.

use dataplane::{Config, Dataplane};
use sflow::Sample;
use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Packets of the rate-limited pair.
const QUIET_COUNT: u64 = 150_000;

/// One worker: port2/port3 cross-connected at full rate, port2 sampled 1:1 when `sampled`;
/// port6/port7 cross-connected at 100 kpps without sFlow, [`QUIET_COUNT`] packets. The agent
/// runs either way.
fn config(collector: u16, sampled: bool) -> Config {
    let port2_sflow = if sampled { ", sflow: {}" } else { "" };
    Config::load(&format!(
        "
workers: {{count: 1}}
sflow: {{sampling-rate: 1, ring-depth: 4096, agent-address: 127.0.0.1, collectors: [{{address: 127.0.0.1, port: {collector}}}]}}
interfaces:
  port2: {{l2xc: port3{port2_sflow}, generator: {{streams: [{{template: l2}}]}}}}
  port3: {{l2xc: port2}}
  port6: {{l2xc: port7, generator: {{streams: [{{template: l2, rate-pps: 100000, count: {QUIET_COUNT}}}]}}}}
  port7: {{l2xc: port6}}
"
    ))
    .unwrap()
}

/// Runs the dataplane (port2 sampled or not) until the rate-limited pair has sent its
/// [`QUIET_COUNT`] packets, and checks what holds in either case.
fn phase(sampled: bool) {
    let listener = UdpSocket::bind("127.0.0.1:0").unwrap();
    listener.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, samples, max_drops) =
        (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (st, sa, md) = (stop.clone(), samples.clone(), max_drops.clone());
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 9000];
        let mut k = 0u64;
        while !st.load(Relaxed) {
            if let Ok(n) = listener.recv(&mut buf) {
                k += 1;
                sa.fetch_add(u64::from(u32::from_be_bytes(buf[24..28].try_into().unwrap())), Relaxed);
                // Decoding is costly: look inside one datagram in 50.
                if k.is_multiple_of(50)
                    && let Ok(d) = sflow::decode(&buf[..n])
                {
                    for s in d.samples {
                        if let Sample::Flow(f) = s {
                            md.fetch_max(u64::from(f.drops), Relaxed);
                        }
                    }
                }
            }
        }
    });
    let mut dp = Dataplane::start(&config(port, sampled)).unwrap();
    let index = |n: &str| dp.interfaces().iter().find(|i| i.name == n).unwrap().index;
    let (p2, p6, p7) = (index("port2"), index("port6"), index("port7"));
    std::thread::sleep(Duration::from_millis(500));
    let rss0 = rss_kib();
    // The generator stops at the count; the deadline only keeps a broken dataplane from hanging.
    let deadline = Instant::now() + Duration::from_secs(300);
    while dp.interface_stats(p6).rx_packets < QUIET_COUNT {
        assert!(Instant::now() < deadline, "port6 sent {} of {QUIET_COUNT}", dp.interface_stats(p6).rx_packets);
        std::thread::sleep(Duration::from_millis(20));
    }
    let rss1 = rss_kib();
    dp.stop().unwrap();
    stop.store(true, Relaxed);
    reader.join().unwrap();

    let (_, totals, rows) = dp.sflow().unwrap();
    let row = rows.iter().find(|r| r.if_index == p2);
    if sampled {
        let row = row.expect("port2 is sampled");
        assert!(row.sampler.ring_full > 0, "1:1 at full rate overflows the ring: {:?}", row.sampler);
        assert_eq!(row.sampler.seen, dp.interface_stats(p2).rx_packets, "every packet passed the sampler");
        assert_eq!(row.sampler.taken, row.samples_sent + totals.samples_of_drops, "every sample taken was sent");
        assert!(samples.load(Relaxed) > 0 && max_drops.load(Relaxed) > 0, "drops are exported in the samples");
        assert!(rss1 < rss0 + 16 * 1024, "memory grew from {rss0} KiB to {rss1} KiB while sampling 1:1");
    } else {
        assert!(row.is_none(), "port2 is not sampled: {row:?}");
    }
    let (s6, s7) = (dp.interface_stats(p6), dp.interface_stats(p7));
    assert_eq!(
        (s6.rx_packets, s6.rx_forwarded, s7.tx_packets),
        (QUIET_COUNT, QUIET_COUNT, QUIET_COUNT),
        "every packet of the pair without sFlow forwarded (port2 sampled: {sampled})"
    );
}

#[test]
fn one_in_one_at_full_rate_is_bounded_counted_and_spares_other_interfaces() {
    phase(false);
    phase(true);
}
