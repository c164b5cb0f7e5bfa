//! The scenarios of `vecflow bench` and the configurations of its forwarding paths: lab
//! topologies from the seed's testbed and synthetic routing tables.

use dataplane::config::{
    AddrRange, Config, GeneratorConfig, InterfaceConfig, IpPrefix, LocalLabel, RangeMode, Route, StreamConfig,
    Template, Workers,
};
use std::net::Ipv4Addr;

/// A named scenario: a forwarding path and the configuration that exercises it, or a
/// measurement of the sFlow codec.
pub(super) struct Scenario {
    /// Its name, as `--scenario` takes it.
    pub(super) name: &'static str,
    /// What it measures.
    pub(super) kind: Kind,
    /// The scenario measured in turn with this one, just before each of its runs, whose
    /// cycles/packet this one's are reported against (an IPv6 path's IPv4 counterpart).
    pub(super) counterpart: Option<&'static str>,
}

/// What a scenario measures.
pub(super) enum Kind {
    /// Forwarding through the dataplane built from this configuration, at each sFlow rate.
    Forward(fn(Option<u16>) -> Config),
    /// The sFlow agent's throughput: `l2xc` with every packet sampled, samples counted as a
    /// collector socket receives them.
    Agent,
    /// sFlow samples encoded (`true`) or decoded (`false`) per second.
    Codec(bool),
    /// One flow sample's cost to the worker: reserve, copy 128 bytes, complete, publish.
    SampleCost,
    /// Route changes per second, from a batch handed to the dataplane to workers forwarding
    /// on it, while a forwarding pair on other routes runs.
    Churn,
    /// What VRFs cost in resident memory: a thousand of them made live, empty, then given
    /// routes.
    VrfMemory,
}

/// Every scenario; without `--scenario`, `vecflow bench` runs them all in this order.
pub(super) const SCENARIOS: &[Scenario] = &[
    Scenario { name: "l2xc", kind: Kind::Forward(l2xc), counterpart: None },
    Scenario { name: "ip4-lab", kind: Kind::Forward(ip4_lab), counterpart: None },
    Scenario { name: "ip4-lab-lcp", kind: Kind::Forward(ip4_lab_lcp), counterpart: Some("ip4-lab") },
    Scenario { name: "ip4-1m", kind: Kind::Forward(ip4_1m), counterpart: None },
    Scenario { name: "ip4-ecmp2", kind: Kind::Forward(ip4_ecmp2), counterpart: Some("ip4-lab") },
    Scenario { name: "ip4-ecmp8", kind: Kind::Forward(ip4_ecmp8), counterpart: Some("ip4-lab") },
    Scenario { name: "ip4-ecmp64", kind: Kind::Forward(ip4_ecmp64), counterpart: Some("ip4-lab") },
    Scenario { name: "ip4-connected", kind: Kind::Forward(ip4_connected), counterpart: Some("ip4-lab") },
    Scenario { name: "ip4-vrf-one", kind: Kind::Forward(super::vrf::ip4_vrf_one), counterpart: None },
    Scenario { name: "ip4-vrf", kind: Kind::Forward(super::vrf::ip4_vrf), counterpart: Some("ip4-vrf-one") },
    Scenario { name: "ip6-lab", kind: Kind::Forward(ip6_lab), counterpart: Some("ip4-lab") },
    Scenario { name: "ip6-bgp", kind: Kind::Forward(ip6_bgp), counterpart: Some("ip4-1m") },
    Scenario { name: "ip6-connected", kind: Kind::Forward(ip6_connected), counterpart: Some("ip6-lab") },
    Scenario { name: "fib-churn", kind: Kind::Churn, counterpart: None },
    Scenario { name: "vrf-memory", kind: Kind::VrfMemory, counterpart: None },
    Scenario { name: "mpls-swap", kind: Kind::Forward(mpls_swap), counterpart: None },
    Scenario { name: "mpls-core", kind: Kind::Forward(mpls_core), counterpart: None },
    Scenario { name: "agent", kind: Kind::Agent, counterpart: None },
    Scenario { name: "sflow-encode", kind: Kind::Codec(true), counterpart: None },
    Scenario { name: "sflow-decode", kind: Kind::Codec(false), counterpart: None },
    Scenario { name: "sample-cost", kind: Kind::SampleCost, counterpart: None },
];

/// Two generator interfaces cross-connected to each other, both sending 64-byte IPv4/UDP as
/// fast as the worker can.
pub(super) fn l2xc(core: Option<u16>) -> Config {
    let mut c = Config {
        workers: Workers { count: 1, cores: core.into_iter().collect(), ..Workers::default() },
        ..Config::default()
    };
    for (name, peer) in [("gen0", "gen1"), ("gen1", "gen0")] {
        let generator = Some(GeneratorConfig { streams: vec![StreamConfig::new(Template::Ipv4Udp)] });
        c.interfaces
            .insert(name.into(), InterfaceConfig { l2xc: Some(peer.into()), generator, ..InterfaceConfig::default() });
    }
    c
}

/// The seed's first routed pair on one worker: port0 and port1 with /31s toward their T-Rex
/// ports and static neighbors; each sends 64-byte UDP from 16.0.0.0/24 to 48.0.0.0/24 (and
/// back) as fast as the worker can, so every packet is routed once.
const IP4_LAB: &str = "
interfaces:
  port0:
    mac: 9c:69:b4:61:a1:dc
    addresses: [100.64.0.1/31]
    generator: {streams: [{src-mac: 00:1b:21:06:00:00, src-ip: 16.0.0.1, dst-ip: 48.0.0.1, src-range: {count: 254}, dst-range: {count: 254}}]}
  port1:
    mac: 9c:69:b4:61:a1:dd
    addresses: [100.64.1.1/31]
    generator: {streams: [{src-mac: 00:1b:21:06:00:01, src-ip: 48.0.0.1, dst-ip: 16.0.0.1, src-range: {count: 254}, dst-range: {count: 254}}]}
routes:
  - {prefix: 16.0.0.0/24, via: 100.64.0.0}
  - {prefix: 48.0.0.0/24, via: 100.64.1.0}
neighbors:
  - {interface: port0, address: 100.64.0.0, mac: 00:1b:21:06:00:00}
  - {interface: port1, address: 100.64.1.0, mac: 00:1b:21:06:00:01}
";

pub(super) fn ip4_lab(core: Option<u16>) -> Config {
    let mut c = Config::load(IP4_LAB).expect("the ip4-lab scenario is valid");
    c.workers.cores = core.into_iter().collect();
    c
}

/// `ip4-lab` with the Linux control plane on (a TAP per port in namespace `vecflow-bench`,
/// made when missing and kept, as linux-cp keeps its namespace) and nothing punted: what
/// linux-cp costs the forwarding path. Needs root.
pub(super) fn ip4_lab_lcp(core: Option<u16>) -> Config {
    let mut c = ip4_lab(core);
    c.linux_cp = Some(dataplane::lcp::LinuxCpConfig { netns: "vecflow-bench".into(), ..Default::default() });
    c
}

/// True when scenario `s` needs root (its configuration turns linux-cp on).
pub(super) fn needs_root(s: &Scenario) -> bool {
    matches!(s.kind, Kind::Forward(config) if config(None).linux_cp.is_some())
}

/// Four ports with /24s, and `paths` equal paths for 48.0.0.0/24 and for 16.0.0.0/24, dealt
/// in turn over the four ports (each path a static neighbor). port0 and port1 send 64-byte UDP
/// from 16.0.0.0/24 to 48.0.0.0/24 and back, sources over 254 addresses and destinations over
/// 253 (64 262 flows), as fast as the worker can.
fn ip4_ecmp(core: Option<u16>, paths: usize) -> Config {
    let mut yaml = String::from("interfaces:\n");
    for (k, (src, dst)) in [("16.0.0.1", "48.0.0.1"), ("48.0.0.1", "16.0.0.1"), ("", ""), ("", "")].iter().enumerate() {
        yaml += &format!("  port{k}:\n    mac: 9c:69:b4:61:a1:{:02x}\n    addresses: [100.64.{k}.1/24]\n", 0xdc + k);
        if !src.is_empty() {
            yaml += &format!(
                "    generator: {{streams: [{{src-mac: 00:1b:21:06:00:0{k}, src-ip: {src}, dst-ip: {dst}, \
                 src-range: {{count: 254}}, dst-range: {{count: 253}}}}]}}\n"
            );
        }
    }
    let hop = |p: usize| (p % 4, 10 + p / 4);
    yaml += "routes:\n";
    for prefix in ["48.0.0.0/24", "16.0.0.0/24"] {
        let list: Vec<String> = (0..paths).map(|p| format!("{{via: 100.64.{}.{}}}", hop(p).0, hop(p).1)).collect();
        yaml += &format!("  - {{prefix: {prefix}, paths: [{}]}}\n", list.join(", "));
    }
    yaml += "neighbors:\n";
    for p in 0..paths {
        let (port, host) = hop(p);
        yaml += &format!(
            "  - {{interface: port{port}, address: 100.64.{port}.{host}, mac: 00:1b:21:07:{port:02x}:{host:02x}}}\n"
        );
    }
    let mut c = Config::load(&yaml).expect("the ip4-ecmp scenarios are valid");
    c.workers.cores = core.into_iter().collect();
    c
}

fn ip4_ecmp2(core: Option<u16>) -> Config {
    ip4_ecmp(core, 2)
}

fn ip4_ecmp8(core: Option<u16>) -> Config {
    ip4_ecmp(core, 8)
}

fn ip4_ecmp64(core: Option<u16>) -> Config {
    ip4_ecmp(core, 64)
}

/// `ip4-lab` with its destinations on the ports' own subnets: port0 on 16.0.0.0/23, port1
/// on 48.0.0.0/23, each of the 254 hosts a neighbor (static here, so the run needs no ARP; a
/// learned one gets the same host route), so every packet goes to a connected host.
fn ip4_connected(core: Option<u16>) -> Config {
    let mut c = ip4_lab(core);
    c.routes.clear();
    c.neighbors.clear();
    for (port, net, mac) in [("port0", 16u8, "00:1b:21:06:00:00"), ("port1", 48, "00:1b:21:06:00:01")] {
        let i = c.interfaces.get_mut(port).expect("lab port");
        i.addresses = vec![format!("{net}.0.1.254/23").parse().expect("address")];
        for host in 1..=254u8 {
            let address = std::net::IpAddr::V4(Ipv4Addr::new(net, 0, 0, host));
            c.neighbors.push(neighbor(port, address, mac));
        }
    }
    c
}

/// A static neighbor.
fn neighbor(interface: &str, address: std::net::IpAddr, mac: &str) -> dataplane::config::Neighbor {
    dataplane::config::Neighbor {
        interface: interface.into(),
        address,
        mac: dataplane::config::Mac(mac.parse().expect("mac")),
    }
}

/// `ip4-lab` plus 1 000 000 random prefixes with a BGP-like length mix (60 % /24, 20 % /22–/23,
/// 19.9 % /16–/21, 0.1 % /8–/15) split over the two next hops, and a default route. Both ports
/// send to random destinations anywhere in 1.0.0.0–223.255.255.255 (seeded).
fn ip4_1m(core: Option<u16>) -> Config {
    let mut c = ip4_lab(core);
    let hops = [Ipv4Addr::new(100, 64, 0, 0), Ipv4Addr::new(100, 64, 1, 0)];
    c.routes.push(Route::via("0.0.0.0/0".parse().expect("prefix"), hops[1].into()));
    for (k, (prefix, len)) in ip4_table().into_iter().enumerate() {
        c.routes.push(Route::via(IpPrefix { addr: Ipv4Addr::from(prefix).into(), len }, hops[(k + 1) % 2].into()));
    }
    for i in c.interfaces.values_mut() {
        for s in &mut i.generator.as_mut().expect("generator").streams {
            s.dst_ip = Some(Ipv4Addr::new(1, 0, 0, 0).into());
            s.dst_range = AddrRange { count: 0xde00_0000, mode: RangeMode::Random };
        }
    }
    c
}

/// The 1 000 000 prefixes of `ip4-1m`, seeded, as (network, length): 60 % /24, 20 % /22–/23,
/// 19.9 % /16–/21, 0.1 % /8–/15, anywhere in 1.0.0.0–223.255.255.255.
pub(crate) fn ip4_table() -> Vec<(u32, u8)> {
    let mut rng = 0x1d1d_5eed_u64;
    let mut next = || splitmix(&mut rng);
    let mut seen = std::collections::HashSet::new();
    let mut table = Vec::with_capacity(1_000_000);
    while table.len() < 1_000_000 {
        let r = next();
        let len = match r % 1000 {
            0 => 8 + (r >> 10) % 8,
            1..=199 => 16 + (r >> 10) % 6,
            200..=399 => 22 + (r >> 10) % 2,
            _ => 24,
        } as u8;
        let addr = 0x0100_0000 + (r >> 32) as u32 % 0xde00_0000;
        let prefix = addr & (u32::MAX << (32 - len));
        if seen.insert((prefix, len)) {
            table.push((prefix, len));
        }
    }
    table
}

/// splitmix64: the seeded generator of the synthetic routing tables.
pub(super) fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `ip4-lab` in IPv6: port0 and port1 on /64s toward their T-Rex ports with static
/// neighbors; each sends 66-byte UDP (the smallest IPv6/UDP frame) from 2001:db8:16::/48 to
/// 2001:db8:48::/48 (and back) as fast as the worker can, so every packet is routed once.
const IP6_LAB: &str = "
interfaces:
  port0:
    mac: 9c:69:b4:61:a1:dc
    addresses: ['2001:db8:100::1/64']
    generator: {streams: [{template: ipv6-udp, frame-size: 66, src-mac: 00:1b:21:06:00:00, src-ip: '2001:db8:16::1', dst-ip: '2001:db8:48::1', src-range: {count: 254}, dst-range: {count: 254}}]}
  port1:
    mac: 9c:69:b4:61:a1:dd
    addresses: ['2001:db8:101::1/64']
    generator: {streams: [{template: ipv6-udp, frame-size: 66, src-mac: 00:1b:21:06:00:01, src-ip: '2001:db8:48::1', dst-ip: '2001:db8:16::1', src-range: {count: 254}, dst-range: {count: 254}}]}
routes:
  - {prefix: '2001:db8:16::/48', via: '2001:db8:100::2'}
  - {prefix: '2001:db8:48::/48', via: '2001:db8:101::2'}
neighbors:
  - {interface: port0, address: '2001:db8:100::2', mac: 00:1b:21:06:00:00}
  - {interface: port1, address: '2001:db8:101::2', mac: 00:1b:21:06:00:01}
";

fn ip6_lab(core: Option<u16>) -> Config {
    let mut c = Config::load(IP6_LAB).expect("the ip6-lab scenario is valid");
    c.workers.cores = core.into_iter().collect();
    c
}

/// `ip6-lab` with its destinations on the ports' own subnets (2001:db8:16::/64 on port0,
/// 2001:db8:48::/64 on port1), each of the 254 hosts a neighbor, as `ip4-connected`.
fn ip6_connected(core: Option<u16>) -> Config {
    let mut c = ip6_lab(core);
    c.routes.clear();
    c.neighbors.clear();
    for (port, net, mac) in [("port0", 0x16u16, "00:1b:21:06:00:00"), ("port1", 0x48, "00:1b:21:06:00:01")] {
        let i = c.interfaces.get_mut(port).expect("lab port");
        i.addresses = vec![format!("2001:db8:{net:x}::ffff/64").parse().expect("address")];
        for host in 1..=254u16 {
            let address = std::net::IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, net, 0, 0, 0, 0, host));
            c.neighbors.push(neighbor(port, address, mac));
        }
    }
    c
}

/// Prefixes in the `ip6-bgp` table.
const IP6_BGP_PREFIXES: usize = 230_000;

/// The table of `ip6-bgp`, seeded: 230 000 prefixes in 2000::/4 with a full-table length mix —
/// half /48, a tenth /32, 0.1 % /128, the rest spread over /16–/64 (the lengths common in
/// the IPv6 Internet table) — split over the two next hops. As in the real table, most
/// prefixes longer than /32 sit inside one of 24 000 /32 allocations (80 %), the rest
/// anywhere.
pub(crate) fn ip6_bgp_table() -> Vec<(u128, u8)> {
    const SPREAD: [u8; 20] = [16, 19, 20, 22, 24, 28, 29, 30, 31, 33, 34, 36, 38, 40, 42, 44, 45, 46, 47, 64];
    let mut rng = 0x6b9d_5eed_u64;
    let mask = dataplane::net::key_mask;
    // An address in 2000::/4.
    let random = |rng: &mut u64| {
        (0x2u128 << 124) | ((u128::from(splitmix(rng)) << 64 | u128::from(splitmix(rng))) & (u128::MAX >> 4))
    };
    let allocations: Vec<u128> = (0..24_000).map(|_| random(&mut rng) & mask(32)).collect();
    let mut seen = std::collections::HashSet::new();
    let mut table = Vec::with_capacity(IP6_BGP_PREFIXES);
    while table.len() < IP6_BGP_PREFIXES {
        let (r, host) = (splitmix(&mut rng), random(&mut rng));
        let len = match r % 1000 {
            0 => 128,
            1..=100 => 32,
            101..=600 => 48,
            _ => SPREAD[(r >> 10) as usize % SPREAD.len()],
        };
        let inside = len > 32 && (r >> 20) % 10 < 8;
        let addr = if inside { allocations[(r >> 32) as usize % allocations.len()] | host & !mask(32) } else { host };
        let prefix = addr & mask(len);
        if seen.insert((prefix, len)) {
            table.push((prefix, len));
        }
    }
    table
}

/// `ip6-lab` plus the 230 000 prefixes of [`ip6_bgp_table`] and a default route. Both ports
/// send to one address in each prefix (its host bits random), in random order (seeded).
fn ip6_bgp(core: Option<u16>) -> Config {
    let mut c = ip6_lab(core);
    let hops: [std::net::IpAddr; 2] =
        ["2001:db8:100::2".parse().expect("hop"), "2001:db8:101::2".parse().expect("hop")];
    c.routes.push(Route::via("::/0".parse().expect("prefix"), hops[1]));
    let mut rng = 0xd57_5eed_u64;
    let mut destinations = Vec::with_capacity(IP6_BGP_PREFIXES);
    for (k, (prefix, len)) in ip6_bgp_table().into_iter().enumerate() {
        let host =
            (u128::from(splitmix(&mut rng)) << 64 | u128::from(splitmix(&mut rng))) & !dataplane::net::key_mask(len);
        destinations.push(std::net::Ipv6Addr::from(prefix | host));
        let addr = std::net::Ipv6Addr::from(prefix).into();
        c.routes.push(Route::via(IpPrefix { addr, len }, hops[k % 2]));
    }
    for i in c.interfaces.values_mut() {
        for s in &mut i.generator.as_mut().expect("generator").streams {
            s.dst_addresses = destinations.clone();
            s.dst_range = AddrRange { count: 1, mode: RangeMode::Random };
        }
    }
    c
}

/// The seed's label-switching pair on one worker: label 16 in on port0 is swapped to 17 out of
/// port1 and back; each port sends 64-byte MPLS frames (one label over IPv4/UDP) as fast as
/// the worker can.
const MPLS_SWAP: &str = "
interfaces:
  port0:
    mac: 9c:69:b4:61:a1:dc
    addresses: [100.64.0.1/31]
    mpls: true
    generator: {streams: [{template: mpls, labels: [16], src-mac: 00:1b:21:06:00:00, src-ip: 16.0.0.1, dst-ip: 48.0.0.1, src-range: {count: 254}}]}
  port1:
    mac: 9c:69:b4:61:a1:dd
    addresses: [100.64.1.1/31]
    mpls: true
    generator: {streams: [{template: mpls, labels: [17], src-mac: 00:1b:21:06:00:01, src-ip: 48.0.0.1, dst-ip: 16.0.0.1, src-range: {count: 254}}]}
neighbors:
  - {interface: port0, address: 100.64.0.0, mac: 00:1b:21:06:00:00}
  - {interface: port1, address: 100.64.1.0, mac: 00:1b:21:06:00:01}
mpls:
  local-labels:
    - {label: 16, via: 100.64.1.0, interface: port1, out-labels: [17]}
    - {label: 17, via: 100.64.0.0, interface: port0, out-labels: [16]}
";

fn mpls_swap(core: Option<u16>) -> Config {
    let mut c = Config::load(MPLS_SWAP).expect("the mpls-swap scenario is valid");
    c.workers.cores = core.into_iter().collect();
    c
}

/// Label-switched paths per direction in `mpls-core`.
const MPLS_CORE_LSPS: u32 = 64;

/// `mpls-swap` as a core router sees it: each port sends over [`MPLS_CORE_LSPS`] paths at once
/// (top labels 1000.. from port0, 2000.. from port1, drawn at random per packet, seeded), each
/// label swapped for its own out-label toward the other port.
fn mpls_core(core: Option<u16>) -> Config {
    let mut c = mpls_swap(core);
    for (port, first) in [("port0", 1000), ("port1", 2000)] {
        let generator = c.interfaces.get_mut(port).and_then(|i| i.generator.as_mut()).expect("generator");
        for s in &mut generator.streams {
            s.labels = vec![first];
            s.label_range = Some(AddrRange { count: MPLS_CORE_LSPS, mode: RangeMode::Random });
        }
    }
    let hops = [("port1", Ipv4Addr::new(100, 64, 1, 0)), ("port0", Ipv4Addr::new(100, 64, 0, 0))];
    c.mpls.local_labels = [1000, 2000]
        .into_iter()
        .zip(hops)
        .flat_map(|(first, (port, via))| {
            (0..MPLS_CORE_LSPS).map(move |k| LocalLabel {
                label: first + k,
                via: Some(via.into()),
                interface: Some(port.to_string()),
                out_labels: vec![first + 10_000 + k],
                payload: Default::default(),
                vrf: None,
            })
        })
        .collect();
    c
}
