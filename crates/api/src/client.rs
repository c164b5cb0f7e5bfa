//! The client's side of the API: one connection, requests answered in order.

use crate::{API_VERSION, ApiError, CommandReply};
use anyhow::{Context, anyhow};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// How long a client waits for an answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(90);

/// A connection to a running `vecflow run`.
pub struct Client {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    next_id: u64,
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The daemon answered with an error.
    #[error(transparent)]
    Api(#[from] ApiError),
    /// The connection failed or the answer made no sense.
    #[error(transparent)]
    Transport(#[from] anyhow::Error),
}

impl Client {
    /// Connects to the daemon listening on `socket`.
    pub fn connect(socket: &Path) -> anyhow::Result<Client> {
        let writer = UnixStream::connect(socket).with_context(|| {
            format!("cannot reach vecflow at {} (is `vecflow run` running? --socket names another)", socket.display())
        })?;
        writer.set_read_timeout(Some(ANSWER_TIMEOUT))?;
        Ok(Client { reader: BufReader::new(writer.try_clone()?), writer, next_id: 1 })
    }

    /// Calls `method` with `params` (an object); its result.
    pub fn call(&mut self, method: &str, mut params: Value) -> Result<Value, CallError> {
        let id = self.next_id;
        self.next_id += 1;
        params["api"] = API_VERSION.into();
        let mut line = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .expect("a request serializes");
        line.push(b'\n');
        self.writer.write_all(&line).context("sending the request")?;
        let mut answer = String::new();
        if self.reader.read_line(&mut answer).context("reading the answer")? == 0 {
            return Err(anyhow!("vecflow closed the connection without answering").into());
        }
        let mut v: Value = serde_json::from_str(&answer).context("the answer is not JSON")?;
        if let Some(e) = v.get("error") {
            let e: ApiError = serde_json::from_value(e.clone()).context("a malformed error answer")?;
            return Err(e.into());
        }
        if v.get("id").and_then(Value::as_u64) != Some(id) {
            return Err(anyhow!("answer to another request: {answer}").into());
        }
        Ok(v.get_mut("result").map(Value::take).unwrap_or(Value::Null))
    }

    /// Runs one console command.
    pub fn command(&mut self, line: &str) -> Result<CommandReply, CallError> {
        let result = self.call("cli", json!({ "command": line }))?;
        Ok(serde_json::from_value(result).context("a malformed command answer")?)
    }
}
