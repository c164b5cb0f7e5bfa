//! The nodes of linux-cp: their ids, the names `show runtime` prints and what each does.

crate::runtime::graph::declare_nodes! {
    LINUX_CP_PUNT = 20, "linux-cp-punt",
        "packets for the router that vecflow does not answer: copied up the TAP of their input interface (linux-cp), freed";
}
