//! The vocabulary every feature shares: IP addresses as keys and prefixes, MAC addresses, the
//! configuration error, and the limits tables are sized by. It stands below every feature and
//! imports none of them.

mod addr;
mod error;
mod footprint;
mod labels;
mod modes;
mod prefix;
mod prefix_map;

pub use addr::{AddrKey, key_mask, mask};
pub use error::ConfigError;
pub(crate) use error::invalid;
pub use footprint::{hash_table_bytes, tree_bytes};
pub(crate) use labels::{MAX_LABEL, check_labels};
pub use modes::{Payload, PollMode};
pub use prefix::{IpPrefix, Ipv4Prefix, Ipv6Prefix, Mac, Prefix, PrefixAddr, is_link_local};
pub use prefix_map::PrefixMap;

/// True when `x` is its type's default (for `skip_serializing_if`: a default value is left
/// out of the YAML written back).
pub(crate) fn is_default<T: Default + PartialEq>(x: &T) -> bool {
    *x == T::default()
}

/// True when `x` is 0 (for `skip_serializing_if`).
pub(crate) fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// `true`, for `#[serde(default = "...")]` on a switch that is on unless turned off.
pub(crate) fn default_true() -> bool {
    true
}

/// Highest interface index + 1. Index 0 is reserved for "unknown" (as in sFlow).
pub const MAX_INTERFACES: usize = 1024;

/// Bytes a frame may carry beyond the MTU: a 14-byte Ethernet header and one 802.1Q tag.
pub const L2_OVERHEAD: u16 = 18;

/// The largest L3 MTU whose frames (with an 802.1Q tag) fit a buffer of `data_size` bytes.
pub fn max_mtu(data_size: u16) -> u16 {
    data_size - L2_OVERHEAD
}
