//! MPLS label switching: `mpls-input`, `mpls-lookup` and `mpls-rewrite`, and the `mpls`
//! section of the configuration.

pub mod config;
pub mod input;
pub mod lookup;
pub mod rewrite;
