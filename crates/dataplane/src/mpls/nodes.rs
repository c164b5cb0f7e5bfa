//! The nodes of MPLS: their ids, the names `show runtime` prints and what each does.

crate::runtime::graph::declare_nodes! {
    MPLS_INPUT = 22, "mpls-input",
        "checks the top label stack entry is present and its TTL is above 1";
    MPLS_LOOKUP = 23, "mpls-lookup",
        "finds the local-label entry of the top label: swap or pop";
    MPLS_REWRITE = 24, "mpls-rewrite",
        "swaps the top label (TTL-1) and writes MACs, or pops it: to mpls-input for the next label, or to ip4-input/ip6-input at the end of the stack";
}
