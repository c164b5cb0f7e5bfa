//! The nodes of IPv6: their ids, the names `show runtime` prints and what each does.

crate::runtime::graph::declare_nodes! {
    IP6_INPUT = 14, "ip6-input",
        "checks IPv6 version, payload length against the frame, multicast source and loopback destination";
    IP6_LOOKUP = 15, "ip6-lookup",
        "longest-prefix match of the destination for a whole vector, the walks interleaved level by level with prefetching";
    IP6_REWRITE = 17, "ip6-rewrite",
        "checks hop limit and MTU, decrements the hop limit, pushes out-labels, writes next-hop and own MAC, sets the output interface";
    IP6_LOCAL = 18, "ip6-local",
        "IPv6 packets for this router: answers ICMPv6 echo requests and neighbor solicitations, learns from neighbor discovery, drops the rest (or, with linux-cp, sends it up the TAP)";
    IP6_ND = 19, "ip6-nd",
        "IPv6 packets whose next hop has no MAC: drops them and sends a rate-limited neighbor solicitation";
    ICMP6_ERROR = 21, "icmp6-error",
        "sends ICMPv6 time exceeded / destination unreachable / packet too big about dropped packets, rate-limited";
}
