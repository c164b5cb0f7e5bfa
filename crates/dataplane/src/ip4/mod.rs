//! IPv4 forwarding: `ip4-input`, `ip4-lookup`, `ip4-rewrite`, `ip4-local`, `ip4-arp`,
//! `ip4-frag`, `icmp4-error` and ARP (`arp-input`).

pub mod arp;
pub mod arp_input;
pub mod drops;
pub mod frag;
pub mod icmp_error;
pub mod input;
pub mod local;
pub mod lookup;
pub mod nodes;
pub mod rewrite;
