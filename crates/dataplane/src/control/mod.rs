//! The main thread's side: [`engine::Dataplane`], the handle that builds and changes the
//! workers' state, started by `start`, changed by `apply` and `routes`, its parts in `ports`,
//! `neighbors` and `sflow`; what the `show` commands read of it ([`counters`]); opening the ports
//! (`ports`); the command registry, one module of commands per feature ([`cli`]); and the plan
//! that turns one configuration into another ([`plan`]); the L3 tables' static part built from
//! the configuration ([`tables`]).

mod apply;
pub mod cli;
pub mod counters;
pub mod engine;
mod links;
mod linux_cp;
mod neighbors;
pub mod plan;
pub(crate) mod ports;
pub mod privileges;
pub mod routes;
mod sflow;
mod start;
mod summary;
pub mod tables;
pub mod vrfs;
