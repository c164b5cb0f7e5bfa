//! IPv4 and IPv6 prefixes as the configuration writes them, and MAC addresses.

use super::key_mask;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;
use wire::MacAddr;

/// Serde helpers for types that read and write themselves as text (`Display` + `FromStr`).
pub(crate) mod as_text {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};
    use std::{fmt::Display, str::FromStr};

    pub fn serialize<T: Display, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(v)
    }

    pub fn deserialize<'de, T, D>(d: D) -> Result<T, D::Error>
    where
        T: FromStr<Err: Display>,
        D: Deserializer<'de>,
    {
        String::deserialize(d)?.parse().map_err(D::Error::custom)
    }
}

/// A MAC address written as `aa:bb:cc:dd:ee:ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Mac(
    #[serde(with = "as_text")]
    #[schemars(with = "String")]
    pub MacAddr,
);

/// An address a prefix can be made of: IPv4, IPv6 or either.
pub trait PrefixAddr: Copy + FromStr + fmt::Display {
    /// How a prefix of it is written, for messages and the schema.
    const FORM: &'static str;
    /// The longest prefix of this address.
    fn max_len(&self) -> u8;
    /// The address family (4 or 6) and the address aligned to the left of a `u128`.
    fn key(&self) -> (u8, u128);
}

impl PrefixAddr for Ipv4Addr {
    const FORM: &'static str = "a.b.c.d/len";
    fn max_len(&self) -> u8 {
        32
    }
    fn key(&self) -> (u8, u128) {
        (4, super::AddrKey::key(*self))
    }
}

impl PrefixAddr for Ipv6Addr {
    const FORM: &'static str = "x:x::x/len";
    fn max_len(&self) -> u8 {
        128
    }
    fn key(&self) -> (u8, u128) {
        (6, super::AddrKey::key(*self))
    }
}

impl PrefixAddr for IpAddr {
    const FORM: &'static str = "a.b.c.d/len or x:x::x/len";
    fn max_len(&self) -> u8 {
        if self.is_ipv4() { 32 } else { 128 }
    }
    fn key(&self) -> (u8, u128) {
        match self {
            IpAddr::V4(a) => a.key(),
            IpAddr::V6(a) => a.key(),
        }
    }
}

/// A prefix written as `address/len`: [`Ipv4Prefix`], [`Ipv6Prefix`] or either ([`IpPrefix`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prefix<A> {
    /// The address as written (host bits may be set, as in an interface address).
    pub addr: A,
    /// Prefix length, 0 to the address length.
    pub len: u8,
}

/// An IPv4 prefix, `a.b.c.d/len`.
pub type Ipv4Prefix = Prefix<Ipv4Addr>;
/// An IPv6 prefix, `x:x::x/len`.
pub type Ipv6Prefix = Prefix<Ipv6Addr>;
/// An IPv4 or IPv6 prefix.
pub type IpPrefix = Prefix<IpAddr>;

impl<A: PrefixAddr> Prefix<A> {
    /// True when `addr` is inside the prefix (an address of the other family never is).
    pub fn contains<B: PrefixAddr>(&self, addr: B) -> bool {
        let ((fa, a), (fb, b)) = (self.addr.key(), addr.key());
        let mask = key_mask(self.len);
        fa == fb && a & mask == b & mask
    }

    /// The network: the address with its host bits cleared, as a family and key.
    pub fn network(&self) -> (u8, u128) {
        let (f, a) = self.addr.key();
        (f, a & key_mask(self.len))
    }
}

impl IpPrefix {
    /// The network address: the address with its host bits cleared.
    pub fn masked(&self) -> IpAddr {
        let mask = key_mask(self.len);
        match self.addr {
            IpAddr::V4(a) => IpAddr::V4(<Ipv4Addr as super::AddrKey>::from_key(a.key().1 & mask)),
            IpAddr::V6(a) => IpAddr::V6(<Ipv6Addr as super::AddrKey>::from_key(a.key().1 & mask)),
        }
    }

    /// The IPv4 prefix, if it is one.
    pub fn v4(&self) -> Option<Ipv4Prefix> {
        match self.addr {
            IpAddr::V4(addr) => Some(Prefix { addr, len: self.len }),
            IpAddr::V6(_) => None,
        }
    }

    /// The IPv6 prefix, if it is one.
    pub fn v6(&self) -> Option<Ipv6Prefix> {
        match self.addr {
            IpAddr::V6(addr) => Some(Prefix { addr, len: self.len }),
            IpAddr::V4(_) => None,
        }
    }
}

impl<A: PrefixAddr> FromStr for Prefix<A> {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (a, l) = s.split_once('/').ok_or_else(|| format!("'{s}' is not a prefix (want {})", A::FORM))?;
        let addr: A = a.parse().map_err(|_| format!("'{s}' is not a prefix (bad address '{a}')"))?;
        let max = addr.max_len();
        let len = l
            .parse::<u8>()
            .ok()
            .filter(|&l| l <= max)
            .ok_or_else(|| format!("'{s}' is not a prefix (length '{l}' not in 0..={max})"))?;
        Ok(Prefix { addr, len })
    }
}

impl<A: fmt::Display> fmt::Display for Prefix<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

impl<A: PrefixAddr> JsonSchema for Prefix<A> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        format!("Prefix ({})", A::FORM).into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "description": format!("A prefix, {}", A::FORM)})
    }
}

impl<A: PrefixAddr> Serialize for Prefix<A> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        as_text::serialize(self, s)
    }
}

impl<'de, A: PrefixAddr> Deserialize<'de> for Prefix<A> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        as_text::deserialize(d)
    }
}

/// True for an IPv6 link-local address (fe80::/10), which names a neighbor only together
/// with an interface.
pub fn is_link_local(a: IpAddr) -> bool {
    matches!(a, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80)
}
