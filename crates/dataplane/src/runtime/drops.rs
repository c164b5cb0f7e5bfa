//! Named drop reasons and the interface counter each one feeds.
//!
//! Every node that drops a packet sets its [`DropReason`] in the buffer metadata and sends it
//! to `error-drop`, which counts it per input interface and per reason.

use crate::runtime::graph::NodeId;

/// The interface counter a drop is charged to (the IF-MIB / sFlow generic counter names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropClass {
    /// ifInDiscards: a good frame dropped on input (policy, state, resources).
    InDiscards,
    /// ifInErrors: a malformed frame.
    InErrors,
    /// ifInUnknownProtos: a protocol the interface does not handle.
    InUnknownProtos,
    /// ifOutDiscards: dropped on the way out.
    OutDiscards,
    /// ifOutErrors: the driver could not send it.
    OutErrors,
    /// Not a discard: a packet for this router's control plane, consumed (an ARP reply, a
    /// request for someone else), or a frame for another host that only a promiscuous port
    /// sees. Counted in `show errors` only.
    Punt,
}

macro_rules! drop_reasons {
    ($($variant:ident = $name:literal, $class:ident, $node:ident, $code:literal, $desc:literal;)*) => {
        /// Why a packet was dropped. The names are what `show errors` prints.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u16)]
        pub enum DropReason {
            $(#[doc = $desc] $variant,)*
        }

        impl DropReason {
            /// Every reason, in counter-index order.
            pub const ALL: &'static [DropReason] = &[$(DropReason::$variant),*];

            /// The reason's counter name, e.g. `truncated-ethernet`.
            pub fn name(self) -> &'static str {
                match self { $(DropReason::$variant => $name,)* }
            }

            /// One line saying what it means.
            pub fn description(self) -> &'static str {
                match self { $(DropReason::$variant => $desc,)* }
            }

            /// The node that drops for this reason.
            pub fn node(self) -> NodeId {
                match self { $(DropReason::$variant => NodeId::$node,)* }
            }

            /// The sFlow discard reason code (sflow_drops.txt) reported for it.
            pub fn sflow_code(self) -> u32 {
                match self { $(DropReason::$variant => $code,)* }
            }

            /// The interface counter it is charged to.
            pub fn class(self) -> DropClass {
                match self { $(DropReason::$variant => DropClass::$class,)* }
            }
        }
    };
}

drop_reasons! {
    Unspecified = "unspecified", InDiscards, ErrorDrop, 256, "sent to error-drop without a reason (a bug if it ever counts)";
    RxTruncated = "rx-truncated", InErrors, AfPacketInput, 262, "frame larger than a buffer and no super-frame vecflow can cut (UDP fragmentation offload, a tunnel's, segments above buffers.data-size), or cut short by the rx ring";
    PcapFrameTooLong = "frame-too-long", InErrors, PcapInput, 262, "capture frame larger than a buffer holds";
    PcapNotEthernet = "not-ethernet", InUnknownProtos, PcapInput, 270, "capture frame of a pcapng interface whose link type is not Ethernet";
    CsumNotReady = "csum-not-ready", InErrors, AfPacketInput, 289, "the sender left the checksum to offload at offsets outside the frame";
    TruncatedEthernet = "truncated-ethernet", InErrors, EthernetInput, 324, "frame shorter than the 14-byte Ethernet header";
    Oversize = "oversize", InErrors, EthernetInput, 262, "frame longer than the input interface's MTU plus an 18-byte tagged Ethernet header";
    InterfaceDown = "interface-down", InDiscards, EthernetInput, 284, "frame received on an interface that is administratively down";
    UnknownEthertype = "unknown-ethertype", InUnknownProtos, EthernetInput, 270, "ethertype the interface does not handle";
    UnknownVlan = "unknown-vlan", InDiscards, EthernetInput, 264, "802.1Q tag whose VLAN id matches no sub-interface of an L3 interface";
    NotForUs = "not-for-us", Punt, EthernetInput, 0, "unicast frame on an L3 interface to another host's MAC (a promiscuous port sees its whole segment): neither forwarded nor punted";
    ArpMalformed = "arp-malformed", InErrors, ArpInput, 285, "ARP packet that is not Ethernet/IPv4 request or reply, or is cut short";
    ArpReply = "arp-reply", Punt, ArpInput, 0, "ARP reply received (its sender is learned when it is on the interface's subnet)";
    ArpNotForUs = "arp-not-for-us", Punt, ArpInput, 0, "ARP request for an address that is not the interface's";
    Ip4NotEnabled = "ip4-not-enabled", InUnknownProtos, EthernetInput, 285, "IPv4 frame on an interface without IPv4 forwarding";
    MplsNotEnabled = "mpls-not-enabled", InUnknownProtos, EthernetInput, 285, "MPLS frame on an interface without MPLS forwarding";
    Ip6NotEnabled = "ip6-not-enabled", InUnknownProtos, EthernetInput, 285, "IPv6 frame on an interface without IPv6 forwarding (no IPv6 address)";
    Truncated = "truncated", InErrors, Ip4Input, 324, "IPv4 header or packet longer than the frame carrying it";
    BadIpHeader = "bad-ip-header", InErrors, Ip4Input, 275, "IPv4 version not 4, header length below 20 bytes, or total length below the header length";
    BadChecksum = "bad-checksum", InErrors, Ip4Input, 275, "IPv4 header checksum does not verify";
    TtlExpired = "ttl-expired", InDiscards, Ip4Rewrite, 257, "TTL of 0 or 1 on a packet to forward: forwarding would take it to 0 (answered with ICMP time exceeded)";
    NoRoute = "no-route", InDiscards, Ip4Lookup, 0, "no route matches the destination (answered with ICMP net unreachable)";
    Blackhole = "blackhole", InDiscards, Ip4Lookup, 269, "the matching route is a blackhole (a kernel `blackhole` route): dropped without an answer";
    RouteUnreachable = "route-unreachable", InDiscards, Ip4Lookup, 1, "the matching route is an `unreachable` route (answered with ICMP host unreachable)";
    RouteProhibited = "route-prohibited", InDiscards, Ip4Lookup, 13, "the matching route is a `prohibit` route (answered with ICMP communication administratively prohibited)";
    Ip4Local = "ip4-local", InDiscards, Ip4Local, 285, "addressed to one of this router's own addresses but not an ICMP echo request (vecflow has no host stack), or an echo request over the ICMP rate limit";
    NoNeighbor = "no-neighbor", OutDiscards, Ip4Arp, 279, "next hop has no MAC yet: dropped while ARP resolves it (ICMP host unreachable once resolution failed)";
    FragNeeded = "fragmentation-needed", OutDiscards, Ip4Rewrite, 4, "packet larger than the output interface's MTU with DF set (answered with ICMP fragmentation needed)";
    FragNoBuffer = "no-buffer", OutDiscards, Ip4Frag, 259, "too few free buffers for the fragments of a packet larger than the output interface's MTU";
    Ip4NoHeadroom = "no-headroom", OutDiscards, Ip4Rewrite, 259, "the driver left too little headroom in front of the frame for the route's out-labels";
    Ip6Truncated = "truncated", InErrors, Ip6Input, 324, "IPv6 header, or the payload its length announces, longer than the frame carrying it";
    Ip6BadHeader = "bad-ip-header", InErrors, Ip6Input, 275, "IPv6 version not 6";
    Ip6SourceMulticast = "source-multicast", InErrors, Ip6Input, 273, "IPv6 source address is multicast (ff00::/8), which no packet may carry (RFC 4291 §2.7)";
    Ip6DestinationLoopback = "destination-loopback", InErrors, Ip6Input, 272, "IPv6 destination ::1 on the wire (RFC 4291 §2.5.3)";
    Ip6NoRoute = "no-route", InDiscards, Ip6Lookup, 0, "no IPv6 route matches the destination (answered with ICMPv6 destination unreachable, no route)";
    Ip6Blackhole = "blackhole", InDiscards, Ip6Lookup, 269, "the matching IPv6 route is a blackhole (a kernel `blackhole` route): dropped without an answer";
    Ip6RouteUnreachable = "route-unreachable", InDiscards, Ip6Lookup, 0, "the matching IPv6 route is an `unreachable` route (answered with ICMPv6 destination unreachable, no route)";
    Ip6RouteProhibited = "route-prohibited", InDiscards, Ip6Lookup, 13, "the matching IPv6 route is a `prohibit` route (answered with ICMPv6 destination unreachable, administratively prohibited)";
    Ip6Local = "ip6-local", InDiscards, Ip6Local, 285, "addressed to one of this router's own IPv6 addresses but not an ICMPv6 echo request or neighbor discovery (vecflow has no host stack), or an echo request from an invalid source or over the ICMP rate limit";
    Icmp6Malformed = "icmp6-malformed", InErrors, Ip6Local, 289, "ICMPv6 message for this router shorter than its header, or whose checksum does not verify";
    NdMalformed = "nd-malformed", InErrors, Ip6Local, 285, "neighbor solicitation or advertisement failing RFC 4861's checks: hop limit not 255, code not 0, too short, a bad option, a multicast target, a solicitation from :: not to a solicited-node group";
    NdNotForUs = "nd-not-for-us", Punt, Ip6Local, 0, "neighbor solicitation for an address that is not the input interface's";
    NdAdvertisement = "nd-advertisement", Punt, Ip6Local, 0, "neighbor advertisement received (its target is learned when on the interface's link)";
    NdIgnored = "nd-ignored", Punt, Ip6Local, 0, "router solicitation, router advertisement or redirect: vecflow sends no router advertisements and takes no redirects";
    Ip6Multicast = "multicast", InDiscards, Ip6Lookup, 281, "IPv6 multicast destination: vecflow does not route multicast";
    Ip6LinkLocal = "link-local", InDiscards, Ip6Lookup, 281, "link-local (fe80::/10) source or destination on a packet to forward: never forwarded (RFC 4291 §2.5.6)";
    Ip6SourceUnspecified = "source-unspecified", InDiscards, Ip6Lookup, 281, "source :: on a packet to forward: never forwarded (RFC 4291 §2.5.2)";
    HopLimitExpired = "hop-limit-expired", InDiscards, Ip6Rewrite, 257, "hop limit of 0 or 1 on a packet to forward: forwarding would take it to 0 (answered with ICMPv6 time exceeded)";
    PacketTooBig = "packet-too-big", OutDiscards, Ip6Rewrite, 262, "IPv6 packet larger than the output interface's MTU: routers never fragment IPv6 (answered with ICMPv6 packet too big and the MTU)";
    Ip6NoNeighbor = "no-neighbor", OutDiscards, Ip6Nd, 279, "IPv6 next hop has no MAC yet: dropped while neighbor discovery resolves it (ICMPv6 address unreachable once resolution failed)";
    Ip6NoHeadroom = "no-headroom", OutDiscards, Ip6Rewrite, 259, "the driver left too little headroom in front of the frame for the route's out-labels";
    MplsTruncated = "truncated", InErrors, MplsInput, 324, "frame ends before the first MPLS label stack entry";
    MplsTtlExpired = "ttl-expired", InDiscards, MplsInput, 257, "top label TTL of 0 or 1: forwarding would take it to 0";
    NoLabel = "no-label", InDiscards, MplsLookup, 0, "no local-label entry for the top label";
    PopNotEos = "pop-not-eos", InDiscards, MplsLookup, 285, "the top label's entry pops, but more labels follow (only end-of-stack pops are supported)";
    MplsNoNeighbor = "no-neighbor", OutDiscards, MplsRewrite, 279, "the swap's next hop has no neighbor (MAC) entry on the output interface";
    MplsNoHeadroom = "no-headroom", OutDiscards, MplsRewrite, 259, "the driver left too little headroom in front of the frame for the swap's extra labels";
    LcpDuplicateAnswer = "lcp-duplicate-answer", Punt, LcpPunt, 0, "an ARP reply or neighbor advertisement Linux wrote on a linux-cp TAP for an address vecflow answers for itself (vecflow's answer is the one sent)";
    PuntPoliced = "punt-policed", InDiscards, LcpPunt, 258, "a packet for linux-cp's TAP over its class's rate (linux-cp.punt-rate)";
    PuntQueueFull = "punt-queue-full", InDiscards, LcpPunt, 259, "a packet for linux-cp's TAP found the queue to the control thread full";
    Acl = "acl", InDiscards, FlowClassify, 258, "a flow rule with actions=drop matched";
    TxInterfaceDown = "tx-interface-down", OutDiscards, InterfaceOutput, 284, "output interface is down: administratively, or its link has no carrier (read every 10 ms)";
    TagNoHeadroom = "no-headroom", OutDiscards, InterfaceOutput, 259, "the driver left too little headroom in front of the frame for the output sub-interface's 802.1Q tag";
    MtuExceeded = "mtu-exceeded", OutDiscards, InterfaceOutput, 262, "frame longer than the output interface's MTU plus its Ethernet header (14 bytes, 18 with a tag)";
    TxError = "tx-error", OutErrors, AfPacketTx, 259, "the kernel refused the frame (its transmit queue was full, or its link went down in the 10 ms before vecflow read it)";
    TxRingFull = "tx-ring-full", OutErrors, AfXdpTx, 259, "the AF_XDP socket's tx ring was full (the kernel sends slower than vecflow forwards)";
    PcapWriteError = "write-error", OutErrors, PcapTx, 259, "the capture file could not be written (disk full, say)";
}

/// Number of drop reasons (the width of a per-interface error counter row).
pub const N_REASONS: usize = DropReason::ALL.len();

impl DropReason {
    /// True when a driver's rx node drops for this reason, before the frame reaches the
    /// receive sampler (which then never counted it as seen).
    pub fn before_sampling(self) -> bool {
        NodeId::INPUTS.contains(&self.node())
    }

    /// The reason with counter index `i`, if any.
    pub fn from_index(i: u16) -> Option<DropReason> {
        DropReason::ALL.get(i as usize).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_and_names_are_unique() {
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
            assert_eq!(DropReason::from_index(i as u16), Some(*r));
        }
        // A name may repeat across nodes (`ttl-expired` in ip4-input and mpls-input), never
        // within one.
        let mut names: Vec<_> = DropReason::ALL.iter().map(|r| (r.node() as u8, r.name())).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), N_REASONS);
    }
}
