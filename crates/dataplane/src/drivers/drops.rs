//! Why the nodes of the drivers drop packets: each reason's id, the name `show errors` prints,
//! the interface counter it is charged to, the node that drops, its sFlow discard code and what
//! it means.

crate::interface::declare_drops! {
    RX_TRUNCATED = 1, "rx-truncated", InErrors, super::nodes::AF_PACKET_INPUT, 262,
        "frame larger than a buffer and no super-frame vecflow can cut (UDP fragmentation offload, a tunnel's, segments above buffers.data-size), or cut short by the rx ring";
    PCAP_FRAME_TOO_LONG = 2, "frame-too-long", InErrors, super::nodes::PCAP_INPUT, 262,
        "capture frame larger than a buffer holds";
    PCAP_NOT_ETHERNET = 3, "not-ethernet", InUnknownProtos, super::nodes::PCAP_INPUT, 270,
        "capture frame of a pcapng interface whose link type is not Ethernet";
    CSUM_NOT_READY = 4, "csum-not-ready", InErrors, super::nodes::AF_PACKET_INPUT, 289,
        "the sender left the checksum to offload at offsets outside the frame";
    TX_ERROR = 63, "tx-error", OutErrors, super::nodes::AF_PACKET_TX, 259,
        "the kernel refused the frame (its transmit queue was full, or its link went down in the 10 ms before vecflow read it)";
    TX_RING_FULL = 64, "tx-ring-full", OutErrors, super::nodes::AF_XDP_TX, 259,
        "the AF_XDP socket's tx ring was full (the kernel sends slower than vecflow forwards)";
    PCAP_WRITE_ERROR = 65, "write-error", OutErrors, super::nodes::PCAP_TX, 259,
        "the capture file could not be written (disk full, say)";
}
