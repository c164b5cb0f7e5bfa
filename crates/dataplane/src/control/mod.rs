//! The main thread's side: [`engine::Dataplane`], the handle that builds and changes the
//! workers' state, and the command registry (`show`, `set`, `trace`).

pub mod change;
pub mod cli;
pub mod counters;
pub mod engine;
pub(crate) mod ports;
mod summary;
