//! Interfaces from a validated configuration: indices, MACs, link-local addresses.

use crate::interface::config::{AdminState, Driver, InterfaceConfig};
use crate::interface::{DriverKind, Interface, RxMode};
use crate::net::MAX_INTERFACES;
use std::collections::BTreeMap;
use wire::MacAddr;

/// Resolves interface indices: explicit ones first, then the lowest free index in name order.
fn assign_indices(interfaces: &BTreeMap<String, InterfaceConfig>) -> BTreeMap<String, u16> {
    let mut taken: Vec<bool> = vec![false; MAX_INTERFACES];
    taken[0] = true;
    let mut out = BTreeMap::new();
    for (name, i) in interfaces {
        if let Some(x) = i.index {
            taken[x as usize] = true;
            out.insert(name.clone(), x);
        }
    }
    let subs = interfaces.iter().flat_map(|(n, i)| i.sub_interfaces.keys().map(move |s| format!("{n}.{s}")));
    let mut next = 1;
    for name in interfaces.keys().cloned().chain(subs) {
        out.entry(name).or_insert_with(|| {
            while taken[next] {
                next += 1;
            }
            taken[next] = true;
            next as u16
        });
    }
    out
}

/// Builds the interface list of a validated configuration's `interfaces` (with `workers`
/// worker threads, for rx placement): physical interfaces, then their 802.1Q sub-interfaces
/// (named `parent.sub-id`, polled with their parent), each in the VRF whose index `vrf` gives
/// for its `vrf` key (0, the default table, for none).
pub fn build_interfaces(
    interfaces: &BTreeMap<String, InterfaceConfig>,
    workers: u16,
    vrf: impl Fn(Option<&str>) -> u16,
) -> Vec<Interface> {
    let idx = assign_indices(interfaces);
    let mode = |l2xc: &Option<String>| l2xc.as_ref().map_or(RxMode::L3, |p| RxMode::L2Xconnect { peer: idx[p] });
    let mut rr = 0u16;
    let mut out = Vec::new();
    for (name, i) in interfaces {
        let index = idx[name];
        let placed = i.rx_placement.as_ref().and_then(|p| p.worker.or(p.queues.first().copied()));
        let rx_worker = placed.unwrap_or_else(|| {
            rr += 1;
            (rr - 1) % workers
        });
        let parent = Interface {
            index,
            name: name.clone(),
            admin_up: i.state == AdminState::Up,
            mac: i.mac.map_or(MacAddr([0x02, 0xfe, 0, 0, (index >> 8) as u8, index as u8]), |m| m.0),
            mtu: i.mtu(),
            mode: mode(&i.l2xc),
            driver: match i.driver {
                Driver::Generator => DriverKind::Generator,
                Driver::AfPacket => DriverKind::AfPacket,
                Driver::Pcap => DriverKind::Pcap,
                Driver::AfXdp => DriverKind::AfXdp,
            },
            rx_worker,
            rx_mode: i.rx_mode,
            mpls: i.mpls,
            addresses: i.addresses.clone(),
            vrf: vrf(i.vrf.as_deref()),
            parent: None,
            vlan: None,
        };
        for (sub, s) in &i.sub_interfaces {
            let sub_name = format!("{name}.{sub}");
            out.push(Interface {
                index: idx[&sub_name],
                name: sub_name,
                admin_up: s.state == AdminState::Up,
                mtu: s.mtu.unwrap_or(i.mtu()),
                mode: mode(&s.l2xc),
                mpls: s.mpls,
                addresses: s.addresses.clone(),
                vrf: vrf(s.vrf.as_deref()),
                parent: Some(index),
                vlan: Some(s.encapsulation.dot1q),
                ..parent.clone()
            });
        }
        out.push(parent);
    }
    for i in &mut out {
        add_link_local(i);
    }
    out.sort_by_key(|i| i.index);
    out
}

/// Gives an L3 interface with IPv6 addresses but no link-local one the link-local address of
/// its MAC (fe80::/64 with the modified EUI-64 identifier, RFC 4862 §5.3), as Linux does.
fn add_link_local(i: &mut Interface) {
    let v6 = |a: &crate::net::IpPrefix| a.addr.is_ipv6();
    if i.mode == RxMode::L3
        && i.addresses.iter().any(v6)
        && !i.addresses.iter().any(|a| crate::net::is_link_local(a.addr))
    {
        let addr = wire::icmpv6::link_local_from_mac(i.mac);
        i.addresses.push(crate::net::IpPrefix { addr: addr.into(), len: 64 });
    }
}
