//! `vecflow bench`: cycles per packet of each forwarding path, one worker, 64-byte frames,
//! generator to sink in memory.
//!
//! Each run starts a dataplane, lets it warm up, then measures over a window: the worker's
//! wall-clock TSC ÷ packets generated (so everything counts: generator, graph, sink, loop),
//! plus each node's TSC ÷ the packets it processed. `--runs N` repeats and reports the median.

use anyhow::{Context, bail};
use dataplane::config::{
    AddrRange, Config, GeneratorConfig, InterfaceConfig, InterfaceSflow, IpPrefix, LocalLabel, RangeMode, Route,
    StreamConfig, Template, Workers,
};
use dataplane::engine::WorkerRuntime;
use dataplane::graph::{NodeId, NodeStats};
use dataplane::isa::Isa;
use dataplane::{Dataplane, tsc};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::net::Ipv4Addr;
use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;
use std::time::Instant;

/// Options of `vecflow bench`.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// A benchmark of one part instead of the forwarding paths.
    #[command(subcommand)]
    part: Option<Part>,
    /// Scenarios to run (repeatable); default: all.
    #[arg(long = "scenario", value_name = "NAME")]
    scenarios: Vec<String>,
    /// Runs per scenario; the median (by cycles/packet) is reported.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=99))]
    runs: u32,
    /// Measurement window per run, seconds.
    #[arg(long, default_value_t = 2.0)]
    seconds: f64,
    /// Warm-up before each window, seconds.
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    /// Forwarding scenarios send exactly this many packets and are measured from the worker's
    /// start to the last one, with no warm-up (instead of --seconds): the same work every
    /// time, so `valgrind --tool=callgrind` counts repeat.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    packets: Option<u64>,
    /// CPU to pin the worker to; default: the last CPU when there are several, else none.
    #[arg(long)]
    core: Option<u16>,
    /// Print only JSON on stdout.
    #[arg(long)]
    json: bool,
    /// sFlow sampling rates each forwarding scenario runs at (0 = sFlow off), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [0u32, 1_000_000, 10_000, 1_000, 100])]
    sflow_rates: Vec<u32>,
    /// Slots of the worker's sFlow sample ring in the forwarding scenarios; default: the
    /// configuration's default (`sflow.ring-depth`).
    #[arg(long)]
    ring_depth: Option<u32>,
    /// Nice value of the sFlow agent thread in the forwarding scenarios; default: the
    /// configuration's default (`sflow.agent-nice`).
    #[arg(long, allow_hyphen_values = true)]
    agent_nice: Option<i32>,
    /// SIMD variants the forwarding scenarios run in turn (`scalar`, `avx2`, `avx512`),
    /// comma-separated; each row after the first variant's reports its speedup over it.
    /// Default: the one `VECFLOW_ISA` names, else the best this CPU runs.
    #[arg(long, value_delimiter = ',')]
    isa: Vec<String>,
}

/// The parts measured on their own.
#[derive(clap::Subcommand)]
enum Part {
    /// The megaflow classifier alone (the seed's experiment): lookups per second by mode
    /// (ranked tuple space search, Cuckoo Distributor, exact-match cache) over subtables and flows.
    Classifier(crate::classifier_bench::Args),
}

/// A named scenario: a forwarding path and the configuration that exercises it, or a
/// measurement of the sFlow codec.
struct Scenario {
    name: &'static str,
    kind: Kind,
    /// The scenario measured in turn with this one, just before each of its runs, whose
    /// cycles/packet this one's are reported against (an IPv6 path's IPv4 counterpart).
    counterpart: Option<&'static str>,
}

enum Kind {
    /// Forwarding through the dataplane built from this configuration, at each sFlow rate.
    Forward(fn(Option<u16>) -> Config),
    /// The sFlow agent's throughput: `l2xc` with every packet sampled, samples counted as a
    /// collector socket receives them.
    Agent,
    /// sFlow samples encoded (`true`) or decoded (`false`) per second.
    Codec(bool),
    /// One flow sample's cost to the worker: reserve, copy 128 bytes, complete, publish.
    SampleCost,
}

const SCENARIOS: &[Scenario] = &[
    Scenario { name: "l2xc", kind: Kind::Forward(l2xc), counterpart: None },
    Scenario { name: "ip4-lab", kind: Kind::Forward(ip4_lab), counterpart: None },
    Scenario { name: "ip4-1m", kind: Kind::Forward(ip4_1m), counterpart: None },
    Scenario { name: "ip6-lab", kind: Kind::Forward(ip6_lab), counterpart: Some("ip4-lab") },
    Scenario { name: "ip6-bgp", kind: Kind::Forward(ip6_bgp), counterpart: Some("ip4-1m") },
    Scenario { name: "mpls-swap", kind: Kind::Forward(mpls_swap), counterpart: None },
    Scenario { name: "mpls-core", kind: Kind::Forward(mpls_core), counterpart: None },
    Scenario { name: "agent", kind: Kind::Agent, counterpart: None },
    Scenario { name: "sflow-encode", kind: Kind::Codec(true), counterpart: None },
    Scenario { name: "sflow-decode", kind: Kind::Codec(false), counterpart: None },
    Scenario { name: "sample-cost", kind: Kind::SampleCost, counterpart: None },
];

/// Two generator interfaces cross-connected to each other, both sending 64-byte IPv4/UDP as
/// fast as the worker can.
fn l2xc(core: Option<u16>) -> Config {
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

fn ip4_lab(core: Option<u16>) -> Config {
    let mut c = Config::load(IP4_LAB).expect("the ip4-lab scenario is valid");
    c.workers.cores = core.into_iter().collect();
    c
}

/// `ip4-lab` plus 1 000 000 random prefixes with a BGP-like length mix (60 % /24, 20 % /22–/23,
/// 19.9 % /16–/21, 0.1 % /8–/15) split over the two next hops, and a default route. Both ports
/// send to random destinations anywhere in 1.0.0.0–223.255.255.255 (seeded).
fn ip4_1m(core: Option<u16>) -> Config {
    let mut c = ip4_lab(core);
    let mut rng = 0x1d1d_5eed_u64;
    let mut next = || splitmix(&mut rng);
    let mut seen = std::collections::HashSet::new();
    let hops = [Ipv4Addr::new(100, 64, 0, 0), Ipv4Addr::new(100, 64, 1, 0)];
    c.routes.push(Route {
        prefix: "0.0.0.0/0".parse().expect("prefix"),
        via: hops[1].into(),
        interface: None,
        out_labels: vec![],
    });
    while seen.len() < 1_000_000 {
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
            let via = hops[seen.len() % 2].into();
            c.routes.push(Route {
                prefix: IpPrefix { addr: Ipv4Addr::from(prefix).into(), len },
                via,
                interface: None,
                out_labels: vec![],
            });
        }
    }
    for i in c.interfaces.values_mut() {
        for s in &mut i.generator.as_mut().expect("generator").streams {
            s.dst_ip = Some(Ipv4Addr::new(1, 0, 0, 0).into());
            s.dst_range = AddrRange { count: 0xde00_0000, mode: RangeMode::Random };
        }
    }
    c
}

/// splitmix64: the seeded generator of the synthetic routing tables.
fn splitmix(state: &mut u64) -> u64 {
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

/// Prefixes in the `ip6-bgp` table.
const IP6_BGP_PREFIXES: usize = 230_000;

/// The table of `ip6-bgp`, seeded: 230 000 prefixes in 2000::/4 with a full-table length mix —
/// half /48, a tenth /32, 0.1 % /128, the rest spread over /16–/64 (the lengths common in
/// the IPv6 Internet table) — split over the two next hops. As in the real table, most
/// prefixes longer than /32 sit inside one of 24 000 /32 allocations (80 %), the rest
/// anywhere.
fn ip6_bgp_table() -> Vec<(u128, u8)> {
    const SPREAD: [u8; 20] = [16, 19, 20, 22, 24, 28, 29, 30, 31, 33, 34, 36, 38, 40, 42, 44, 45, 46, 47, 64];
    let mut rng = 0x6b9d_5eed_u64;
    let mask = dataplane::fib::key_mask;
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
    c.fib.ip6_groups = 1 << 20;
    let hops: [std::net::IpAddr; 2] =
        ["2001:db8:100::2".parse().expect("hop"), "2001:db8:101::2".parse().expect("hop")];
    c.routes.push(Route { prefix: "::/0".parse().expect("prefix"), via: hops[1], interface: None, out_labels: vec![] });
    let mut rng = 0xd57_5eed_u64;
    let mut destinations = Vec::with_capacity(IP6_BGP_PREFIXES);
    for (k, (prefix, len)) in ip6_bgp_table().into_iter().enumerate() {
        let host =
            (u128::from(splitmix(&mut rng)) << 64 | u128::from(splitmix(&mut rng))) & !dataplane::fib::key_mask(len);
        destinations.push(std::net::Ipv6Addr::from(prefix | host));
        let addr = std::net::Ipv6Addr::from(prefix).into();
        c.routes.push(Route { prefix: IpPrefix { addr, len }, via: hops[k % 2], interface: None, out_labels: vec![] });
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
            })
        })
        .collect();
    c
}

/// What one measured window of a forwarding scenario gave.
#[derive(Debug, Clone, Serialize)]
struct Measured {
    name: &'static str,
    sflow_rate: u32,
    packets: u64,
    mpps: f64,
    /// The median over the runs (the row is that run's).
    cycles_per_packet: f64,
    /// The fastest run.
    cycles_per_packet_min: f64,
    /// The throughput sFlow costs: the median over the runs of 1 − (cycles/packet without
    /// sFlow ÷ with it), each run paired with the run without sFlow measured just before it;
    /// absent for the rows without sFlow (or when `--sflow-rates` has no 0).
    loss_paired: Option<f64>,
    /// For a scenario with a counterpart (an IPv6 path's IPv4 one): its cost against the
    /// counterpart's, measured in turn.
    counterpart: Option<Counterpart>,
    /// The SIMD variant its nodes ran.
    isa: &'static str,
    /// With several `--isa`: the median over the runs of the first variant's cycles/packet ÷
    /// this one's, each run paired with the first variant's run at the same sFlow rate.
    isa_speedup: Option<f64>,
    /// The FIBs' size at the end of the run: routes and tbl8 groups in use per family.
    fib: FibSize,
    vectors_per_call: f64,
    /// Packets that ended in `error-drop` ÷ packets generated.
    drop_fraction: f64,
    /// Samples copied into the rings in the window.
    samples_taken: u64,
    /// Samples encoded into datagrams in the window.
    samples_sent: u64,
    /// Samples lost to full rings in the window.
    samples_dropped: u64,
    /// The most samples the agent found waiting in the worker's ring, over the whole run.
    ring_high_water: u64,
    /// Slots of the worker's ring.
    ring_depth: u32,
    /// The longest the agent took to come back to the rings (beyond its sleeps), over the
    /// whole run, microseconds.
    agent_longest_pause_us: u64,
    /// The agent thread in the window: seconds on a CPU and seconds runnable but waiting for
    /// one (from /proc schedstat; 0 when unreadable).
    agent_cpu_s: f64,
    agent_wait_s: f64,
    /// Samples the agent sent per second of its CPU time in the window: what it could take
    /// with a whole CPU (the row's samples_sent ÷ seconds is what it got).
    agent_capacity_per_s: f64,
    nodes: Vec<NodeCost>,
}

/// A scenario against the one measured in turn with it (same sFlow rate, just before each
/// run).
#[derive(Debug, Clone, Serialize)]
struct Counterpart {
    /// The counterpart scenario.
    name: &'static str,
    /// Its median cycles/packet.
    cycles_per_packet: f64,
    /// Median over the runs of this scenario's cycles/packet ÷ the counterpart's.
    ratio: f64,
    /// Median over the runs of this scenario's lookup node's clocks/packet ÷ the
    /// counterpart's (ip6-lookup ÷ ip4-lookup).
    lookup_ratio: Option<f64>,
}

/// Routes and tbl8 groups of both FIBs, and the bytes each route costs (tbl24's 64 MiB of
/// address space and the groups in use, over the routes).
#[derive(Debug, Clone, Copy, Default, Serialize)]
struct FibSize {
    ip4_routes: usize,
    ip4_groups: u32,
    ip6_routes: usize,
    ip6_groups: u32,
    ip6_bytes_per_route: f64,
}

/// What the `agent` scenario gave.
#[derive(Debug, Clone, Serialize)]
struct AgentMeasured {
    name: &'static str,
    /// Samples received by the collector socket per second.
    samples_per_s: f64,
    samples_taken: u64,
    samples_sent: u64,
    samples_dropped: u64,
}

/// What one measured window of a codec scenario gave.
#[derive(Debug, Clone, Serialize)]
struct CodecMeasured {
    name: &'static str,
    samples_per_s: f64,
    cycles_per_sample: f64,
}

/// One row of the report.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
enum Row {
    Forward(Box<Measured>),
    Agent(AgentMeasured),
    Codec(CodecMeasured),
}

impl Row {
    /// What the median is taken over (lower is better).
    fn cost(&self) -> f64 {
        match self {
            Row::Forward(m) => m.cycles_per_packet,
            Row::Agent(a) => -a.samples_per_s,
            Row::Codec(c) => c.cycles_per_sample,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
struct NodeCost {
    name: &'static str,
    clocks_per_packet: f64,
    vectors_per_call: f64,
    /// The share of its packets the node handled inside another node's fused pass, whose
    /// clocks they are in (e.g. `ip4-input` inside `ethernet-input`).
    fused_fraction: f64,
    /// Packets the node processed over the whole run (warm-up included), read after the
    /// worker stopped, when every packet has left the graph: they balance exactly along a path.
    run_vectors: u64,
}

#[derive(Serialize)]
struct Report {
    tsc_hz: u64,
    runs: u32,
    seconds: f64,
    scenarios: Vec<Row>,
}

fn worker0(dp: &Dataplane) -> WorkerRuntime {
    dp.runtime().into_iter().next().expect("one worker")
}

fn node(w: &WorkerRuntime, id: NodeId) -> NodeStats {
    w.nodes.iter().find(|(n, _)| *n == id).map(|(_, s)| *s).unwrap_or_default()
}

/// A UDP socket on 127.0.0.1 playing the collector: counts datagrams and the samples in them.
struct Collector {
    port: u16,
    samples: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Collector {
    fn start() -> anyhow::Result<Self> {
        let socket = UdpSocket::bind("127.0.0.1:0").context("binding the bench collector")?;
        socket.set_read_timeout(Some(Duration::from_millis(50)))?;
        let port = socket.local_addr()?.port();
        let (samples, stop) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
        let (s, st) = (samples.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = [0u8; 9000];
            while !st.load(Relaxed) {
                // An IPv4-agent datagram carries its sample count at byte 24.
                if let Ok(n) = socket.recv(&mut buf)
                    && n >= 28
                {
                    s.fetch_add(u64::from(u32::from_be_bytes([buf[24], buf[25], buf[26], buf[27]])), Relaxed);
                }
            }
        });
        Ok(Collector { port, samples, stop, thread })
    }

    fn received(&self) -> u64 {
        self.samples.load(Relaxed)
    }

    fn finish(self) {
        self.stop.store(true, Relaxed);
        let _ = self.thread.join();
    }
}

/// The samplers' seed in every scenario: runs choose the same packets.
const SEED: u64 = 38;

/// `config` with sFlow at 1-in-`rate` on every generator interface, exporting to `port`, with
/// sample rings of `ring_depth` slots and the agent at `nice` (default: the configuration's)
/// and the samplers seeded with [`SEED`].
fn with_sflow(mut config: Config, rate: u32, port: u16, ring_depth: Option<u32>, nice: Option<i32>) -> Config {
    let mut sf = serde_json::json!({"sampling-rate": rate, "agent-address": "127.0.0.1", "seed": SEED,
        "collectors": [{"address": "127.0.0.1", "port": port}]});
    if let Some(depth) = ring_depth {
        sf["ring-depth"] = depth.into();
    }
    if let Some(nice) = nice {
        sf["agent-nice"] = nice.into();
    }
    config.sflow = Some(serde_json::from_value(sf).expect("sflow section"));
    for i in config.interfaces.values_mut().filter(|i| i.generator.is_some()) {
        i.sflow = Some(InterfaceSflow { enable: true, sampling_rate: None, direction: None, drop_monitoring: false });
    }
    config
}

/// sFlow totals over every data source: (taken, sent, dropped).
fn sflow_totals(dp: &Dataplane) -> (u64, u64, u64) {
    dp.sflow().map_or((0, 0, 0), |(_, _, rows)| {
        rows.iter().fold((0, 0, 0), |a, r| (a.0 + r.sampler.taken, a.1 + r.samples_sent, a.2 + r.sampler.ring_full))
    })
}

fn measure(s: &Scenario, rate: u32, args: &Args, core: Option<u16>, hz: u64) -> anyhow::Result<Row> {
    match s.kind {
        Kind::Forward(build) => {
            let collector = (rate > 0).then(Collector::start).transpose()?;
            let config = match &collector {
                Some(c) => with_sflow(build(core), rate, c.port, args.ring_depth, args.agent_nice),
                None => build(core),
            };
            let m = measure_forward(s.name, rate, config, args, hz);
            if let Some(c) = collector {
                c.finish();
            }
            Ok(Row::Forward(Box::new(m?)))
        }
        Kind::Agent => {
            let collector = Collector::start()?;
            let mut dp = Dataplane::start(&with_sflow(l2xc(core), 1, collector.port, Some(1 << 16), None))?;
            std::thread::sleep(Duration::from_secs_f64(args.warmup));
            let (a, ra, t0) = (sflow_totals(&dp), collector.received(), Instant::now());
            std::thread::sleep(Duration::from_secs_f64(args.seconds));
            let (b, rb, secs) = (sflow_totals(&dp), collector.received(), t0.elapsed().as_secs_f64());
            dp.stop()?;
            collector.finish();
            Ok(Row::Agent(AgentMeasured {
                name: s.name,
                samples_per_s: (rb - ra) as f64 / secs,
                samples_taken: b.0 - a.0,
                samples_sent: b.1 - a.1,
                samples_dropped: b.2 - a.2,
            }))
        }
        Kind::SampleCost => {
            let window = Duration::from_secs_f64(args.seconds);
            let (rate, cycles) = on_core(core, move || crate::sample_bench::cost(window, hz))??;
            Ok(Row::Codec(CodecMeasured { name: s.name, samples_per_s: rate, cycles_per_sample: cycles }))
        }
        Kind::Codec(encode) => {
            let window = Duration::from_secs_f64(args.seconds);
            let rate = on_core(core, move || {
                if encode { crate::codec_bench::encode_rate(window) } else { crate::codec_bench::decode_rate(window) }
            })?;
            Ok(Row::Codec(CodecMeasured { name: s.name, samples_per_s: rate, cycles_per_sample: hz as f64 / rate }))
        }
    }
}

/// Runs `f` on a thread of its own pinned to `core` (the caller's CPU affinity, which the
/// configuration checks read, stays as it is).
pub(crate) fn on_core<T: Send + 'static>(
    core: Option<u16>,
    f: impl FnOnce() -> T + Send + 'static,
) -> anyhow::Result<T> {
    std::thread::spawn(move || {
        if let Some(c) = core {
            dataplane::worker::pin_current_thread(c)?;
        }
        Ok(f())
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the measuring thread panicked"))?
}

/// `config` with its generator streams sending `packets` in all, then stopping (a stream
/// whose share would be 0 is left out).
fn with_count(mut config: Config, packets: u64) -> Config {
    let generators = || config.interfaces.values().filter_map(|i| i.generator.as_ref());
    let n = generators().map(|g| g.streams.len() as u64).sum::<u64>().max(1);
    let mut k = 0;
    for g in config.interfaces.values_mut().filter_map(|i| i.generator.as_mut()) {
        for s in &mut g.streams {
            s.count = Some(packets / n + u64::from(k < packets % n));
            k += 1;
        }
        g.streams.retain(|s| s.count != Some(0));
    }
    config
}

/// Mpps of the forwarding path `config` builds (sFlow as configured), measured over `seconds`
/// after `warmup` seconds, and the clocks per packet of its node `node` (0 if it saw none):
/// what `vecflow bench classifier` reports as `graph_mpps` and `graph_classify_cycles`.
pub(crate) fn forward_mpps(
    name: &'static str,
    config: Config,
    node: &str,
    seconds: f64,
    warmup: f64,
    hz: u64,
) -> anyhow::Result<(f64, f64)> {
    let args = Args {
        part: None,
        scenarios: vec![],
        runs: 1,
        seconds,
        warmup,
        packets: None,
        core: None,
        json: false,
        sflow_rates: vec![0],
        ring_depth: None,
        agent_nice: None,
        isa: vec![],
    };
    let m = measure_forward(name, 0, config, &args, hz)?;
    let clocks = m.nodes.iter().find(|c| c.name == node).map_or(0.0, |c| c.clocks_per_packet);
    Ok((m.mpps, clocks))
}

fn measure_forward(name: &'static str, rate: u32, config: Config, args: &Args, hz: u64) -> anyhow::Result<Measured> {
    let config = match args.packets {
        Some(n) => with_count(config, n),
        None => config,
    };
    let mut dp = Dataplane::start(&config).with_context(|| format!("scenario {name}"))?;
    // Warm up from the worker's first loop: before it, its loop clock reads 0 and a window
    // starting there would span the TSC since boot.
    let started = Instant::now();
    while worker0(&dp).looping.last_tsc == 0 {
        if started.elapsed() > Duration::from_secs(10) {
            bail!("scenario {name}: the worker did not start within 10 s");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut agent_time = None;
    let (a, sa, b, sb) = match args.packets {
        None => {
            std::thread::sleep(Duration::from_secs_f64(args.warmup));
            let (a, sa, ta) = (worker0(&dp), sflow_totals(&dp), agent_schedstat());
            std::thread::sleep(Duration::from_secs_f64(args.seconds));
            let (b, sb, tb) = (worker0(&dp), sflow_totals(&dp), agent_schedstat());
            agent_time = tb.zip(ta).map(|(b, a)| (b.0.saturating_sub(a.0), b.1.saturating_sub(a.1)));
            (a, sa, b, Some(sb))
        }
        Some(n) => {
            // From the worker's start (nothing counted yet) to the last packet.
            let mut a = worker0(&dp);
            a.nodes.iter_mut().for_each(|(_, s)| *s = NodeStats::default());
            a.looping.last_tsc = a.looping.start_tsc;
            while node(&worker0(&dp), NodeId::GeneratorInput).vectors < n {
                if started.elapsed() > Duration::from_secs(3600) {
                    bail!("scenario {name}: {n} packets not sent within an hour");
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            // The samples' totals once the dataplane has stopped (below): its agent sends all
            // it holds when it stops, so a run of N packets reports every sample it sent.
            (a, (0, 0, 0), worker0(&dp), None)
        }
    };
    let (ip4, ip6) = (&dp.fib().ip4, &dp.fib().ip6);
    let fib = FibSize {
        ip4_routes: ip4.len(),
        ip4_groups: ip4.tbl8_in_use(),
        ip6_routes: ip6.len(),
        ip6_groups: ip6.tbl8_in_use(),
        ip6_bytes_per_route: ((64usize << 20) + ip6.tbl8_in_use() as usize * 1024) as f64 / ip6.len().max(1) as f64,
    };
    let (ring_high_water, agent_longest_pause_us) =
        dp.sflow().map_or((0, 0), |(_, totals, _)| (totals.ring_high_water, totals.longest_pause_us));
    let ring_depth = config.sflow.as_ref().map_or(0, |sf| sf.ring_depth);
    dp.stop()?;
    let sb = sb.unwrap_or_else(|| sflow_totals(&dp));
    let end = worker0(&dp);
    let input = |w: &WorkerRuntime| node(w, NodeId::GeneratorInput);
    let packets = input(&b).vectors - input(&a).vectors;
    if packets == 0 {
        bail!("scenario {name}: no packets in the window");
    }
    let wall = dataplane::tsc::ticks(a.looping.last_tsc, b.looping.last_tsc);
    let nodes = NodeId::ALL
        .iter()
        .map(|&id| {
            let (x, y) = (node(&a, id), node(&b, id));
            let (calls, vecs, clocks) = (y.calls - x.calls, y.vectors - x.vectors, y.clocks - x.clocks);
            NodeCost {
                name: id.name(),
                clocks_per_packet: clocks as f64 / vecs.max(1) as f64,
                vectors_per_call: vecs as f64 / calls.max(1) as f64,
                fused_fraction: (y.fused - x.fused) as f64 / vecs.max(1) as f64,
                run_vectors: node(&end, id).vectors,
            }
        })
        .filter(|n| n.vectors_per_call > 0.0)
        .collect::<Vec<_>>();
    let input_calls = input(&b).calls - input(&a).calls;
    let dropped = node(&b, NodeId::ErrorDrop).vectors - node(&a, NodeId::ErrorDrop).vectors;
    Ok(Measured {
        name,
        sflow_rate: rate,
        packets,
        mpps: packets as f64 / (wall as f64 / hz as f64) / 1e6,
        cycles_per_packet: wall as f64 / packets as f64,
        cycles_per_packet_min: wall as f64 / packets as f64,
        loss_paired: None,
        counterpart: None,
        isa: dataplane::isa::chosen().name(),
        isa_speedup: None,
        fib,
        vectors_per_call: packets as f64 / input_calls.max(1) as f64,
        drop_fraction: dropped as f64 / packets as f64,
        samples_taken: sb.0 - sa.0,
        samples_sent: sb.1 - sa.1,
        samples_dropped: sb.2 - sa.2,
        ring_high_water,
        ring_depth,
        agent_longest_pause_us,
        agent_cpu_s: agent_time.map_or(0.0, |t| t.0 as f64 / 1e9),
        agent_wait_s: agent_time.map_or(0.0, |t| t.1 as f64 / 1e9),
        agent_capacity_per_s: agent_time.map_or(0.0, |t| (sb.1 - sa.1) as f64 / (t.0.max(1) as f64 / 1e9)),
        nodes,
    })
}

/// The sFlow agent thread's (`vecflow-sflow`, of this process) nanoseconds on a CPU and
/// runnable but waiting for one, from /proc/self/task/*/schedstat.
fn agent_schedstat() -> Option<(u64, u64)> {
    std::fs::read_dir("/proc/self/task").ok()?.flatten().find_map(|t| {
        let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
        if comm.trim_end() != "vecflow-sflow" {
            return None;
        }
        let stat = std::fs::read_to_string(t.path().join("schedstat")).ok()?;
        let mut f = stat.split_whitespace().map(|x| x.parse::<u64>().ok());
        Some((f.next()??, f.next()??))
    })
}

/// Runs the benchmark.
pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(Part::Classifier(a)) = args.part {
        return crate::classifier_bench::run(a);
    }
    let chosen: Vec<&Scenario> = if args.scenarios.is_empty() {
        SCENARIOS.iter().collect()
    } else {
        args.scenarios
            .iter()
            .map(|n| {
                SCENARIOS.iter().find(|s| s.name == n).with_context(|| {
                    format!(
                        "--scenario {n}: unknown; known: {}",
                        SCENARIOS.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
                    )
                })
            })
            .collect::<anyhow::Result<_>>()?
    };
    if !(0.1..=600.0).contains(&args.seconds) || !(0.0..=60.0).contains(&args.warmup) {
        bail!("--seconds must be 0.1 to 600 and --warmup 0 to 60");
    }
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as u16;
    let core = args.core.or((ncpu > 1).then(|| ncpu - 1));
    let hz = tsc::hz();
    let isas = if args.isa.is_empty() {
        vec![Isa::from_env().map_err(anyhow::Error::msg)?]
    } else {
        args.isa
            .iter()
            .map(|name| Isa::parse(name).map_err(|e| anyhow::anyhow!("--isa: {e}")))
            .collect::<anyhow::Result<_>>()?
    };
    // The configurations of a forwarding scenario: every variant at every sFlow rate.
    let jobs: Vec<(&Scenario, Vec<(Isa, u32)>)> = chosen
        .into_iter()
        .map(|s| match s.kind {
            Kind::Forward(_) => (s, isas.iter().flat_map(|&i| args.sflow_rates.iter().map(move |&r| (i, r))).collect()),
            _ => (s, vec![(isas[0], 0)]),
        })
        .collect();
    let total: usize = jobs.iter().map(|(_, rates)| rates.len()).sum();
    let bar = ProgressBar::new(total as u64 * u64::from(args.runs));
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("template"));
    let mut rows = Vec::new();
    for (s, rates) in jobs {
        let counterpart = s.counterpart.and_then(|c| SCENARIOS.iter().find(|x| x.name == c));
        // The configurations of a scenario take turns (off, r1, r2, off, r1, r2, …), so a
        // machine that speeds up or slows down during the runs biases none of them; so do a
        // scenario and its counterpart (the counterpart just before).
        let mut runs: Vec<Vec<Row>> = vec![Vec::new(); rates.len()];
        let mut theirs: Vec<Vec<Row>> = vec![Vec::new(); rates.len()];
        for r in 0..args.runs {
            for (k, &(isa, rate)) in rates.iter().enumerate() {
                dataplane::isa::choose(isa);
                if let Some(c) = counterpart {
                    bar.set_message(format!("{} (paired with {}) sflow {rate} run {}", c.name, s.name, r + 1));
                    theirs[k].push(measure(c, rate, &args, core, hz)?);
                }
                bar.set_message(format!("{} sflow {rate} run {}", s.name, r + 1));
                let row = measure(s, rate, &args, core, hz)?;
                if let Row::Forward(m) = &row
                    && rate > 0
                {
                    bar.suspend(|| eprintln!("{}", run_line(m, r + 1, args.seconds)));
                }
                runs[k].push(row);
                bar.inc(1);
            }
        }
        let costs = |k: usize| runs[k].iter().map(Row::cost).collect::<Vec<f64>>();
        // The configurations come in blocks of one variant, `block` long, the first variant's
        // first.
        let block = rates.len().div_ceil(isas.len());
        let off: Vec<Option<Vec<f64>>> = (0..rates.len())
            .map(|k| {
                let start = k / block * block;
                rates[start..].iter().take(block).position(|&(_, r)| r == 0).map(|j| costs(start + j))
            })
            .collect();
        let first: Vec<Option<Vec<f64>>> = (0..rates.len()).map(|k| (k >= block).then(|| costs(k % block))).collect();
        for (k, (runs, theirs)) in runs.into_iter().zip(theirs).enumerate() {
            let paired = off[k]
                .as_ref()
                .filter(|_| rates[k].1 != 0)
                .map(|off| median(off.iter().zip(&runs).map(|(without, with)| 1.0 - without / with.cost()).collect()));
            let speedup =
                first[k].as_ref().map(|base| median(base.iter().zip(&runs).map(|(b, this)| b / this.cost()).collect()));
            let against = counterpart.map(|c| against(c.name, &runs, theirs));
            let mut row = summarise(runs, paired, against);
            if let Row::Forward(m) = &mut row {
                m.isa_speedup = speedup;
            }
            rows.push(row);
        }
    }
    bar.finish_and_clear();
    let report = Report { tsc_hz: hz, runs: args.runs, seconds: args.seconds, scenarios: rows };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_table(&report, core);
    }
    Ok(())
}

/// One sampled run: its samples, how full the ring got and what the agent had to spare.
fn run_line(m: &Measured, run: u32, seconds: f64) -> String {
    let got = m.samples_sent as f64 / seconds;
    let spare = if m.agent_cpu_s > 0.0 {
        format!(
            "; agent {:.0} k samples/s on {:.0} % of a CPU (waited {:.0} ms for one): could take {:.0} k/s, {:.1}× what it got",
            got / 1e3,
            100.0 * m.agent_cpu_s / seconds,
            m.agent_wait_s * 1e3,
            m.agent_capacity_per_s / 1e3,
            m.agent_capacity_per_s / got.max(1.0)
        )
    } else {
        String::new()
    };
    format!(
        "{} sflow {} run {run}: samples taken {} sent {} dropped {}; ring high water {} of {}, longest agent pause {:.1} ms{spare}",
        m.name,
        m.sflow_rate,
        m.samples_taken,
        m.samples_sent,
        m.samples_dropped,
        m.ring_high_water,
        m.ring_depth,
        m.agent_longest_pause_us as f64 / 1e3
    )
}

/// The median of `v` (the upper one of an even count).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The row of the median run of one configuration, with the fastest run's cycles/packet,
/// the paired loss against the runs without sFlow and the cost against a counterpart.
fn summarise(mut runs: Vec<Row>, loss_paired: Option<f64>, counterpart: Option<Counterpart>) -> Row {
    runs.sort_by(|a, b| a.cost().total_cmp(&b.cost()));
    let fastest = runs[0].cost();
    let mut row = runs.swap_remove(runs.len() / 2);
    if let Row::Forward(m) = &mut row {
        m.cycles_per_packet_min = fastest;
        m.loss_paired = loss_paired;
        m.counterpart = counterpart;
    }
    row
}

/// `runs` against `theirs` (the counterpart `name`'s runs, each measured just before the run
/// of the same position): medians of the per-run ratios of cycles/packet and of the lookup
/// nodes' clocks/packet.
fn against(name: &'static str, runs: &[Row], theirs: Vec<Row>) -> Counterpart {
    let lookup = |r: &Row| match r {
        Row::Forward(m) => {
            m.nodes.iter().find(|n| n.name == "ip4-lookup" || n.name == "ip6-lookup").map(|n| n.clocks_per_packet)
        }
        _ => None,
    };
    let lookups: Option<Vec<f64>> = runs.iter().zip(&theirs).map(|(a, b)| Some(lookup(a)? / lookup(b)?)).collect();
    Counterpart {
        name,
        cycles_per_packet: median(theirs.iter().map(Row::cost).collect()),
        ratio: median(runs.iter().zip(&theirs).map(|(a, b)| a.cost() / b.cost()).collect()),
        lookup_ratio: lookups.map(median),
    }
}

fn print_table(r: &Report, core: Option<u16>) {
    let pin = core.map_or("unpinned".to_string(), |c| format!("worker on CPU {c}"));
    println!(
        "vecflow bench: TSC {:.3} GHz, {pin}, {} s window, median and minimum of {} run(s), sFlow rates and SIMD variants taking turns",
        r.tsc_hz as f64 / 1e9,
        r.seconds,
        r.runs
    );
    println!(
        "{:<12} {:>10} {:>8} {:>14} {:>8} {:>13} {:>11} {:>12}",
        "scenario", "sflow", "Mpps", "cycles/packet", "min", "vectors/call", "dropped", "paired loss"
    );
    for row in &r.scenarios {
        match row {
            Row::Forward(s) => {
                let (name, rate, mpps, cpp, vpc) =
                    (s.name, s.sflow_rate, s.mpps, s.cycles_per_packet, s.vectors_per_call);
                let drops = s.drop_fraction * 100.0;
                let sampled = if rate == 0 {
                    String::new()
                } else {
                    format!(
                        "   samples taken {} sent {} dropped {}",
                        s.samples_taken, s.samples_sent, s.samples_dropped
                    )
                };
                let min = s.cycles_per_packet_min;
                let loss = s.loss_paired.map_or(String::new(), |l| format!("{:.2} %", l * 100.0));
                println!(
                    "{name:<12} {rate:>10} {mpps:>8.2} {cpp:>14.2} {min:>8.2} {vpc:>13.1} {drops:>9.3} % {loss:>12}{sampled}"
                );
                let speedup = s.isa_speedup.map_or(String::new(), |x| format!(", {x:.2}× the first variant"));
                println!("  SIMD variant {}{speedup}", s.isa);
                if let Some(c) = &s.counterpart {
                    let lookup = c.lookup_ratio.map_or(String::new(), |r| format!(", lookup node {r:.2}×"));
                    println!(
                        "  paired with {} ({:.2} cycles/packet): {:.2}× its cycles/packet{lookup}",
                        c.name, c.cycles_per_packet, c.ratio
                    );
                }
                if s.fib.ip6_routes > 1000 {
                    println!(
                        "  IPv6 FIB: {} routes, {} tbl8 groups, {:.0} bytes per route",
                        s.fib.ip6_routes, s.fib.ip6_groups, s.fib.ip6_bytes_per_route
                    );
                }
                for n in &s.nodes {
                    let (node, c, v) = (n.name, n.clocks_per_packet, n.vectors_per_call);
                    let fused = match n.fused_fraction {
                        0.0 => String::new(),
                        f => format!("   {:.0} % in a fused pass (its clocks are the previous node's)", f * 100.0),
                    };
                    println!("  {node:<22} {c:>8.2} clocks/packet {v:>8.1} vectors/call{fused}");
                }
            }
            Row::Agent(a) => {
                println!(
                    "{:<12} {:>8.2} M samples/s received by the collector (taken {}, sent {}, ring drops {})",
                    a.name,
                    a.samples_per_s / 1e6,
                    a.samples_taken,
                    a.samples_sent,
                    a.samples_dropped
                );
            }
            Row::Codec(c) => {
                let (name, rate, cps) = (c.name, c.samples_per_s / 1e6, c.cycles_per_sample);
                let what = if name == "sample-cost" {
                    "reserve + copy 128 bytes + complete + publish, per sample"
                } else {
                    "flow samples, 128-byte headers"
                };
                println!("{name:<12} {rate:>8.2} M samples/s {cps:>8.1} cycles/sample ({what})");
            }
        }
    }
}
