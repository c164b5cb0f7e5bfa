//! IPv6 forwarding: `ip6-input`, `ip6-lookup`, `ip6-rewrite`, `ip6-local` (ICMPv6 echo and
//! neighbor discovery), `ip6-nd` and `icmp6-error`.

pub mod drops;
pub mod icmp_error;
pub mod input;
pub mod local;
pub mod lookup;
pub mod nd;
pub mod nodes;
pub mod rewrite;
