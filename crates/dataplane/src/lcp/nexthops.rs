//! The kernel's next-hop objects (`ip nexthop`, `RTM_NEWNEXTHOP`): what routes with
//! `RTA_NH_ID` forward through. FRR's zebra installs its routes this way when the kernel has
//! them. `netlink-packet-route` does not know these messages, so they are read here from
//! their bytes (`struct nhmsg` and the `NHA_*` attributes of `linux/nexthop.h`).

use netlink_packet_core::NlasIterator;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `RTM_NEWNEXTHOP`: an object was added or replaced (or is in a dump's answer).
pub const RTM_NEWNEXTHOP: u16 = 104;
/// `RTM_DELNEXTHOP`: an object was removed.
pub const RTM_DELNEXTHOP: u16 = 105;
/// `RTM_GETNEXTHOP`: asks for objects (with `NLM_F_DUMP`, every one).
pub const RTM_GETNEXTHOP: u16 = 106;
/// The next-hop objects' multicast group (`RTNLGRP_NEXTHOP`).
pub const RTNLGRP_NEXTHOP: u32 = 32;

const NHA_ID: u16 = 1;
const NHA_GROUP: u16 = 2;
const NHA_BLACKHOLE: u16 = 4;
const NHA_OIF: u16 = 5;
const NHA_GATEWAY: u16 = 6;
const NHA_ENCAP: u16 = 8;
const NHA_FDB: u16 = 11;

/// `struct nhmsg`'s length.
const NHMSG_LEN: usize = 8;

/// What a next-hop object is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NextHopObject {
    /// One next hop on device `ifindex`, through `gateway` (`None`: on the link).
    Single {
        /// The gateway.
        gateway: Option<IpAddr>,
        /// The device's ifindex.
        ifindex: u32,
    },
    /// A group of other objects: (id, weight 1–65536).
    Group(Vec<(u32, u32)>),
    /// A blackhole: what uses it drops.
    Blackhole,
    /// A kind vecflow does not forward through (an encapsulation, a bridge's FDB object).
    Unusable(&'static str),
}

/// One next-hop message: the object's id and what it now is (`None`: it was removed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextHopMessage {
    /// The object's id.
    pub id: u32,
    /// The object, or `None` when removed.
    pub object: Option<NextHopObject>,
}

/// Reads a message of type `kind` whose payload (after the netlink header) is `payload`;
/// `None` for another type or a message too short or without an id.
pub fn parse(kind: u16, payload: &[u8]) -> Option<NextHopMessage> {
    if !matches!(kind, RTM_NEWNEXTHOP | RTM_DELNEXTHOP) || payload.len() < NHMSG_LEN {
        return None;
    }
    let family = payload[0];
    let (mut id, mut gateway, mut ifindex, mut group, mut blackhole, mut unusable) = (None, None, 0, None, false, None);
    for nla in NlasIterator::new(&payload[NHMSG_LEN..]) {
        let Ok(nla) = nla else { break };
        let v = nla.value();
        match nla.kind() & 0x3fff {
            NHA_ID => id = u32_of(v),
            NHA_OIF => ifindex = u32_of(v).unwrap_or(0),
            NHA_GATEWAY => gateway = ip_of(family, v),
            NHA_BLACKHOLE => blackhole = true,
            NHA_GROUP => group = Some(members(v)),
            NHA_ENCAP => unusable = Some("an encapsulating next hop"),
            NHA_FDB => unusable = Some("a bridge FDB next hop"),
            _ => {}
        }
    }
    let id = id?;
    if kind == RTM_DELNEXTHOP {
        return Some(NextHopMessage { id, object: None });
    }
    let object = match (unusable, blackhole, group) {
        (Some(why), _, _) => NextHopObject::Unusable(why),
        (None, true, _) => NextHopObject::Blackhole,
        (None, false, Some(members)) => NextHopObject::Group(members),
        (None, false, None) => NextHopObject::Single { gateway, ifindex },
    };
    Some(NextHopMessage { id, object: Some(object) })
}

/// `struct nexthop_grp` entries: id (u32), weight − 1 (low byte, then high byte on kernels
/// that have it, else 0), reserved (u16).
fn members(v: &[u8]) -> Vec<(u32, u32)> {
    v.chunks_exact(8)
        .map(|e| (u32::from_ne_bytes([e[0], e[1], e[2], e[3]]), (u32::from(e[5]) << 8 | u32::from(e[4])) + 1))
        .collect()
}

fn u32_of(v: &[u8]) -> Option<u32> {
    Some(u32::from_ne_bytes(v.get(..4)?.try_into().ok()?))
}

fn ip_of(family: u8, v: &[u8]) -> Option<IpAddr> {
    match (i32::from(family), v.len()) {
        (libc::AF_INET, 4) => Some(Ipv4Addr::from(<[u8; 4]>::try_from(v).ok()?).into()),
        (libc::AF_INET6, 16) => Some(Ipv6Addr::from(<[u8; 16]>::try_from(v).ok()?).into()),
        _ => None,
    }
}

/// The bytes of a dump request for every next-hop object (`RTM_GETNEXTHOP`, `NLM_F_DUMP`,
/// an empty `nhmsg` of family `AF_UNSPEC`), with sequence number `seq`.
pub fn dump_request(seq: u32) -> Vec<u8> {
    let len = 16 + NHMSG_LEN as u32;
    let flags = netlink_packet_core::NLM_F_REQUEST | netlink_packet_core::NLM_F_DUMP;
    let mut out = Vec::with_capacity(len as usize);
    out.extend_from_slice(&len.to_ne_bytes());
    out.extend_from_slice(&RTM_GETNEXTHOP.to_ne_bytes());
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&seq.to_ne_bytes());
    out.extend_from_slice(&0u32.to_ne_bytes());
    out.extend_from_slice(&[0; NHMSG_LEN]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nla(kind: u16, value: &[u8]) -> Vec<u8> {
        let len = 4 + value.len();
        let mut out = Vec::new();
        out.extend_from_slice(&(len as u16).to_ne_bytes());
        out.extend_from_slice(&kind.to_ne_bytes());
        out.extend_from_slice(value);
        out.resize((len + 3) & !3, 0);
        out
    }

    fn message(family: u8, nlas: &[Vec<u8>]) -> Vec<u8> {
        let mut out = vec![family, 0, 0, 0, 0, 0, 0, 0];
        nlas.iter().for_each(|n| out.extend_from_slice(n));
        out
    }

    #[test]
    fn reads_a_gateway_a_group_with_weights_a_blackhole_and_a_removal() {
        let single = message(
            libc::AF_INET as u8,
            &[nla(NHA_ID, &7u32.to_ne_bytes()), nla(NHA_GATEWAY, &[10, 9, 0, 2]), nla(NHA_OIF, &3u32.to_ne_bytes())],
        );
        let got = parse(RTM_NEWNEXTHOP, &single).unwrap();
        let gateway = Some("10.9.0.2".parse().unwrap());
        assert_eq!(got, NextHopMessage { id: 7, object: Some(NextHopObject::Single { gateway, ifindex: 3 }) });

        let mut entries = Vec::new();
        for (id, w) in [(1u32, 1u8), (3, 2)] {
            entries.extend_from_slice(&id.to_ne_bytes());
            entries.extend_from_slice(&[w, 0, 0, 0]);
        }
        let group = message(0, &[nla(NHA_ID, &10u32.to_ne_bytes()), nla(NHA_GROUP, &entries)]);
        let got = parse(RTM_NEWNEXTHOP, &group).unwrap().object;
        assert_eq!(got, Some(NextHopObject::Group(vec![(1, 2), (3, 3)])), "weights are stored minus one");

        let hole = message(libc::AF_INET6 as u8, &[nla(NHA_ID, &5u32.to_ne_bytes()), nla(NHA_BLACKHOLE, &[])]);
        assert_eq!(parse(RTM_NEWNEXTHOP, &hole).unwrap().object, Some(NextHopObject::Blackhole));
        assert_eq!(parse(RTM_DELNEXTHOP, &hole).unwrap(), NextHopMessage { id: 5, object: None });
        assert_eq!(parse(RTM_NEWNEXTHOP, &message(0, &[])), None, "no id");
        assert_eq!(parse(RTM_NEWNEXTHOP, &[0, 0]), None, "too short");
        assert_eq!(parse(24, &hole), None, "a route message");
    }
}
