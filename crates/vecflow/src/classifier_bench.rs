//! `vecflow bench classifier`: the seed's megaflow experiment on the classifier alone, one
//! core.
//!
//! S rules, rule K (priority K) `udp,nw_src=K.0.0.0/(7+K)` for K ≤ 20 and
//! `udp,nw_src=K.0.0.0/(K−13),tp_dst=K` above: S distinct masks, and with prefix tracking each
//! source's megaflow has its own rule's mask, so the megaflow level has S subtables. Traffic: S
//! sources (K.0.0.1, UDP destination port K) × F/S destinations, in a uniform random order
//! (fixed seed). Per cell (S, F), the modes — ranked tuple space search alone (`tss`), with the
//! Cuckoo Distributor (`cd`), with the exact-match cache too (`emc+cd`) — are measured in turn,
//! `--runs` times, and each mode's median is reported: lookups per second, TSC cycles per
//! lookup, and subtables probed per hit. Each measurement first looks every flow up once (the
//! megaflows and CD entries a running cache would have), then counts over the window.
//!
//! `graph_mpps` is the whole graph of one worker with the same rules as `flows:` of a generator
//! port (the sources as streams, each over its F/S destinations at random, 64-byte frames),
//! every rule's action `output` to a sink port: generator, `ethernet-input`, `flow-classify`
//! (its layers as the dataplane runs them: EMC and CD on, the CD sized as in `cd`), `interface-output`, sink. It is
//! measured once per cell, after its modes, and repeated on the cell's rows with the cycles
//! per packet of its `flow-classify` node.

use anyhow::bail;
use classifier::cache::{MAX_BATCH, Verdict};
use classifier::{CacheConfig, Field, FlowKey, MegaflowCache, Rule, RuleMatch, RuleTable};
use dataplane::runtime::tsc;
use serde::Serialize;

/// Options of `vecflow bench classifier`.
#[derive(clap::Args)]
pub struct Args {
    /// Rule (and megaflow subtable) counts, comma-separated, 1 to 30.
    #[arg(long, value_delimiter = ',', default_values_t = [10u32, 20, 30])]
    subtables: Vec<u32>,
    /// Flow counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [20_000u32, 100_000, 1_000_000])]
    flows: Vec<u32>,
    /// Runs of each mode per cell; the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=99))]
    runs: u32,
    /// Measurement window per run, seconds.
    #[arg(long, default_value_t = 1.0)]
    seconds: f64,
    /// CPU to run on; default: the last CPU when there are several, else none.
    #[arg(long)]
    core: Option<u16>,
    /// Print only JSON on stdout.
    #[arg(long)]
    json: bool,
}

/// A layer combination.
#[derive(Debug, Clone, Copy)]
struct Mode {
    name: &'static str,
    emc: bool,
    cd: bool,
}

const MODES: [Mode; 3] = [
    Mode { name: "tss", emc: false, cd: false },
    Mode { name: "cd", emc: false, cd: true },
    Mode { name: "emc+cd", emc: true, cd: true },
];

/// One measured cell and mode.
#[derive(Debug, Clone, Serialize)]
struct Row {
    subtables: u32,
    flows: u32,
    mode: &'static str,
    lookups_per_s: f64,
    cycles_per_lookup: f64,
    avg_subtables_per_hit: f64,
    /// Against `tss` of the same cell, measured in turn with it.
    speedup_vs_tss: f64,
    /// Mpps of the whole graph with `flow-classify` on these rules and flows (one worker).
    graph_mpps: f64,
    /// TSC cycles per packet of the `flow-classify` node in that graph.
    graph_classify_cycles: f64,
}

/// The seed's rule table of `s` rules.
fn rules(s: u32) -> RuleTable {
    let mut table = RuleTable::new();
    for k in 1..=s {
        let text = if k <= 20 {
            format!("udp,nw_src={k}.0.0.0/{}", 7 + k)
        } else {
            format!("udp,nw_src={k}.0.0.0/{},tp_dst={k}", k - 13)
        };
        let matches = RuleMatch::parse(&text).expect("the seed's rules parse");
        table.insert(Rule { id: k, priority: k, matches, action: k });
    }
    table
}

/// `f` flows over `s` sources, in a uniform random order (fixed seed).
fn flows(s: u32, f: u32) -> Vec<FlowKey> {
    let per = (f / s).max(1);
    let mut keys: Vec<FlowKey> = (1..=s)
        .flat_map(|k| {
            (0..per).map(move |d| {
                FlowKey::default()
                    .with(Field::InPort, 1)
                    .with(Field::Ethertype, 0x0800)
                    .with(Field::NwProto, 17)
                    .with(Field::NwSrc, u64::from(k) << 24 | 1)
                    .with(Field::NwDst, 0x6400_0000 + u64::from(d))
                    .with(Field::TpSrc, 1024)
                    .with(Field::TpDst, u64::from(k))
            })
        })
        .collect();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in (1..keys.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        keys.swap(i, (x % (i as u64 + 1)) as usize);
    }
    keys
}

/// The CD size for `flows` flows: twice as many entries, so that cuckoo insertion rarely
/// fails.
fn cd_entries(flows: usize) -> usize {
    flows.next_power_of_two() * 2
}

/// The one-worker dataplane of a cell: `s` generator streams on port0 (source K.0.0.1, UDP
/// destination port K, over `f`/`s` random destinations), the seed's rules on it, each sending
/// its flows out of port1 (the sink).
fn graph_config(s: u32, f: u32, core: Option<u16>) -> anyhow::Result<dataplane::Config> {
    let per = (f / s).max(1);
    let streams: Vec<String> = (1..=s)
        .map(|k| {
            format!(
                "{{src-ip: {k}.0.0.1, src-range: {{count: 1}}, dst-ip: 100.0.0.0, dst-port: {k}, dst-range: {{count: {per}, mode: random}}, seed: {k}}}"
            )
        })
        .collect();
    let rules: Vec<String> = (1..=s)
        .map(|k| {
            let m = if k <= 20 {
                format!("udp,nw_src={k}.0.0.0/{}", 7 + k)
            } else {
                format!("udp,nw_src={k}.0.0.0/{},tp_dst={k}", k - 13)
            };
            format!("'priority={k},in_port=port0,{m},actions=output:port1'")
        })
        .collect();
    let cores = core.map_or(String::new(), |c| format!(", cores: [{c}]"));
    let cd_entries = cd_entries(f as usize);
    let yaml = format!(
        "workers: {{count: 1{cores}}}\nmetrics: {{enabled: false}}\ninterfaces:\n  port0: {{index: 1, generator: {{streams: [{}]}}}}\n  port1: {{index: 2}}\nflows: [{}]\nflow-cache: {{cd-entries: {cd_entries}}}\n",
        streams.join(", "),
        rules.join(", ")
    );
    Ok(dataplane::Config::load(&yaml)?)
}

/// Looks up `keys` once in batches.
fn pass(cache: &mut MegaflowCache, table: &RuleTable, keys: &[FlowKey], out: &mut [Verdict; MAX_BATCH]) {
    for batch in keys.chunks(MAX_BATCH) {
        cache.lookup_batch(table, batch, &mut out[..batch.len()]);
    }
}

/// (lookups per second, cycles per lookup, subtables per hit) of `mode` over `keys` for
/// `seconds`.
fn measure(mode: Mode, table: &RuleTable, keys: &[FlowKey], seconds: f64, hz: u64) -> (f64, f64, f64) {
    let config = CacheConfig { emc: mode.emc, cd: mode.cd, cd_entries: cd_entries(keys.len()), max_megaflows: 200_000 };
    let mut cache = MegaflowCache::new(config);
    let mut out = [Verdict::NONE; MAX_BATCH];
    pass(&mut cache, table, keys, &mut out); // install megaflows, fill the CD
    let before = cache.stats();
    let start = tsc::now();
    let budget = (seconds * hz as f64) as u64;
    let mut lookups = 0u64;
    let mut at = 0;
    while tsc::now() - start < budget {
        let batch = &keys[at..(at + MAX_BATCH).min(keys.len())];
        cache.lookup_batch(table, batch, &mut out[..batch.len()]);
        std::hint::black_box(&out);
        lookups += batch.len() as u64;
        at = if at + MAX_BATCH >= keys.len() { 0 } else { at + MAX_BATCH };
    }
    let cycles = tsc::now() - start;
    let after = cache.stats();
    let hits = (after.cd_hits + after.dpcls_hits) - (before.cd_hits + before.dpcls_hits);
    let probed = after.subtables_probed - before.subtables_probed;
    let per_hit = if hits == 0 { 0.0 } else { probed as f64 / hits as f64 };
    (lookups as f64 * hz as f64 / cycles as f64, cycles as f64 / lookups as f64, per_hit)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs the benchmark.
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.subtables.iter().any(|&s| !(1..=30).contains(&s)) {
        bail!("--subtables: each 1 to 30 (the seed's rules)");
    }
    if args.flows.contains(&0) || !(0.05..=60.0).contains(&args.seconds) {
        bail!("--flows must be above 0 and --seconds 0.05 to 60");
    }
    let ncpu = std::thread::available_parallelism().map_or(1, |n| n.get()) as u16;
    let core = args.core.or((ncpu > 1).then(|| ncpu - 1));
    let hz = tsc::hz();
    let (subtables, flow_counts, runs, seconds, json) =
        (args.subtables.clone(), args.flows.clone(), args.runs, args.seconds, args.json);
    let rows = crate::bench::on_core(core, move || {
        let mut rows = Vec::new();
        for &s in &subtables {
            let table = rules(s);
            for &f in &flow_counts {
                let keys = flows(s, f);
                // The modes take turns, so that a machine speeding up or slowing down favours
                // none of them.
                let mut got: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); MODES.len()];
                for _ in 0..runs {
                    for (m, mode) in MODES.iter().enumerate() {
                        got[m].push(measure(*mode, &table, &keys, seconds, hz));
                    }
                }
                let med = |m: usize, pick: fn(&(f64, f64, f64)) -> f64| median(got[m].iter().map(pick).collect());
                let tss = med(0, |x| x.1);
                let (graph_mpps, graph_classify_cycles) = crate::bench::forward_mpps(
                    "classifier graph",
                    graph_config(s, f, core)?,
                    "flow-classify",
                    seconds,
                    0.5,
                    hz,
                )?;
                for (m, mode) in MODES.iter().enumerate() {
                    let row = Row {
                        subtables: s,
                        flows: f,
                        mode: mode.name,
                        lookups_per_s: med(m, |x| x.0),
                        cycles_per_lookup: med(m, |x| x.1),
                        avg_subtables_per_hit: med(m, |x| x.2),
                        speedup_vs_tss: tss / med(m, |x| x.1),
                        graph_mpps,
                        graph_classify_cycles,
                    };
                    if !json {
                        eprintln!(
                            "{s:>2} subtables {f:>8} flows {:<7} {:>7.2} M lookups/s {:>7.1} cycles {:>5.2} subtables/hit {:>5.2}× graph {:.2} Mpps ({:.1} cycles in flow-classify)",
                            row.mode,
                            row.lookups_per_s / 1e6,
                            row.cycles_per_lookup,
                            row.avg_subtables_per_hit,
                            row.speedup_vs_tss,
                            row.graph_mpps,
                            row.graph_classify_cycles
                        );
                    }
                    rows.push(row);
                }
            }
        }
        anyhow::Ok(rows)
    })??;
    if json {
        println!("{}", serde_json::json!({ "tsc_hz": hz, "scenarios": rows }));
    }
    Ok(())
}
