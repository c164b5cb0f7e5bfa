//! Graph nodes, one module each.

pub mod error_drop;
pub mod ethernet_input;
pub mod interface_output;
pub mod l2_xconnect;
