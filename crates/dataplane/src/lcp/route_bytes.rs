//! Route messages (`RTM_NEWROUTE`, `RTM_DELROUTE`) read from their bytes: the `rtmsg` header
//! and the attributes vecflow uses (`RTA_DST`, `RTA_TABLE`, `RTA_PRIORITY`, `RTA_OIF`,
//! `RTA_GATEWAY`, `RTA_MULTIPATH`, `RTA_VIA`, `RTA_NH_ID`), with no allocation but a route's
//! list of next hops. A full table is a million of them, and the `netlink-packet-route`
//! model allocates per attribute. The fuzz target `netlink` feeds them arbitrary bytes.

use super::routes::{Hops, KernelHop, KernelRoute, RouteKey};
use crate::l3::Reject;
use crate::net::IpPrefix;
use netlink_packet_core::NlasIterator;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use libc::{RTA_DST, RTA_GATEWAY, RTA_MULTIPATH, RTA_OIF, RTA_PRIORITY, RTA_TABLE, RTA_VIA};
pub use libc::{RTM_DELROUTE, RTM_NEWROUTE};
use libc::{RTN_BLACKHOLE, RTN_PROHIBIT, RTN_THROW, RTN_UNICAST, RTN_UNREACHABLE};

/// `RTA_NH_ID` (a route through a next-hop object; `libc` lacks it).
const RTA_NH_ID: u16 = 30;

/// `struct rtmsg`'s size.
const RTMSG: usize = 12;
/// `struct rtnexthop`'s size.
const RTNEXTHOP: usize = 8;
/// An attribute's header (length and type).
const NLA_HEADER: usize = 4;

/// One route message as the listener's view takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteUpdate {
    /// The route's identity.
    pub key: RouteKey,
    /// What the message says it does.
    pub route: KernelRoute,
    /// `RTM_NEWROUTE` (else `RTM_DELROUTE`).
    pub new: bool,
    /// The netlink header's flags (`NLM_F_APPEND`, `NLM_F_REPLACE`, `NLM_F_MULTIPART`).
    pub flags: u16,
}

/// The attributes of `bytes` as (kind, value), read by the crate's iterator (as
/// [`super::nexthops`] reads them); a malformed one ends them.
fn attributes(bytes: &[u8]) -> impl Iterator<Item = (u16, &[u8])> {
    NlasIterator::new(bytes).map_while(Result::ok).map(|nla| {
        let (kind, end) = (nla.kind(), usize::from(nla.length()));
        (kind, &nla.into_inner()[NLA_HEADER..end])
    })
}

fn u32_of(value: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(value.try_into().ok()?))
}

/// An address of 4 or 16 bytes.
fn address(value: &[u8]) -> Option<IpAddr> {
    match value.len() {
        4 => Some(Ipv4Addr::from(<[u8; 4]>::try_from(value).ok()?).into()),
        16 => Some(Ipv6Addr::from(<[u8; 16]>::try_from(value).ok()?).into()),
        _ => None,
    }
}

/// The route message of kind `kind` with payload `payload` (the `rtmsg` and its attributes)
/// and header flags `flags`; `None` for a message that is not a route of a unicast table
/// (local, broadcast, multicast), not IPv4 or IPv6, or malformed.
pub fn parse(kind: u16, flags: u16, payload: &[u8]) -> Option<RouteUpdate> {
    let new = match kind {
        RTM_NEWROUTE => true,
        RTM_DELROUTE => false,
        _ => return None,
    };
    let (key, route) = route_of(payload)?;
    Some(RouteUpdate { key, route, new, flags })
}

/// The route `payload` describes (see [`parse`]).
fn route_of(payload: &[u8]) -> Option<(RouteKey, KernelRoute)> {
    let header = payload.get(..RTMSG)?;
    let (family, len, table, protocol, kind) = (header[0], header[1], header[4], header[5], header[7]);
    let bits = match i32::from(family) {
        libc::AF_INET => 32,
        libc::AF_INET6 => 128,
        _ => return None,
    };
    let mut table = u32::from(table);
    let (mut dst, mut metric, mut ifindex, mut gateway) = (None, 0, 0, None);
    let (mut object, mut multipath, mut via) = (None, None, false);
    for (attribute, value) in attributes(&payload[RTMSG..]) {
        match attribute {
            RTA_DST => dst = Some(address(value)?),
            RTA_TABLE => table = u32_of(value)?,
            RTA_PRIORITY => metric = u32_of(value)?,
            RTA_OIF => ifindex = u32_of(value)?,
            RTA_GATEWAY => gateway = address(value),
            RTA_MULTIPATH => multipath = Some(value),
            RTA_VIA => via = true,
            RTA_NH_ID => object = Some(u32_of(value)?),
            _ => {}
        }
    }
    let unspecified: IpAddr = if bits == 32 { Ipv4Addr::UNSPECIFIED.into() } else { Ipv6Addr::UNSPECIFIED.into() };
    let addr = dst.unwrap_or(unspecified);
    if len > bits || addr.is_ipv4() != (bits == 32) {
        return None;
    }
    let key = RouteKey { table, prefix: IpPrefix { addr: IpPrefix { addr, len }.masked(), len }, metric };
    let reject = match kind {
        RTN_UNICAST => None,
        RTN_BLACKHOLE => Some(Reject::Blackhole),
        RTN_UNREACHABLE => Some(Reject::Unreachable),
        RTN_PROHIBIT => Some(Reject::Prohibit),
        RTN_THROW => return Some((key, KernelRoute::Unmirrored("a throw route"))),
        _ => return None,
    };
    if let Some(r) = reject {
        return Some((key, KernelRoute::Reject(r)));
    }
    if let Some(id) = object {
        return Some((key, KernelRoute::Object { id, protocol }));
    }
    let other_family = Some((key, KernelRoute::Unmirrored("a gateway of the other family")));
    if via {
        return other_family;
    }
    let mut hops = Hops::new();
    let mut rest = multipath.unwrap_or_default();
    while rest.len() >= RTNEXTHOP {
        let size = usize::from(u16::from_ne_bytes([rest[0], rest[1]]));
        let Some(nested) = rest.get(RTNEXTHOP..size) else { break };
        let weight = u16::from(rest[3]) + 1;
        let ifindex = u32::from_ne_bytes(rest[4..8].try_into().ok()?);
        let mut gateway = None;
        for (attribute, value) in attributes(nested) {
            match attribute {
                RTA_GATEWAY => gateway = address(value),
                RTA_VIA => return other_family,
                _ => {}
            }
        }
        hops.push(KernelHop { gateway, ifindex, weight });
        rest = rest.get((size + 3) & !3..).unwrap_or_default();
    }
    if hops.is_empty() {
        hops.push(KernelHop { gateway, ifindex, weight: 1 });
    }
    hops.sort();
    Some((key, KernelRoute::Unicast { hops, protocol }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An attribute's bytes, padded to 4.
    fn attribute(kind: u16, value: &[u8]) -> Vec<u8> {
        let mut out = ((4 + value.len()) as u16).to_ne_bytes().to_vec();
        out.extend(kind.to_ne_bytes());
        out.extend(value);
        out.resize((out.len() + 3) & !3, 0);
        out
    }

    /// An `rtmsg` of `family`, `len` and route type `kind` (main table, protocol bgp), then
    /// `attributes`.
    fn message(family: i32, len: u8, kind: u8, attributes: &[Vec<u8>]) -> Vec<u8> {
        let mut out = vec![family as u8, len, 0, 0, 254, 186, 0, kind, 0, 0, 0, 0];
        attributes.iter().for_each(|a| out.extend(a));
        out
    }

    /// An `rtnexthop` on `ifindex` with weight `hops + 1` and `attributes`.
    fn next_hop(ifindex: u32, hops: u8, attributes: &[Vec<u8>]) -> Vec<u8> {
        let nested: Vec<u8> = attributes.concat();
        let mut out = ((RTNEXTHOP + nested.len()) as u16).to_ne_bytes().to_vec();
        out.extend([0, hops]);
        out.extend(ifindex.to_ne_bytes());
        out.extend(nested);
        out
    }

    fn v4(a: &str) -> Vec<u8> {
        a.parse::<Ipv4Addr>().unwrap().octets().to_vec()
    }

    #[test]
    fn a_multipath_route_s_hops_carry_their_weights_and_a_via_leaves_it_unmirrored() {
        let hops = [next_hop(3, 0, &[attribute(RTA_GATEWAY, &v4("192.0.2.9"))]), next_hop(4, 2, &[])].concat();
        let m = message(
            libc::AF_INET,
            16,
            RTN_UNICAST,
            &[attribute(RTA_DST, &v4("10.1.2.3")), attribute(RTA_MULTIPATH, &hops)],
        );
        let update = parse(RTM_DELROUTE, 7, &m).unwrap();
        assert_eq!((update.new, update.flags), (false, 7));
        assert_eq!(update.key, RouteKey { table: 254, prefix: "10.1.0.0/16".parse().unwrap(), metric: 0 });
        let gateway = Some("192.0.2.9".parse().unwrap());
        // Sorted, as every route's hops are.
        let want: Hops = smallvec::smallvec![
            KernelHop { gateway: None, ifindex: 4, weight: 3 },
            KernelHop { gateway, ifindex: 3, weight: 1 }
        ];
        assert_eq!(update.route, KernelRoute::Unicast { hops: want, protocol: 186 });
        let via =
            [next_hop(3, 0, &[attribute(RTA_VIA, &[10, 0, 32, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])])].concat();
        let m = message(
            libc::AF_INET,
            16,
            RTN_UNICAST,
            &[attribute(RTA_DST, &v4("10.1.0.0")), attribute(RTA_MULTIPATH, &via)],
        );
        assert_eq!(parse(RTM_NEWROUTE, 0, &m).unwrap().route, KernelRoute::Unmirrored("a gateway of the other family"));
    }

    #[test]
    fn what_is_not_a_unicast_table_route_of_ipv4_or_ipv6_is_not_read() {
        let dst = attribute(RTA_DST, &v4("10.1.0.0"));
        assert!(parse(RTM_NEWROUTE, 0, &message(libc::AF_INET, 16, 2, std::slice::from_ref(&dst))).is_none(), "local");
        assert!(parse(RTM_NEWROUTE, 0, &message(libc::AF_MPLS, 20, RTN_UNICAST, &[])).is_none(), "MPLS");
        assert!(parse(RTM_NEWROUTE, 0, &message(libc::AF_INET6, 16, RTN_UNICAST, &[dst])).is_none(), "a v4 dst");
        assert!(parse(RTM_NEWROUTE, 0, &message(libc::AF_INET, 33, RTN_UNICAST, &[])).is_none(), "a bad length");
        assert!(parse(RTM_NEWROUTE, 0, &[libc::AF_INET as u8; 11]).is_none(), "short of an rtmsg");
        assert!(parse(16, 0, &message(libc::AF_INET, 0, RTN_UNICAST, &[])).is_none(), "a link message");
        let default = parse(RTM_NEWROUTE, 0, &message(libc::AF_INET6, 0, RTN_BLACKHOLE, &[])).unwrap();
        assert_eq!(default.key.prefix, "::/0".parse().unwrap());
        assert_eq!(default.route, KernelRoute::Reject(Reject::Blackhole));
    }

    proptest! {
        /// Any bytes after a valid `rtmsg`, and any cut of a valid message: no panic, and a
        /// route read has a prefix of its family.
        #[test]
        fn any_attributes_read_without_panic(tail in proptest::collection::vec(any::<u8>(), 0..200), cut in 0usize..80) {
            let mut m = message(libc::AF_INET, 24, RTN_UNICAST, &[]);
            m.extend(&tail);
            if let Some(u) = parse(RTM_NEWROUTE, 0, &m) {
                prop_assert!(u.key.prefix.addr.is_ipv4() && u.key.prefix.len == 24);
            }
            let hops = next_hop(3, 1, &[attribute(RTA_GATEWAY, &v4("192.0.2.9"))]);
            let whole = message(libc::AF_INET, 8, RTN_UNICAST, &[attribute(RTA_DST, &v4("10.0.0.0")), attribute(RTA_MULTIPATH, &hops)]);
            let _ = parse(RTM_NEWROUTE, 0, &whole[..cut.min(whole.len())]);
        }
    }
}
