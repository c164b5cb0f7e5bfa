//! `vecflow run`: the daemon. Starts the dataplane from a YAML file and runs until SIGINT or
//! SIGTERM, or, when it replays captures (driver `pcap`, none looping), until every capture
//! has been read and forwarded. Then it stops cleanly: workers stopped and their drivers detached (sockets closed,
//! rings unmapped, promiscuous mode dropped), capture files written out, the sFlow agent's
//! last samples and a final counter poll sent. While it runs, the main thread keeps the neighbor table (what the
//! workers learn from ARP, ageing, refresh probes) and re-reads the kernel's link facts once
//! a second, and runs the commands `vecflow ctl` sends through the API socket (between those
//! chores, so a command never races the dataplane's own bookkeeping). Logs go to stderr
//! through `tracing` (`-v`, `-vv` or `RUST_LOG` for more).

use crate::metrics::{self, Exporter};
use anyhow::Context;
use api::server::{Access, CALL_QUEUE, Call, Request, Server, refuse_pending};
use api::{ApiError, CommandReply, code};
use dataplane::control::privileges;
use dataplane::runtime::privileges::{
    CapsHashSet, main_started, names as cap_names, report as thread_caps, thread_start,
};
use dataplane::{Config, Dataplane};
use sd_notify::NotifyState;
use serde_json::Value;
use std::path::PathBuf;
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

/// How often the main thread wakes to look after the running dataplane (neighbors learned by
/// the workers wait at most this long to be used).
const TICK: Duration = Duration::from_millis(10);
/// How often link state, speed and kernel drops are re-read.
const LINK_REFRESH: Duration = Duration::from_secs(1);

/// Options of `vecflow run`.
#[derive(clap::Args)]
pub struct Args {
    /// Configuration file (YAML).
    #[arg(short = 'c', long)]
    config: PathBuf,
    /// More log output: -v debug, -vv trace (RUST_LOG, when set, wins).
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
    /// When stopped, print `show interface`, `show errors`, `show runtime`, `show ip
    /// neighbors` (and `show sflow`) to stdout: a whole run's totals, e.g. for a benchmark.
    #[arg(long)]
    show_at_exit: bool,
    /// The API socket `vecflow ctl` talks to (created mode 0600, or as `api` in the
    /// configuration says; its directory if missing).
    #[arg(long, default_value = api::DEFAULT_SOCKET)]
    socket: PathBuf,
}

/// Logs to stderr at `info`, or more with `-v`; `RUST_LOG` overrides both.
fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    // A second call (tests run several commands in one process) keeps the first subscriber.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(ansi).try_init();
}

/// SIGINT, SIGTERM and SIGHUP: the signals that stop vecflow.
fn stop_signals() -> libc::sigset_t {
    // SAFETY: the set is initialised by sigemptyset before sigaddset writes to it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        set
    }
}

/// Blocks the stop signals in the calling thread, and so in every thread it starts after.
fn block_stop_signals() {
    // SAFETY: pthread_sigmask only reads the set.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &stop_signals(), std::ptr::null_mut()) };
}

/// Takes a pending stop signal, if one came; never waits.
fn stop_signalled() -> bool {
    let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: sigtimedwait reads the set and the timeout and writes no info (null).
    unsafe { libc::sigtimedwait(&stop_signals(), std::ptr::null_mut(), &zero) > 0 }
}

/// The id of group `name` (`api.socket-group`), or the error naming the field.
fn group_id(name: &str) -> anyhow::Result<u32> {
    let c = std::ffi::CString::new(name).context("api.socket-group")?;
    // SAFETY: group lookups fill `group` and point into `buf`, both live for the call; the
    // result pointer is checked before use.
    unsafe {
        let mut group: libc::group = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 16384];
        let mut found: *mut libc::group = std::ptr::null_mut();
        let r = libc::getgrnam_r(c.as_ptr(), &mut group, buf.as_mut_ptr(), buf.len(), &mut found);
        if r != 0 || found.is_null() {
            anyhow::bail!("api.socket-group: {name} is not allowed; allowed: a group this host has (/etc/group)");
        }
        Ok(group.gr_gid)
    }
}

/// Says which capabilities vecflow keeps while running (the main thread `keep`, every other
/// thread none), and warns about any thread that has more once threads still starting had a
/// second to drop theirs.
fn log_capabilities(config: &Config) {
    let keep = privileges::runtime_needs(config);
    let none = CapsHashSet::new();
    // The main thread comes first.
    let over = |threads: &[(String, CapsHashSet)]| -> Vec<String> {
        threads
            .iter()
            .enumerate()
            .filter(|(k, (_, have))| !have.is_subset(if *k == 0 { &keep } else { &none }))
            .map(|(_, (name, have))| format!("{name} ({})", cap_names(have)))
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(1);
    let threads = loop {
        let threads = thread_caps();
        let settled = threads.as_ref().map_or(true, |t| over(t).is_empty());
        if settled || Instant::now() >= deadline {
            break threads;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    match threads {
        Ok(threads) if over(&threads).is_empty() => tracing::info!(
            "capabilities while running: {} in the main thread, none in the {} others",
            cap_names(&keep),
            threads.len() - 1
        ),
        Ok(threads) => tracing::warn!(
            "capabilities while running: {} in the main thread, none in the others; threads with more: {}",
            cap_names(&keep),
            over(&threads).join(", ")
        ),
        Err(e) => tracing::warn!("cannot read the threads' capabilities: {e}"),
    }
}

/// What `yaml` would change (as commands), applied too when `apply`.
fn plan(dp: &mut Dataplane, yaml: &str, apply: bool) -> Result<CommandReply, ApiError> {
    dataplane::control::plan::plan_yaml(dp, yaml, apply)
        .map(|(text, json)| CommandReply { text, json })
        .map_err(|e| ApiError::new(code::COMMAND_FAILED, e))
}

/// Runs the daemon until SIGINT or SIGTERM, or until its captures are replayed.
pub fn run(args: Args) -> anyhow::Result<()> {
    // SIGINT, SIGTERM and SIGHUP stay blocked in every thread (they inherit it) and pending
    // until the main loop takes them (within a tick): no signal thread, so no thread keeps
    // what the main thread drops, and a signal during start is handled once start ends.
    block_stop_signals();
    init_logging(args.verbose);
    let source = args.config.display().to_string();
    let text = std::fs::read_to_string(&args.config).with_context(|| format!("reading {source}"))?;
    let config = Config::load(&text).with_context(|| format!("in {source}"))?;
    privileges::check(&config).map_err(anyhow::Error::msg).with_context(|| format!("starting {source}"))?;
    privileges::plan(&config);
    let registry = dataplane::control::cli::Registry::with_builtins();
    let (calls_tx, calls) = sync_channel(CALL_QUEUE);
    let commands = registry.commands().iter().map(|c| (c.words, c.help)).collect();
    let access = Access {
        mode: config.api.mode()?,
        gid: config.api.socket_group.as_deref().map(group_id).transpose()?,
        thread_start,
    };
    let api = Server::bind(&args.socket, access, commands, calls_tx.clone()).context("api socket")?;
    let metrics = match config.metrics.enabled {
        true => Some(Exporter::bind(config.metrics.address, calls_tx)?),
        false => None,
    };
    let mut dp = Dataplane::start(&config).with_context(|| format!("starting {source}"))?;
    // Everything privileged is open: the main thread drops to what it needs while running,
    // and the signal thread starts after, with no more.
    main_started();
    log_capabilities(&config);
    tracing::info!(
        "vecflow {} running {source}: {} interfaces, {} worker(s); SIGINT or SIGTERM stops it",
        env!("CARGO_PKG_VERSION"),
        dp.interfaces().len(),
        config.workers.count
    );
    // systemd (Type=notify) and units ordered after vecflow: ready once the ports are attached
    // and the API answers. Without NOTIFY_SOCKET this does nothing.
    let status = format!("forwarding on {} interfaces", dp.interfaces().len());
    if let Err(e) = sd_notify::notify(&[NotifyState::Ready, NotifyState::Status(&status)]) {
        tracing::warn!("could not tell systemd vecflow is ready (NOTIFY_SOCKET): {e}");
    }
    let mut next_refresh = Instant::now() + LINK_REFRESH;
    let mut next_tick = Instant::now() + TICK;
    while !stop_signalled() {
        if dp.replay_finished() {
            tracing::info!("every capture has been replayed");
            break;
        }
        let now = Instant::now();
        let answer = |call: Call, dp: &mut Dataplane| {
            let reply = match &call.request {
                Request::Command(line) => registry
                    .execute(dp, line)
                    .map(|r| CommandReply { text: r.text, json: r.json })
                    .map_err(|e| ApiError::new(code::COMMAND_FAILED, e)),
                Request::Metrics => Ok(CommandReply { text: metrics::encode(dp), json: Value::Null }),
                Request::Plan(yaml) => plan(dp, yaml, false),
                Request::Apply(yaml) => plan(dp, yaml, true),
            };
            call.answer(reply);
        };
        if now < next_tick {
            if let Ok(call) = calls.recv_timeout(next_tick - now) {
                answer(call, &mut dp);
            }
            continue;
        }
        // While the kernel's routes wait to be mirrored the main thread goes on at once,
        // answering the calls that came during the slice first.
        while let Ok(call) = calls.try_recv() {
            answer(call, &mut dp);
        }
        dp.service();
        next_tick = if dp.kernel_routes_waiting() { Instant::now() } else { now + TICK };
        if Instant::now() >= next_refresh {
            dp.refresh_links();
            next_refresh += LINK_REFRESH;
        }
    }
    tracing::info!("stopping");
    let _ = sd_notify::notify(&[NotifyState::Stopping]);
    refuse_pending(calls);
    drop((api, metrics));
    dp.stop().context("stopping the dataplane")?;
    tracing::info!("stopped");
    if args.show_at_exit {
        let mut commands = vec!["show interface", "show errors", "show runtime", "show ip neighbors"];
        if dp.sflow().is_some() {
            commands.push("show sflow");
        }
        if dp.linux_cp().is_some() {
            commands.push("show lcp");
        }
        for cmd in commands {
            let reply = registry.execute(&mut dp, cmd).map_err(anyhow::Error::msg)?;
            println!("vecflow# {cmd}\n{}", reply.text);
        }
    }
    Ok(())
}
