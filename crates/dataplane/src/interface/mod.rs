//! Interfaces: the main thread's description of each one, the compact per-interface facts
//! workers read ([`InterfaceTable`], their part of the snapshot workers forward with), and the per-worker counters that
//! sFlow's generic/ethernet records need. Beside them: [`build`] (interfaces from the
//! configuration), [`config`] (the `interfaces` section, with each driver's sub-section in
//! [`driver_config`] and the generator's streams in [`stream_config`]), and the nodes `interface-output`
//! ([`output`]) and `error-drop` ([`error_drop`]).

pub mod build;
pub mod config;
pub mod driver_config;
mod drop_info;
pub mod drops;
pub mod error_drop;
mod hooks;
pub mod nodes;
pub mod output;
pub mod stream_config;
mod worker;

pub(crate) use drop_info::declare_drops;
pub use drop_info::{DropClass, DropInfo, MAX_REASONS};
pub use hooks::TxSampling;
pub use worker::{InterfaceCounters, InterfaceTables, InterfaceWorker, consumed};

use crate::net::{Ipv4Prefix, Ipv6Prefix};
use crate::net::{L2_OVERHEAD, MAX_INTERFACES};
use crate::runtime::counter::Counter;
use crate::runtime::graph::NodeId;
use crate::runtime::stats::counter_set;
use serde::Serialize;
use std::net::{Ipv4Addr, Ipv6Addr};
use wire::MacAddr;

/// What an interface does with the frames it receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RxMode {
    /// Layer-3 interface: frames are dispatched by ethertype.
    L3,
    /// Every frame is sent out of the peer interface unchanged.
    L2Xconnect {
        /// Index of the output interface.
        peer: u16,
    },
}

/// The driver behind an interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DriverKind {
    /// The embedded traffic generator (rx) and sink (tx).
    Generator,
    /// A Linux interface through AF_PACKET sockets.
    AfPacket,
    /// Capture files.
    Pcap,
    /// A Linux interface through AF_XDP sockets.
    AfXdp,
}

/// An interface as the main thread knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Interface {
    /// Index, also the sFlow ifIndex (≥ 1).
    pub index: u16,
    /// Name, unique.
    pub name: String,
    /// Administrative state.
    pub admin_up: bool,
    /// MAC address.
    #[serde(serialize_with = "ser_display")]
    pub mac: MacAddr,
    /// L3 MTU in bytes.
    pub mtu: u16,
    /// Receive behaviour.
    pub mode: RxMode,
    /// Driver.
    pub driver: DriverKind,
    /// Worker that polls its (first) rx queue.
    pub rx_worker: u16,
    /// How workers wait when its rx queues are empty.
    pub rx_mode: crate::net::PollMode,
    /// MPLS forwarding is on.
    pub mpls: bool,
    /// IPv4 and IPv6 addresses (each family is forwarded when there is at least one of it);
    /// an interface with IPv6 addresses has a link-local one (fe80::/10).
    #[serde(serialize_with = "ser_display_list")]
    pub addresses: Vec<crate::net::IpPrefix>,
    /// The index of the VRF whose tables route what it receives and hold its addresses'
    /// routes (0: the default table). Not shown: an index, which depends on the order VRFs
    /// were made in (`show interface` names the VRF).
    #[serde(skip)]
    pub vrf: u16,
    /// For a sub-interface, the index of the physical interface it belongs to.
    pub parent: Option<u16>,
    /// For a sub-interface, the 802.1Q VLAN id it matches and tags with.
    pub vlan: Option<u16>,
}

fn ser_display_list<T: std::fmt::Display, S: serde::Serializer>(v: &[T], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|x| x.to_string()))
}

fn ser_display<T: std::fmt::Display, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

/// What a worker needs to know about one interface, packed for the hot path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IfRuntime {
    /// Administrative state.
    pub admin_up: bool,
    /// Longest frame accepted on rx or sent on tx: MTU + [`L2_OVERHEAD`].
    pub max_frame: u16,
    /// L3 MTU: the longest IPv4 packet sent without fragmenting.
    pub mtu: u16,
    /// Receive behaviour.
    pub mode: RxMode,
    /// Node that transmits on it (its driver's tx node), or `error-drop` when it is down.
    pub tx_node: NodeId,
    /// IPv4 frames are forwarded (the interface has an IPv4 address).
    pub ip4: bool,
    /// IPv6 frames are forwarded (the interface has an IPv6 address).
    pub ip6: bool,
    /// MPLS frames are forwarded.
    pub mpls: bool,
    /// Frames go through `flow-classify` (flow rules may apply to it).
    pub classify: bool,
    /// The VLAN id to tag with on output (a sub-interface), 0 for none.
    pub vlan: u16,
    /// Tagged frames on this (physical) interface are demultiplexed to sub-interfaces.
    pub has_subifs: bool,
    /// The physical interface: itself, or a sub-interface's parent.
    pub port: u16,
    /// Its MAC address (the source of frames routed out of it).
    pub mac: MacAddr,
    /// How a worker waits when its rx queues are empty.
    pub rx_mode: crate::net::PollMode,
}

impl IfRuntime {
    /// The entry for an unused index: down, drops everything.
    pub const UNUSED: IfRuntime = IfRuntime {
        admin_up: false,
        max_frame: 0,
        mtu: 0,
        mode: RxMode::L3,
        tx_node: nodes::ERROR_DROP,
        ip4: false,
        ip6: false,
        mpls: false,
        classify: false,
        vlan: 0,
        has_subifs: false,
        port: 0,
        mac: MacAddr([0; 6]),
        rx_mode: crate::net::PollMode::Polling,
    };
}

/// The interfaces as workers see them: each one's facts, the VLANs of sub-interfaces and the
/// interface addresses. Part of the workers' snapshot (`datapath::Tables`), replaced as a
/// whole (never edited in place) when the configuration changes.
#[derive(Debug, Clone)]
pub struct InterfaceTable {
    /// Indexed by interface index; `MAX_INTERFACES` long so any `u16` below that is valid.
    pub ifs: Vec<IfRuntime>,
    /// (physical interface, VLAN id) → sub-interface.
    pub vlans: std::collections::HashMap<(u16, u16), u16>,
    /// Every IPv4 interface address: (interface index, address with its prefix length).
    pub addresses: Vec<(u16, Ipv4Prefix)>,
    /// Every IPv6 interface address, link-local ones included: (interface index, address
    /// with its prefix length).
    pub addresses6: Vec<(u16, Ipv6Prefix)>,
}

impl InterfaceTable {
    /// The table of `interfaces`; `classified` says which of them `flow-classify` reads, and
    /// `tx_node` which node transmits for each kind of driver.
    pub fn new(
        interfaces: &[Interface],
        classified: impl Fn(u16) -> bool,
        tx_node: impl Fn(DriverKind) -> NodeId,
    ) -> Self {
        let mut ifs = vec![IfRuntime::UNUSED; MAX_INTERFACES];
        for i in interfaces {
            ifs[i.index as usize] = IfRuntime {
                admin_up: i.admin_up,
                max_frame: i.mtu + L2_OVERHEAD,
                mtu: i.mtu,
                mode: i.mode,
                tx_node: if i.admin_up { tx_node(i.driver) } else { nodes::ERROR_DROP },
                ip4: i.addresses.iter().any(|a| a.addr.is_ipv4()),
                ip6: i.addresses.iter().any(|a| a.addr.is_ipv6()),
                mpls: i.mpls,
                classify: classified(i.index),
                vlan: i.vlan.unwrap_or(0),
                has_subifs: interfaces.iter().any(|s| s.parent == Some(i.index)),
                port: i.parent.unwrap_or(i.index),
                mac: i.mac,
                rx_mode: i.rx_mode,
            };
        }
        let vlans = interfaces.iter().filter_map(|s| Some(((s.parent?, s.vlan?), s.index))).collect();
        let addresses =
            interfaces.iter().flat_map(|i| i.addresses.iter().filter_map(|a| Some((i.index, a.v4()?)))).collect();
        let addresses6 =
            interfaces.iter().flat_map(|i| i.addresses.iter().filter_map(|a| Some((i.index, a.v6()?)))).collect();
        Self { ifs, vlans, addresses, addresses6 }
    }

    /// Interface `index`'s IPv6 addresses.
    fn own6(&self, index: u16) -> impl Iterator<Item = &Ipv6Prefix> + Clone {
        self.addresses6.iter().filter(move |&&(i, _)| i == index).map(|(_, a)| a)
    }

    /// True when `addr` is one of interface `index`'s own IPv6 addresses (link-local
    /// included).
    pub fn is_own_address6(&self, index: u16, addr: Ipv6Addr) -> bool {
        self.own6(index).any(|a| a.addr == addr)
    }

    /// True when `addr` is on interface `index`'s link: link-local, or inside one of its
    /// IPv6 prefixes.
    pub fn is_on_link6(&self, index: u16, addr: Ipv6Addr) -> bool {
        crate::net::is_link_local(addr.into()) || self.own6(index).any(|a| a.contains(addr))
    }

    /// The address interface `index` speaks IPv6 from toward `peer`: its link-local one
    /// toward a link-local peer; otherwise the global one whose prefix covers `peer`, else its
    /// first global one, else its link-local one. `None` when it has no IPv6 address.
    pub fn source6_toward(&self, index: u16, peer: Ipv6Addr) -> Option<Ipv6Addr> {
        let link_local = |a: &&Ipv6Prefix| crate::net::is_link_local(a.addr.into());
        let mut own = self.own6(index);
        if !crate::net::is_link_local(peer.into()) {
            let mut global = own.clone().filter(|a| !link_local(a));
            if let Some(a) = global.clone().find(|a| a.contains(peer)).or_else(|| global.next()) {
                return Some(a.addr);
            }
        }
        own.find(link_local).map(|a| a.addr)
    }

    /// The global IPv6 address ICMPv6 errors about packets received on interface `index` come
    /// from: one of its own, else the first of any interface; `None` when there is none.
    pub fn global6(&self, index: u16) -> Option<Ipv6Addr> {
        let global = |a: &&(u16, Ipv6Prefix)| !crate::net::is_link_local(a.1.addr.into());
        let mut all = self.addresses6.iter().filter(global);
        all.clone().find(|(i, _)| *i == index).or_else(|| all.next()).map(|(_, a)| a.addr)
    }

    /// True when `addr` is the subnet-router anycast address (RFC 4291 §2.6.1) of one of the
    /// configured IPv6 prefixes (/126 and shorter: RFC 6164 leaves /127s without one).
    pub fn is_subnet_anycast6(&self, addr: Ipv6Addr) -> bool {
        self.addresses6.iter().any(|(_, p)| p.len <= 126 && p.network() == (6, u128::from(addr)))
    }

    /// True when `addr` is one of interface `index`'s own addresses.
    pub fn is_own_address(&self, index: u16, addr: Ipv4Addr) -> bool {
        self.addresses.iter().any(|&(i, a)| i == index && a.addr == addr)
    }

    /// True when `addr` is the network or broadcast address of one of the configured subnets
    /// (/30 and shorter: /31 and /32 have neither).
    pub fn is_subnet_edge(&self, addr: Ipv4Addr) -> bool {
        let a = u32::from(addr);
        self.addresses.iter().filter(|(_, p)| p.len <= 30).any(|(_, p)| {
            let mask = crate::net::mask(p.len);
            a & mask == u32::from(p.addr) & mask && (a & !mask == 0 || a | mask == u32::MAX)
        })
    }

    /// The address interface `index` speaks from toward `peer`: the one whose subnet covers
    /// `peer`, else its first; `None` when it has none.
    pub fn source_toward(&self, index: u16, peer: Ipv4Addr) -> Option<Ipv4Addr> {
        let mut own = self.addresses.iter().filter(|&&(i, _)| i == index).map(|(_, a)| a);
        let first = own.clone().next()?;
        Some(own.find(|a| a.contains(peer)).unwrap_or(first).addr)
    }

    /// The sub-interfaces of physical interface `port`.
    pub fn subifs_of(&self, port: u16) -> impl Iterator<Item = u16> + '_ {
        self.vlans.iter().filter(move |((p, _), _)| *p == port).map(|(_, &sub)| sub)
    }

    /// Marks physical interface `port`'s link down: `interface-output` drops what it would
    /// send there or on its sub-interfaces (`tx-interface-down`), as when the interface is
    /// administratively down, rather than handing frames to a kernel that refuses them.
    pub fn link_down(&mut self, port: u16) {
        for i in self.ifs.iter_mut().filter(|i| i.port == port && port != 0) {
            i.tx_node = nodes::ERROR_DROP;
        }
    }

    /// The entry of interface `index` (indices ≥ `MAX_INTERFACES` are treated as unused).
    #[inline(always)]
    pub fn get(&self, index: u16) -> &IfRuntime {
        self.ifs.get(index as usize).unwrap_or(&IfRuntime::UNUSED)
    }
}

/// The link as the kernel reports it (AF_PACKET interfaces; a generator's link is up when
/// the interface is), written by the main thread and read by anyone.
#[derive(Debug, Default)]
pub struct LinkState {
    /// 1 when the interface is administratively up (it changes with `set interface state`).
    pub admin_up: Counter,
    /// 1 when the link is operationally up.
    pub oper_up: Counter,
    /// Speed in bits per second, 0 when unknown.
    pub speed: Counter,
    /// Frames the kernel dropped before vecflow read them (rx ring full): `rx-miss`.
    pub rx_miss: Counter,
}

counter_set! {
    /// One worker's counters for one interface.
    IfCounters,
    /// Counters of one interface, summed over workers.
    IfStats {
        /// Frames received.
        rx_packets,
        /// Bytes received (frames without FCS).
        rx_octets,
        /// Frames received with a unicast destination.
        rx_unicast,
        /// Frames received with a multicast (non-broadcast group) destination.
        rx_multicast,
        /// Frames received with the broadcast destination.
        rx_broadcast,
        /// Frames received here that reached an output interface.
        rx_forwarded,
        /// Frames received here that this router took and answered itself (ARP requests,
        /// neighbor solicitations, echo requests): with `rx_forwarded` and the drops, every
        /// frame received.
        rx_local,
        /// ifInDiscards.
        in_discards,
        /// ifInErrors.
        in_errors,
        /// ifInUnknownProtos.
        in_unknown_protos,
        /// Frames sent.
        tx_packets,
        /// Bytes sent.
        tx_octets,
        /// Frames sent with a unicast destination.
        tx_unicast,
        /// Frames sent with a multicast destination.
        tx_multicast,
        /// Frames sent with the broadcast destination.
        tx_broadcast,
        /// ifOutDiscards.
        out_discards,
        /// ifOutErrors.
        out_errors,
    }
}

/// Unicast / multicast / broadcast classification of a frame from its first 8 bytes
/// (destination MAC in the top 48 bits): returns `(is_group, is_broadcast)` as 0/1.
#[inline(always)]
pub fn cast_bits(head: u64) -> (u64, u64) {
    ((head >> 56) & 1, u64::from(head >> 16 == 0xffff_ffff_ffff))
}

/// Frames sent out of one interface, summed over a run of frames, for its tx counters.
#[derive(Debug, Default, Clone, Copy)]
pub struct TxRun {
    /// Output interface.
    pub tx_if: u16,
    /// Frames.
    pub packets: u64,
    /// Bytes.
    pub octets: u64,
    /// Frames with a group (multicast or broadcast) destination.
    pub group: u64,
    /// Frames with the broadcast destination.
    pub bcast: u64,
}

impl TxRun {
    /// Adds one frame of `len` bytes whose first 8 bytes, read little-endian, are `head_le`
    /// (so the destination MAC is the low 48 bits, its first octet the low byte).
    #[inline(always)]
    pub fn add_le(&mut self, len: u16, head_le: u64) {
        self.packets += 1;
        self.octets += u64::from(len);
        self.group += head_le & 1;
        self.bcast += u64::from(head_le << 16 == 0xffff_ffff_ffff_0000);
    }

    /// Adds the run to `c` (the counters of `self.tx_if`). Takes the run by value so that
    /// callers' accumulators stay in registers; kept out of line, as it runs once per run.
    #[inline(never)]
    pub fn flush(self, c: &IfCounters) {
        if self.packets > 0 {
            c.tx_packets.add(self.packets);
            c.tx_octets.add(self.octets);
            c.tx_unicast.add(self.packets - self.group);
            c.tx_multicast.add(self.group - self.bcast);
            c.tx_broadcast.add(self.bcast);
        }
    }
}
