//! The nodes of Ethernet: their ids, the names `show runtime` prints and what each does.

crate::runtime::graph::declare_nodes! {
    ETHERNET_INPUT = 4, "ethernet-input",
        "checks frame length and interface state, counts unicast/multicast/broadcast, dispatches by interface mode and ethertype";
    L2_XCONNECT = 5, "l2-xconnect",
        "sets the output interface to the cross-connected peer";
}
