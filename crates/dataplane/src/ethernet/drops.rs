//! Why the nodes of Ethernet drop packets: each reason's id, the name `show errors` prints,
//! the interface counter it is charged to, the node that drops, its sFlow discard code and what
//! it means.

crate::interface::declare_drops! {
    TRUNCATED_ETHERNET = 5, "truncated-ethernet", InErrors, super::nodes::ETHERNET_INPUT, 324,
        "frame shorter than the 14-byte Ethernet header";
    OVERSIZE = 6, "oversize", InErrors, super::nodes::ETHERNET_INPUT, 262,
        "frame longer than the input interface's MTU plus an 18-byte tagged Ethernet header";
    INTERFACE_DOWN = 7, "interface-down", InDiscards, super::nodes::ETHERNET_INPUT, 284,
        "frame received on an interface that is administratively down";
    UNKNOWN_ETHERTYPE = 8, "unknown-ethertype", InUnknownProtos, super::nodes::ETHERNET_INPUT, 270,
        "ethertype the interface does not handle";
    UNKNOWN_VLAN = 9, "unknown-vlan", InDiscards, super::nodes::ETHERNET_INPUT, 264,
        "802.1Q tag whose VLAN id matches no sub-interface of an L3 interface";
    NOT_FOR_US = 10, "not-for-us", Punt, super::nodes::ETHERNET_INPUT, 0,
        "unicast frame on an L3 interface to another host's MAC (a promiscuous port sees its whole segment): neither forwarded nor punted";
    IP4_NOT_ENABLED = 14, "ip4-not-enabled", InUnknownProtos, super::nodes::ETHERNET_INPUT, 285,
        "IPv4 frame on an interface without IPv4 forwarding";
    MPLS_NOT_ENABLED = 15, "mpls-not-enabled", InUnknownProtos, super::nodes::ETHERNET_INPUT, 285,
        "MPLS frame on an interface without MPLS forwarding";
    IP6_NOT_ENABLED = 16, "ip6-not-enabled", InUnknownProtos, super::nodes::ETHERNET_INPUT, 285,
        "IPv6 frame on an interface without IPv6 forwarding (no IPv6 address)";
}
