//! AF_XDP settings, rx modes and queue placement: what the configuration accepts, and the
//! start-up checks that need no privilege (on `lo`, which every namespace has). Their errors
//! that name the field are in `config.rs` with the others.

use dataplane::config::{Config, PollMode};
use dataplane::control::engine::Dataplane;

#[test]
fn settings_round_trip_and_place_queues_on_workers() {
    let c = Config::load(
        "workers: {count: 3}
interfaces:
  x0:
    driver: af-xdp
    host-interface: eth1
    af-xdp: {mode: native, zero-copy: on, queues: 3, ring-size: 512}
    rx-mode: adaptive
    rx-placement: {queues: [2, 0, 1]}
  p0: {driver: af-packet, host-interface: eth2, af-packet: {rx-queues: 2}, rx-placement: {worker: 1}, rx-mode: interrupt}",
    )
    .unwrap();
    assert_eq!(Config::load(&c.to_yaml()).unwrap(), c);
    let x0 = &c.interfaces["x0"];
    assert_eq!((x0.rx_mode, x0.rx_queue_count()), (PollMode::Adaptive, 3));
    assert_eq!([0, 1, 2].map(|q| x0.queue_worker(q, 2, 3)), [2, 0, 1], "as listed");
    let p0 = &c.interfaces["p0"];
    assert_eq!([0, 1].map(|q| p0.queue_worker(q, 1, 3)), [1, 2], "round-robin from the first");
}

/// Starts a dataplane on `yaml` and returns its start-up error.
fn start_error(yaml: &str) -> String {
    match Dataplane::start(&Config::load(yaml).unwrap()) {
        Err(e) => e.to_string(),
        Ok(mut dp) => {
            dp.stop().unwrap();
            panic!("started: {yaml}")
        }
    }
}

#[test]
fn start_refuses_too_few_buffers_for_the_rings() {
    let e = start_error(
        "metrics: {enabled: false}
workers: {buffers: 8192}
interfaces: {x: {driver: af-xdp, host-interface: lo, af-xdp: {ring-size: 4096}}}",
    );
    assert!(
        e.starts_with("workers.buffers: 8192: a worker's AF_XDP sockets lend the kernel up to 16384 buffers")
            && e.contains("needs at least 20480"),
        "{e}"
    );
}

#[test]
fn start_refuses_an_mtu_larger_than_a_buffer_takes() {
    // lo's MTU is 65536: its frames would not fit, not even in the largest buffers.
    for (size, most) in [(2048, 2030), (9216, 9198)] {
        let e = start_error(&format!(
            "{{buffers: {{data-size: {size}}}, interfaces: {{x: {{driver: af-xdp, host-interface: lo}}}}}}"
        ));
        assert!(
            e.starts_with(&format!(
                "interfaces.x.host-interface: lo has MTU 65536; AF_XDP frames must fit a buffer (buffers.data-size \
                 {size}), so its MTU may be at most {most} (ip link set lo mtu {most}"
            )),
            "{e}"
        );
    }
}
