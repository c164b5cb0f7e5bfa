//! `vecflow bench`: cycles per packet of each forwarding path, one worker, 64-byte frames,
//! generator to sink in memory.
//!
//! Each run starts a dataplane, lets it warm up, then measures over a window: the worker's
//! wall-clock TSC ÷ packets generated (so everything counts: generator, graph, sink, loop),
//! plus each node's TSC ÷ the packets it processed. `--runs N` repeats and reports the median.

use anyhow::{Context, bail};
use dataplane::config::{
    AddrRange, Config, GeneratorConfig, InterfaceConfig, Ipv4Prefix, RangeMode, Route, StreamConfig, Template, Workers,
};
use dataplane::engine::WorkerRuntime;
use dataplane::graph::{NodeId, NodeStats};
use dataplane::{Dataplane, tsc};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::net::Ipv4Addr;
use std::time::Duration;

/// Options of `vecflow bench`.
#[derive(clap::Args)]
pub struct Args {
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
    /// CPU to pin the worker to; default: the last CPU when there are several, else none.
    #[arg(long)]
    core: Option<u16>,
    /// Print only JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// A named scenario: a forwarding path and the configuration that exercises it, or a
/// measurement of the sFlow codec.
struct Scenario {
    name: &'static str,
    kind: Kind,
}

enum Kind {
    /// Forwarding through the dataplane built from this configuration.
    Forward(fn(Option<u16>) -> Config),
    /// sFlow samples encoded (`true`) or decoded (`false`) per second.
    Codec(bool),
}

const SCENARIOS: &[Scenario] = &[
    Scenario { name: "l2xc", kind: Kind::Forward(l2xc) },
    Scenario { name: "ip4-lab", kind: Kind::Forward(ip4_lab) },
    Scenario { name: "ip4-1m", kind: Kind::Forward(ip4_1m) },
    Scenario { name: "mpls-swap", kind: Kind::Forward(mpls_swap) },
    Scenario { name: "sflow-encode", kind: Kind::Codec(true) },
    Scenario { name: "sflow-decode", kind: Kind::Codec(false) },
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
    let mut next = || {
        rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut seen = std::collections::HashSet::new();
    let hops = [Ipv4Addr::new(100, 64, 0, 0), Ipv4Addr::new(100, 64, 1, 0)];
    c.routes.push(Route {
        prefix: "0.0.0.0/0".parse().expect("prefix"),
        via: hops[1],
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
            let via = hops[seen.len() % 2];
            c.routes.push(Route {
                prefix: Ipv4Prefix { addr: prefix.into(), len },
                via,
                interface: None,
                out_labels: vec![],
            });
        }
    }
    for i in c.interfaces.values_mut() {
        for s in &mut i.generator.as_mut().expect("generator").streams {
            s.dst_ip = Ipv4Addr::new(1, 0, 0, 0);
            s.dst_range = AddrRange { count: 0xde00_0000, mode: RangeMode::Random };
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

/// What one measured window of a forwarding scenario gave.
#[derive(Debug, Clone, Serialize)]
struct Measured {
    name: &'static str,
    sflow_rate: u32,
    packets: u64,
    mpps: f64,
    cycles_per_packet: f64,
    vectors_per_call: f64,
    /// Packets that ended in `error-drop` ÷ packets generated.
    drop_fraction: f64,
    nodes: Vec<NodeCost>,
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
    Forward(Measured),
    Codec(CodecMeasured),
}

impl Row {
    /// What the median is taken over (lower is better).
    fn cost(&self) -> f64 {
        match self {
            Row::Forward(m) => m.cycles_per_packet,
            Row::Codec(c) => c.cycles_per_sample,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
struct NodeCost {
    name: &'static str,
    clocks_per_packet: f64,
    vectors_per_call: f64,
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

fn measure(s: &Scenario, args: &Args, core: Option<u16>, hz: u64) -> anyhow::Result<Row> {
    match s.kind {
        Kind::Forward(build) => Ok(Row::Forward(measure_forward(s.name, build(core), args, hz)?)),
        Kind::Codec(encode) => {
            if let Some(c) = core {
                dataplane::worker::pin_current_thread(c)?;
            }
            let window = Duration::from_secs_f64(args.seconds);
            let rate =
                if encode { crate::codec_bench::encode_rate(window) } else { crate::codec_bench::decode_rate(window) };
            Ok(Row::Codec(CodecMeasured { name: s.name, samples_per_s: rate, cycles_per_sample: hz as f64 / rate }))
        }
    }
}

fn measure_forward(name: &'static str, config: Config, args: &Args, hz: u64) -> anyhow::Result<Measured> {
    let mut dp = Dataplane::start(&config).with_context(|| format!("scenario {name}"))?;
    std::thread::sleep(Duration::from_secs_f64(args.warmup));
    let a = worker0(&dp);
    std::thread::sleep(Duration::from_secs_f64(args.seconds));
    let b = worker0(&dp);
    dp.stop()?;
    let input = |w: &WorkerRuntime| node(w, NodeId::GeneratorInput);
    let packets = input(&b).vectors - input(&a).vectors;
    if packets == 0 {
        bail!("scenario {name}: no packets in the window");
    }
    let wall = b.looping.last_tsc - a.looping.last_tsc;
    let nodes = NodeId::ALL
        .iter()
        .map(|&id| {
            let (x, y) = (node(&a, id), node(&b, id));
            let (calls, vecs, clocks) = (y.calls - x.calls, y.vectors - x.vectors, y.clocks - x.clocks);
            NodeCost {
                name: id.name(),
                clocks_per_packet: clocks as f64 / vecs.max(1) as f64,
                vectors_per_call: vecs as f64 / calls.max(1) as f64,
            }
        })
        .filter(|n| n.vectors_per_call > 0.0)
        .collect::<Vec<_>>();
    let input_calls = input(&b).calls - input(&a).calls;
    let dropped = node(&b, NodeId::ErrorDrop).vectors - node(&a, NodeId::ErrorDrop).vectors;
    Ok(Measured {
        name,
        sflow_rate: 0,
        packets,
        mpps: packets as f64 / (wall as f64 / hz as f64) / 1e6,
        cycles_per_packet: wall as f64 / packets as f64,
        vectors_per_call: packets as f64 / input_calls.max(1) as f64,
        drop_fraction: dropped as f64 / packets as f64,
        nodes,
    })
}

/// Runs the benchmark.
pub fn run(args: Args) -> anyhow::Result<()> {
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
    let bar = ProgressBar::new(chosen.len() as u64 * u64::from(args.runs));
    bar.set_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}").expect("template"));
    let mut rows = Vec::new();
    for s in chosen {
        let mut runs = Vec::new();
        for r in 0..args.runs {
            bar.set_message(format!("{} run {}", s.name, r + 1));
            runs.push(measure(s, &args, core, hz)?);
            bar.inc(1);
        }
        runs.sort_by(|a, b| a.cost().total_cmp(&b.cost()));
        rows.push(runs.swap_remove(runs.len() / 2));
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

fn print_table(r: &Report, core: Option<u16>) {
    let pin = core.map_or("unpinned".to_string(), |c| format!("worker on CPU {c}"));
    println!(
        "vecflow bench: TSC {:.3} GHz, {pin}, {} s window, median of {} run(s)",
        r.tsc_hz as f64 / 1e9,
        r.seconds,
        r.runs
    );
    println!(
        "{:<12} {:>10} {:>8} {:>14} {:>13} {:>11}",
        "scenario", "sflow", "Mpps", "cycles/packet", "vectors/call", "dropped"
    );
    for row in &r.scenarios {
        match row {
            Row::Forward(s) => {
                let (name, rate, mpps, cpp, vpc) =
                    (s.name, s.sflow_rate, s.mpps, s.cycles_per_packet, s.vectors_per_call);
                let drops = s.drop_fraction * 100.0;
                println!("{name:<12} {rate:>10} {mpps:>8.2} {cpp:>14.2} {vpc:>13.1} {drops:>9.3} %");
                for n in &s.nodes {
                    let (node, c, v) = (n.name, n.clocks_per_packet, n.vectors_per_call);
                    println!("  {node:<22} {c:>8.2} clocks/packet {v:>8.1} vectors/call");
                }
            }
            Row::Codec(c) => {
                let (name, rate, cps) = (c.name, c.samples_per_s / 1e6, c.cycles_per_sample);
                println!(
                    "{name:<12} {rate:>8.2} M samples/s {cps:>8.1} cycles/sample (flow samples, 128-byte headers)"
                );
            }
        }
    }
}
