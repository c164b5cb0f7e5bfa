//! IP addresses as keys: an address aligned to the left of a `u128`, so that one prefix test
//! (`key & key_mask(len)`) serves both families.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An address family as keys aligned to the left of a `u128` (what the FIBs hold and prefixes
/// are masked with).
pub trait AddrKey:
    Copy + Ord + std::hash::Hash + std::fmt::Debug + std::fmt::Display + Into<IpAddr> + Send + Sync + 'static
{
    /// Address length in bits.
    const BITS: u8;
    /// The address as the top `BITS` bits of a key.
    fn key(self) -> u128;
    /// The address of a key (its top `BITS` bits).
    fn from_key(key: u128) -> Self;
}

impl AddrKey for Ipv4Addr {
    const BITS: u8 = 32;
    fn key(self) -> u128 {
        u128::from(u32::from(self)) << 96
    }
    fn from_key(key: u128) -> Self {
        Ipv4Addr::from((key >> 96) as u32)
    }
}

impl AddrKey for Ipv6Addr {
    const BITS: u8 = 128;
    fn key(self) -> u128 {
        u128::from(self)
    }
    fn from_key(key: u128) -> Self {
        Ipv6Addr::from(key)
    }
}

/// The netmask of an IPv4 prefix length.
pub fn mask(len: u8) -> u32 {
    if len == 0 { 0 } else { u32::MAX << (32 - u32::from(len.min(32))) }
}

/// The mask of the first `len` bits of a key (an address aligned to the left of a `u128`).
pub fn key_mask(len: u8) -> u128 {
    if len == 0 { 0 } else { u128::MAX << (128 - u32::from(len.min(128))) }
}
