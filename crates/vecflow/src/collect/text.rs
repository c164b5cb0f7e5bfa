//! sflowtool-style text output: one `key value` line per field. Strings from the datagram are
//! escaped, so every line is one the collector wrote.

use super::escape::escape;
use super::packet::{Decoded, decode_ethernet, mac};
use super::reasons::reason_name;
use sflow::*;
use std::fmt::Write;
use std::net::SocketAddr;

/// Formats one datagram the way `sflowtool` prints it (the same keys, so scripts written for
/// sflowtool's text output keep working).
pub fn datagram(out: &mut String, from: SocketAddr, unix_secs: u64, size: usize, d: &Datagram<'_>) {
    let mut kv = |k: &str, v: &dyn std::fmt::Display| {
        let _ = writeln!(out, "{k} {v}");
    };
    kv("startDatagram", &"=================================");
    kv("datagramSourceIP", &from.ip());
    kv("datagramSize", &size);
    kv("unixSecondsUTC", &unix_secs);
    kv("datagramVersion", &5);
    kv("agentSubId", &d.sub_agent_id);
    kv("agent", &d.agent);
    kv("packetSequenceNo", &d.sequence);
    kv("sysUpTime", &d.uptime_ms);
    kv("samplesInPacket", &d.samples.len());
    for s in &d.samples {
        sample(out, s);
    }
    let _ = writeln!(out, "endDatagram   =================================");
}

fn interface(i: Interface) -> String {
    match i {
        Interface::Index(v) => v.to_string(),
        Interface::Internal => "internal".into(),
        Interface::Discarded(r) => format!("discarded({r})"),
        Interface::Multiple(n) => format!("multiple {n}"),
    }
}

fn sample(out: &mut String, s: &Sample<'_>) {
    let _ = writeln!(out, "startSample ----------------------");
    match s {
        Sample::Flow(f) => {
            let _ = writeln!(
                out,
                "sampleType_tag 0:{}",
                if f.source.fits_compact() && f.input.fits_compact() && f.output.fits_compact() { 1 } else { 3 }
            );
            let _ = writeln!(out, "sampleType FLOWSAMPLE");
            let _ = writeln!(out, "sampleSequenceNo {}", f.sequence);
            let _ = writeln!(out, "sourceId {}:{}", f.source.class, f.source.index);
            let _ = writeln!(out, "meanSkipCount {}", f.sampling_rate);
            let _ = writeln!(out, "samplePool {}", f.sample_pool);
            let _ = writeln!(out, "dropEvents {}", f.drops);
            let _ = writeln!(out, "inputPort {}", interface(f.input));
            let _ = writeln!(out, "outputPort {}", interface(f.output));
            flow_records(out, "", &f.records);
        }
        Sample::Counters(c) => {
            let _ = writeln!(out, "sampleType_tag 0:{}", if c.source.fits_compact() { 2 } else { 4 });
            let _ = writeln!(out, "sampleType COUNTERSSAMPLE");
            let _ = writeln!(out, "sampleSequenceNo {}", c.sequence);
            let _ = writeln!(out, "sourceId {}:{}", c.source.class, c.source.index);
            for r in &c.records {
                counter_record(out, r);
            }
        }
        Sample::Discard(x) => {
            let _ = writeln!(out, "sampleType_tag 0:5");
            let _ = writeln!(out, "sampleType DISCARD");
            let _ = writeln!(out, "sampleSequenceNo {}", x.sequence);
            let _ = writeln!(out, "sourceId {}:{}", x.source.class, x.source.index);
            let _ = writeln!(out, "dropEvents {}", x.drops);
            let _ = writeln!(out, "inputPort {}", x.input);
            let _ = writeln!(out, "outputPort {}", x.output);
            let _ = writeln!(out, "discardCode {}", x.reason);
            let _ = writeln!(out, "discardReason {}", reason_name(x.reason));
            flow_records(out, "discarded_", &x.records);
        }
        Sample::Unknown { format, data } => {
            let _ = writeln!(out, "sampleType_tag {format}");
            let _ = writeln!(out, "sampleType UNKNOWN ({} bytes)", data.len());
        }
    }
    let _ = writeln!(out, "endSample   ----------------------");
}

fn flow_records(out: &mut String, p: &str, records: &[FlowRecord<'_>]) {
    for r in records {
        match r {
            FlowRecord::RawHeader(h) => {
                let _ = writeln!(out, "{p}flowBlock_tag 0:1");
                let _ = writeln!(out, "{p}flowSampleType HEADER");
                let _ = writeln!(out, "{p}headerProtocol {}", h.protocol);
                let _ = writeln!(out, "{p}sampledPacketSize {}", h.frame_length);
                let _ = writeln!(out, "{p}strippedBytes {}", h.stripped);
                let _ = writeln!(out, "{p}headerLen {}", h.header.len());
                let hex: Vec<String> = h.header.iter().map(|b| format!("{b:02X}")).collect();
                let _ = writeln!(out, "{p}headerBytes {}", hex.join("-"));
                if h.protocol == HEADER_PROTOCOL_ETHERNET
                    && let Some(d) = decode_ethernet(&h.header)
                {
                    decoded(out, p, &d);
                }
            }
            FlowRecord::Ethernet(e) => {
                let _ = writeln!(out, "{p}flowBlock_tag 0:2");
                let _ = writeln!(out, "{p}ethernet_type {}", e.eth_type);
                let _ = writeln!(out, "{p}ethernet_len {}", e.length);
                let _ = writeln!(out, "{p}ethernet_src {}", mac(e.src));
                let _ = writeln!(out, "{p}ethernet_dst {}", mac(e.dst));
            }
            FlowRecord::Ipv4(x) => {
                let _ = writeln!(out, "{p}flowBlock_tag 0:3");
                let _ = writeln!(
                    out,
                    "{p}srcIP {}\n{p}dstIP {}\n{p}IPProtocol {}\n{p}IPTOS {}",
                    x.src, x.dst, x.protocol, x.tos
                );
                let _ =
                    writeln!(out, "{p}srcPort {}\n{p}dstPort {}\n{p}TCPFlags {}", x.src_port, x.dst_port, x.tcp_flags);
            }
            FlowRecord::Ipv6(x) => {
                let _ = writeln!(out, "{p}flowBlock_tag 0:4");
                let _ = writeln!(
                    out,
                    "{p}srcIP6 {}\n{p}dstIP6 {}\n{p}IPProtocol {}\n{p}IP6_priority {}",
                    x.src, x.dst, x.protocol, x.priority
                );
                let _ =
                    writeln!(out, "{p}srcPort {}\n{p}dstPort {}\n{p}TCPFlags {}", x.src_port, x.dst_port, x.tcp_flags);
            }
            FlowRecord::Switch(x) => {
                let _ = writeln!(out, "{p}flowBlock_tag 0:1001");
                let _ = writeln!(
                    out,
                    "{p}in_vlan {}\n{p}in_priority {}\n{p}out_vlan {}\n{p}out_priority {}",
                    x.src_vlan, x.src_priority, x.dst_vlan, x.dst_priority
                );
            }
            FlowRecord::Router(x) => {
                let _ = writeln!(out, "{p}flowBlock_tag 0:1002");
                let _ = writeln!(
                    out,
                    "{p}nextHop {}\n{p}srcSubnetMask {}\n{p}dstSubnetMask {}",
                    x.next_hop, x.src_mask_len, x.dst_mask_len
                );
            }
            FlowRecord::Mpls(x) => {
                let stack = |s: &[u32]| {
                    s.iter()
                        .map(|l| format!("{}.{}.{}.{}", l >> 12, (l >> 9) & 7, (l >> 8) & 1, l & 0xff))
                        .collect::<Vec<_>>()
                        .join("-")
                };
                let _ = writeln!(out, "{p}flowBlock_tag 0:1006");
                let _ = writeln!(
                    out,
                    "{p}mpls_nexthop {}\n{p}mpls_input_stack {}\n{p}mpls_output_stack {}",
                    x.next_hop,
                    stack(&x.in_stack),
                    stack(&x.out_stack)
                );
            }
            FlowRecord::Unknown { format, data } => {
                let _ = writeln!(out, "{p}flowBlock_tag {format}\n{p}flowSampleType UNKNOWN ({} bytes)", data.len());
            }
        }
    }
}

fn decoded(out: &mut String, p: &str, d: &Decoded) {
    let _ =
        writeln!(out, "{p}dstMAC {}\n{p}srcMAC {}", mac(d.dst_mac).replace(':', ""), mac(d.src_mac).replace(':', ""));
    if let Some(v) = d.vlan {
        let _ = writeln!(out, "{p}decodedVLAN {v}");
    }
    if let Some(ip) = d.ip {
        let (s, dst) = if ip.src.is_ipv4() { ("srcIP", "dstIP") } else { ("srcIP6", "dstIP6") };
        let _ = writeln!(
            out,
            "{p}IPSize {}\n{p}ip.tot_len {}\n{p}{s} {}\n{p}{dst} {}",
            ip.length, ip.length, ip.src, ip.dst
        );
        let _ = writeln!(out, "{p}IPProtocol {}\n{p}IPTOS {}\n{p}IPTTL {}", ip.protocol, ip.tos, ip.ttl);
        let name = match ip.protocol {
            6 => "TCP",
            17 => "UDP",
            _ => "",
        };
        if let (Some(a), Some(b), false) = (ip.src_port, ip.dst_port, name.is_empty()) {
            let _ = writeln!(out, "{p}{name}SrcPort {a}\n{p}{name}DstPort {b}");
        }
    }
}

fn counter_record(out: &mut String, r: &CounterRecord<'_>) {
    match r {
        CounterRecord::Generic(c) => {
            let _ = writeln!(out, "counterBlock_tag 0:1");
            for (k, v) in [
                ("ifIndex", u64::from(c.if_index)),
                ("networkType", c.if_type.into()),
                ("ifSpeed", c.if_speed),
                ("ifDirection", c.if_direction.into()),
                ("ifStatus", c.if_status.into()),
                ("ifInOctets", c.in_octets),
                ("ifInUcastPkts", c.in_ucast_pkts.into()),
                ("ifInMulticastPkts", c.in_multicast_pkts.into()),
                ("ifInBroadcastPkts", c.in_broadcast_pkts.into()),
                ("ifInDiscards", c.in_discards.into()),
                ("ifInErrors", c.in_errors.into()),
                ("ifInUnknownProtos", c.in_unknown_protos.into()),
                ("ifOutOctets", c.out_octets),
                ("ifOutUcastPkts", c.out_ucast_pkts.into()),
                ("ifOutMulticastPkts", c.out_multicast_pkts.into()),
                ("ifOutBroadcastPkts", c.out_broadcast_pkts.into()),
                ("ifOutDiscards", c.out_discards.into()),
                ("ifOutErrors", c.out_errors.into()),
                ("ifPromiscuousMode", c.promiscuous_mode.into()),
            ] {
                let _ = writeln!(out, "{k} {v}");
            }
        }
        CounterRecord::Ethernet(e) => {
            let _ = writeln!(out, "counterBlock_tag 0:2");
            for (k, v) in [
                ("dot3StatsAlignmentErrors", e.alignment_errors),
                ("dot3StatsFCSErrors", e.fcs_errors),
                ("dot3StatsSingleCollisionFrames", e.single_collision_frames),
                ("dot3StatsMultipleCollisionFrames", e.multiple_collision_frames),
                ("dot3StatsSQETestErrors", e.sqe_test_errors),
                ("dot3StatsDeferredTransmissions", e.deferred_transmissions),
                ("dot3StatsLateCollisions", e.late_collisions),
                ("dot3StatsExcessiveCollisions", e.excessive_collisions),
                ("dot3StatsInternalMacTransmitErrors", e.internal_mac_transmit_errors),
                ("dot3StatsCarrierSenseErrors", e.carrier_sense_errors),
                ("dot3StatsFrameTooLongs", e.frame_too_longs),
                ("dot3StatsInternalMacReceiveErrors", e.internal_mac_receive_errors),
                ("dot3StatsSymbolErrors", e.symbol_errors),
            ] {
                let _ = writeln!(out, "{k} {v}");
            }
        }
        CounterRecord::Vlan(v) => {
            let _ = writeln!(out, "counterBlock_tag 0:5");
            let _ = writeln!(
                out,
                "vlan {}\noctets {}\nucastPkts {}\nmulticastPkts {}\nbroadcastPkts {}\ndiscards {}",
                v.vlan_id, v.octets, v.ucast_pkts, v.multicast_pkts, v.broadcast_pkts, v.discards
            );
        }
        CounterRecord::PortName(n) => {
            let _ = writeln!(out, "counterBlock_tag 0:1005\nportName {}", escape(n));
        }
        CounterRecord::Unknown { format, data } => {
            let _ = writeln!(out, "counterBlock_tag {format}\ncounterBlockType UNKNOWN ({} bytes)", data.len());
        }
    }
}
