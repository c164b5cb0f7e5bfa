//! The configuration model: YAML round trips and errors that name the field.

use dataplane::config::{Config, ConfigError};

const LAB: &str = include_str!("../../../examples/lab.yaml");

#[test]
fn lab_round_trips_through_yaml() {
    let c = Config::load(LAB).unwrap();
    assert_eq!(c.interfaces.len(), 8);
    let again = Config::load(&c.to_yaml()).unwrap();
    assert_eq!(again, c);
}

#[test]
fn l3_sections_round_trip() {
    let yaml = "
interfaces:
  eth0:
    addresses: [100.64.0.1/31]
    mpls: true
    sub-interfaces:
      100: {encapsulation: {dot1q: 100}, addresses: [10.0.0.1/24]}
  eth1: {}
routes:
  - {prefix: 16.0.0.0/24, via: 100.64.0.0, interface: eth0, out-labels: [17]}
neighbors:
  - {interface: eth0, address: 100.64.0.0, mac: 00:1b:21:06:00:00}
mpls:
  local-labels:
    - {label: 16, via: 100.64.1.0, interface: eth1, out-labels: [17]}
    - {label: 17}
";
    let c = Config::load(yaml).unwrap();
    assert_eq!(Config::load(&c.to_yaml()).unwrap(), c);
    assert!(
        c.has_interface("eth0.100")
            && c.has_interface("eth1")
            && !c.has_interface("eth0.7")
            && !c.has_interface("eth9")
    );
}

fn err(yaml: &str) -> String {
    match Config::load(yaml) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("accepted: {yaml}"),
    }
}

/// Configurations each refused with an error that starts with the text beside it.
const FIELD_ERRORS: &[(&str, &str)] = &[
    (
        "interfaces: {p0: {mtu: 9000}}",
        "interfaces.p0.mtu: 9000 is not allowed; allowed: 68 to 2030 (buffers.data-size 2048 less 18; raise \
         buffers.data-size (up to 9216) for more)",
    ),
    (
        "{buffers: {data-size: 9216}, interfaces: {p0: {mtu: 9199}}}",
        "interfaces.p0.mtu: 9199 is not allowed; allowed: 68 to 9198 (buffers.data-size 9216 less 18)",
    ),
    ("buffers: {data-size: 1500}", "buffers.data-size: 1500 is not allowed; allowed: 2048 to 9216"),
    ("buffers: {data-size: 9217}", "buffers.data-size: 9217 is not allowed; allowed: 2048 to 9216"),
    (
        "{buffers: {data-size: 9216}, interfaces: {x: {driver: af-packet, host-interface: e1, \
         af-packet: {block-size: 8192}}}}",
        "interfaces.x.af-packet.block-size: 8192 is not allowed; allowed: a power of two from 16384 to 4194304 \
         (a block holds whole frames, up to buffers.data-size 9216)",
    ),
    (
        "interfaces: {g: {generator: {streams: [{frame-size: 2100}]}}}",
        "interfaces.g.generator.streams[0].frame-size: 2100 is not allowed; allowed: 64 to 2052 bytes including \
         the FCS",
    ),
    (
        "interfaces: {p0: {l2xc: nowhere}}",
        "interfaces.p0.l2xc: nowhere is not allowed; allowed: the name of another configured interface",
    ),
    ("interfaces: {p0: {l2xc: p0}}", "interfaces.p0.l2xc: p0"),
    ("workers: {count: 0}", "workers.count: 0 is not allowed; allowed: 1 to 64"),
    ("workers: {buffers: 10}", "workers.buffers: 10 is not allowed; allowed: 1024 to 1048576"),
    (
        "interfaces: {p0: {rx-placement: {worker: 3}}}",
        "interfaces.p0.rx-placement.worker: 3 is not allowed; allowed: 0 to 0",
    ),
    ("interfaces: {p0: {index: 0}}", "interfaces.p0.index: 0 is not allowed; allowed: 1 to 1023"),
    (
        "interfaces: {a: {index: 5}, b: {index: 5}}",
        "interfaces.b.index: 5 is not allowed; allowed: an index no other interface uses (a has it)",
    ),
    (
        "interfaces: {p0: {generator: {streams: [{frame-size: 63}]}}}",
        "interfaces.p0.generator.streams[0].frame-size: 63 is not allowed; allowed: 64 to 2052",
    ),
    (
        "interfaces: {p0: {generator: {streams: [{template: mpls}]}}}",
        "interfaces.p0.generator.streams[0].labels: [] is not allowed; allowed: 1 to 8 labels for template mpls",
    ),
    (
        "interfaces: {p0: {generator: {streams: [{vlan: 4095}]}}}",
        "interfaces.p0.generator.streams[0].vlan: 4095 is not allowed; allowed: 1 to 4094",
    ),
    (
        "interfaces: {p0: {generator: {streams: [{src-range: {count: 0}}]}}}",
        "interfaces.p0.generator.streams[0].src-range.count: 0",
    ),
    ("interfaces: {p0: {generator: {streams: [{rate-pps: 0}]}}}", "interfaces.p0.generator.streams[0].rate-pps: 0"),
    (
        "interfaces: {p0: {generator: {streams: [{template: mpls, labels: [1048570], label-range: {count: 7}}]}}}",
        "interfaces.p0.generator.streams[0].label-range.count: 7 is not allowed; allowed: 1 to 6 (labels 1048570 + count - 1 up to 1048575)",
    ),
    (
        "interfaces: {p0: {generator: {streams: [{template: mpls, labels: [16], label-range: {count: 0}}]}}}",
        "interfaces.p0.generator.streams[0].label-range.count: 0 is not allowed; allowed: 1 to 1048560",
    ),
    (
        "interfaces: {p0: {generator: {streams: [{label-range: {count: 4}}]}}}",
        "interfaces.p0.generator.streams[0].label-range: (given) is not allowed; allowed: a range only with template mpls and its labels",
    ),
    ("interfaces: {p0: {generator: {streams: [{count: 0}]}}}", "interfaces.p0.generator.streams[0].count: 0"),
    (
        "interfaces: {p0: {sub-interfaces: {1: {encapsulation: {dot1q: 5000}}}}}",
        "interfaces.p0.sub-interfaces.1.encapsulation.dot1q: 5000",
    ),
    (
        "interfaces: {p0: {}}\nroutes: [{prefix: 1.0.0.0/8, via: 1.1.1.1, interface: p0, out-labels: [3]}]",
        "routes[0].out-labels: 3 is not allowed; allowed: labels 16 to 1048575",
    ),
    (
        "interfaces: {p0: {addresses: [10.0.0.1/24]}}\nroutes: [{prefix: 1.0.0.0/8, via: 10.0.1.1}]",
        "routes[0].via: 10.0.1.1 is not allowed; allowed: an address inside the subnet of an interface in the default table, or name the interface in routes[0].interface",
    ),
    ("fib: {tbl8-groups: 0}", "fib.tbl8-groups: 0 is not allowed; allowed: 1 to 1048576"),
    (
        "interfaces: {p0: {}}\nmpls: {local-labels: [{label: 16, out-labels: [17]}]}",
        "mpls.local-labels[0].via: (missing) is not allowed; allowed: a next hop and an interface for a swap",
    ),
    (
        "interfaces: {p0: {}}\nmpls: {local-labels: [{label: 16, via: 1.1.1.1}]}",
        "mpls.local-labels[0].via: (given) is not allowed; allowed: nothing for a pop",
    ),
    (
        "interfaces: {p0: {}}\nmpls: {local-labels: [{label: 16}, {label: 16}]}",
        "mpls.local-labels[1].label: 16 is not allowed; allowed: a label no other local-label entry uses",
    ),
    (
        "interfaces: {p0: {}}\nneighbors: [{interface: p9, address: 1.1.1.1, mac: 00:00:00:00:00:01}]",
        "neighbors[0].interface: p9",
    ),
    (
        "sflow: {max-datagram-size: 200, agent-address: 127.0.0.1}\ninterfaces: {p0: {}}",
        "sflow.max-datagram-size: 200 is not allowed; allowed: 380 to 8192 (with header-bytes 128 the longest sample needs 380)",
    ),
    (
        "sflow: {max-datagram-size: 399, header-bytes: 256, agent-address: '2001:db8::1'}\ninterfaces: {p0: {}}",
        "sflow.max-datagram-size: 399 is not allowed; allowed: 520 to 8192",
    ),
    (
        "interfaces: {p0: {sub-interfaces: {1: {encapsulation: {dot1q: 5}, l2xc: p1, addresses: [10.0.0.1/24]}}}, p1: {}}",
        "interfaces.p0.sub-interfaces.1.addresses: 1 addresses is not allowed; allowed: none on an L2 cross-connected sub-interface",
    ),
    (
        "interfaces: {p0: {addresses: [10.0.0.1/24]}, p1: {sub-interfaces: {7: {encapsulation: {dot1q: 7}, addresses: [10.0.0.1/30]}}}}",
        "interfaces.p1.7.addresses: 10.0.0.1/30 is not allowed; allowed: an address configured once in the default table (p0 already has 10.0.0.1)",
    ),
    (
        "interfaces: {p0: {addresses: [10.0.0.1/24]}}\nroutes: [{prefix: 1.0.0.0/8, via: 10.0.0.2}, {prefix: 1.2.0.0/8, via: 10.0.0.3}]",
        "routes[1].prefix: 1.2.0.0/8 is not allowed; allowed: a prefix no other route in the default table has (routes[0] has it)",
    ),
    (
        "interfaces: {p0: {}}\nneighbors: [{interface: p0, address: 1.1.1.1, mac: 00:00:00:00:00:01}, {interface: p0, address: 1.1.1.1, mac: 00:00:00:00:00:02}]",
        "neighbors[1].address: 1.1.1.1 is not allowed; allowed: an address not already a neighbor on p0 (neighbors[0] is)",
    ),
    (
        "sflow: {}\ninterfaces: {p0: {l2xc: p1}, p1: {l2xc: p0}}",
        "sflow.agent-address: (none) is not allowed; allowed: this router's address in datagrams; required when no interface has an IPv4 or a global IPv6 address",
    ),
    ("interfaces: {p0: {driver: pcap}}", "interfaces.p0.pcap: (missing) is not allowed; allowed: a capture to read"),
    (
        "interfaces: {p0: {driver: pcap, pcap: {}}}",
        "interfaces.p0.pcap: {} is not allowed; allowed: read, write or both",
    ),
    (
        "vrfs: {blue: {table: 10}}\ninterfaces: {p0: {vrf: red}}",
        "interfaces.p0.vrf: red is not allowed; allowed: the name of a VRF of vrfs (blue)",
    ),
    (
        "interfaces: {p0: {sub-interfaces: {7: {encapsulation: {dot1q: 7}, vrf: red}}}}",
        "interfaces.p0.sub-interfaces.7.vrf: red is not allowed; allowed: the name of a VRF of vrfs (none: vrfs is empty)",
    ),
    (
        "vrfs: {blue: {table: 10}, red: {table: 10}}",
        "vrfs.red.table: 10 is not allowed; allowed: a table no other VRF has (VRF blue has it)",
    ),
    (
        "vrfs: {blue: {table: 254}}",
        "vrfs.blue.table: 254 is not allowed; allowed: 1 to 4294967295 but 253, 254 and 255 (the kernel's default, main and local tables)",
    ),
    (
        "vrfs: {default: {table: 10}}",
        "vrfs.default: name \"default\" is not allowed; allowed: 1 to 15 letters, digits, '-' or '_', not 'default' (the default table's name)",
    ),
    (
        "vrfs: {blue: {table: 10}}\ninterfaces: {p0: {vrf: blue, addresses: [10.0.0.1/24]}, p1: {vrf: blue, addresses: [10.0.0.1/30]}}",
        "interfaces.p1.addresses: 10.0.0.1/30 is not allowed; allowed: an address configured once in VRF blue (p0 already has 10.0.0.1)",
    ),
    (
        "vrfs: {blue: {table: 10}}\ninterfaces: {p0: {vrf: blue, addresses: [10.0.0.1/24]}, p1: {addresses: [10.0.1.1/24]}}\nroutes: [{prefix: 1.0.0.0/8, via: 10.0.0.2}]",
        "routes[0].via: 10.0.0.2 is not allowed; allowed: an address inside the subnet of an interface in the default table, or name the interface in routes[0].interface",
    ),
    (
        "vrfs: {blue: {table: 10}}\ninterfaces: {p0: {vrf: blue, addresses: [10.0.0.1/24]}, p1: {addresses: [10.0.1.1/24]}}\nroutes: [{prefix: 1.0.0.0/8, via: 10.0.1.2, interface: p1, vrf: blue}]",
        "routes[0].interface: p1 is not allowed; allowed: an interface in VRF blue (p1 is in the default table)",
    ),
    (
        "vrfs: {blue: {table: 10}}\ninterfaces: {p0: {vrf: blue, addresses: [10.0.0.1/24]}}\nroutes: [{prefix: 1.0.0.0/8, via: 10.0.0.2, vrf: blue}, {prefix: 1.0.0.0/8, via: 10.0.0.3, vrf: blue}]",
        "routes[1].prefix: 1.0.0.0/8 is not allowed; allowed: a prefix no other route in VRF blue has (routes[0] has it)",
    ),
    (
        "vrfs: {red: {table: 10}}\nroutes: [{prefix: 0.0.0.0/0, vrf: red, next-vrf: green}]",
        "routes[0].next-vrf: green is not allowed; allowed: the name of a VRF (default, red)",
    ),
    (
        "vrfs: {red: {table: 10}}\nroutes: [{prefix: 0.0.0.0/0, vrf: red, next-vrf: red}]",
        "routes[0].next-vrf: red is not allowed; allowed: another VRF than the route's own",
    ),
    (
        "interfaces: {p0: {addresses: [10.0.0.1/24]}}\nvrfs: {red: {table: 10}}\nroutes: [{prefix: 0.0.0.0/0, vrf: red, next-vrf: default, via: 10.0.0.2}]",
        "routes[0].next-vrf: default is not allowed; allowed: a lookup alone: no via, paths or out-labels beside it",
    ),
    (
        "vrfs: {red: {table: 10}}\nroutes: [{prefix: 0.0.0.0/0, vrf: red, next-vrf: default}, {prefix: 0.0.0.0/0, next-vrf: red}]",
        "routes[1].next-vrf: red is not allowed; allowed: a VRF where the route's packets meet no other next-vrf route: 0.0.0.0/0 would go default → red → default (routes[0] there); a packet takes one lookup after its first at most",
    ),
    (
        "vrfs: {a: {table: 10}, b: {table: 20}}\nroutes: [{prefix: 10.9.0.0/16, vrf: a, next-vrf: b}, {prefix: 10.9.1.0/24, vrf: b, next-vrf: default}, {prefix: 10.0.0.0/8, next-vrf: a}]",
        "routes[2].next-vrf: a is not allowed; allowed: a VRF where the route's packets meet no other next-vrf route: 10.9.0.0/16 would go default → a → b (routes[0] there); a packet takes one lookup after its first at most",
    ),
    (
        "interfaces: {p0: {pcap: {read: a.pcap}}}",
        "interfaces.p0.pcap: settings is not allowed; allowed: pcap settings only with driver: pcap",
    ),
    (
        "interfaces: {p0: {driver: pcap, pcap: {write: o.pcap, loop: true}}}",
        "interfaces.p0.pcap.loop: set is not allowed; allowed: only with pcap.read",
    ),
    (
        "interfaces: {p0: {driver: pcap, pcap: {read: a.pcap, rate-pps: 100000001}}}",
        "interfaces.p0.pcap.rate-pps: 100000001 is not allowed; allowed: 0 (as fast as possible) to 100000000",
    ),
    (
        "interfaces: {p0: {driver: pcap, pcap: {read: a.pcap}}, p1: {driver: pcap, pcap: {write: a.pcap}}}",
        "interfaces.p1.pcap.write: a.pcap is not allowed; allowed: a file no interface reads (p0 reads it)",
    ),
    (
        "interfaces: {p0: {driver: pcap, pcap: {write: o.pcap}}, p1: {driver: pcap, pcap: {write: o.pcap}}}",
        "interfaces.p1.pcap.write: o.pcap is not allowed; allowed: a file no other interface writes (p0 writes it)",
    ),
    (
        "interfaces: {p0: {driver: pcap, host-interface: eth0, pcap: {read: a.pcap}}}",
        "interfaces.p0.host-interface: eth0 is not allowed; allowed: only with driver: af-packet or af-xdp",
    ),
    (
        "interfaces: {x: {driver: af-xdp}}",
        "interfaces.x.host-interface: (missing) is not allowed; allowed: the Linux interface to use",
    ),
    (
        "interfaces: {x: {driver: af-packet, host-interface: e1, af-xdp: {}}}",
        "interfaces.x.af-xdp: settings is not allowed; allowed: af-xdp settings only with driver: af-xdp",
    ),
    (
        "interfaces: {x: {driver: af-xdp, host-interface: e1, af-xdp: {ring-size: 100}}}",
        "interfaces.x.af-xdp.ring-size: 100 is not allowed; allowed: a power of two from 64 to 16384",
    ),
    (
        "interfaces: {x: {driver: af-xdp, host-interface: e1, af-xdp: {queues: 0}}}",
        "interfaces.x.af-xdp.queues: 0 is not allowed; allowed: 1 to 64",
    ),
    (
        "api: {socket-mode: '0700'}",
        "api.socket-mode: 0700 is not allowed; allowed: an octal mode with owner read and write and no execute bit, 0600 to 0666",
    ),
    (
        "api: {socket-mode: '0440'}",
        "api.socket-mode: 0440 is not allowed; allowed: an octal mode with owner read and write and no execute bit, 0600 to 0666",
    ),
    (
        "api: {socket-mode: 'rw'}",
        "api.socket-mode: rw is not allowed; allowed: an octal mode with owner read and write and no execute bit, 0600 to 0666",
    ),
    ("api: {socket-group: ''}", "api.socket-group: \"\" is not allowed; allowed: a group name"),
    (
        "interfaces: {g: {rx-mode: interrupt}}",
        "interfaces.g.rx-mode: set is not allowed; allowed: only with driver: af-packet or af-xdp",
    ),
    (
        "interfaces: {x: {driver: af-packet, host-interface: e1, rx-mode: busy-poll}}",
        "interfaces.x.rx-mode: busy-poll is not allowed; allowed: polling, interrupt or adaptive (busy-poll only with driver: af-xdp)",
    ),
    (
        "interfaces: {x: {driver: af-xdp, host-interface: e1, af-xdp: {busy-poll: {budget: 0}}}}",
        "interfaces.x.af-xdp.busy-poll.budget: 0 is not allowed; allowed: 1 to 1024",
    ),
    (
        "interfaces: {x: {driver: af-xdp, host-interface: e1, af-xdp: {busy-poll: {defer-hard-irqs: 1001}}}}",
        "interfaces.x.af-xdp.busy-poll.defer-hard-irqs: 1001 is not allowed; allowed: 1 to 1000",
    ),
    (
        "interfaces: {x: {driver: af-xdp, host-interface: e1, af-xdp: {busy-poll: {gro-flush-timeout-us: 0}}}}",
        "interfaces.x.af-xdp.busy-poll.gro-flush-timeout-us: 0 is not allowed; allowed: 1 to 1000000",
    ),
    (
        "interfaces: {x: {driver: af-xdp, host-interface: e1, af-xdp: {queues: 2}, rx-placement: {queues: [0]}}}",
        "interfaces.x.rx-placement.queues: 1 worker(s) is not allowed; allowed: one worker per rx queue: 2",
    ),
    (
        "interfaces: {x: {driver: af-xdp, host-interface: e1, rx-placement: {queues: [1]}}}",
        "interfaces.x.rx-placement.queues[0]: 1 is not allowed; allowed: 0 to 0 (workers.count is 1)",
    ),
    (
        "workers: {count: 2}\ninterfaces: {x: {driver: af-xdp, host-interface: e1, rx-placement: {worker: 0, queues: [1]}}}",
        "interfaces.x.rx-placement.queues: set with worker is not allowed; allowed: either worker or queues",
    ),
];

#[test]
fn errors_name_the_field_the_value_and_what_is_allowed() {
    for (yaml, want) in FIELD_ERRORS {
        let got = err(yaml);
        assert!(got.starts_with(want), "for {yaml}\n got: {got}\nwant: {want}");
    }
}

#[test]
fn ipv6_errors_name_the_field_the_value_and_what_is_allowed() {
    let p0 = "interfaces: {p0: {addresses: ['2001:db8::1/64']}}\n";
    let cases = [
        (
            "interfaces: {p0: {addresses: ['ff02::1/64']}}".to_string(),
            "interfaces.p0.addresses: ff02::1/64 is not allowed; allowed: a unicast IPv6 address (not ::, ::1 or multicast ff00::/8)",
        ),
        (
            "interfaces: {p0: {addresses: ['2001:db8::1/64']}, p1: {addresses: ['2001:db8::1/48']}}".to_string(),
            "interfaces.p1.addresses: 2001:db8::1/48 is not allowed; allowed: an address configured once in the default table (p0 already has 2001:db8::1)",
        ),
        (
            format!("{p0}routes: [{{prefix: '2001:db8:1::/48', via: 100.64.0.0}}]"),
            "routes[0].via: 100.64.0.0 is not allowed; allowed: an IPv6 next hop, as the prefix is",
        ),
        (
            format!("{p0}routes: [{{prefix: 10.0.0.0/8, via: '2001:db8::2'}}]"),
            "routes[0].via: 2001:db8::2 is not allowed; allowed: an IPv4 next hop, as the prefix is",
        ),
        (
            format!("{p0}routes: [{{prefix: '2001:db8:1::/48', via: 'fe80::1'}}]"),
            "routes[0].interface: (missing) is not allowed; allowed: the interface a link-local next hop (fe80::1) is on",
        ),
        (
            format!("{p0}routes: [{{prefix: '2001:db8:1::/48', via: '2001:db9::1'}}]"),
            "routes[0].via: 2001:db9::1 is not allowed; allowed: an address inside the subnet of an interface in the default table",
        ),
        (
            format!(
                "{p0}routes: [{{prefix: '2001:db8:1::/48', via: '2001:db8::2'}}, {{prefix: '2001:db8:1:0:1::/48', via: '2001:db8::3'}}]"
            ),
            "routes[1].prefix: 2001:db8:1:0:1::/48 is not allowed; allowed: a prefix no other route in the default table has (routes[0] has it)",
        ),
        (
            format!(
                "{p0}mpls: {{local-labels: [{{label: 16, via: '2001:db8::2', interface: p0, out-labels: [17], payload: ip6}}]}}"
            ),
            "mpls.local-labels[0].payload: ip6 is not allowed; allowed: only for a pop",
        ),
        (
            "interfaces: {g: {generator: {streams: [{template: ipv6-udp, frame-size: 78, src-ip: 16.0.0.1}]}}}"
                .to_string(),
            "interfaces.g.generator.streams[0].src-ip: 16.0.0.1 is not allowed; allowed: an IPv6 address, as the stream carries IPv6",
        ),
        (
            "interfaces: {g: {generator: {streams: [{dst-ip: '2001:db8::1'}]}}}".to_string(),
            "interfaces.g.generator.streams[0].dst-ip: 2001:db8::1 is not allowed; allowed: an IPv4 address (IPv6 needs template ipv6-udp, or mpls with an IPv6 src-ip)",
        ),
        (
            "interfaces: {g: {generator: {streams: [{template: mpls, labels: [16], src-ip: '2001:db8::1', dst-ip: 48.0.0.1}]}}}".to_string(),
            "interfaces.g.generator.streams[0].frame-size: 64 is not allowed; allowed: 70 to",
        ),
        (
            "interfaces: {g: {generator: {streams: [{template: mpls, labels: [16], frame-size: 80, src-ip: '2001:db8::1', dst-ip: 48.0.0.1}]}}}".to_string(),
            "interfaces.g.generator.streams[0].dst-ip: 48.0.0.1 is not allowed; allowed: an IPv6 address, as the stream carries IPv6",
        ),
        (
            "interfaces: {g: {generator: {streams: [{dst-addresses: ['2001:db8::1']}]}}}".to_string(),
            "interfaces.g.generator.streams[0].dst-addresses: (given) is not allowed; allowed: a list only with template ipv6-udp",
        ),
        (
            "interfaces: {g: {generator: {streams: [{template: ipv6-udp}]}}}".to_string(),
            "interfaces.g.generator.streams[0].frame-size: 64 is not allowed; allowed: 66 to",
        ),
    ];
    for (yaml, want) in cases {
        let got = err(&yaml);
        assert!(got.starts_with(want), "for {yaml}\n got: {got}\nwant: {want}");
    }
    let e = Config::load("routes: [{prefix: '2001:db8::/129', via: '2001:db8::1'}]").unwrap_err().to_string();
    assert!(e.contains("not in 0..=128"), "{e}");
    let ok = format!(
        "{p0}routes: [{{prefix: '::/0', via: 'fe80::1', interface: p0}}]\nneighbors: [{{interface: p0, address: 'fe80::1', mac: 00:1b:21:06:00:00}}]\nmpls: {{local-labels: [{{label: 16, payload: ip6}}]}}"
    );
    let c = Config::load(&ok).unwrap();
    assert_eq!(Config::load(&c.to_yaml()).unwrap(), c, "IPv6 sections round-trip");
}

#[test]
fn parse_errors_say_what_is_wrong() {
    let e = Config::load("interfaces: {p0: {mtux: 1500}}").unwrap_err();
    assert!(matches!(e, ConfigError::Parse(_)));
    assert!(e.to_string().contains("mtux"), "{e}");
    let e = Config::load("interfaces: {p0: {mac: 00:11:22}}").unwrap_err().to_string();
    assert!(e.contains("not a MAC address"), "{e}");
    let e = Config::load("routes: [{prefix: 10.0.0.0/33, via: 1.1.1.1}]").unwrap_err().to_string();
    assert!(e.contains("not in 0..=32"), "{e}");
}

/// Interfaces and sub-interfaces share one index and name space: too many in all, or a
/// physical interface named like a sub-interface, is a named error, not a panic at start or
/// two interfaces with one name.
#[test]
fn interfaces_and_sub_interfaces_share_the_index_and_name_space() {
    let subs: String =
        (1..=1100).map(|k| format!("      {k}: {{encapsulation: {{dot1q: {}}}}}\n", k % 4094 + 1)).collect();
    let many = format!("interfaces:\n  p0:\n    sub-interfaces:\n{subs}");
    assert!(
        err(&many)
            .starts_with("interfaces: 1101 interfaces and sub-interfaces is not allowed; allowed: at most 1023 in all"),
        "{}",
        err(&many)
    );
    let clash = "interfaces:\n  p0: {sub-interfaces: {1: {encapsulation: {dot1q: 5}}}}\n  p0.1: {}\n";
    assert!(err(clash).starts_with("interfaces.p0.1: name 'p0.1' is not allowed"), "{}", err(clash));
    // Just under the limit: starts and gets distinct indices.
    let subs: String = (1..=1022).map(|k| format!("      {k}: {{encapsulation: {{dot1q: {k}}}}}\n")).collect();
    let full = Config::load(&format!("interfaces:\n  p0:\n    sub-interfaces:\n{subs}")).unwrap();
    let ifs = dataplane::interface::build::build_interfaces(&full.interfaces, full.workers.count, |_| 0);
    let mut idx: Vec<u16> = ifs.iter().map(|i| i.index).collect();
    idx.dedup();
    assert_eq!(idx.len(), 1023);
}

/// A route's next hop may sit on a sub-interface's subnet: the check that accepts it and the
/// builder that resolves it agree (the check once looked only at physical interfaces).
#[test]
fn a_route_via_a_sub_interface_subnet_is_accepted_and_resolved_there() {
    let yaml = "
interfaces:
  p0:
    sub-interfaces:
      100: {encapsulation: {dot1q: 100}, addresses: [10.100.0.1/24]}
routes:
  - {prefix: 70.0.0.0/8, via: 10.100.0.2}
";
    let c = Config::load(yaml).unwrap();
    let ifs = dataplane::interface::build::build_interfaces(&c.interfaces, c.workers.count, |_| 0);
    let sub = ifs.iter().find(|i| i.name == "p0.100").unwrap().index;
    assert_eq!(dataplane::l3::connected_interface(&ifs, 0, "10.100.0.2".parse().unwrap()), Some(sub));
    let e = err(
        "interfaces:\n  p0:\n    sub-interfaces:\n      100: {encapsulation: {dot1q: 100}, addresses: [10.100.0.1/24]}\nroutes:\n  - {prefix: 70.0.0.0/8, via: 10.101.0.2}\n",
    );
    assert!(e.starts_with("routes[0].via: 10.101.0.2 is not allowed"), "{e}");
}

#[test]
fn with_linux_cp_the_vrfs_and_an_interfaces_vrf_need_a_restart_and_routes_do_not() {
    let base = "linux-cp: {}\nvrfs: {red: {table: 10}}\ninterfaces: {p0: {vrf: red, addresses: [10.0.0.1/24]}, p1: {addresses: [10.1.0.1/24]}}\n";
    let load = |yaml: &str| Config::load(yaml).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let moved = base.replace("p1: {addresses", "p1: {vrf: red, addresses");
    let added = base.replace("{red: {table: 10}}", "{red: {table: 10}, blue: {table: 20}}");
    let routed = format!("{base}routes: [{{prefix: 172.16.0.0/16, via: 10.0.0.2, vrf: red}}]\n");
    let c = load(base);
    let restart = |new: &str| c.needs_restart(&load(new)).unwrap_or_default();
    assert!(restart(&moved).starts_with("interfaces.p1.vrf (while linux-cp is on"), "{}", restart(&moved));
    assert!(restart(&added).starts_with("vrfs (while linux-cp is on"), "{}", restart(&added));
    assert_eq!(c.needs_restart(&load(&routed)), None, "a route in a VRF changes live");
    // Without linux-cp, both change live.
    let off = |yaml: &str| load(&yaml.replace("linux-cp: {}\n", ""));
    assert_eq!(off(base).needs_restart(&off(&moved)), None);
    assert_eq!(off(base).needs_restart(&off(&added)), None);
    // The TAPs' Linux ifindexes are numbered per namespace: not sFlow's with VRFs.
    let linux = format!("{base}sflow: {{if-index: linux, collectors: [{{address: 127.0.0.1}}]}}\n");
    let e = Config::load(&linux).unwrap_err().to_string();
    assert!(e.starts_with("sflow.if-index: linux is not allowed; allowed: vecflow while there are VRFs"), "{e}");
    assert!(Config::load(&linux.replace("vrfs: {red: {table: 10}}\n", "").replace("vrf: red, ", "")).is_ok());
}
