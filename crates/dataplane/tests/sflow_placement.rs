//! Where the sFlow agent thread runs: never on a CPU a (polling) worker is pinned to, when the
//! process may use another one, and there at `sflow.agent-nice`. (A file of its own: the test
//! looks for the one agent thread of its process.)

use dataplane::{Config, Dataplane};
use std::time::Duration;

/// The CPUs of a `Cpus_allowed_list` line of the task status file in `dir`.
fn cpus_of(dir: &std::path::Path) -> Option<Vec<u16>> {
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    let list = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?.trim().to_string();
    let mut cpus = vec![];
    for part in list.split(',') {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(a.parse::<u16>().ok()?..=b.parse::<u16>().ok()?);
    }
    Some(cpus)
}

/// The /proc directory of the thread of this process named `name`.
fn task(name: &str) -> Option<std::path::PathBuf> {
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .find_map(|t| (std::fs::read_to_string(t.path().join("comm")).ok()?.trim_end() == name).then(|| t.path()))
}

/// The CPUs a thread of this process named `name` may run on.
fn allowed_cpus(name: &str) -> Option<Vec<u16>> {
    cpus_of(&task(name)?)
}

/// The nice value of the thread of this process named `name` (field 19 of its stat).
fn nice(name: &str) -> Option<i32> {
    let stat = std::fs::read_to_string(task(name)?.join("stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(16)?.parse().ok()
}

#[test]
fn the_agent_keeps_off_the_workers_cpus() {
    let mine = cpus_of(std::path::Path::new("/proc/thread-self")).expect("this thread's Cpus_allowed_list");
    if mine.len() < 2 {
        eprintln!("SKIP: this process may use {mine:?}, one CPU: the agent has nowhere else to go");
        return;
    }
    let worker_cpu = *mine.last().unwrap();
    let config = Config::load(&format!(
        "
workers: {{count: 1, cores: [{worker_cpu}]}}
sflow: {{sampling-rate: 100, agent-address: 192.0.2.1, collectors: [{{address: 127.0.0.1, port: 9}}]}}
interfaces:
  p0: {{l2xc: p1, sflow: {{}}, generator: {{streams: [{{template: l2, rate-pps: 1000}}]}}}}
  p1: {{l2xc: p0}}
"
    ))
    .unwrap();
    let mut dp = Dataplane::start(&config).unwrap();
    // The agent sets its affinity and nice first thing when it starts, the worker its
    // affinity.
    let (mut agent, mut worker) = (None, None);
    for _ in 0..200 {
        agent = allowed_cpus("vecflow-sflow").filter(|c| !c.contains(&worker_cpu));
        worker = allowed_cpus("vecflow-wk-0").filter(|c| c == &[worker_cpu]);
        if agent.is_some() && worker.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(Duration::from_millis(50));
    let (agent_nice, own_nice) = (nice("vecflow-sflow"), nice("vecflow-wk-0"));
    dp.stop().unwrap();
    assert!(worker.is_some(), "the worker is pinned to CPU {worker_cpu}");
    let agent = agent.unwrap_or_else(|| panic!("the agent may still run on CPU {worker_cpu}"));
    assert_eq!(agent, mine[..mine.len() - 1], "the agent runs on every other CPU the process may use");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        assert_eq!(agent_nice, Some(-10), "apart from the workers, the agent runs at sflow.agent-nice (default -10)");
    } else {
        eprintln!("not root: the agent keeps the process's nice");
        assert_eq!(agent_nice, own_nice);
    }
}
