//! What `vecflow bench` reports: a row per configuration (the median run, with the paired
//! comparisons), and the table it prints (`--json` prints the rows as they are).

use super::{Counterpart, Measured, Report, Row};

/// One sampled run: its samples, how full the ring got and what the agent had to spare.
pub(super) fn run_line(m: &Measured, run: u32, seconds: f64) -> String {
    let got = m.samples_sent_in_window as f64 / seconds;
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
        "{} sflow {} run {run}: samples taken {} sent {} of drops {} dropped {}; ring high water {} of {}, longest agent pause {:.1} ms{spare}",
        m.name,
        m.sflow_rate,
        m.samples.samples_taken,
        m.samples.samples_sent,
        m.samples.samples_of_drops,
        m.samples.samples_dropped,
        m.ring_high_water,
        m.ring_depth,
        m.agent_longest_pause_us as f64 / 1e3
    )
}

/// The median of `v` (the upper one of an even count).
pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The row of the median run of one configuration, with the fastest run's cycles/packet,
/// the paired loss against the runs without sFlow and the cost against a counterpart.
pub(super) fn summarise(mut runs: Vec<Row>, loss_paired: Option<f64>, counterpart: Option<Counterpart>) -> Row {
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
pub(super) fn against(name: &'static str, runs: &[Row], theirs: Vec<Row>) -> Counterpart {
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

/// Prints the report as a table, with a line a node under each forwarding row.
pub(super) fn print_table(r: &Report, core: Option<u16>) {
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
                print_forward(s);
            }
            Row::Agent(a) => {
                println!(
                    "{:<12} {:>8.2} M samples/s received by the collector (run: taken {}, sent {}, of drops {}, ring drops {})",
                    a.name,
                    a.samples_per_s / 1e6,
                    a.samples.samples_taken,
                    a.samples.samples_sent,
                    a.samples.samples_of_drops,
                    a.samples.samples_dropped
                );
            }
            Row::Churn(c) => {
                println!(
                    "{:<12} route changes/s: IPv4 full table {:.0}, IPv6 full table {:.0}, IPv4 withdrawals {:.0}, \
                     IPv4 flap {:.0}; the pair forwarded {} packets meanwhile and lost {} ({} IPv4 and {} IPv6 routes)",
                    c.name,
                    c.ip4_full_per_s,
                    c.ip6_full_per_s,
                    c.ip4_withdraw_per_s,
                    c.ip4_flap_per_s,
                    c.forwarded_meanwhile,
                    c.forward_lost,
                    c.ip4_routes,
                    c.ip6_routes
                );
            }
            Row::VrfMemory(m) => {
                let mib = |b: u64| b as f64 / f64::from(1 << 20);
                println!(
                    "{:<12} {} VRFs made live: {:.1} MiB resident ({:.1} KiB each, IPv4 and IPv6 tables); \
                     {} IPv4 routes in each: {:.1} MiB more, {:.1} MiB in all",
                    m.name,
                    m.vrfs,
                    mib(m.empty_bytes),
                    m.empty_bytes as f64 / 1024.0 / m.vrfs as f64,
                    m.routes_per_vrf,
                    mib(m.routes_bytes),
                    mib(m.empty_bytes + m.routes_bytes)
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

/// Prints one forwarding row: the numbers, the SIMD variant, the pairing, the spread and
/// a line a node.
fn print_forward(s: &Measured) {
    let (name, rate, mpps, cpp, vpc) = (s.name, s.sflow_rate, s.mpps, s.cycles_per_packet, s.vectors_per_call);
    let drops = s.drop_fraction * 100.0;
    let sampled = if rate == 0 {
        String::new()
    } else {
        format!(
            "   samples taken {} sent {} of drops {} dropped {}",
            s.samples.samples_taken, s.samples.samples_sent, s.samples.samples_of_drops, s.samples.samples_dropped
        )
    };
    let min = s.cycles_per_packet_min;
    let loss = s.loss_paired.map_or(String::new(), |l| format!("{:.2} %", l * 100.0));
    println!("{name:<12} {rate:>10} {mpps:>8.2} {cpp:>14.2} {min:>8.2} {vpc:>13.1} {drops:>9.3} % {loss:>12}{sampled}");
    let speedup = s.isa_speedup.map_or(String::new(), |x| format!(", {x:.2}× the first variant"));
    println!("  SIMD variant {}{speedup}", s.isa);
    if let Some(c) = &s.counterpart {
        let lookup = c.lookup_ratio.map_or(String::new(), |r| format!(", lookup node {r:.2}×"));
        println!(
            "  paired with {} ({:.2} cycles/packet): {:.2}× its cycles/packet{lookup}",
            c.name, c.cycles_per_packet, c.ratio
        );
    }
    if let Some(p) = &s.spread {
        println!(
            "  {} paths: {} flows, largest share error {:.1} %, χ² {:.1} on {} degrees of freedom",
            p.paths,
            p.flows,
            p.max_share_error * 100.0,
            p.chi2,
            p.chi2_df
        );
    }
    if s.fib.ip6_routes > 1000 {
        println!("  IPv6 FIB: {} routes, {:.0} bytes per route", s.fib.ip6_routes, s.fib.ip6_bytes_per_route);
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
