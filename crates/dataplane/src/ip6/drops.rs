//! Why the nodes of IPv6 drop packets: each reason's id, the name `show errors` prints,
//! the interface counter it is charged to, the node that drops, its sFlow discard code and what
//! it means.

crate::interface::declare_drops! {
    IP6_TRUNCATED = 30, "truncated", InErrors, super::nodes::IP6_INPUT, 324,
        "IPv6 header, or the payload its length announces, longer than the frame carrying it";
    IP6_BAD_HEADER = 31, "bad-ip-header", InErrors, super::nodes::IP6_INPUT, 275,
        "IPv6 version not 6";
    IP6_SOURCE_MULTICAST = 32, "source-multicast", InErrors, super::nodes::IP6_INPUT, 273,
        "IPv6 source address is multicast (ff00::/8), which no packet may carry (RFC 4291 §2.7)";
    IP6_DESTINATION_LOOPBACK = 33, "destination-loopback", InErrors, super::nodes::IP6_INPUT, 272,
        "IPv6 destination ::1 on the wire (RFC 4291 §2.5.3)";
    IP6_NO_ROUTE = 34, "no-route", InDiscards, super::nodes::IP6_LOOKUP, 0,
        "no IPv6 route matches the destination (answered with ICMPv6 destination unreachable, no route)";
    IP6_BLACKHOLE = 35, "blackhole", InDiscards, super::nodes::IP6_LOOKUP, 269,
        "the matching IPv6 route is a blackhole (a kernel `blackhole` route): dropped without an answer";
    IP6_ROUTE_UNREACHABLE = 36, "route-unreachable", InDiscards, super::nodes::IP6_LOOKUP, 0,
        "the matching IPv6 route is an `unreachable` route (answered with ICMPv6 destination unreachable, no route)";
    IP6_ROUTE_PROHIBITED = 37, "route-prohibited", InDiscards, super::nodes::IP6_LOOKUP, 13,
        "the matching IPv6 route is a `prohibit` route (answered with ICMPv6 destination unreachable, administratively prohibited)";
    IP6_LOCAL = 38, "ip6-local", InDiscards, super::nodes::IP6_LOCAL, 285,
        "addressed to one of this router's own IPv6 addresses but not an ICMPv6 echo request or neighbor discovery (vecflow has no host stack), or an echo request from an invalid source or over the ICMP rate limit";
    ICMP6_MALFORMED = 39, "icmp6-malformed", InErrors, super::nodes::IP6_LOCAL, 289,
        "ICMPv6 message for this router shorter than its header, or whose checksum does not verify";
    ND_MALFORMED = 40, "nd-malformed", InErrors, super::nodes::IP6_LOCAL, 285,
        "neighbor solicitation or advertisement failing RFC 4861's checks: hop limit not 255, code not 0, too short, a bad option, a multicast target, a solicitation from :: not to a solicited-node group";
    ND_NOT_FOR_US = 41, "nd-not-for-us", Punt, super::nodes::IP6_LOCAL, 0,
        "neighbor solicitation for an address that is not the input interface's";
    ND_ADVERTISEMENT = 42, "nd-advertisement", Punt, super::nodes::IP6_LOCAL, 0,
        "neighbor advertisement received (its target is learned when on the interface's link)";
    ND_IGNORED = 43, "nd-ignored", Punt, super::nodes::IP6_LOCAL, 0,
        "router solicitation, router advertisement or redirect: vecflow sends no router advertisements and takes no redirects";
    IP6_MULTICAST = 44, "multicast", InDiscards, super::nodes::IP6_LOOKUP, 281,
        "IPv6 multicast destination: vecflow does not route multicast";
    IP6_LINK_LOCAL = 45, "link-local", InDiscards, super::nodes::IP6_LOOKUP, 281,
        "link-local (fe80::/10) source or destination on a packet to forward: never forwarded (RFC 4291 §2.5.6)";
    IP6_SOURCE_UNSPECIFIED = 46, "source-unspecified", InDiscards, super::nodes::IP6_LOOKUP, 281,
        "source :: on a packet to forward: never forwarded (RFC 4291 §2.5.2)";
    HOP_LIMIT_EXPIRED = 47, "hop-limit-expired", InDiscards, super::nodes::IP6_REWRITE, 257,
        "hop limit of 0 or 1 on a packet to forward: forwarding would take it to 0 (answered with ICMPv6 time exceeded)";
    PACKET_TOO_BIG = 48, "packet-too-big", OutDiscards, super::nodes::IP6_REWRITE, 262,
        "IPv6 packet larger than the output interface's MTU: routers never fragment IPv6 (answered with ICMPv6 packet too big and the MTU)";
    IP6_NO_NEIGHBOR = 49, "no-neighbor", OutDiscards, super::nodes::IP6_ND, 279,
        "IPv6 next hop has no MAC yet: dropped while neighbor discovery resolves it (ICMPv6 address unreachable once resolution failed)";
    IP6_NO_HEADROOM = 50, "no-headroom", OutDiscards, super::nodes::IP6_REWRITE, 259,
        "the driver left too little headroom in front of the frame for the route's out-labels";
}
