//! Why the nodes of the flow rules drop packets: each reason's id, the name `show errors` prints,
//! the interface counter it is charged to, the node that drops, its sFlow discard code and what
//! it means.

crate::interface::declare_drops! {
    ACL = 59, "acl", InDiscards, super::nodes::FLOW_CLASSIFY, 258,
        "a flow rule with actions=drop matched";
}
