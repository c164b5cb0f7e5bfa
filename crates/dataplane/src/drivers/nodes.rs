//! The nodes of the drivers: their ids, the names `show runtime` prints and what each does.

crate::runtime::graph::declare_nodes! {
    GENERATOR_INPUT = 0, "generator-input",
        "the embedded generator's rx side: fills fresh frames from stream templates";
    AF_PACKET_INPUT = 1, "af-packet-input",
        "copies frames from AF_PACKET rx rings into buffers, restoring stripped VLAN tags and offloaded checksums";
    AF_XDP_INPUT = 2, "af-xdp-input",
        "hands frames the kernel wrote into our buffers (AF_XDP rx ring) to the graph as they are, refills the fill ring";
    PCAP_INPUT = 3, "pcap-input",
        "copies frames of a pcap or pcapng file into buffers, once or looping, paced to a rate";
    GENERATOR_TX = 26, "generator-tx",
        "the generator's tx side (sink): reads each frame once and frees it";
    AF_PACKET_TX = 27, "af-packet-tx",
        "sends frames on AF_PACKET sockets, one sendmmsg per run of frames for one interface";
    AF_XDP_TX = 28, "af-xdp-tx",
        "puts frames on AF_XDP tx rings (the buffers themselves, no copy) and wakes the kernel";
    PCAP_TX = 29, "pcap-tx",
        "writes frames to the interface's capture file (or only counts them), frees them";
}

/// The drivers' rx input nodes (polled by workers, never queued).
pub const INPUTS: &[crate::runtime::graph::NodeId] = &[GENERATOR_INPUT, AF_PACKET_INPUT, AF_XDP_INPUT, PCAP_INPUT];
