//! The main thread's side: [`engine::Dataplane`], the handle that builds and changes the
//! workers' state; what the `show` commands read of it ([`counters`]); opening the ports
//! (`ports`); the command registry, one module of commands per feature ([`cli`]); and the plan
//! that turns one configuration into another ([`plan`]); the L3 tables' static part built from
//! the configuration ([`tables`]).

pub mod cli;
pub mod counters;
pub mod engine;
pub mod kernel_routes;
mod links;
mod linux_cp;
pub mod plan;
pub(crate) mod ports;
pub mod privileges;
mod summary;
pub mod tables;
