//! The nodes of the interfaces: their ids, the names `show runtime` prints and what each does.

crate::runtime::graph::declare_nodes! {
    INTERFACE_OUTPUT = 25, "interface-output",
        "checks the output interface's state and MTU, counts tx, hands frames to the driver";
    ERROR_DROP = 30, "error-drop",
        "counts each dropped frame per input interface and reason, frees it";
}
