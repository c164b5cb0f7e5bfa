//! The `vecflow` binary as users run it.

use std::process::Command;

fn vecflow(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_vecflow")).args(args).output().expect("run vecflow");
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

#[test]
fn bench_json_has_the_documented_shape_and_only_json_on_stdout() {
    let (ok, out, err) = vecflow(&["bench", "--json", "--seconds", "0.2", "--warmup", "0.1", "--scenario", "l2xc"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("stdout is one JSON document");
    assert!(v["tsc_hz"].as_u64().unwrap() > 0);
    let s = &v["scenarios"][0];
    assert_eq!(s["name"], "l2xc");
    assert_eq!(s["sflow_rate"], 0);
    for k in ["mpps", "cycles_per_packet", "vectors_per_call"] {
        assert!(s[k].as_f64().unwrap() > 0.0, "{k}");
    }
    let names: Vec<&str> = s["nodes"].as_array().unwrap().iter().map(|n| n["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["generator-input", "ethernet-input", "l2-xconnect", "interface-output", "generator-tx"]);
    assert!(s["nodes"][0]["clocks_per_packet"].as_f64().unwrap() > 0.0);
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
    let (ok, out, err) = vecflow(&["demo", "--duration", "2", "--collector", &collector]);
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
    let table = out.split("== estimated vs true packets").nth(1).expect("estimate table");
    for port in ["port4", "port5", "port6", "port7"] {
        assert!(table.lines().any(|l| l.starts_with(port)), "{port} in\n{table}");
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
