//! Why the nodes of IPv4 drop packets: each reason's id, the name `show errors` prints,
//! the interface counter it is charged to, the node that drops, its sFlow discard code and what
//! it means.

crate::interface::declare_drops! {
    ARP_MALFORMED = 11, "arp-malformed", InErrors, super::nodes::ARP_INPUT, 285,
        "ARP packet that is not Ethernet/IPv4 request or reply, or is cut short";
    ARP_REPLY = 12, "arp-reply", Punt, super::nodes::ARP_INPUT, 0,
        "ARP reply received (its sender is learned when it is on the interface's subnet)";
    ARP_NOT_FOR_US = 13, "arp-not-for-us", Punt, super::nodes::ARP_INPUT, 0,
        "ARP request for an address that is not the interface's";
    TRUNCATED = 17, "truncated", InErrors, super::nodes::IP4_INPUT, 324,
        "IPv4 header or packet longer than the frame carrying it";
    BAD_IP_HEADER = 18, "bad-ip-header", InErrors, super::nodes::IP4_INPUT, 275,
        "IPv4 version not 4, header length below 20 bytes, or total length below the header length";
    BAD_CHECKSUM = 19, "bad-checksum", InErrors, super::nodes::IP4_INPUT, 275,
        "IPv4 header checksum does not verify";
    TTL_EXPIRED = 20, "ttl-expired", InDiscards, super::nodes::IP4_REWRITE, 257,
        "TTL of 0 or 1 on a packet to forward: forwarding would take it to 0 (answered with ICMP time exceeded)";
    NO_ROUTE = 21, "no-route", InDiscards, super::nodes::IP4_LOOKUP, 0,
        "no route matches the destination (answered with ICMP net unreachable)";
    BLACKHOLE = 22, "blackhole", InDiscards, super::nodes::IP4_LOOKUP, 269,
        "the matching route is a blackhole (a kernel `blackhole` route): dropped without an answer";
    ROUTE_UNREACHABLE = 23, "route-unreachable", InDiscards, super::nodes::IP4_LOOKUP, 1,
        "the matching route is an `unreachable` route (answered with ICMP host unreachable)";
    ROUTE_PROHIBITED = 24, "route-prohibited", InDiscards, super::nodes::IP4_LOOKUP, 13,
        "the matching route is a `prohibit` route (answered with ICMP communication administratively prohibited)";
    IP4_LOCAL = 25, "ip4-local", InDiscards, super::nodes::IP4_LOCAL, 285,
        "addressed to one of this router's own addresses but not an ICMP echo request (vecflow has no host stack), or an echo request over the ICMP rate limit";
    NO_NEIGHBOR = 26, "no-neighbor", OutDiscards, super::nodes::IP4_ARP, 279,
        "next hop has no MAC yet: dropped while ARP resolves it (ICMP host unreachable once resolution failed)";
    FRAG_NEEDED = 27, "fragmentation-needed", OutDiscards, super::nodes::IP4_REWRITE, 4,
        "packet larger than the output interface's MTU with DF set (answered with ICMP fragmentation needed)";
    FRAG_NO_BUFFER = 28, "no-buffer", OutDiscards, super::nodes::IP4_FRAG, 259,
        "too few free buffers for the fragments of a packet larger than the output interface's MTU";
    IP4_NO_HEADROOM = 29, "no-headroom", OutDiscards, super::nodes::IP4_REWRITE, 259,
        "the driver left too little headroom in front of the frame for the route's out-labels";
}
