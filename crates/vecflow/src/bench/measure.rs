//! One measured run of a scenario: a dataplane started from its configuration, its worker's
//! and nodes' clocks read over a window, and sFlow's samples counted by a collector socket.

use super::scenarios::{Kind, Scenario, l2xc};
use super::{AgentMeasured, Args, CodecMeasured, FibSize, Measured, NodeCost, Row, SampleBooks, on_core};
use anyhow::{Context, bail};
use dataplane::Dataplane;
use dataplane::config::{Config, InterfaceSflow};
use dataplane::control::counters::WorkerRuntime;
use dataplane::datapath::registry::NodeFacts;
use dataplane::runtime::graph::{NodeId, NodeStats};
use std::net::UdpSocket;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;
use std::time::Instant;

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

/// sFlow totals over every data source since the dataplane started (all zero without sFlow).
fn sflow_totals(dp: &Dataplane) -> SampleBooks {
    dp.sflow().map_or(SampleBooks::default(), |(_, agent, rows)| SampleBooks {
        samples_taken: rows.iter().map(|r| r.sampler.taken).sum(),
        samples_sent: rows.iter().map(|r| r.samples_sent).sum(),
        samples_of_drops: agent.samples_of_drops,
        samples_dropped: rows.iter().map(|r| r.sampler.ring_full).sum(),
    })
}

/// One run of scenario `s`, a forwarding one at sFlow rate `rate` (0 = sFlow off).
pub(super) fn measure(s: &Scenario, rate: u32, args: &Args, core: Option<u16>, hz: u64) -> anyhow::Result<Row> {
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
            let (ra, t0) = (collector.received(), Instant::now());
            std::thread::sleep(Duration::from_secs_f64(args.seconds));
            let (rb, secs) = (collector.received(), t0.elapsed().as_secs_f64());
            dp.stop()?;
            collector.finish();
            Ok(Row::Agent(AgentMeasured {
                name: s.name,
                samples_per_s: (rb - ra) as f64 / secs,
                samples: sflow_totals(&dp),
            }))
        }
        Kind::Churn => super::churn::churn(core, args.warmup),
        Kind::VrfMemory => super::vrf::vrf_memory(core),
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

/// What the forwarding path `config` builds gave over one measured window (with `--packets`,
/// from the worker's start to the last packet), at sFlow rate `rate` (0 = sFlow off).
pub(super) fn measure_forward(
    name: &'static str,
    rate: u32,
    config: Config,
    args: &Args,
    hz: u64,
) -> anyhow::Result<Measured> {
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
    let (a, b, sent_in_window) = match args.packets {
        None => {
            std::thread::sleep(Duration::from_secs_f64(args.warmup));
            let (a, sa, ta) = (worker0(&dp), sflow_totals(&dp), agent_schedstat());
            std::thread::sleep(Duration::from_secs_f64(args.seconds));
            let (b, sb, tb) = (worker0(&dp), sflow_totals(&dp), agent_schedstat());
            agent_time = tb.zip(ta).map(|(b, a)| (b.0.saturating_sub(a.0), b.1.saturating_sub(a.1)));
            (a, b, Some(sb.samples_sent - sa.samples_sent))
        }
        Some(n) => {
            // From the worker's start (nothing counted yet) to the last packet.
            let mut a = worker0(&dp);
            a.nodes.iter_mut().for_each(|(_, s)| *s = NodeStats::default());
            a.looping.last_tsc = a.looping.start_tsc;
            while node(&worker0(&dp), dataplane::drivers::nodes::GENERATOR_INPUT).vectors < n {
                if started.elapsed() > Duration::from_secs(3600) {
                    bail!("scenario {name}: {n} packets not sent within an hour");
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            (a, worker0(&dp), None)
        }
    };
    let (ip4, ip6) = (&dp.fib().ip4, &dp.fib().ip6);
    let spread = path_spread(&dp);
    let fib = FibSize {
        ip4_routes: ip4.len(),
        ip4_groups: ip4.tbl8_in_use(),
        ip6_routes: ip6.len(),
        ip6_bytes_per_route: ip6.bytes() as f64 / ip6.len().max(1) as f64,
    };
    let (ring_high_water, agent_longest_pause_us) =
        dp.sflow().map_or((0, 0), |(_, totals, _)| (totals.ring_high_water, totals.longest_pause_us));
    let ring_depth = config.sflow.as_ref().map_or(0, |sf| sf.ring_depth);
    dp.stop()?;
    // The run's books once the dataplane has stopped: its agent sends all it holds when it
    // stops, so they balance on their own (SampleBooks).
    let samples = sflow_totals(&dp);
    let sent_in_window = sent_in_window.unwrap_or(samples.samples_sent);
    let end = worker0(&dp);
    let input = |w: &WorkerRuntime| node(w, dataplane::drivers::nodes::GENERATOR_INPUT);
    let packets = input(&b).vectors - input(&a).vectors;
    if packets == 0 {
        bail!("scenario {name}: no packets in the window");
    }
    let wall = dataplane::runtime::tsc::ticks(a.looping.last_tsc, b.looping.last_tsc);
    let nodes = dataplane::datapath::registry::all_nodes()
        .map(|id| {
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
    let dropped = node(&b, dataplane::interface::nodes::ERROR_DROP).vectors
        - node(&a, dataplane::interface::nodes::ERROR_DROP).vectors;
    Ok(Measured {
        name,
        sflow_rate: rate,
        packets,
        mpps: packets as f64 / (wall as f64 / hz as f64) / 1e6,
        cycles_per_packet: wall as f64 / packets as f64,
        cycles_per_packet_min: wall as f64 / packets as f64,
        loss_paired: None,
        counterpart: None,
        isa: dataplane::runtime::isa::chosen().name(),
        isa_speedup: None,
        fib,
        spread,
        vectors_per_call: packets as f64 / input_calls.max(1) as f64,
        drop_fraction: dropped as f64 / packets as f64,
        samples,
        samples_sent_in_window: sent_in_window,
        ring_high_water,
        ring_depth,
        agent_longest_pause_us,
        agent_cpu_s: agent_time.map_or(0.0, |t| t.0 as f64 / 1e9),
        agent_wait_s: agent_time.map_or(0.0, |t| t.1 as f64 / 1e9),
        agent_capacity_per_s: agent_time.map_or(0.0, |t| sent_in_window as f64 / (t.0.max(1) as f64 / 1e9)),
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

/// How the multipath route to 48.0.0.0/24 (the `ip4-ecmp` scenarios') spreads 65 536 random
/// UDP flows over its paths, by the dataplane's own flow hash and load-balance object; `None`
/// when that route has one path.
fn path_spread(dp: &Dataplane) -> Option<super::PathSpread> {
    use dataplane::l3::multipath::{LB, hash4};
    const FLOWS: u32 = 65_536;
    let leaf = dp.fib().ip4.fib().lookup(u32::from(std::net::Ipv4Addr::new(48, 0, 0, 1)))?;
    let lb = dp.l3().lbs.get((leaf.adj & !LB) as usize).filter(|_| leaf.adj & LB != 0)?;
    let mut rng = 0x5eed_ec3d_u64;
    let mut counts = vec![0u64; lb.paths.len()];
    for _ in 0..FLOWS {
        let r = super::scenarios::splitmix(&mut rng);
        let mut h = [0u8; 24];
        h[0] = 0x45;
        h[9] = 17;
        h[12..16].copy_from_slice(&(0x1000_0000 | (r as u32 & 0x00ff_ffff)).to_be_bytes());
        h[16..20].copy_from_slice(&(0x3000_0000 | ((r >> 24) as u32 & 0xff)).to_be_bytes());
        h[20..24].copy_from_slice(&((r >> 32) as u32).to_be_bytes());
        let adj = lb.pick(hash4(&h));
        if let Some(k) = lb.paths.iter().position(|p| p.adj == adj) {
            counts[k] += 1;
        }
    }
    let total: f64 = lb.paths.iter().map(|p| f64::from(p.weight)).sum();
    let (mut chi2, mut worst) = (0.0f64, 0.0f64);
    for (p, &n) in lb.paths.iter().zip(&counts) {
        let expected = f64::from(FLOWS) * f64::from(p.weight) / total;
        chi2 += (n as f64 - expected).powi(2) / expected;
        worst = worst.max((n as f64 - expected).abs() / expected);
    }
    Some(super::PathSpread {
        paths: lb.paths.len(),
        flows: FLOWS,
        max_share_error: worst,
        chi2,
        chi2_df: lb.paths.len() - 1,
    })
}
