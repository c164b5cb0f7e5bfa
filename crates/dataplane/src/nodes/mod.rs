//! Graph nodes, one module each.

pub mod arp_input;
pub mod error_drop;
pub mod ethernet_input;
pub mod icmp4_error;
pub mod interface_output;
pub mod ip4_arp;
pub mod ip4_frag;
pub mod ip4_input;
pub mod ip4_local;
pub mod ip4_lookup;
pub mod ip4_rewrite;
pub mod l2_xconnect;
pub mod mpls_input;
pub mod mpls_lookup;
pub mod mpls_rewrite;
