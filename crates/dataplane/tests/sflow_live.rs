//! sFlow settings changed while the dataplane runs: the samplers and the agent follow the
//! new sampling rate, the interfaces turned on and off, and the new polling interval.

use dataplane::control::cli::Registry;
use dataplane::{Config, Dataplane};
use sflow::Sample;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// The flow samples' (data source index, sampling rate) and the counter samples' sources of
/// everything the collector receives for `window`.
fn collect(sock: &UdpSocket, window: Duration) -> (Vec<(u32, u32)>, Vec<u32>) {
    let (mut flows, mut polls) = (Vec::new(), Vec::new());
    let end = Instant::now() + window;
    let mut buf = [0u8; 9000];
    while Instant::now() < end {
        let Ok(n) = sock.recv(&mut buf) else { continue };
        for s in sflow::decode(&buf[..n]).unwrap().samples {
            match s {
                Sample::Flow(f) => flows.push((f.source.index, f.sampling_rate)),
                Sample::Counters(c) => polls.push(c.source.index),
                _ => {}
            }
        }
    }
    (flows, polls)
}

#[test]
fn sampling_follows_live_changes() {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let port = sock.local_addr().unwrap().port();
    let config = Config::load(&format!(
        "workers: {{count: 2}}
metrics: {{enabled: false}}
sflow: {{sampling-rate: 1000, polling-interval: 0, agent-address: 192.0.2.1, collectors: [{{address: 127.0.0.1, port: {port}}}]}}
interfaces:
  p0: {{index: 1, l2xc: p1, sflow: {{}}, generator: {{streams: [{{template: l2, rate-pps: 100000}}]}}}}
  p1: {{index: 2, l2xc: p0, rx-placement: {{worker: 1}}, generator: {{streams: [{{template: l2, rate-pps: 100000}}]}}}}
"
    ))
    .unwrap();
    let mut dp = Dataplane::start(&config).unwrap();
    let r = Registry::with_builtins();
    let (flows, polls) = collect(&sock, Duration::from_millis(1500));
    let others = flows.iter().filter(|&&f| f != (1, 1000)).count();
    assert!(flows.len() > 30 && others == 0, "before: only p0 at 1:1000 ({others} of {} are not)", flows.len());
    assert!(polls.is_empty(), "polling is off: {polls:?}");

    r.execute(&mut dp, "sflow sampling-rate 100").unwrap();
    r.execute(&mut dp, "sflow enable p1 sampling-rate 50").unwrap();
    r.execute(&mut dp, "sflow polling-interval 1").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (flows, polls) = collect(&sock, Duration::from_millis(2500));
    let of = |index: u32| flows.iter().filter(|f| f.0 == index).map(|f| f.1).collect::<Vec<_>>();
    let (p0, p1) = (of(1), of(2));
    // 100 kpps each for 2.5 s: about 2500 samples of p0 at 1:100 and 5000 of p1 at 1:50.
    // (A few samples p0 took at 1:1000 before the change may arrive late, labelled so.)
    let late = p0.iter().filter(|&&r| r == 1000).count();
    let at_100 = p0.iter().filter(|&&r| r == 100).count();
    assert!(at_100 > 500 && late < 50 && at_100 + late == p0.len(), "p0 at 1:100: {at_100} of {}", p0.len());
    assert!(p1.len() > 1000 && p1.iter().all(|&r| r == 50), "p1 at 1:50: {} samples", p1.len());
    assert!(polls.contains(&1) && polls.contains(&2), "both polled every second: {polls:?}");

    // Samples p0 took before it was turned off still arrive for a moment (the rings, the
    // agent's 250 ms flush), with the rate they were taken at; then none.
    r.execute(&mut dp, "sflow enable p0 disable").unwrap();
    let (flows, _) = collect(&sock, Duration::from_millis(1000));
    assert!(flows.iter().filter(|f| f.0 == 1).all(|f| f.1 == 100), "p0's last samples keep their rate");
    let (flows, _) = collect(&sock, Duration::from_millis(1000));
    let p0 = flows.iter().filter(|f| f.0 == 1).count();
    assert!(flows.len() > 500 && p0 == 0, "p0 no longer sampled: {p0} of {} samples", flows.len());
    let e = r.execute(&mut dp, "sflow header-bytes 9").unwrap_err();
    assert!(e.contains("sflow.header-bytes: 9 is not allowed"), "{e}");
    let e = r.execute(&mut dp, "sflow direction sideways").unwrap_err();
    assert!(e.contains("'sideways' is not rx, tx or both"), "{e}");
    dp.stop().unwrap();
}
