//! Names of sFlow discard reason codes, as listed in `sflow_drop.h` (sflow/host-sflow and
//! sflowtool; the codes follow the ICMP unreachable codes, 0–15, and Linux's drop reasons,
//! 256–372) and printed by sflowtool.

/// Codes 0–15: ICMP destination-unreachable codes.
const ICMP: [&str; 16] = [
    "net_unreachable",
    "host_unreachable",
    "protocol_unreachable",
    "port_unreachable",
    "frag_needed",
    "src_route_failed",
    "dst_net_unknown",
    "dst_host_unknown",
    "src_host_isolated",
    "dst_net_prohibited",
    "dst_host_prohibited",
    "dst_net_tos_unreachable",
    "dst_host_tos_unreacheable",
    "comm_admin_prohibited",
    "host_precedence_violation",
    "precedence_cutoff",
];

/// The first code of [`OTHER`].
const OTHER_FIRST: u32 = 256;

/// Codes 256–372, in order.
const OTHER: [&str; 117] = [
    "unknown",
    "ttl_exceeded",
    "acl",
    "no_buffer_space",
    "red",
    "traffic_shaping",
    "pkt_too_big",
    "src_mac_is_multicast",
    "vlan_tag_mismatch",
    "ingress_vlan_filter",
    "ingress_spanning_tree_filter",
    "port_list_is_empty",
    "port_loopback_filter",
    "blackhole_route",
    "non_ip",
    "uc_dip_over_mc_dmac",
    "dip_is_loopback_address",
    "sip_is_mc",
    "sip_is_loopback_address",
    "ip_header_corrupted",
    "ipv4_sip_is_limited_bc",
    "ipv6_mc_dip_reserved_scope",
    "ipv6_mc_dip_interface_local_scope",
    "unresolved_neigh",
    "mc_reverse_path_forwarding",
    "non_routable_packet",
    "decap_error",
    "overlay_smac_is_mc",
    "unknown_l2",
    "unknown_l3",
    "unknown_l3_exception",
    "unknown_buffer",
    "unknown_tunnel",
    "unknown_l4",
    "sip_is_unspecified",
    "mlag_port_isolation",
    "blackhole_arp_neigh",
    "src_mac_is_dmac",
    "dmac_is_reserved",
    "sip_is_class_e",
    "mc_dmac_mismatch",
    "sip_is_dip",
    "dip_is_local_network",
    "dip_is_link_local",
    "overlay_smac_is_dmac",
    "egress_vlan_filter",
    "uc_reverse_path_forwarding",
    "split_horizon",
    "locked_port",
    "dmac_filter",
    "blackhole_nexthop",
    "vxlan_parsing",
    "llc_snap_parsing",
    "vlan_parsing",
    "pppoe_ppp_parsing",
    "mpls_parsing",
    "arp_parsing",
    "ip_1_parsing",
    "ip_n_parsing",
    "gre_parsing",
    "udp_parsing",
    "tcp_parsing",
    "ipsec_parsing",
    "sctp_parsing",
    "dccp_parsing",
    "gtp_parsing",
    "esp_parsing",
    "unknown_parsing",
    "pkt_too_small",
    "unhandled_proto",
    "ipv6disabled",
    "invalid_proto",
    "ip_noproto",
    "skb_csum",
    "skb_ucopy_fault",
    "dev_ready",
    "dev_hdr",
    "dup_frag",
    "skb_gso_seg",
    "reverse_path_forwarding",
    "icmp_parsing",
    "tcp_md5notfound",
    "tcp_md5unexpected",
    "tcp_md5failure",
    "tcp_flags",
    "tcp_zerowindow",
    "tcp_old_data",
    "tcp_overwindow",
    "tcp_ofomerge",
    "tcp_rfc7323_paws",
    "tcp_invalid_sequence",
    "tcp_reset",
    "tcp_invalid_syn",
    "tcp_close",
    "tcp_fastopen",
    "tcp_old_ack",
    "tcp_too_old_ack",
    "tcp_ack_unsent_data",
    "tcp_ofo_queue_prune",
    "tcp_ofo_drop",
    "tcp_minttl",
    "ipv6_bad_exthdr",
    "ipv6_ndisc_frag",
    "ipv6_ndisc_hop_limit",
    "ipv6_ndisc_bad_code",
    "ipv6_ndisc_bad_options",
    "ipv6_ndisc_ns_otherhost",
    "tap_filter",
    "tap_txfilter",
    "tc_ingress",
    "tc_egress",
    "xdp",
    "cpu_backlog",
    "bpf_cgroup_egress",
    "xfrm_policy",
    "socket_filter",
    "bgp_flowspec",
];

/// The name of discard reason `code`, if it has one. `sflow_drop.h` lists `dev_hdr` (332) and
/// `tc_egress` (366) under 33 and 36 by a typo, and agents built from it send those codes, so
/// 33 and 36 are named too.
pub fn named(code: u32) -> Option<&'static str> {
    match code {
        0..=15 => Some(ICMP[code as usize]),
        33 => named(332),
        36 => named(366),
        _ => OTHER.get(code.checked_sub(OTHER_FIRST)? as usize).copied(),
    }
}

/// The name sflowtool prints for a discard reason code: its name, or `NotFound`.
pub fn reason_name(code: u32) -> &'static str {
    named(code).unwrap_or("NotFound")
}

#[cfg(test)]
mod tests {
    use super::*;
    use dataplane::datapath::registry::DROPS;

    #[test]
    fn every_code_vecflow_sends_is_named() {
        for r in DROPS.iter() {
            assert_ne!(reason_name(r.sflow_code), "NotFound", "{} sends {}", r.name, r.sflow_code);
        }
        assert_eq!(reason_name(324), "pkt_too_small");
    }

    #[test]
    fn the_whole_table_is_named() {
        let named_codes = (0..=u32::from(u16::MAX)).filter(|&c| named(c).is_some()).count();
        assert_eq!(named_codes, 16 + 117 + 2);
        for (code, name) in [(0, "net_unreachable"), (15, "precedence_cutoff"), (256, "unknown"), (257, "ttl_exceeded")]
        {
            assert_eq!(reason_name(code), name);
        }
        for (code, name) in [(289, "unknown_l4"), (290, "sip_is_unspecified"), (332, "dev_hdr"), (33, "dev_hdr")] {
            assert_eq!(reason_name(code), name);
        }
        for (code, name) in [(366, "tc_egress"), (36, "tc_egress"), (371, "socket_filter"), (372, "bgp_flowspec")] {
            assert_eq!(reason_name(code), name);
        }
        for code in [16, 32, 255, 373, u32::MAX] {
            assert_eq!(reason_name(code), "NotFound");
        }
    }
}
