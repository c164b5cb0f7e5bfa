//! The nodes of IPv4: their ids, the names `show runtime` prints and what each does.

crate::runtime::graph::declare_nodes! {
    IP4_INPUT = 6, "ip4-input",
        "checks IPv4 version, header length, total length, checksum and TTL";
    IP4_LOOKUP = 7, "ip4-lookup",
        "longest-prefix match of the destination for a whole vector, with prefetching";
    IP4_REWRITE = 8, "ip4-rewrite",
        "checks TTL and MTU, decrements TTL (incremental checksum), pushes out-labels, writes next-hop and own MAC, sets the output interface";
    IP4_LOCAL = 9, "ip4-local",
        "packets for this router's own addresses: answers ICMP echo requests, drops the rest (or, with linux-cp, sends it up the TAP)";
    IP4_ARP = 10, "ip4-arp",
        "packets whose next hop has no MAC: drops them and sends a rate-limited ARP request";
    IP4_FRAG = 11, "ip4-frag",
        "cuts packets larger than the output MTU (DF clear) into fragments";
    ICMP4_ERROR = 12, "icmp4-error",
        "sends ICMP time exceeded / unreachable / fragmentation needed about dropped packets, rate-limited";
    ARP_INPUT = 13, "arp-input",
        "answers ARP requests for the interface's addresses, reports senders to the neighbor table";
}
