//! Graph nodes, one module each.

pub mod error_drop;
pub mod ethernet_input;
pub mod interface_output;
pub mod ip4_input;
pub mod ip4_lookup;
pub mod ip4_rewrite;
pub mod l2_xconnect;
pub mod mpls_input;
pub mod mpls_lookup;
pub mod mpls_rewrite;
