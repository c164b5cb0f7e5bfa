//! The vocabulary every feature shares: IP prefixes, MAC addresses, configuration errors and
//! the limits the tables are sized by. It stands below every feature and imports none of them.

mod prefix;

pub use prefix::{IpPrefix, Ipv4Prefix, Ipv6Prefix, Mac, Prefix, PrefixAddr, is_link_local};
