//! MPLS label switching: `mpls-input`, `mpls-lookup` and `mpls-rewrite`.

pub mod config;

pub mod input;
pub mod lookup;
pub mod rewrite;
