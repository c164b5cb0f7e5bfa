//! The nodes of the flow rules: their ids, the names `show runtime` prints and what each does.

crate::runtime::graph::declare_nodes! {
    FLOW_CLASSIFY = 16, "flow-classify",
        "classifies frames of interfaces with flow rules (megaflow cache: EMC, Cuckoo Distributor, ranked subtables) and outputs, drops (acl) or passes them on";
}
