//! The main thread's side: [`engine::Dataplane`], the handle that builds and changes the
//! workers' state, and the command registry (`show`, `set`, `trace`).

pub mod cli;
pub mod counters;
pub mod engine;
pub mod plan;
pub(crate) mod ports;
mod summary;
