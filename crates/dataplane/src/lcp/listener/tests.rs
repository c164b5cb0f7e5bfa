use super::*;

fn p(s: &str) -> IpPrefix {
    s.parse().unwrap()
}

#[test]
fn a_view_diffs_into_the_changes_that_make_the_other() {
    let mut old = KernelView::default();
    old.change(Change::Link(2, Some(LinkFacts { up: true, carrier: true, mtu: 1500 })));
    old.change(Change::Link(3, Some(LinkFacts { up: true, carrier: true, mtu: 1500 })));
    old.change(Change::Address(2, p("10.0.0.1/24"), true));
    old.change(Change::Address(3, p("10.0.1.1/24"), true));
    let mut new = KernelView::default();
    new.change(Change::Link(2, Some(LinkFacts { up: true, carrier: true, mtu: 1400 })));
    new.change(Change::Address(2, p("10.0.0.1/24"), true));
    new.change(Change::Address(2, p("2001:db8::1/64"), true));
    let diff = old.diff(&new);
    assert_eq!(
        diff,
        [
            Change::Address(3, p("10.0.1.1/24"), false),
            Change::Link(3, None),
            Change::Link(2, Some(LinkFacts { up: true, carrier: true, mtu: 1400 })),
            Change::Address(2, p("2001:db8::1/64"), true),
        ]
    );
    for d in diff {
        assert!(old.change(d.clone()), "{d:?} changes something");
    }
    assert_eq!(old, new);
    assert!(old.diff(&new).is_empty());
    // A link that goes takes its addresses.
    assert!(old.change(Change::Link(2, None)));
    assert!(old.addresses.is_empty());
}

/// `message` as a notification (no flags).
fn notification(message: RouteNetlinkMessage) -> Message {
    Message::Rtnetlink { message, flags: 0 }
}

#[test]
fn messages_give_links_and_own_addresses() {
    let mut link = LinkMessage::default();
    link.header.index = 7;
    link.header.flags = LinkFlags::Up | LinkFlags::LowerUp;
    link.attributes.push(LinkAttribute::Mtu(1400));
    let mut addr = AddressMessage::default();
    addr.header.index = 7;
    addr.header.prefix_len = 24;
    // Point to point: the peer in IFA_ADDRESS, the own address in IFA_LOCAL.
    addr.attributes.push(AddressAttribute::Address("10.9.9.9".parse().unwrap()));
    addr.attributes.push(AddressAttribute::Local("10.0.0.1".parse().unwrap()));
    let mut view = KernelView::default();
    let up = Some(LinkFacts { up: true, carrier: true, mtu: 1400 });
    assert_eq!(view.apply(notification(RouteNetlinkMessage::NewLink(link.clone()))), [Change::Link(7, up)]);
    assert_eq!(view.apply(notification(RouteNetlinkMessage::NewLink(link.clone()))), [], "nothing new");
    let added = view.apply(notification(RouteNetlinkMessage::NewAddress(addr.clone())));
    assert_eq!(added, [Change::Address(7, p("10.0.0.1/24"), true)]);
    addr.header.prefix_len = 33;
    assert_eq!(view.apply(notification(RouteNetlinkMessage::NewAddress(addr))), [], "a bad length is ignored");
    assert_eq!(view.apply(notification(RouteNetlinkMessage::DelLink(link))), [Change::Link(7, None)]);
    assert!(view.addresses.is_empty());
}

#[test]
fn ipv4_routes_the_kernel_drops_silently_are_withdrawn() {
    use crate::lcp::routes::{KernelHop, RouteKey};
    let mut view = KernelView::default();
    view.change(Change::Link(3, Some(LinkFacts { up: true, carrier: true, mtu: 1500 })));
    view.change(Change::Address(3, p("192.0.2.1/24"), true));
    view.change(Change::Address(3, p("198.51.100.1/24"), true));
    let route = |gw: &str, ifindex| KernelRoute::Unicast {
        hops: smallvec::smallvec![KernelHop { gateway: Some(gw.parse().unwrap()), ifindex, weight: 1 }],
        protocol: 186,
    };
    let key = |prefix: &str| RouteKey { table: 254, prefix: p(prefix), metric: 0 };
    view.change(Change::Route(key("203.0.113.0/24"), Some(route("192.0.2.9", 3))));
    view.change(Change::Route(key("203.0.114.0/24"), Some(route("198.51.100.9", 3))));
    view.change(Change::Route(key("2001:db8::/32"), Some(route("fe80::1", 3))));
    // One of two IPv4 addresses goes: the routes stay; the last one goes: they go.
    assert!(view.silently_removed(&Change::Address(3, p("192.0.2.1/24"), false)).is_empty());
    view.change(Change::Address(3, p("192.0.2.1/24"), false));
    let removed = view.silently_removed(&Change::Address(3, p("198.51.100.1/24"), false));
    let gone = [Change::Route(key("203.0.113.0/24"), None), Change::Route(key("203.0.114.0/24"), None)];
    assert_eq!(removed, gone);
    // The link goes down: every IPv4 route on it (IPv6 ones the kernel reports itself).
    let removed = view.silently_removed(&Change::Link(3, Some(LinkFacts { up: false, carrier: true, mtu: 1500 })));
    assert_eq!(removed, gone);
    assert!(view.silently_removed(&Change::Link(3, Some(LinkFacts { up: true, carrier: true, mtu: 1400 }))).is_empty());
}

#[test]
fn next_hop_objects_on_a_link_losing_its_carrier_go_with_their_groups_and_routes() {
    use crate::lcp::nexthops::NextHopObject::{Group, Single};
    use crate::lcp::routes::RouteKey;
    let mut view = KernelView::default();
    let facts = |carrier| Some(LinkFacts { up: true, carrier, mtu: 1500 });
    view.change(Change::Link(3, facts(true)));
    view.change(Change::Link(4, facts(true)));
    let gw = |a: &str| Some(a.parse().unwrap());
    view.change(Change::NextHop(1, Some(Single { gateway: gw("192.0.2.2"), ifindex: 3 })));
    view.change(Change::NextHop(2, Some(Single { gateway: gw("192.0.2.3"), ifindex: 4 })));
    view.change(Change::NextHop(10, Some(Group(vec![(1, 1), (2, 3)]))));
    view.change(Change::NextHop(11, Some(Group(vec![(1, 1)]))));
    let key = |prefix: &str| RouteKey { table: 254, prefix: p(prefix), metric: 0 };
    let object = |id| Some(KernelRoute::Object { id, protocol: 186 });
    view.change(Change::Route(key("10.1.0.0/16"), object(1)));
    view.change(Change::Route(key("10.2.0.0/16"), object(10)));
    view.change(Change::Route(key("2001:db8::/32"), object(11)));
    let lost = view.apply_all(Change::Link(3, facts(false)));
    assert_eq!(
        lost[..5],
        [
            Change::NextHop(10, Some(Group(vec![(2, 3)]))),
            Change::NextHop(1, None),
            Change::NextHop(11, None),
            Change::Route(key("10.1.0.0/16"), None),
            Change::Route(key("2001:db8::/32"), None),
        ],
        "the group keeps its other member; routes of both families through what went go"
    );
    assert_eq!(view.nexthops.keys().collect::<Vec<_>>(), [&2, &10]);
    // An object removed by a message takes its routes too (but is not removed twice).
    let removed = view.silently_removed(&Change::NextHop(2, None));
    assert_eq!(removed, [Change::NextHop(10, None), Change::Route(key("10.2.0.0/16"), None)]);
    assert!(view.silently_removed(&Change::Link(3, facts(true))).is_empty(), "carrier back: nothing");
}

#[test]
fn a_redump_makes_the_view_what_it_names_and_drops_the_rest_only_when_whole() {
    use crate::lcp::routes::{KernelHop, RouteKey};
    use netlink_packet_core::{NLM_F_APPEND, NLM_F_MULTIPART};
    let key = |s: &str| RouteKey { table: 254, prefix: p(s), metric: 0 };
    let via = |ifindex| KernelRoute::Unicast {
        hops: smallvec::smallvec![KernelHop { gateway: Some("192.0.2.1".parse().unwrap()), ifindex, weight: 1 }],
        protocol: 186,
    };
    let dumped = |s: &str, ifindex| RouteUpdate { key: key(s), route: via(ifindex), new: true, flags: NLM_F_MULTIPART };
    let mut view = KernelView::default();
    for (s, ifindex) in [("10.1.0.0/16", 2), ("10.2.0.0/16", 2), ("2001:db8::/32", 2)] {
        view.change(Change::Route(key(s), Some(via(ifindex))));
    }
    // An alternative of 10.1/16 (`ip route append`) the kernel no longer has: a re-dump
    // lists its key's routes afresh.
    let append = RouteUpdate { key: key("10.1.0.0/16"), route: via(5), new: true, flags: NLM_F_APPEND };
    assert_eq!(view.apply(Message::Route(append)), [], "an alternative");
    let before = view.clone();

    // Interrupted: what it names is made, nothing it did not name goes.
    assert_eq!(view.apply_redumped(dumped("10.1.0.0/16", 3)), Some(Change::Route(key("10.1.0.0/16"), Some(via(3)))));
    assert_eq!(view.apply_redumped(dumped("10.3.0.0/16", 2)), Some(Change::Route(key("10.3.0.0/16"), Some(via(2)))));
    assert_eq!(view.end_redump(false), []);
    assert_eq!(view.routes.len(), 4);

    // Whole: 10.1/16 as the dump has it (its stale alternative forgotten: deleting it leaves
    // no route), the same route again changes nothing, and what it did not name goes.
    let mut view = before;
    assert_eq!(view.apply_redumped(dumped("10.1.0.0/16", 3)), Some(Change::Route(key("10.1.0.0/16"), Some(via(3)))));
    assert_eq!(view.apply_redumped(dumped("2001:db8::/32", 2)), None, "unchanged");
    assert_eq!(view.end_redump(true), [Change::Route(key("10.2.0.0/16"), None)]);
    let delete = RouteUpdate { key: key("10.1.0.0/16"), route: via(3), new: false, flags: 0 };
    assert_eq!(view.apply(Message::Route(delete)), [Change::Route(key("10.1.0.0/16"), None)]);
    assert_eq!(view.routes.keys().collect::<Vec<_>>(), [key("2001:db8::/32")]);
    assert_eq!(view.end_redump(true), [key("2001:db8::/32")].map(|k| Change::Route(k, None)), "marks were cleared");

    // A route removed without its alternatives (as a silent removal does): a whole re-dump
    // drops them, so a later add and delete of the key leaves no route.
    let mut view = KernelView::default();
    view.change(Change::Route(key("10.4.0.0/16"), Some(via(2))));
    let append = RouteUpdate { key: key("10.4.0.0/16"), route: via(5), new: true, flags: NLM_F_APPEND };
    assert_eq!(view.apply(Message::Route(append)), []);
    view.change(Change::Route(key("10.4.0.0/16"), None));
    assert_eq!(view.end_redump(true), []);
    let add = RouteUpdate { key: key("10.4.0.0/16"), route: via(3), new: true, flags: 0 };
    view.apply(Message::Route(add));
    let delete = RouteUpdate { key: key("10.4.0.0/16"), route: via(3), new: false, flags: 0 };
    assert_eq!(view.apply(Message::Route(delete)), [Change::Route(key("10.4.0.0/16"), None)], "no stale alternative");
}
