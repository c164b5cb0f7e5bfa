//! The kernel's routes as the netlink listener keeps them: keyed by table, prefix and metric
//! (several routes to one prefix with different metrics are several routes), each a list of
//! next hops as the kernel gives them (`RTA_GATEWAY` and `RTA_OIF`, or `RTA_MULTIPATH`), a
//! next-hop object (`RTA_NH_ID`), or a reject (blackhole, unreachable, prohibit).

use crate::l3::Reject;
use crate::net::IpPrefix;
use netlink_packet_core::{NLM_F_APPEND, NLM_F_MULTIPART, NLM_F_REPLACE};
use std::collections::BTreeMap;
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

/// A route's next hops: one inline (most of a full table's routes have one), more on the
/// heap.
pub type Hops = smallvec::SmallVec<[KernelHop; 1]>;

/// What a kernel route does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KernelRoute {
    /// Forwards through next hops, put there by `protocol` (`RTPROT_*`: 2 the kernel's own
    /// subnet routes, 12 zebra, 186 BGP, 188 OSPF, …).
    Unicast {
        /// The next hops.
        hops: Hops,
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

/// The IPv4 routes of a key after the one the kernel uses (`ip route append` makes them; the
/// next one takes over when the first is deleted), and how a route message changes the route
/// of its key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Alternatives(BTreeMap<RouteKey, Vec<KernelRoute>>);

impl Alternatives {
    /// Forgets the alternatives of `key` (a re-dump lists them again).
    pub fn forget(&mut self, key: &RouteKey) {
        self.0.remove(key);
    }

    /// Keeps only the alternatives of the keys `keep` holds.
    pub fn keep(&mut self, keep: impl Fn(&RouteKey) -> bool) {
        self.0.retain(|key, _| keep(key));
    }

    /// What route message `route` of `key` (added when `new`, with header flags `flags`)
    /// makes of the route the kernel uses, `current`: `Some(Some(route))` a new one,
    /// `Some(None)` none, `None` no change (an alternative came or went). IPv4: an append
    /// (or a dump's second route) is an alternative, a replace replaces, an add over a route
    /// prepends; a delete removes the route whose next hops it names (or the one used),
    /// the next alternative taking over. IPv6 (whose messages list a route's every next hop
    /// when one is added): a delete naming next hops removes only those.
    pub fn route_message(
        &mut self,
        key: RouteKey,
        route: KernelRoute,
        new: bool,
        flags: u16,
        current: Option<&KernelRoute>,
    ) -> Option<Option<KernelRoute>> {
        let v4 = key.prefix.addr.is_ipv4();
        let Some(current) = current else {
            return new.then_some(Some(route));
        };
        if new {
            if !v4 || flags & NLM_F_REPLACE != 0 {
                return Some(Some(route));
            }
            let list = self.0.entry(key).or_default();
            if flags & (NLM_F_APPEND | NLM_F_MULTIPART) != 0 {
                list.push(route);
                return None;
            }
            list.insert(0, current.clone());
            return Some(Some(route));
        }
        let named = named_hops(&route);
        if v4 {
            let others = self.0.get_mut(&key);
            match (named, others) {
                (Some(hops), Some(list)) if !same_hops(current, hops) && list.iter().any(|r| same_hops(r, hops)) => {
                    list.retain(|r| !same_hops(r, hops));
                    if list.is_empty() {
                        self.0.remove(&key);
                    }
                    None
                }
                (_, Some(list)) => {
                    let next = list.remove(0);
                    if list.is_empty() {
                        self.0.remove(&key);
                    }
                    Some(Some(next))
                }
                (_, None) => Some(None),
            }
        } else {
            match (current, named) {
                (KernelRoute::Unicast { hops, protocol }, Some(gone)) => {
                    let left: Hops = hops.iter().filter(|h| !gone.iter().any(|g| same_hop(g, h))).copied().collect();
                    let changed = left.len() != hops.len() && !left.is_empty();
                    Some(changed.then_some(KernelRoute::Unicast { hops: left, protocol: *protocol }))
                }
                _ => Some(None),
            }
        }
    }
}

/// The next hops a route message names, if it names any (a delete by prefix alone does not).
fn named_hops(route: &KernelRoute) -> Option<&[KernelHop]> {
    match route {
        KernelRoute::Unicast { hops, .. } if hops.iter().any(|h| h.gateway.is_some() || h.ifindex != 0) => Some(hops),
        _ => None,
    }
}

/// Whether two next hops are the same gateway on the same device.
fn same_hop(a: &KernelHop, b: &KernelHop) -> bool {
    (a.gateway, a.ifindex) == (b.gateway, b.ifindex)
}

/// Whether `route` goes through exactly `hops`.
fn same_hops(route: &KernelRoute, hops: &[KernelHop]) -> bool {
    matches!(route, KernelRoute::Unicast { hops: mine, .. }
        if mine.len() == hops.len() && mine.iter().zip(hops).all(|(a, b)| same_hop(a, b)))
}

/// The kernel's own routes for the subnets of its addresses (`proto kernel`).
pub const PROTOCOL_KERNEL: u8 = 2;

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload};
    use netlink_packet_route::route::{RouteAttribute, RouteMessage, RouteNextHop, RouteType};
    use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

    /// What the listener reads of `message`, written to bytes by `netlink-packet-route`.
    fn route_of(message: &RouteNetlinkMessage) -> Option<(RouteKey, KernelRoute)> {
        let mut packet = NetlinkMessage::new(NetlinkHeader::default(), NetlinkPayload::from(message.clone()));
        packet.finalize();
        let mut bytes = vec![0; packet.buffer_len()];
        packet.serialize(&mut bytes);
        let update = super::super::route_bytes::parse(packet.header.message_type, 0, &bytes[16..])?;
        Some((update.key, update.route))
    }

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
        assert_eq!(route, KernelRoute::Unicast { hops: smallvec::smallvec![hop], protocol: 186 });

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

    #[test]
    fn appends_prepends_and_deletes_of_one_next_hop_change_the_route_used_as_linux_does() {
        let key = |p: &str| RouteKey { table: 254, prefix: p.parse().unwrap(), metric: 0 };
        let via = |gw: &str| KernelRoute::Unicast {
            hops: smallvec::smallvec![KernelHop { gateway: Some(gw.parse().unwrap()), ifindex: 3, weight: 1 }],
            protocol: 186,
        };
        let (k, mut alt) = (key("10.99.0.0/16"), Alternatives::default());
        let (a, b, c) = (via("10.9.0.2"), via("10.9.0.3"), via("10.9.0.4"));
        // IPv4: an append is an alternative, an add over a route prepends.
        assert_eq!(alt.route_message(k, a.clone(), true, 0, None), Some(Some(a.clone())));
        assert_eq!(alt.route_message(k, b.clone(), true, NLM_F_APPEND, Some(&a)), None);
        assert_eq!(alt.route_message(k, c.clone(), true, 0, Some(&a)), Some(Some(c.clone())), "prepended");
        // Deleting an alternative changes nothing; deleting the one used promotes the next.
        assert_eq!(alt.route_message(k, b.clone(), false, 0, Some(&c)), None);
        assert_eq!(alt.route_message(k, c.clone(), false, 0, Some(&c)), Some(Some(a.clone())));
        assert_eq!(alt.route_message(k, a.clone(), false, 0, Some(&a)), Some(None));
        assert_eq!(alt, Alternatives::default());
        // IPv6: a delete naming one next hop of three leaves two.
        let k6 = key("2001:db8:99::/48");
        let hop = |gw: &str| KernelHop { gateway: Some(gw.parse().unwrap()), ifindex: 3, weight: 1 };
        let three = KernelRoute::Unicast {
            hops: smallvec::smallvec![hop("2001:db8::2"), hop("2001:db8::3"), hop("2001:db8::4")],
            protocol: 3,
        };
        let one = KernelRoute::Unicast { hops: smallvec::smallvec![hop("2001:db8::3")], protocol: 3 };
        let two =
            KernelRoute::Unicast { hops: smallvec::smallvec![hop("2001:db8::2"), hop("2001:db8::4")], protocol: 3 };
        assert_eq!(alt.route_message(k6, one, false, 0, Some(&three)), Some(Some(two.clone())));
        let whole = KernelRoute::Unicast {
            hops: smallvec::smallvec![KernelHop { gateway: None, ifindex: 0, weight: 1 }],
            protocol: 3,
        };
        assert_eq!(alt.route_message(k6, whole, false, 0, Some(&two)), Some(None), "a delete by prefix alone");
    }
}
