//! The running dataplane the `api` and `apply` targets work against, built once per process:
//! generator interfaces without streams (the workers idle), addresses, a VLAN sub-interface,
//! a cross-connect, routes (one with two weighted paths, one IPv6), a static neighbor, an MPLS
//! label and sFlow.

use dataplane::config::Config;
use dataplane::control::cli::Registry;
use dataplane::control::engine::Dataplane;

/// Its configuration.
pub const BASE: &str = "
workers: {count: 1, buffers: 2048}
metrics: {enabled: false}
interfaces:
  p0: {index: 1, addresses: [10.0.0.1/24, '2001:db8::1/64'], mpls: true, sflow: {enable: true}}
  p1: {index: 2, addresses: [10.0.1.1/24], sub-interfaces: {100: {encapsulation: {dot1q: 100}, addresses: [10.0.100.1/24]}}}
  p2: {index: 3, l2xc: p3}
  p3: {index: 4, l2xc: p2}
routes:
  - {prefix: 48.0.0.0/8, via: 10.0.1.2}
  - {prefix: 49.0.0.0/16, paths: [{via: 10.0.1.2, weight: 3}, {via: 10.0.0.2}]}
  - {prefix: '2001:db8:48::/48', via: '2001:db8::2'}
neighbors:
  - {interface: p1, address: 10.0.1.2, mac: '02:00:00:00:01:02'}
mpls:
  local-labels:
    - {label: 16, via: 10.0.1.2, interface: p1, out-labels: [17]}
sflow: {sampling-rate: 100, collectors: [{address: 127.0.0.1, port: 9}]}
";

/// A dataplane started on [`BASE`], the CLI registry, and the configuration.
pub fn start() -> (Dataplane, Registry, Config) {
    let config = Config::load(BASE).expect("the harness's configuration");
    let dp = Dataplane::start(&config).expect("a dataplane");
    (dp, Registry::with_builtins(), config)
}
