//! Why the nodes of linux-cp drop packets: each reason's id, the name `show errors` prints,
//! the interface counter it is charged to, the node that drops, its sFlow discard code and what
//! it means.

crate::interface::declare_drops! {
    LCP_DUPLICATE_ANSWER = 56, "lcp-duplicate-answer", Punt, super::nodes::LINUX_CP_PUNT, 0,
        "an ARP reply or neighbor advertisement Linux wrote on a linux-cp TAP for an address vecflow answers for itself (vecflow's answer is the one sent)";
    PUNT_POLICED = 57, "punt-policed", InDiscards, super::nodes::LINUX_CP_PUNT, 258,
        "a packet for linux-cp's TAP over its class's rate (linux-cp.punt-rate)";
    PUNT_QUEUE_FULL = 58, "punt-queue-full", InDiscards, super::nodes::LINUX_CP_PUNT, 259,
        "a packet for linux-cp's TAP found the queue to the control thread full";
}
