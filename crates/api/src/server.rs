//! The daemon's side of the API: a Unix socket, a thread that accepts clients and one thread
//! per client that reads its requests. Commands are not run there: each goes to the main
//! thread (which owns the dataplane) as a [`Call`], and the client's thread waits for the
//! answer. Threads, blocking I/O and channels: no async runtime.
//!
//! Limits that keep one client from disturbing the daemon or the others: at most
//! [`MAX_CLIENTS`] connections (one more is told [`code::BUSY`] and closed); a request line
//! longer than [`MAX_REQUEST`] is refused and its connection closed; a request must arrive
//! whole within [`REQUEST_TIMEOUT`] of its first byte, and a connection idle for
//! [`IDLE_TIMEOUT`] is closed.

use crate::{API_VERSION, ApiError, CommandReply, MAX_REQUEST, code};
use anyhow::{Context, bail};
use serde_json::{Value, json};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Most clients connected at once.
pub const MAX_CLIENTS: usize = 32;
/// Longest a request may take to arrive once its first byte has.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest a connection may stay idle between requests.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest a client waits for the main thread to run its command.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a client's thread wakes to check its deadlines and the stop flag.
const READ_SLICE: Duration = Duration::from_millis(200);
/// Requests waiting for the main thread, at most.
pub const CALL_QUEUE: usize = 64;

/// What a client asks the main thread for.
pub enum Request {
    /// Run a command line, e.g. `show interface wan0`.
    Command(String),
    /// The Prometheus metrics (answered as the reply's text).
    Metrics,
    /// What applying this configuration (YAML) would change, as commands.
    Plan(String),
    /// Apply this configuration (YAML), all or nothing.
    Apply(String),
}

/// A request waiting for the main thread, to be answered with [`Call::answer`].
pub struct Call {
    /// What is asked.
    pub request: Request,
    reply: SyncSender<Result<CommandReply, ApiError>>,
}

impl Call {
    /// A request whose answer goes to `reply`.
    pub fn new(request: Request, reply: SyncSender<Result<CommandReply, ApiError>>) -> Self {
        Call { request, reply }
    }

    /// Sends the answer to the waiting client (if it is still there).
    pub fn answer(self, result: Result<CommandReply, ApiError>) {
        let _ = self.reply.send(result);
    }
}

/// What every client thread shares.
struct Shared {
    calls: SyncSender<Call>,
    commands: Value,
    stop: AtomicBool,
    clients: AtomicUsize,
}

/// Who may connect to the API socket, and what its threads do first.
#[derive(Debug, Clone, Copy)]
pub struct Access {
    /// Permission bits of the socket file (connecting needs write permission).
    pub mode: u32,
    /// Group of the socket file; `None` keeps the process's.
    pub gid: Option<u32>,
    /// Run first by the acceptor thread (client threads are its children): vecflow drops
    /// its capabilities there.
    pub thread_start: fn(),
}

impl Default for Access {
    fn default() -> Self {
        Access { mode: 0o600, gid: None, thread_start: || {} }
    }
}

/// The listening API socket. Dropping it stops the acceptor at once and removes the socket
/// file if it is still the one this server created.
pub struct Server {
    path: PathBuf,
    /// The socket file this server created (device, inode), to remove it only if it is still
    /// ours: an operator or a cleanup job may have removed it, or another daemon bound the
    /// same path since.
    file: (u64, u64),
    /// The listening socket, shared with the acceptor; shut down to wake it from accept(2).
    listener: Arc<UnixListener>,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

impl Server {
    /// Listens on `path` (made mode 0600, then given `access`'s group and mode; its directory
    /// is created if missing). A socket file
    /// nobody answers on (left by a daemon that died) is replaced; one a live daemon answers
    /// on, or a path that is not a socket, is an error. `commands` (words and help of each
    /// command) is what the `commands` method lists; commands go to the main thread through
    /// `calls`.
    pub fn bind(
        path: &Path,
        access: Access,
        commands: Vec<(&'static str, &'static str)>,
        calls: SyncSender<Call>,
    ) -> anyhow::Result<Server> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o755)
                .create(dir)
                .with_context(|| format!("creating {}", dir.display()))?;
        }
        if let Ok(meta) = std::fs::symlink_metadata(path) {
            if !meta.file_type().is_socket() {
                bail!("{} exists and is not a socket; remove it or choose another --socket", path.display());
            }
            if UnixStream::connect(path).is_ok() {
                bail!("another vecflow is running: it answers on {} (choose another --socket)", path.display());
            }
            std::fs::remove_file(path).with_context(|| format!("removing the stale socket {}", path.display()))?;
        }
        // Created 0600 from the start (no moment where others could connect), then checked.
        // SAFETY: umask(2) only swaps the process's file mode mask.
        let old = unsafe { libc::umask(0o177) };
        let listener = UnixListener::bind(path);
        // SAFETY: as above, restoring the previous mask.
        unsafe { libc::umask(old) };
        let listener = listener.with_context(|| format!("listening on {}", path.display()))?;
        if let Some(gid) = access.gid {
            std::os::unix::fs::lchown(path, None, Some(gid))
                .with_context(|| format!("giving {} to group {gid}", path.display()))?;
        }
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(access.mode))
            .with_context(|| format!("chmod {:04o} {}", access.mode, path.display()))?;
        let file = file_identity(path).with_context(|| format!("reading back {}", path.display()))?;
        let listener = Arc::new(listener);
        let commands: Vec<Value> = commands.iter().map(|(w, h)| json!({"words": w, "help": h})).collect();
        let shared = Arc::new(Shared {
            calls,
            commands: json!({ "commands": commands }),
            stop: AtomicBool::new(false),
            clients: AtomicUsize::new(0),
        });
        let (s, l) = (shared.clone(), listener.clone());
        let acceptor = std::thread::Builder::new()
            .name("vecflow-api".into())
            .spawn(move || {
                (access.thread_start)();
                accept(&l, s)
            })
            .context("starting the API thread")?;
        Ok(Server { path: path.to_owned(), file, listener, shared, acceptor: Some(acceptor) })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shared.stop.store(true, Relaxed);
        // Wakes the acceptor out of accept(2) whatever became of the socket's path (a connect
        // to the path, the usual trick, finds nothing once the file is gone). Client threads
        // see the stop flag within READ_SLICE and are not waited for.
        wake_acceptor(&*self.listener);
        if let Some(t) = self.acceptor.take() {
            let _ = t.join();
        }
        if file_identity(&self.path).is_ok_and(|f| f == self.file) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The (device, inode) of the file at `path` (not following a symlink).
fn file_identity(path: &Path) -> std::io::Result<(u64, u64)> {
    std::fs::symlink_metadata(path).map(|m| (m.dev(), m.ino()))
}

/// Makes a thread blocked in accept(2) on `listener` return (with an error) at once, and every
/// later accept fail, by shutting the socket down (Linux). Borrowing the socket, not taking a
/// descriptor number, it can only shut down one the caller holds open.
pub fn wake_acceptor(listener: &impl AsFd) {
    // SAFETY: shutdown(2) on a descriptor borrowed for the call, so open; it touches no memory.
    unsafe { libc::shutdown(listener.as_fd().as_raw_fd(), libc::SHUT_RDWR) };
}

/// The acceptor: a thread per client, up to [`MAX_CLIENTS`], until the server stops.
fn accept(listener: &UnixListener, shared: Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stop.load(Relaxed) {
            return;
        }
        let Ok(mut stream) = stream else { continue };
        if shared.clients.fetch_add(1, Relaxed) >= MAX_CLIENTS {
            shared.clients.fetch_sub(1, Relaxed);
            let busy = ApiError::new(code::BUSY, format!("too many clients (at most {MAX_CLIENTS}); try again"));
            let _ = stream.set_write_timeout(Some(Duration::from_secs(1)));
            let _ = write_line(&mut stream, &error_response(Value::Null, busy));
            continue;
        }
        let s = shared.clone();
        let spawned = std::thread::Builder::new().name("vecflow-api-client".into()).spawn(move || {
            serve(stream, &s);
            s.clients.fetch_sub(1, Relaxed);
        });
        if spawned.is_err() {
            shared.clients.fetch_sub(1, Relaxed);
        }
    }
}

/// Reads one client's requests line by line and answers each, until it hangs up, breaks a
/// limit or the daemon stops.
fn serve(mut stream: UnixStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(READ_SLICE));
    let _ = stream.set_write_timeout(Some(REQUEST_TIMEOUT));
    let (mut pending, mut chunk) = (Vec::new(), vec![0u8; 64 * 1024]);
    let mut request_started: Option<Instant> = None;
    let mut idle_since = Instant::now();
    loop {
        while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=nl).collect();
            request_started = (!pending.is_empty()).then(Instant::now);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if write_line(&mut stream, &respond(&line[..nl], shared)).is_err() {
                return;
            }
            idle_since = Instant::now();
        }
        if pending.len() > MAX_REQUEST {
            let e = ApiError::new(code::TOO_LARGE, format!("request longer than {MAX_REQUEST} bytes"));
            let _ = write_line(&mut stream, &error_response(Value::Null, e));
            return;
        }
        let timed_out = match request_started {
            Some(t) => t.elapsed() > REQUEST_TIMEOUT,
            None => idle_since.elapsed() > IDLE_TIMEOUT,
        };
        if timed_out || shared.stop.load(Relaxed) {
            return;
        }
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => {
                if pending.is_empty() {
                    request_started = Some(Instant::now());
                }
                pending.extend_from_slice(&chunk[..n]);
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(_) => return,
        }
    }
}

/// Writes `v` as one line.
fn write_line(stream: &mut UnixStream, v: &Value) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(v).expect("a JSON value serializes");
    line.push(b'\n');
    stream.write_all(&line)
}

/// A JSON-RPC error response.
fn error_response(id: Value, e: ApiError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": e.code, "message": e.message}})
}

/// The response to one request line.
fn respond(line: &[u8], shared: &Shared) -> Value {
    let request: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => return error_response(Value::Null, ApiError::new(code::PARSE_ERROR, format!("not JSON: {e}"))),
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    match answer(&request, shared) {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(e) => error_response(id, e),
    }
}

/// The result of a parsed request.
fn answer(request: &Value, shared: &Shared) -> Result<Value, ApiError> {
    let invalid = |what: &str| ApiError::new(code::INVALID_REQUEST, what.to_string());
    if request.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid("not a JSON-RPC 2.0 request: \"jsonrpc\": \"2.0\" is missing"));
    }
    let method = request.get("method").and_then(Value::as_str).ok_or_else(|| invalid("\"method\" is missing"))?;
    let params = request.get("params").cloned().unwrap_or_else(|| json!({}));
    if !params.is_object() {
        return Err(ApiError::new(code::INVALID_PARAMS, "params: an object"));
    }
    match params.get("api") {
        None => {}
        Some(v) if v.as_u64() == Some(API_VERSION) => {}
        Some(v) => {
            return Err(ApiError::new(
                code::UNSUPPORTED_VERSION,
                format!("params.api: {v}: this daemon speaks API version {API_VERSION}"),
            ));
        }
    }
    match method {
        // This crate's version is the workspace's, which the vecflow binary shares.
        "version" => Ok(json!({"api": API_VERSION, "vecflow": env!("CARGO_PKG_VERSION")})),
        "commands" => Ok(shared.commands.clone()),
        "cli" => {
            let command = params.get("command").and_then(Value::as_str).ok_or_else(|| {
                ApiError::new(code::INVALID_PARAMS, "params.command: a command line, e.g. \"show runtime\"")
            })?;
            run_on_main_thread(Request::Command(command.to_string()), shared)
        }
        "plan" | "apply" => {
            let config = params.get("config").and_then(Value::as_str).ok_or_else(|| {
                ApiError::new(code::INVALID_PARAMS, "params.config: the whole configuration, as YAML text")
            })?;
            let request =
                if method == "plan" { Request::Plan(config.to_string()) } else { Request::Apply(config.to_string()) };
            run_on_main_thread(request, shared)
        }
        other => Err(ApiError::new(
            code::METHOD_NOT_FOUND,
            format!("method '{other}' does not exist; methods: {}", crate::METHODS.join(", ")),
        )),
    }
}

/// Hands `request` to the main thread and waits for its answer.
fn run_on_main_thread(request: Request, shared: &Shared) -> Result<Value, ApiError> {
    ask(&shared.calls, request, COMMAND_TIMEOUT).map(|reply| serde_json::to_value(reply).expect("a reply serializes"))
}

/// Answers every call still waiting for the main thread with "vecflow is stopping", and
/// closes the queue, so that a client or scrape asking later is told the same at once instead
/// of waiting for a thread that no longer listens. The main thread calls it when it stops,
/// before dropping the [`Server`] and the metrics exporter (whose threads may be waiting).
pub fn refuse_pending(calls: Receiver<Call>) {
    for call in calls.try_iter() {
        call.answer(Err(stopping()));
    }
}

/// The error of a request the daemon cannot run because it is stopping.
fn stopping() -> ApiError {
    ApiError::new(code::SHUTTING_DOWN, "vecflow is stopping")
}

/// Sends `request` to the main thread through `calls` and waits up to `timeout` for its
/// answer.
pub fn ask(calls: &SyncSender<Call>, request: Request, timeout: Duration) -> Result<CommandReply, ApiError> {
    let (reply, answer) = sync_channel(1);
    calls.send(Call::new(request, reply)).map_err(|_| stopping())?;
    match answer.recv_timeout(timeout) {
        Ok(r) => r,
        Err(RecvTimeoutError::Timeout) => Err(ApiError::new(
            code::COMMAND_FAILED,
            format!("the request did not finish within {} s", timeout.as_secs()),
        )),
        Err(RecvTimeoutError::Disconnected) => Err(stopping()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call waiting for the main thread when it stops is told "stopping" at once, and so is
    /// one asked after: neither waits out its timeout.
    #[test]
    fn pending_and_later_calls_are_refused_when_the_main_thread_stops() {
        let (calls, queue) = sync_channel(CALL_QUEUE);
        let c = calls.clone();
        let waiting = std::thread::spawn(move || ask(&c, Request::Metrics, Duration::from_secs(60)));
        // Once the call is in the queue (taken out to know it is there, and put back).
        calls.send(queue.recv().unwrap()).unwrap();
        let started = Instant::now();
        refuse_pending(queue);
        let answer = waiting.join().unwrap();
        assert_eq!(answer.unwrap_err().code, code::SHUTTING_DOWN);
        let later = ask(&calls, Request::Metrics, Duration::from_secs(60));
        assert_eq!(later.unwrap_err().code, code::SHUTTING_DOWN);
        assert!(started.elapsed() < Duration::from_secs(30), "answered, not timed out");
    }
}
