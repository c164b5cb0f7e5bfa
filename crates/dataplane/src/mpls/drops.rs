//! Why the nodes of MPLS drop packets: each reason's id, the name `show errors` prints,
//! the interface counter it is charged to, the node that drops, its sFlow discard code and what
//! it means.

crate::interface::declare_drops! {
    MPLS_TRUNCATED = 51, "truncated", InErrors, super::nodes::MPLS_INPUT, 324,
        "frame ends before the first MPLS label stack entry";
    MPLS_TTL_EXPIRED = 52, "ttl-expired", InDiscards, super::nodes::MPLS_INPUT, 257,
        "top label TTL of 0 or 1: forwarding would take it to 0";
    NO_LABEL = 53, "no-label", InDiscards, super::nodes::MPLS_LOOKUP, 0,
        "no local-label entry for the top label";
    MPLS_NO_NEIGHBOR = 54, "no-neighbor", OutDiscards, super::nodes::MPLS_REWRITE, 279,
        "the swap's next hop has no neighbor (MAC) entry on the output interface";
    MPLS_NO_HEADROOM = 55, "no-headroom", OutDiscards, super::nodes::MPLS_REWRITE, 259,
        "the driver left too little headroom in front of the frame for the swap's extra labels";
    TOO_MANY_POPS = 66, "too-many-pops", InDiscards, super::nodes::MPLS_REWRITE, 285,
        "a ninth label popped from one packet with labels still under it (a pop looks the next label up, at most 8 times)";
}
