//! `vecflow bench`: cycles per packet of each forwarding path, one worker, 64-byte frames,
//! generator to sink in memory.
//!
//! Each run starts a dataplane, lets it warm up, then measures over a window: the worker's
//! wall-clock TSC ÷ packets generated (so everything counts: generator, graph, sink, loop),
//! plus each node's TSC ÷ the packets it processed. `--runs N` repeats and reports the median.
//!
//! Here: the options, the order of the runs, and the rows of the report (their JSON is what
//! `--json` prints). `scenarios` has the scenarios and their configurations, `measure` one run
//! of a scenario, `report` the median rows and the table.

mod churn;
mod measure;
mod report;
mod scenarios;
mod vrf;

pub(crate) use scenarios::{ip4_table, ip6_bgp_table};

use anyhow::{Context, bail};
use dataplane::config::Config;
use dataplane::runtime::isa::Isa;
use dataplane::runtime::tsc;
use indicatif::{ProgressBar, ProgressStyle};
use measure::{measure, measure_forward};
use report::{against, median, print_table, run_line, summarise};
use scenarios::{Kind, SCENARIOS, Scenario};
use serde::Serialize;

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
    /// The FIBs' size at the end of the run: routes per family, IPv4 tbl8 groups in use and
    /// IPv6 bytes per route.
    fib: FibSize,
    /// How the scenario's multipath route spreads flows, if it has one.
    spread: Option<PathSpread>,
    vectors_per_call: f64,
    /// Packets that ended in `error-drop` ÷ packets generated.
    drop_fraction: f64,
    /// The run's sFlow books, from its start to its stop.
    #[serde(flatten)]
    samples: SampleBooks,
    /// Samples encoded into datagrams in the window (what the agent's rate is measured on).
    samples_sent_in_window: u64,
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
    /// with a whole CPU (the row's samples_sent_in_window ÷ seconds is what it got).
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

/// Routes of both FIBs, the IPv4 tbl8 groups in use, and the bytes each IPv6 route costs (the
/// bytes the IPv6 table and its writer allocated, [`dataplane::l3::fib::Fib6Writer::bytes`],
/// over the routes).
#[derive(Debug, Clone, Copy, Default, Serialize)]
struct FibSize {
    ip4_routes: usize,
    ip4_groups: u32,
    ip6_routes: usize,
    ip6_bytes_per_route: f64,
}

/// How a multipath route spreads 65 536 random flows over its paths (the `ip4-ecmp`
/// scenarios), by the dataplane's own hash and buckets.
#[derive(Debug, Clone, Copy, Serialize)]
struct PathSpread {
    paths: usize,
    flows: u32,
    /// The largest |share − weight's share| ÷ weight's share over the paths.
    max_share_error: f64,
    /// Pearson's χ² of the paths' flow counts against their weights' shares.
    chi2: f64,
    /// Its degrees of freedom (paths − 1).
    chi2_df: usize,
}

/// What the `agent` scenario gave.
#[derive(Debug, Clone, Serialize)]
struct AgentMeasured {
    name: &'static str,
    /// Samples received by the collector socket per second.
    samples_per_s: f64,
    /// The run's sFlow books, from its start to its stop.
    #[serde(flatten)]
    samples: SampleBooks,
}

/// One run's sFlow books, summed over data sources from the dataplane's start to its stop.
/// The agent sends every sample it holds when it stops, so none is in flight at the end and
/// they balance on their own: `taken = sent + of_drops`. Samples lost to full rings were never
/// taken. (Counted over a window instead, samples taken before it and sent in it, or taken in
/// it and sent after, would unbalance them either way.)
#[derive(Debug, Clone, Copy, Default, Serialize)]
struct SampleBooks {
    /// Samples copied into the rings.
    samples_taken: u64,
    /// Samples encoded into datagrams.
    samples_sent: u64,
    /// Samples of packets the graph then dropped (drop monitoring's business, never sent as
    /// flow samples).
    samples_of_drops: u64,
    /// Samples lost because a ring was full.
    samples_dropped: u64,
}

/// What one measured window of a codec scenario gave.
#[derive(Debug, Clone, Serialize)]
struct CodecMeasured {
    name: &'static str,
    samples_per_s: f64,
    cycles_per_sample: f64,
}

/// What `fib-churn` gave: route changes per second, end to end (from a batch handed to the
/// dataplane to workers forwarding on it).
#[derive(Debug, Clone, Serialize)]
struct ChurnMeasured {
    name: &'static str,
    /// A full IPv4 table (1 M routes) from empty, in one batch.
    ip4_full_per_s: f64,
    /// A full IPv6 table (230 k routes), in one batch.
    ip6_full_per_s: f64,
    /// 10 000 IPv4 withdrawals, in one batch.
    ip4_withdraw_per_s: f64,
    /// The same 10 000 announced and withdrawn ten times, a batch each way.
    ip4_flap_per_s: f64,
    /// Packets of the forwarding pair (on other routes) dropped meanwhile.
    forward_lost: u64,
    /// Packets of the pair forwarded meanwhile.
    forwarded_meanwhile: u64,
    /// Routes in the FIBs at the end.
    ip4_routes: usize,
    ip6_routes: usize,
}

/// What `vrf-memory` gave: the growth of the process's resident size (VmRSS) as
/// [`vrf::MEMORY_VRFS`] VRFs are made live, empty, and then given routes.
#[derive(Debug, Clone, Serialize)]
struct VrfMemoryMeasured {
    name: &'static str,
    /// VRFs made.
    vrfs: usize,
    /// IPv4 routes given to each.
    routes_per_vrf: usize,
    /// Growth when the VRFs were made (each sub-interface moved into its own), in bytes.
    empty_bytes: u64,
    /// Further growth once every VRF had its routes, in bytes.
    routes_bytes: u64,
}

/// One row of the report.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
enum Row {
    Forward(Box<Measured>),
    Agent(AgentMeasured),
    Codec(CodecMeasured),
    Churn(ChurnMeasured),
    VrfMemory(VrfMemoryMeasured),
}

impl Row {
    /// What the median is taken over (lower is better).
    fn cost(&self) -> f64 {
        match self {
            Row::Forward(m) => m.cycles_per_packet,
            Row::Agent(a) => -a.samples_per_s,
            Row::Codec(c) => c.cycles_per_sample,
            Row::Churn(c) => -c.ip4_full_per_s,
            Row::VrfMemory(m) => (m.empty_bytes + m.routes_bytes) as f64,
        }
    }
}

/// One node's cost in a forwarding scenario's window.
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

/// The whole report: what `--json` prints.
#[derive(Serialize)]
struct Report {
    tsc_hz: u64,
    runs: u32,
    seconds: f64,
    scenarios: Vec<Row>,
}

/// The scenarios `--scenario` names, or all of them (those that need root only as root).
fn chosen_scenarios(args: &Args) -> anyhow::Result<Vec<&'static Scenario>> {
    if args.scenarios.is_empty() {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        Ok(SCENARIOS
            .iter()
            .filter(|s| {
                let run = root || !scenarios::needs_root(s);
                if !run {
                    eprintln!("bench: skipping {} (needs root: it makes linux-cp's TAPs)", s.name);
                }
                run
            })
            .collect())
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
            .collect()
    }
}

/// The SIMD variants `--isa` names, or the one the environment chooses.
fn chosen_isas(args: &Args) -> anyhow::Result<Vec<Isa>> {
    if args.isa.is_empty() {
        Ok(vec![Isa::from_env().map_err(anyhow::Error::msg)?])
    } else {
        args.isa.iter().map(|name| Isa::parse(name).map_err(|e| anyhow::anyhow!("--isa: {e}"))).collect()
    }
}

/// Runs the benchmark.
pub fn run(args: Args) -> anyhow::Result<()> {
    if let Some(Part::Classifier(a)) = args.part {
        return crate::classifier_bench::run(a);
    }
    let chosen = chosen_scenarios(&args)?;
    if !(0.1..=600.0).contains(&args.seconds) || !(0.0..=60.0).contains(&args.warmup) {
        bail!("--seconds must be 0.1 to 600 and --warmup 0 to 60");
    }
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as u16;
    let core = args.core.or((ncpu > 1).then(|| ncpu - 1));
    let hz = tsc::hz();
    let isas = chosen_isas(&args)?;
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
                dataplane::runtime::isa::choose(isa);
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

/// Runs `f` on a thread of its own pinned to `core` (the caller's CPU affinity, which the
/// configuration checks read, stays as it is).
pub(crate) fn on_core<T: Send + 'static>(
    core: Option<u16>,
    f: impl FnOnce() -> T + Send + 'static,
) -> anyhow::Result<T> {
    std::thread::spawn(move || {
        if let Some(c) = core {
            dataplane::runtime::cpu::pin_current_thread(c)?;
        }
        Ok(f())
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the measuring thread panicked"))?
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
