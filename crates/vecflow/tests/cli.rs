//! The `vecflow` binary as users run it.

use std::process::Command;

fn vecflow(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vecflow")).args(args).output().expect("run vecflow");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

/// The forwarding scenarios' paths, node by node: every packet generated takes all of them.
const PATHS: [(&str, &[&str]); 5] = [
    ("l2xc", &["generator-input", "ethernet-input", "l2-xconnect", "interface-output", "generator-tx"]),
    (
        "ip4-lab",
        &[
            "generator-input",
            "ethernet-input",
            "ip4-input",
            "ip4-lookup",
            "ip4-rewrite",
            "interface-output",
            "generator-tx",
        ],
    ),
    (
        "ip6-lab",
        &[
            "generator-input",
            "ethernet-input",
            "ip6-input",
            "ip6-lookup",
            "ip6-rewrite",
            "interface-output",
            "generator-tx",
        ],
    ),
    ("mpls-swap", MPLS_PATH),
    ("mpls-core", MPLS_PATH),
];

/// The nodes of the MPLS scenarios.
const MPLS_PATH: &[&str] = &[
    "generator-input",
    "ethernet-input",
    "mpls-input",
    "mpls-lookup",
    "mpls-rewrite",
    "interface-output",
    "generator-tx",
];

/// A short `bench --json` of the clean forwarding scenarios, sFlow off and at 1:1000 and
/// 1:100, balances: every packet of a fixed count passes each node of its path once and none
/// is dropped, and the samples chosen match the rate. A count, not a time window, so that how
/// busy the machine is changes how long the run takes, never what it measures.
#[test]
fn bench_json_accounts_for_every_packet_and_sample() {
    let (count, rates) = (200_000u64, [0u64, 1000, 100]);
    let (ok, out, err) = vecflow(&[
        "bench",
        "--json",
        "--packets",
        &count.to_string(),
        "--scenario",
        "l2xc",
        "--scenario",
        "ip4-lab",
        "--scenario",
        "ip6-lab",
        "--scenario",
        "mpls-swap",
        "--scenario",
        "mpls-core",
        "--sflow-rates",
        "0,1000,100",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("stdout is one JSON document");
    let hz = v["tsc_hz"].as_f64().unwrap();
    assert!(hz > 1e8, "TSC {hz} Hz");
    let rows = v["scenarios"].as_array().unwrap();
    let expected: Vec<(&str, u64)> = PATHS.iter().flat_map(|&(n, _)| rates.map(|r| (n, r))).collect();
    let got: Vec<(&str, u64)> =
        rows.iter().map(|s| (s["name"].as_str().unwrap(), s["sflow_rate"].as_u64().unwrap())).collect();
    assert_eq!(got, expected, "one row per scenario and rate, in order");
    for (s, &(name, rate)) in rows.iter().zip(&expected) {
        let at = format!("{name} at sFlow {rate}: {s}");
        let u = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k} in {at}"));
        let f = |k: &str| s[k].as_f64().unwrap_or_else(|| panic!("{k} in {at}"));
        let packets = u("packets");
        assert_eq!(packets, count, "{at}");

        // Every packet generated over the run went through each node of the path, exactly once.
        let nodes = s["nodes"].as_array().unwrap();
        let names: Vec<&str> = nodes.iter().map(|n| n["name"].as_str().unwrap()).collect();
        let path = PATHS.iter().find(|p| p.0 == name).unwrap().1;
        assert_eq!(names, path, "the nodes that saw packets ({at})");
        for n in nodes {
            assert_eq!(n["run_vectors"].as_u64(), Some(count), "{} ({at})", n["name"]);
            // A node whose every packet went through another node's fused pass has no clocks
            // of its own (they are that node's).
            let own = n["clocks_per_packet"].as_f64().unwrap() > 0.0;
            assert!(own || n["fused_fraction"].as_f64() == Some(1.0), "{} ({at})", n["name"]);
        }
        assert_eq!(f("drop_fraction"), 0.0, "{at}");
        // One run each: its minimum is its median; the loss is paired with the run without sFlow.
        assert_eq!(f("cycles_per_packet_min"), f("cycles_per_packet"), "{at}");
        match rate {
            0 => assert!(s["loss_paired"].is_null(), "{at}"),
            _ => assert!(f("loss_paired") < 1.0, "{at}"),
        }
        assert!(f("mpps") > 0.0 && f("cycles_per_packet") > 0.0, "{at}");
        assert!((1.0..=256.0).contains(&f("vectors_per_call")), "{at}");

        // The IPv6 path is measured in turn with its IPv4 counterpart, at the same rate.
        let c = &s["counterpart"];
        if name == "ip6-lab" {
            assert_eq!(c["name"], "ip4-lab", "{at}");
            let (ratio, lookup, theirs) =
                (c["ratio"].as_f64(), c["lookup_ratio"].as_f64(), c["cycles_per_packet"].as_f64());
            assert!(
                ratio.is_some_and(|r| r > 0.0) && lookup.is_some_and(|r| r > 0.0) && theirs.is_some_and(|c| c > 0.0),
                "{at}"
            );
            assert_eq!(
                s["fib"]["ip6_routes"], 8,
                "two routes, two connected /64s, our two addresses, the two neighbors' host routes ({at})"
            );
        } else {
            assert!(c.is_null(), "{at}");
        }

        // Samples: none without sFlow; with it, every packet passed a sampler (both ports sample
        // their input) and each is chosen with probability 1/rate, whether the ring then had room
        // (taken) or not (dropped). The sampler's skips are uniform on [1, 2·rate−1], which varies
        // less than a binomial draw, so the binomial bound holds with room.
        let (taken, sent, dropped) = (u("samples_taken"), u("samples_sent"), u("samples_dropped"));
        if rate == 0 {
            assert_eq!((taken, sent, dropped, u("samples_of_drops")), (0, 0, 0, 0), "{at}");
        } else {
            let chosen = (taken + dropped) as f64;
            let mean = packets as f64 / rate as f64;
            let bound = 5.0 * (mean * (1.0 - 1.0 / rate as f64)).sqrt() + 1.0;
            assert!(
                (chosen - mean).abs() <= bound,
                "{chosen} samples chosen of {packets} at 1:{rate}, expected {mean:.0} ± {bound:.0} ({at})"
            );
            // A run reports its samples once the dataplane stopped, which sends every sample it
            // took; no packet was dropped, so none was a sample of a drop.
            assert_eq!(sent, taken, "every sample taken was sent ({at})");
        }
    }
}

/// Each run's sFlow books balance on their own, whether it runs a packet count or a time
/// window: samples taken before a window and sent in it (or the other way round) once made
/// `ip4-ecmp64` report more samples sent than taken, and `mpls-core` fewer. At the end of a
/// run nothing is in flight (the agent sends all it holds when the dataplane stops), so every
/// sample taken was sent or was of a packet the graph dropped.
#[test]
fn bench_books_balance_per_run() {
    let scenarios = ["--scenario", "ip4-ecmp64", "--scenario", "mpls-core", "--sflow-rates", "100"];
    let counted = [&["bench", "--json", "--packets", "100000"][..], &scenarios].concat();
    let timed = [&["bench", "--json", "--runs", "2", "--seconds", "0.3", "--warmup", "0.1"][..], &scenarios].concat();
    for args in [counted, timed] {
        let (ok, out, err) = vecflow(&args);
        assert!(ok, "{args:?}: {err}");
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        let rows = v["scenarios"].as_array().unwrap();
        assert_eq!(rows.len(), 2, "{args:?}: {out}");
        for row in rows {
            let u = |k: &str| row[k].as_u64().unwrap_or_else(|| panic!("{k} in {row}"));
            let (taken, sent, of_drops) = (u("samples_taken"), u("samples_sent"), u("samples_of_drops"));
            assert!(taken > 100, "{args:?}: {row}");
            assert!(sent <= taken, "more samples sent than taken ({args:?}): {row}");
            assert_eq!(taken - sent, of_drops, "taken − sent = of drops, none in flight ({args:?}): {row}");
        }
    }
}

/// With several runs, each configuration reports its median and its fastest run, and the
/// sampled one the loss paired with the runs without sFlow.
#[test]
fn bench_reports_median_minimum_and_paired_loss() {
    let args = ["bench", "--json", "--runs", "3", "--seconds", "0.1", "--warmup", "0.05", "--scenario", "ip4-lab"];
    let (ok, out, err) = vecflow(&[&args[..], &["--sflow-rates", "0,100"]].concat());
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let rows = v["scenarios"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for r in rows {
        let (median, min) = (r["cycles_per_packet"].as_f64().unwrap(), r["cycles_per_packet_min"].as_f64().unwrap());
        assert!(min > 0.0 && min <= median, "{r}");
    }
    assert!(rows[0]["loss_paired"].is_null());
    assert!(rows[1]["loss_paired"].as_f64().is_some_and(|l| l.is_finite() && l < 1.0), "{}", rows[1]);
}

/// `--packets N` sends exactly N packets and measures them all.
#[test]
fn bench_with_a_packet_count_measures_exactly_those_packets() {
    let (ok, out, err) =
        vecflow(&["bench", "--json", "--scenario", "ip4-lab", "--sflow-rates", "0,100", "--packets", "5001"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    for row in v["scenarios"].as_array().unwrap() {
        assert_eq!(row["packets"].as_u64(), Some(5001), "{row}");
        for n in row["nodes"].as_array().unwrap() {
            assert_eq!(n["run_vectors"].as_u64(), Some(5001), "{n}");
        }
    }
    let sampled = &v["scenarios"][1];
    let chosen = sampled["samples_taken"].as_u64().unwrap() + sampled["samples_dropped"].as_u64().unwrap();
    assert!((25..=80).contains(&chosen), "{chosen} samples of 5001 packets at 1:100");
}

/// `sample-cost` measures a sample's cost to the worker directly.
#[test]
fn bench_measures_the_cost_of_a_sample() {
    let (ok, out, err) = vecflow(&["bench", "--json", "--seconds", "0.2", "--scenario", "sample-cost"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let row = &v["scenarios"][0];
    assert_eq!(row["name"], "sample-cost");
    let (rate, cycles) = (row["samples_per_s"].as_f64().unwrap(), row["cycles_per_sample"].as_f64().unwrap());
    assert!(rate > 1e5 && cycles > 1.0, "{row}");
    // Samples a second and cycles a sample describe the same clock.
    let hz = v["tsc_hz"].as_f64().unwrap();
    assert!((rate * cycles / hz - 1.0).abs() < 0.01, "{row}");
}

/// `--isa` runs every variant given in turn, each row naming its variant, the later ones with
/// their speedup over the first; the packets each forwards are the same.
#[test]
fn bench_runs_simd_variants_in_turn() {
    let (ok, out, err) = vecflow(&[
        "bench",
        "--json",
        "--scenario",
        "ip4-lab",
        "--sflow-rates",
        "0",
        "--packets",
        "4097",
        "--isa",
        "scalar,scalar",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let rows = v["scenarios"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["isa"] == "scalar" && r["packets"] == 4097), "{rows:?}");
    assert!(rows[0]["isa_speedup"].is_null());
    assert!(rows[1]["isa_speedup"].as_f64().is_some_and(|x| x > 0.0), "{}", rows[1]);
}

/// An unknown SIMD variant, in `--isa` or in `VECFLOW_ISA`, is refused naming it.
#[test]
fn unknown_simd_variants_are_refused() {
    let (ok, _, err) = vecflow(&["bench", "--scenario", "ip4-lab", "--isa", "sse9"]);
    assert!(!ok && err.contains("--isa: VECFLOW_ISA=sse9: not a variant"), "{err}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_vecflow"))
        .args(["bench", "--scenario", "ip4-lab", "--seconds", "0.1"])
        .env("VECFLOW_ISA", "sse9")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("VECFLOW_ISA=sse9: not a variant"), "{err}");
}

#[test]
fn bench_rejects_unknown_scenarios() {
    let (ok, _, err) = vecflow(&["bench", "--scenario", "nope"]);
    assert!(!ok);
    assert!(err.contains("--scenario nope: unknown; known: l2xc"), "{err}");
}

#[test]
fn demo_prints_status_lines_then_the_show_commands() {
    let port = std::net::UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let collector = format!("127.0.0.1:{port}");
    // The built-in lab with its samplers seeded (`sflow.seed`): the estimates below are judged
    // against a 95 % bound, which a sampler seeded afresh each run would miss one run in a few.
    let dir = tempfile::tempdir().unwrap();
    let lab = dir.path().join("lab.yaml");
    let yaml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/lab.yaml")).unwrap();
    assert!(yaml.contains("\nsflow:\n"), "examples/lab.yaml has a top-level sflow section");
    std::fs::write(&lab, yaml.replacen("\nsflow:\n", "\nsflow:\n  seed: 38\n", 1)).unwrap();
    let (ok, out, err) =
        vecflow(&["demo", "--duration", "2", "--collector", &collector, "--config", lab.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert_eq!(out.lines().filter(|l| l.starts_with('[') && l.contains("Mpps")).count(), 2, "{out}");
    for cmd in ["vecflow# show interface", "vecflow# show errors", "vecflow# show runtime", "vecflow# show sflow"] {
        assert!(out.contains(cmd), "{cmd} missing:\n{out}");
    }
    assert!(out.contains("l2-xconnect") && out.contains("ip4-rewrite"), "{out}");
    // The collector in the demo saw the lab's sFlow: agents, interfaces, counters, discards,
    // and the estimate table for the four sampled ports.
    assert!(out.contains(&format!("== what the collector on {collector} saw")), "{out}");
    assert!(out.contains("ttl_exceeded (257)"), "drop monitoring reported the TTL drops:\n{out}");
    // Each sampled port's estimate (Σ sampling rate over its samples) is within the 95 % bound
    // the row prints, 196/√samples %, of the packets the port really received.
    let table = out.split("== estimated vs true packets").nth(1).expect("estimate table");
    let rows: Vec<Vec<&str>> =
        table.lines().skip(2).map(|l| l.split_whitespace().collect::<Vec<_>>()).filter(|r| !r.is_empty()).collect();
    let ports: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    assert_eq!(ports, ["port4", "port5", "port6", "port7"], "one row per sampled port:\n{table}");
    for r in &rows {
        let [port, truth, estimate, samples, error_pct, bound_pct] = r[..] else { panic!("row {r:?}") };
        let num = |x: &str| x.parse::<f64>().unwrap_or_else(|e| panic!("{x} in {r:?}: {e}"));
        let (truth, estimate, samples, error_pct, bound_pct) =
            (num(truth), num(estimate), num(samples), num(error_pct), num(bound_pct));
        assert!(samples > 100.0 && truth > 0.0, "{r:?}");
        assert_eq!(estimate, samples * 1000.0, "the lab samples 1:1000 ({port})");
        let error = 100.0 * (estimate - truth).abs() / truth;
        assert!((error - error_pct).abs() <= 0.006, "{port}: prints {error_pct} % for an error of {error} %");
        assert!(
            (bound_pct - 196.0 / samples.sqrt()).abs() <= 0.006,
            "{port}: bound {bound_pct} % for {samples} samples"
        );
        assert!(
            error <= bound_pct,
            "{port}: estimated {estimate} for {truth} packets, {error:.2} % off, bound {bound_pct} %"
        );
    }
}

#[test]
fn demo_says_which_flag_to_change_when_the_collector_port_is_taken() {
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let at = taken.local_addr().unwrap().to_string();
    let (ok, _, err) = vecflow(&["demo", "--duration", "1", "--collector", &at]);
    assert!(!ok);
    assert!(err.contains(&format!("--collector {at}")) && err.contains("pick another with --collector"), "{err}");
}

#[test]
fn demo_reports_a_bad_config_by_field() {
    let dir = std::env::temp_dir().join(format!("vecflow-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("bad.yaml");
    std::fs::write(&f, "interfaces: {p0: {mtu: 5}}\n").unwrap();
    let (ok, _, err) = vecflow(&["demo", "--config", f.to_str().unwrap(), "--duration", "1"]);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!ok);
    assert!(err.contains("interfaces.p0.mtu: 5 is not allowed; allowed: 68 to 2030"), "{err}");
}

#[test]
fn run_names_the_field_of_a_missing_host_interface_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("r.yaml");
    std::fs::write(
        &f,
        "metrics: {enabled: false}\ninterfaces: {wan0: {driver: af-packet, host-interface: vf-missing0, addresses: [10.9.0.1/24]}}\n",
    )
    .unwrap();
    let socket = dir.path().join("api.sock");
    let (ok, _, err) = vecflow(&["run", "--socket", socket.to_str().unwrap(), "-c", f.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        err.contains("interfaces.wan0.host-interface: vf-missing0: no Linux interface named 'vf-missing0'"),
        "{err}"
    );
    std::fs::write(&f, "metrics: {enabled: false}\ninterfaces: {wan0: {driver: af-packet}}\n").unwrap();
    let (ok, _, err) = vecflow(&["run", "--socket", socket.to_str().unwrap(), "-c", f.to_str().unwrap()]);
    assert!(!ok && err.contains("interfaces.wan0.host-interface: (missing) is not allowed"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}

/// `vecflow check` validates a file offline: the examples pass, a bad value is named with its
/// field and allowed range, and the exit status says which.
#[test]
fn check_validates_a_configuration_without_a_daemon() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    for example in
        ["examples/lab.yaml", "examples/router.yaml", "examples/ip6.yaml", "examples/vrf.yaml", "contrib/vecflow.yaml"]
    {
        let path = format!("{root}/{example}");
        let (ok, out, err) = vecflow(&["check", "-c", &path]);
        assert!(ok, "{example}: {err}");
        assert!(out.starts_with(&format!("{path}: ok (")), "{out}");
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "interfaces:\n  p0: {mtu: 9999}\n").unwrap();
    let (ok, out, err) = vecflow(&["check", "-c", bad.to_str().unwrap()]);
    assert!(!ok && out.is_empty(), "{out}");
    assert!(err.contains("interfaces.p0.mtu: 9999") && err.contains("allowed"), "{err}");
    let (ok, _, err) = vecflow(&["check", "-c", dir.path().join("missing.yaml").to_str().unwrap()]);
    assert!(!ok && err.contains("reading"), "{err}");
}

/// `vecflow generate` writes a man page per subcommand and completion scripts, from the same
/// definitions the program parses its options with.
#[test]
fn generate_writes_man_pages_and_completions() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, err) = vecflow(&["generate", "man", dir.path().to_str().unwrap()]);
    assert!(ok, "{err}");
    for page in ["vecflow.1", "vecflow-run.1", "vecflow-ctl.1", "vecflow-check.1", "vecflow-collect.1"] {
        let text = std::fs::read_to_string(dir.path().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH"), "{page} is a man page");
    }
    let run = std::fs::read_to_string(dir.path().join("vecflow-run.1")).unwrap();
    assert!(run.contains("socket"), "vecflow-run.1 describes --socket");
    let (ok, bash, err) = vecflow(&["generate", "completions", "bash"]);
    assert!(ok && bash.contains("complete -F") && bash.contains("vecflow"), "{err}");
    let (ok, zsh, err) = vecflow(&["generate", "completions", "zsh"]);
    assert!(ok && zsh.starts_with("#compdef vecflow"), "{err}");
}
