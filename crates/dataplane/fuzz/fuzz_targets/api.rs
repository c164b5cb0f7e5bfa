//! Any bytes on a connection to the real API server ([`api::server::Server`], the one
//! `vecflow run` binds), whose calls are answered as `vecflow run`'s main thread answers
//! them: commands through the CLI registry, `plan` and `apply` through
//! [`dataplane::control::plan::plan_yaml`], against one running dataplane built once per
//! process (`common/running.rs`). After every
//! input: no panic; every reply is one JSON-RPC 2.0 response line with a result or an error,
//! at most one per request line; the dataplane still answers `show interface`.
#![no_main]

use api::server::{Access, CALL_QUEUE, Call, Request, Server};
use api::{ApiError, CommandReply, code};
use dataplane::config::Config;
use dataplane::control::cli::Registry;
use dataplane::control::engine::Dataplane;
use libfuzzer_sys::fuzz_target;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, sync_channel};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

#[path = "common/running.rs"]
mod running;

struct Harness {
    dp: Dataplane,
    /// [`running::BASE`], parsed once: parsing it again after every input took a fifth of
    /// the target's time.
    base: Config,
    registry: Registry,
    calls: Receiver<Call>,
    socket: PathBuf,
    _server: Server,
}

fn harness() -> &'static Mutex<Harness> {
    static H: OnceLock<Mutex<Harness>> = OnceLock::new();
    H.get_or_init(|| {
        let (dp, registry, base) = running::start();
        let (tx, calls) = sync_channel(CALL_QUEUE);
        let dir = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" };
        let socket = PathBuf::from(dir).join(format!("vecflow-fuzz-api-{}.sock", std::process::id()));
        let commands = registry.commands().iter().map(|c| (c.words, c.help)).collect();
        let server = Server::bind(&socket, Access::default(), commands, tx).expect("the API socket");
        Mutex::new(Harness { dp, base, registry, calls, socket, _server: server })
    })
}

/// LeakSanitizer's suppressions for this target: the server's client threads end after the
/// reply is read, so their thread-local channel context and its destructor registration can
/// still be alive when a leak check runs. Nothing else is suppressed.
#[unsafe(no_mangle)]
pub extern "C" fn __lsan_default_suppressions() -> *const std::ffi::c_char {
    c"leak:std::sync::mpmc::context\nleak:__cxa_thread_atexit_impl\n".as_ptr()
}

/// Answers `call` as `vecflow run`'s main thread does.
fn answer(h: &mut Harness, call: Call) {
    let failed = |e: String| ApiError::new(code::COMMAND_FAILED, e);
    let reply = match &call.request {
        Request::Command(line) => {
            h.registry.execute(&mut h.dp, line).map(|r| CommandReply { text: r.text, json: r.json }).map_err(failed)
        }
        Request::Plan(yaml) | Request::Apply(yaml) => {
            let apply = matches!(call.request, Request::Apply(_));
            dataplane::control::plan::plan_yaml(&mut h.dp, yaml, apply)
                .map(|(text, json)| CommandReply { text, json })
                .map_err(failed)
        }
        Request::Metrics => Err(failed("not served here".into())),
    };
    call.answer(reply);
}

fuzz_target!(|data: &[u8]| {
    let mut h = harness().lock().unwrap_or_else(|p| p.into_inner());
    let mut stream = UnixStream::connect(&h.socket).expect("the server accepts");
    stream.write_all(data).expect("the server reads");
    stream.shutdown(std::net::Shutdown::Write).expect("a half close");
    stream.set_nonblocking(true).expect("non-blocking");
    let (mut replies, mut buf) = (Vec::new(), [0u8; 65536]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        while let Ok(call) = h.calls.try_recv() {
            answer(&mut h, call);
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => replies.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => std::thread::sleep(Duration::from_micros(20)),
            Err(e) => panic!("reading replies: {e}"),
        }
        assert!(Instant::now() < deadline, "the server answered nothing for 10 s");
    }
    let requests = data.split(|&b| b == b'\n').count();
    let lines: Vec<&[u8]> = replies.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    assert!(lines.len() <= requests, "{} replies to {requests} lines", lines.len());
    assert!(replies.is_empty() || replies.ends_with(b"\n"), "replies end with a newline");
    for line in lines {
        let v: serde_json::Value = serde_json::from_slice(line).expect("a reply is JSON");
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        assert!(v.get("result").is_some() != v.get("error").is_some(), "a result or an error: {v}");
    }
    let h = &mut *h;
    assert!(h.registry.execute(&mut h.dp, "show interface").is_ok());
    // Back to the base configuration, so that each input starts from the same state (and a
    // crash reproduces from its input alone). An input that left the configuration as it was
    // needs none: what lives outside it (neighbors, counters, traces, the flow cache) an apply
    // does not reset either, and skipping it saves a quarter of the target's time. With
    // VECFLOW_FUZZ_API_CHECK=1 it applies anyway and asserts that every `show` reads the same
    // both ways (run over the seed corpus, docs/testing.md).
    if h.dp.config() != &h.base {
        h.dp.apply(&h.base).expect("the base applies again");
    } else if check_mode() {
        let skipped = shows(h);
        h.dp.apply(&h.base).expect("the base applies again");
        let applied = shows(h);
        for ((command, a), (_, b)) in skipped.iter().zip(&applied) {
            assert_eq!(
                without_durations(a),
                without_durations(b),
                "`{command}` after applying the unchanged base differs from without"
            );
        }
    }
});

/// Whether `VECFLOW_FUZZ_API_CHECK` asks to apply the base after every input and compare.
fn check_mode() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os("VECFLOW_FUZZ_API_CHECK").is_some_and(|v| v != "0"))
}

/// What every `show` command of the registry prints, but `show runtime`, whose clocks move
/// between two reads whatever happens.
fn shows(h: &mut Harness) -> Vec<(&'static str, String)> {
    let words: Vec<&'static str> = h
        .registry
        .commands()
        .iter()
        .map(|c| c.words)
        .filter(|w| w.starts_with("show ") && *w != "show runtime")
        .collect();
    words
        .into_iter()
        .map(|w| (w, h.registry.execute(&mut h.dp, w).map_or_else(|e| format!("error: {e}"), |r| r.text)))
        .collect()
}

/// `text` with the numbers of its durations masked (`up 0.1 s`, `longest agent pause 201 µs`):
/// they move between two reads whatever happens.
fn without_durations(text: &str) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let unit = |i: usize| words.get(i).and_then(|w| w.split(|c: char| !c.is_alphabetic()).next());
    let masked: Vec<&str> = words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let duration = matches!(unit(i + 1), Some("s" | "ms" | "µs" | "ns"));
            if duration && w.starts_with(|c: char| c.is_ascii_digit()) { "#" } else { w }
        })
        .collect();
    masked.join(" ")
}
