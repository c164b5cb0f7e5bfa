//! Least privilege: the routed lab of `netns.rs` with vecflow run by an unprivileged user
//! (`nobody`) under `setpriv`, holding only the capabilities its drivers need (in its
//! bounding set too), from a copy of the binary and a runtime directory that user owns.
//!
//! ```text
//!  ns A: vfa0 10.0.1.2/24 ──veth── wa ┐ ns R: setpriv --reuid nobody … vecflow run
//!  ns B: vfb0 10.0.2.2/24 ──veth── wb ┘
//! ```
//!
//! On AF_PACKET (`CAP_NET_RAW`) and on AF_XDP (`CAP_NET_RAW`, `CAP_NET_ADMIN`, `CAP_BPF`,
//! `CAP_IPC_LOCK`) it checks pings both ways, that once running the main thread holds no more
//! than vecflow says it keeps and every other thread nothing (`/proc/PID/task/*/status`), the
//! API socket's group and mode
//! (`api.socket-group`, `api.socket-mode`), and that without `CAP_BPF` an AF_XDP start fails
//! with an error naming it. Needs root, `ip`, `ping` and `setpriv` (`./test.sh` installs them);
//! everything it creates has names unique to the run and is removed when it ends.

mod common;

#[path = "netns/lab.rs"]
#[allow(dead_code)] // the routed labs' helpers this lab does not use
mod lab;

use lab::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

/// The unprivileged user (and group) vecflow runs as.
const NOBODY: u32 = 65534;

#[test]
fn af_packet_as_an_unprivileged_user_with_cap_net_raw() {
    unprivileged_lab(Port::AfPacket, &["net_raw"], "none");
}

#[test]
fn af_xdp_as_an_unprivileged_user_with_four_capabilities() {
    unprivileged_lab(Port::AfXdp, &["net_raw", "net_admin", "bpf", "ipc_lock"], "CAP_NET_ADMIN");
}

#[test]
fn af_xdp_without_cap_bpf_fails_naming_it() {
    if !can_run() {
        return;
    }
    let lab = Lab::new("1500");
    lab.facing("a", Port::AfXdp);
    lab.facing("b", Port::AfXdp);
    let dir = owned_dir();
    let launch = setpriv(dir.path(), &["net_raw", "net_admin", "ipc_lock"]);
    let launch: Vec<&str> = launch.iter().map(String::as_str).collect();
    let vecflow = spawn_vecflow_in(&lab.r, dir.path(), &config(&lab, Port::AfXdp), &launch);
    let status = vecflow.wait_exit(Duration::from_secs(20));
    let log = std::fs::read_to_string(dir.path().join("vecflow.log")).unwrap();
    assert!(!status.success(), "{log}");
    assert!(
        log.contains("CAP_BPF is needed for loading the XDP program of interface wa")
            && log.contains("missing: CAP_BPF"),
        "the error names the capability:\n{log}"
    );
}

/// A runtime directory owned by the unprivileged user, holding a copy of the binary it owns.
fn owned_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let binary = dir.path().join("vecflow");
    std::fs::copy(env!("CARGO_BIN_EXE_vecflow"), &binary).unwrap();
    for path in [dir.path(), binary.as_path()] {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    dir
}

/// `setpriv` as `nobody`, with capabilities `caps` (setpriv's names) inherited, ambient and
/// alone in the bounding set, then the binary in `dir`.
fn setpriv(dir: &Path, caps: &[&str]) -> Vec<String> {
    let list: String = caps.iter().map(|c| format!(",+{c}")).collect();
    vec![
        "setpriv".into(),
        format!("--reuid={NOBODY}"),
        format!("--regid={NOBODY}"),
        "--clear-groups".into(),
        format!("--inh-caps=-all{list}"),
        format!("--ambient-caps=-all{list}"),
        format!("--bounding-set=-all{list}"),
        "--".into(),
        dir.join("vecflow").display().to_string(),
    ]
}

fn config(lab: &Lab, port: Port) -> String {
    format!(
        "workers: {{count: 1}}
metrics: {{enabled: false}}
api: {{socket-group: nogroup, socket-mode: '0660'}}
interfaces:
  wa: {{index: 1, {}, host-interface: {}, addresses: [10.0.1.1/24]}}
  wb: {{index: 2, {}, host-interface: {}, addresses: [10.0.2.1/24]}}
",
        port.yaml(1, "adaptive"),
        lab.veth("a", 1),
        port.yaml(1, "adaptive"),
        lab.veth("b", 1),
    )
}

/// The lab on driver `port`, vecflow holding `caps`; once running it must keep `keeps`.
fn unprivileged_lab(port: Port, caps: &[&str], keeps: &str) {
    if !can_run() {
        return;
    }
    let lab = Lab::new("1500");
    lab.facing("a", port);
    lab.facing("b", port);
    lab.address("a", "10.0.1.2/24", Some("10.0.1.1"));
    lab.address("b", "10.0.2.2/24", Some("10.0.2.1"));
    let dir = owned_dir();
    let launch = setpriv(dir.path(), caps);
    let launch: Vec<&str> = launch.iter().map(String::as_str).collect();
    let mut vecflow = spawn_vecflow_in(&lab.r, dir.path(), &config(&lab, port), &launch);
    let started = wait_for_log(&dir.path().join("vecflow.log"), "running");
    assert!(started.contains(&format!("capabilities while running: {keeps} in the main thread, none in")), "{started}");

    // Every thread of the process, read by the kernel: the main thread holds no more than
    // that, every other thread nothing.
    let pid = vecflow.child().id();
    let mut threads = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let task = task.unwrap().path();
        let main = task.file_name().and_then(|n| n.to_str()) == Some(&pid.to_string());
        let allowed: u64 = if keeps == "none" || !main { 0 } else { 1 << 12 }; // CAP_NET_ADMIN is 12
        let status = std::fs::read_to_string(task.join("status")).unwrap_or_default();
        let name = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        for set in ["CapEff:", "CapPrm:"] {
            let mask = status.lines().find_map(|l| l.strip_prefix(set)).map(str::trim).unwrap_or("0");
            let bits = u64::from_str_radix(mask, 16).unwrap();
            assert_eq!(bits & !allowed, 0, "thread {} {set} {mask}", name.trim());
        }
        let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap_or_default().to_string();
        assert!(uid.split_whitespace().skip(1).all(|u| u == NOBODY.to_string()), "{uid}");
        threads += 1;
    }
    assert!(threads >= 3, "the main thread, a worker, the API thread: {threads}");

    // The API socket: nobody's, in group nogroup, mode 0660 (root still gets in).
    let socket = std::fs::metadata(dir.path().join("api.sock")).unwrap();
    assert_eq!((socket.uid(), socket.gid(), socket.mode() & 0o777), (NOBODY, NOBODY, 0o660));
    assert!(ctl(dir.path(), &["show", "interface"]).contains("wa"));

    for (from, to) in [(&lab.a, "10.0.2.2"), (&lab.b, "10.0.1.2")] {
        lab.ping(from, &["-c", "1", "-W", "1", to]); // ARP first
        let (ok, out) = lab.ping(from, &["-c", "3", "-i", "0.2", "-W", "2", to]);
        assert!(ok && out.contains("3 received"), "ping {to} from {from}:\n{out}");
    }
    let show = lab.stop_vecflow(vecflow, dir.path());
    assert!(show.contains("wa"), "{show}");
}
