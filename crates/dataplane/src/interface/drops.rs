//! Why the nodes of the interfaces drop packets: each reason's id, the name `show errors` prints,
//! the interface counter it is charged to, the node that drops, its sFlow discard code and what
//! it means.

crate::interface::declare_drops! {
    UNSPECIFIED = 0, "unspecified", InDiscards, super::nodes::ERROR_DROP, 256,
        "sent to error-drop without a reason (a bug if it ever counts)";
    TX_INTERFACE_DOWN = 60, "tx-interface-down", OutDiscards, super::nodes::INTERFACE_OUTPUT, 284,
        "output interface is down: administratively, or its link has no carrier (read every 10 ms)";
    TAG_NO_HEADROOM = 61, "no-headroom", OutDiscards, super::nodes::INTERFACE_OUTPUT, 259,
        "the driver left too little headroom in front of the frame for the output sub-interface's 802.1Q tag";
    MTU_EXCEEDED = 62, "mtu-exceeded", OutDiscards, super::nodes::INTERFACE_OUTPUT, 262,
        "frame longer than the output interface's MTU plus its Ethernet header (14 bytes, 18 with a tag)";
}
