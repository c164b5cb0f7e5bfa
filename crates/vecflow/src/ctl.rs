//! `vecflow ctl`: talk to a running `vecflow run` through its API socket, in VPP's words.
//!
//! With a command (`vecflow ctl show runtime`) it runs that one and exits, non-zero on an API
//! error. Without one it is a console: history (in `~/.vecflow_history`), tab completion of
//! command words, `?` after a prefix lists the matching commands with their help, `quit` or
//! Ctrl-D leaves. `--json` (anywhere on the line) prints a command's JSON instead of its text.

use anyhow::Context;
use api::client::{CallError, Client};
use api::{CommandReply, DEFAULT_SOCKET};
use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::history::DefaultHistory;
use rustyline::{Editor, Helper, Highlighter, Hinter, Validator};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Options of `vecflow ctl`.
#[derive(clap::Args)]
pub struct Args {
    /// The daemon's API socket.
    #[arg(long, default_value = DEFAULT_SOCKET)]
    socket: PathBuf,
    /// Print the command's JSON instead of its text.
    #[arg(long)]
    json: bool,
    /// First wait until the daemon is ready (its ports attached, its commands answered), up to
    /// SECONDS (30 without a value): for scripts and units started right after `vecflow run`.
    /// Without a command it only waits, and exits 0 once the daemon is ready.
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, require_equals = true, default_missing_value = "30")]
    wait: Option<u64>,
    /// The command to run, e.g. `show interface`; none for an interactive console.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    command: Vec<String>,
}

/// Runs one command, or the console.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mut client = match args.wait {
        Some(seconds) => {
            let client = wait_for_daemon(&args.socket, Duration::from_secs(seconds))?;
            if args.command.is_empty() {
                return Ok(());
            }
            client
        }
        None => Client::connect(&args.socket)?,
    };
    if args.command.is_empty() {
        return console(client, &args.socket);
    }
    let (line, json) = split_json_flag(&args.command.join(" "));
    let reply = client.command(&line).map_err(explain)?;
    print_reply(&reply, json || args.json);
    Ok(())
}

/// Connects to the daemon on `socket` once it is ready, trying every 50 ms for up to
/// `timeout`. Ready means its main thread runs commands (`show version`), which it starts
/// doing once every port is attached: the socket itself answers earlier, while they are.
fn wait_for_daemon(socket: &Path, timeout: Duration) -> anyhow::Result<Client> {
    let deadline = Instant::now() + timeout;
    loop {
        let attempt = Client::connect(socket).and_then(|mut c| {
            c.command("show version").map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok(c)
        });
        match attempt {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() >= deadline => {
                return Err(e.context(format!(
                    "no vecflow answered on {} within {} s",
                    socket.display(),
                    timeout.as_secs()
                )));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// The command line without `--json`, and whether it was there.
fn split_json_flag(line: &str) -> (String, bool) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let json = words.contains(&"--json");
    (words.into_iter().filter(|w| *w != "--json").collect::<Vec<_>>().join(" "), json)
}

/// Prints a command's text, or its JSON pretty-printed.
fn print_reply(reply: &CommandReply, json: bool) {
    if json {
        println!("{}", serde_json::to_string_pretty(&reply.json).expect("JSON serializes"));
    } else {
        print!("{}", reply.text);
        if !reply.text.is_empty() && !reply.text.ends_with('\n') {
            println!();
        }
    }
}

/// An API error as the user should read it.
fn explain(e: CallError) -> anyhow::Error {
    match e {
        CallError::Api(e) => anyhow::anyhow!("{}", e.message),
        CallError::Transport(e) => e,
    }
}

/// The console's helper: completes command words from the daemon's command list.
#[derive(Helper, Highlighter, Hinter, Validator)]
struct Commands {
    /// Words and help of every command.
    list: Vec<(String, String)>,
}

impl Commands {
    /// The commands whose words start with the words typed so far (the last one may be cut
    /// short).
    fn matching(&self, typed: &str) -> Vec<&(String, String)> {
        let typed: Vec<&str> = typed.split_whitespace().collect();
        let open_last = !typed.is_empty();
        self.list
            .iter()
            .filter(|(words, _)| {
                let words: Vec<&str> = words.split(' ').collect();
                typed.iter().enumerate().all(|(k, t)| match words.get(k) {
                    Some(w) if k + 1 == typed.len() && open_last => w.starts_with(t),
                    Some(w) => w == t,
                    // Arguments after the command's own words.
                    None => true,
                })
            })
            .collect()
    }
}

impl Completer for Commands {
    type Candidate = Pair;

    fn complete(&self, line: &str, pos: usize, _: &rustyline::Context<'_>) -> rustyline::Result<(usize, Vec<Pair>)> {
        let line = &line[..pos];
        let start = line.rfind(' ').map_or(0, |i| i + 1);
        let index = line[..start].split_whitespace().count();
        let mut words: Vec<String> =
            self.matching(line).iter().filter_map(|(w, _)| w.split(' ').nth(index).map(str::to_string)).collect();
        words.sort();
        words.dedup();
        Ok((start, words.into_iter().map(|w| Pair { display: w.clone(), replacement: format!("{w} ") }).collect()))
    }
}

/// The interactive console.
fn console(mut client: Client, socket: &Path) -> anyhow::Result<()> {
    let list = client.call("commands", serde_json::json!({})).map_err(explain)?;
    let list: Vec<(String, String)> = list["commands"]
        .as_array()
        .context("a malformed command list")?
        .iter()
        .filter_map(|c| Some((c["words"].as_str()?.to_string(), c["help"].as_str()?.to_string())))
        .collect();
    let mut editor: Editor<Commands, DefaultHistory> = Editor::new()?;
    editor.set_helper(Some(Commands { list }));
    let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".vecflow_history"));
    if let Some(h) = &history {
        let _ = editor.load_history(h);
    }
    loop {
        let line = match editor.readline("vecflow# ") {
            Ok(l) => l,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(line);
        if matches!(line, "quit" | "exit" | "q") {
            break;
        }
        if let Some(prefix) = line.strip_suffix('?') {
            let helper = editor.helper().expect("set above");
            for (words, help) in helper.matching(prefix) {
                println!("  {words:<28} {help}");
            }
            continue;
        }
        let (command, json) = split_json_flag(line);
        let reply = match client.command(&command) {
            Err(CallError::Transport(_)) => {
                // The daemon restarted or closed an idle connection: reconnect once.
                client = Client::connect(socket)?;
                client.command(&command)
            }
            r => r,
        };
        match reply {
            Ok(r) => print_reply(&r, json),
            Err(e) => eprintln!("error: {}", explain(e)),
        }
    }
    if let Some(h) = &history {
        let _ = editor.save_history(h);
    }
    Ok(())
}
