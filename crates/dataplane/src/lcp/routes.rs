//! The kernel's routes as the netlink listener keeps them: keyed by table, prefix and metric
//! (several routes to one prefix with different metrics are several routes), each a list of
//! next hops as the kernel gives them (`RTA_GATEWAY` and `RTA_OIF`, or `RTA_MULTIPATH`), a
//! next-hop object (`RTA_NH_ID`), or a reject (blackhole, unreachable, prohibit).

use crate::config::IpPrefix;
use crate::l3::Reject;
use netlink_packet_route::route::{RouteAddress, RouteAttribute, RouteMessage, RouteType};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::net::IpAddr;

/// The main routing table's id.
pub const MAIN_TABLE: u32 = 254;

/// A kernel route's identity: its table, prefix (host bits cleared) and metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RouteKey {
    /// The routing table.
    pub table: u32,
    /// The destination.
    pub prefix: IpPrefix,
    /// The metric (`RTA_PRIORITY`): the lowest of a prefix's routes is the one used.
    pub metric: u32,
}

/// One next hop of a kernel route.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelHop {
    /// The gateway; `None` for a device route (the destination is on the link).
    pub gateway: Option<IpAddr>,
    /// The output device's ifindex.
    pub ifindex: u32,
    /// Its weight, 1–256.
    pub weight: u16,
}

/// What a kernel route does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KernelRoute {
    /// Forwards through next hops, put there by `protocol` (`RTPROT_*`: 2 the kernel's own
    /// subnet routes, 12 zebra, 186 BGP, 188 OSPF, …).
    Unicast {
        /// The next hops.
        hops: Vec<KernelHop>,
        /// Who made it.
        protocol: u8,
    },
    /// Forwards through next-hop object `id` (`RTA_NH_ID`; the next hops a kernel in
    /// `nexthop_compat_mode` adds beside it are not read: the object is followed instead).
    Object {
        /// The object's id.
        id: u32,
        /// Who made it (as in `Unicast`).
        protocol: u8,
    },
    /// A blackhole, unreachable or prohibit route.
    Reject(Reject),
    /// A route vecflow does not mirror, with why: a gateway of the other family (`RTA_VIA`),
    /// a `throw` route.
    Unmirrored(&'static str),
}

/// The route a route message describes, or `None` for one that is not a unicast-table route
/// (local, broadcast, multicast) or not IPv4 or IPv6.
pub fn route_of(message: &RouteNetlinkMessage) -> Option<(RouteKey, KernelRoute)> {
    let (RouteNetlinkMessage::NewRoute(m) | RouteNetlinkMessage::DelRoute(m)) = message else { return None };
    let key = key_of(m)?;
    let reject = match m.header.kind {
        RouteType::Unicast => None,
        RouteType::BlackHole => Some(Reject::Blackhole),
        RouteType::Unreachable => Some(Reject::Unreachable),
        RouteType::Prohibit => Some(Reject::Prohibit),
        RouteType::Throw => return Some((key, KernelRoute::Unmirrored("a throw route"))),
        _ => return None,
    };
    if let Some(r) = reject {
        return Some((key, KernelRoute::Reject(r)));
    }
    let protocol = u8::from(m.header.protocol);
    if let Some(id) = m.attributes.iter().find_map(|a| if let RouteAttribute::NhId(id) = a { Some(*id) } else { None })
    {
        return Some((key, KernelRoute::Object { id, protocol }));
    }
    let mut hops = Vec::new();
    let (mut gateway, mut ifindex) = (None, 0);
    for a in &m.attributes {
        match a {
            RouteAttribute::Gateway(g) => gateway = ip(g),
            RouteAttribute::Oif(i) => ifindex = *i,
            RouteAttribute::MultiPath(list) => {
                for h in list {
                    let gateway = h.attributes.iter().find_map(|a| match a {
                        RouteAttribute::Gateway(g) => ip(g),
                        _ => None,
                    });
                    if h.attributes.iter().any(|a| matches!(a, RouteAttribute::Via(_))) {
                        return Some((key, KernelRoute::Unmirrored("a gateway of the other family")));
                    }
                    hops.push(KernelHop { gateway, ifindex: h.interface_index, weight: u16::from(h.hops) + 1 });
                }
            }
            RouteAttribute::Via(_) => return Some((key, KernelRoute::Unmirrored("a gateway of the other family"))),
            _ => {}
        }
    }
    if hops.is_empty() {
        hops.push(KernelHop { gateway, ifindex, weight: 1 });
    }
    hops.sort();
    Some((key, KernelRoute::Unicast { hops, protocol }))
}

/// The kernel's own routes for the subnets of its addresses (`proto kernel`).
pub const PROTOCOL_KERNEL: u8 = 2;

fn key_of(m: &RouteMessage) -> Option<RouteKey> {
    let max = match m.header.address_family {
        AddressFamily::Inet => 32,
        AddressFamily::Inet6 => 128,
        _ => return None,
    };
    let len = m.header.destination_prefix_length;
    let mut table = u32::from(m.header.table);
    let (mut dst, mut metric) = (None, 0);
    for a in &m.attributes {
        match a {
            RouteAttribute::Destination(d) => dst = ip(d),
            RouteAttribute::Table(t) => table = *t,
            RouteAttribute::Priority(p) => metric = *p,
            _ => {}
        }
    }
    let unspecified: IpAddr =
        if max == 32 { std::net::Ipv4Addr::UNSPECIFIED.into() } else { std::net::Ipv6Addr::UNSPECIFIED.into() };
    let addr = dst.unwrap_or(unspecified);
    if len > max || addr.is_ipv4() != (max == 32) {
        return None;
    }
    let prefix = IpPrefix { addr, len };
    Some(RouteKey { table, prefix: IpPrefix { addr: prefix.masked(), len }, metric })
}

fn ip(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v4) => Some((*v4).into()),
        RouteAddress::Inet6(v6) => Some((*v6).into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::route::RouteNextHop;

    fn message(dst: &str, len: u8, attributes: Vec<RouteAttribute>) -> RouteNetlinkMessage {
        let mut m = RouteMessage::default();
        let d: IpAddr = dst.parse().unwrap();
        m.header.address_family = if d.is_ipv4() { AddressFamily::Inet } else { AddressFamily::Inet6 };
        m.header.destination_prefix_length = len;
        m.header.table = MAIN_TABLE as u8;
        m.header.kind = RouteType::Unicast;
        m.header.protocol = netlink_packet_route::route::RouteProtocol::from(186);
        m.attributes.push(RouteAttribute::Destination(d.into()));
        m.attributes.extend(attributes);
        RouteNetlinkMessage::NewRoute(m)
    }

    #[test]
    fn routes_are_keyed_by_table_prefix_and_metric_with_their_hops() {
        let gw: IpAddr = "192.0.2.9".parse().unwrap();
        let m = message(
            "198.51.100.77",
            24,
            vec![RouteAttribute::Gateway(gw.into()), RouteAttribute::Oif(3), RouteAttribute::Priority(20)],
        );
        let (key, route) = route_of(&m).unwrap();
        assert_eq!(key, RouteKey { table: 254, prefix: "198.51.100.0/24".parse().unwrap(), metric: 20 });
        let hop = KernelHop { gateway: Some(gw), ifindex: 3, weight: 1 };
        assert_eq!(route, KernelRoute::Unicast { hops: vec![hop], protocol: 186 });

        let mut a = RouteNextHop::default();
        a.interface_index = 4;
        a.hops = 2;
        a.attributes.push(RouteAttribute::Gateway("2001:db8::2".parse::<IpAddr>().unwrap().into()));
        let mut b = a.clone();
        b.interface_index = 3;
        b.hops = 0;
        let (_, route) = route_of(&message("2001:db8:7::", 48, vec![RouteAttribute::MultiPath(vec![a, b])])).unwrap();
        let KernelRoute::Unicast { hops, .. } = route else { panic!() };
        assert_eq!(hops.iter().map(|h| (h.ifindex, h.weight)).collect::<Vec<_>>(), [(3, 1), (4, 3)]);

        // Compat mode adds the object's hops beside its id: the object is what is followed.
        let with_id = vec![RouteAttribute::Gateway(gw.into()), RouteAttribute::Oif(3), RouteAttribute::NhId(7)];
        let (_, route) = route_of(&message("10.0.0.0", 8, with_id)).unwrap();
        assert_eq!(route, KernelRoute::Object { id: 7, protocol: 186 });
        let RouteNetlinkMessage::NewRoute(mut m) = message("10.0.0.0", 8, vec![]) else { unreachable!() };
        m.header.kind = RouteType::Prohibit;
        assert_eq!(route_of(&RouteNetlinkMessage::NewRoute(m)).unwrap().1, KernelRoute::Reject(Reject::Prohibit));
        assert!(route_of(&message("10.0.0.0", 33, vec![])).is_none(), "a bad length");
    }
}
