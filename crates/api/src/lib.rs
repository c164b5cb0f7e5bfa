//! The control API of a running `vecflow run`: JSON-RPC 2.0 messages over a Unix stream
//! socket, one JSON object per line each way.
//!
//! Methods (`params` is an object):
//! - `version` → `{"api": 1, "vecflow": "0.1.0"}`;
//! - `commands` → `{"commands": [{"words": "show runtime", "help": "…"}, …]}`;
//! - `cli` with `{"command": "show interface wan0"}` → `{"text": "…", "json": {…}}`: every
//!   console command, run by the one command registry;
//! - `plan` with `{"config": "<YAML>"}` → `{"text", "json": {"commands": […]}}`: what applying
//!   that whole configuration would change, as the commands that would do it;
//! - `apply` with `{"config": "<YAML>"}`: applies it, all or nothing (the same answer).
//!
//! Every request may say which API version it speaks (`params.api`, default 1); a daemon that
//! does not speak it answers with [`code::UNSUPPORTED_VERSION`]. Errors are JSON-RPC errors
//! with a code from [`code`] and a message (for a failed command, the registry's, which names
//! the bad word or field).
//!
//! A crate of its own, apart from the `vecflow` binary that serves and speaks it
//! ([`server`] in `vecflow run`, [`client`] in `vecflow ctl`, `plan` and `apply`), so that
//! other programs, integration tests and fuzz targets, can link its types, client and server.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod client;
pub mod server;

use serde::{Deserialize, Serialize};

/// Where `vecflow run` listens unless told otherwise (`--socket`).
pub const DEFAULT_SOCKET: &str = "/run/vecflow/api.sock";
/// The API version this build speaks.
pub const API_VERSION: u64 = 1;
/// Longest request line accepted, in bytes; a longer one is answered with
/// [`code::TOO_LARGE`] and the connection closed.
pub const MAX_REQUEST: usize = 1 << 20;

/// The JSON-RPC methods the server answers (docs/api.md), in the order its errors list them.
pub const METHODS: [&str; 5] = ["version", "commands", "cli", "plan", "apply"];

/// Error codes: JSON-RPC 2.0's own, then vecflow's (-32000 and below).
pub mod code {
    /// The request is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// JSON, but not a JSON-RPC 2.0 request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// No such method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// The method's parameters are missing or of the wrong type.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The command ran and failed (unknown command, bad argument, refused change).
    pub const COMMAND_FAILED: i64 = -32000;
    /// The request line is longer than [`super::MAX_REQUEST`].
    pub const TOO_LARGE: i64 = -32001;
    /// The request asks for an API version this daemon does not speak.
    pub const UNSUPPORTED_VERSION: i64 = -32002;
    /// Too many clients are connected.
    pub const BUSY: i64 = -32003;
    /// The daemon is stopping.
    pub const SHUTTING_DOWN: i64 = -32004;
}

/// An API error: a [`code`] and a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{message} (API error {code})")]
pub struct ApiError {
    /// One of [`code`].
    pub code: i64,
    /// What went wrong, in words.
    pub message: String,
}

impl ApiError {
    /// An error with `code` and `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        ApiError { code, message: message.into() }
    }
}

/// A command's answer as the API carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandReply {
    /// The text a console prints.
    pub text: String,
    /// The same facts as JSON.
    pub json: serde_json::Value,
}
