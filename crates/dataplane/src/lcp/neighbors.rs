//! The kernel's neighbor entries (ARP and ND) as the netlink listener keeps them: only those
//! with a MAC vecflow may use, in one of three kinds.

use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState};
use std::net::IpAddr;

/// How far vecflow trusts a kernel neighbor entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Trust {
    /// `REACHABLE`: confirmed (vecflow makes or refreshes its entry, reachable).
    Confirmed,
    /// `PERMANENT`: set by hand; acts as a static entry while it is there.
    Permanent,
    /// `STALE`, `DELAY`, `PROBE`: the MAC may be out of date; taken as overheard (it
    /// updates an entry vecflow has, never makes one).
    Stale,
}

/// A kernel neighbor entry vecflow takes in: its MAC and how far it is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KernelNeighbor {
    /// The neighbor's MAC.
    pub mac: [u8; 6],
    /// How far it is trusted.
    pub trust: Trust,
}

/// The neighbor a message describes: its link, address and entry; the entry is `None` for
/// a deletion and for a state vecflow does not take (`INCOMPLETE`, `FAILED`, `NOARP`: they
/// never remove an entry vecflow has). `None` for another message or one without an IP
/// address.
pub fn neighbor_of(message: &RouteNetlinkMessage) -> Option<(u32, IpAddr, Option<KernelNeighbor>)> {
    let (m, new) = match message {
        RouteNetlinkMessage::NewNeighbour(m) => (m, true),
        RouteNetlinkMessage::DelNeighbour(m) => (m, false),
        _ => return None,
    };
    let (address, mac) = parts(m);
    let address = address?;
    let trust = match m.header.state {
        NeighbourState::Reachable => Some(Trust::Confirmed),
        NeighbourState::Permanent => Some(Trust::Permanent),
        NeighbourState::Stale | NeighbourState::Delay | NeighbourState::Probe => Some(Trust::Stale),
        _ => None,
    };
    let entry = match (new, trust, mac) {
        (true, Some(trust), Some(mac)) => Some(KernelNeighbor { mac, trust }),
        _ => None,
    };
    Some((m.header.ifindex, address, entry))
}

/// A message's IP address and MAC (a unicast Ethernet one), if it has them.
fn parts(m: &NeighbourMessage) -> (Option<IpAddr>, Option<[u8; 6]>) {
    let (mut address, mut mac) = (None, None);
    for a in &m.attributes {
        match a {
            NeighbourAttribute::Destination(NeighbourAddress::Inet(v4)) => address = Some((*v4).into()),
            NeighbourAttribute::Destination(NeighbourAddress::Inet6(v6)) => address = Some((*v6).into()),
            NeighbourAttribute::LinkLayerAddress(l) => {
                mac = <[u8; 6]>::try_from(l.as_slice()).ok().filter(|m| m[0] & 1 == 0 && *m != [0; 6]);
            }
            _ => {}
        }
    }
    (address, mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(state: NeighbourState, mac: &[u8]) -> NeighbourMessage {
        let mut m = NeighbourMessage::default();
        m.header.ifindex = 5;
        m.header.state = state;
        let a: std::net::Ipv4Addr = "192.0.2.7".parse().unwrap();
        m.attributes.push(NeighbourAttribute::Destination(NeighbourAddress::Inet(a)));
        m.attributes.push(NeighbourAttribute::LinkLayerAddress(mac.to_vec()));
        m
    }

    #[test]
    fn states_map_to_trust_and_the_rest_to_nothing() {
        let mac = [2, 0, 0, 0, 0, 7];
        let a: IpAddr = "192.0.2.7".parse().unwrap();
        let new = |s| neighbor_of(&RouteNetlinkMessage::NewNeighbour(message(s, &mac))).unwrap();
        assert_eq!(new(NeighbourState::Reachable), (5, a, Some(KernelNeighbor { mac, trust: Trust::Confirmed })));
        assert_eq!(new(NeighbourState::Permanent).2.unwrap().trust, Trust::Permanent);
        assert_eq!(new(NeighbourState::Delay).2.unwrap().trust, Trust::Stale);
        assert_eq!(new(NeighbourState::Failed).2, None);
        assert_eq!(new(NeighbourState::Incomplete).2, None);
        let gone = neighbor_of(&RouteNetlinkMessage::DelNeighbour(message(NeighbourState::Reachable, &mac)));
        assert_eq!(gone, Some((5, a, None)));
        let multicast = RouteNetlinkMessage::NewNeighbour(message(NeighbourState::Permanent, &[1, 0, 0x5e, 0, 0, 1]));
        assert_eq!(neighbor_of(&multicast).unwrap().2, None, "a multicast MAC is not a neighbor's");
    }
}
