//! Which side of its data source a flow sample was taken on.
//!
//! A standard agent samples a port's received packets with input = the data source and its
//! sent packets with output = the data source. vecflow samples VLAN sub-interfaces at their
//! physical port: the data source is the port, and input or output is the sub-interface, with
//! the VLANs in `extended_switch` (a VLAN is 0 exactly when that side is not a sub-interface).
//! When only one side has a VLAN, that side is a sub-interface of the data source (the other
//! side is another port), which tells the direction and teaches which port the sub-interface
//! belongs to; what was learned then decides samples where both sides are sub-interfaces.

use super::capped::Capped;
use super::limits::MAX_INTERFACES;
use sflow::{FlowRecord, FlowSample, Interface};
use std::net::IpAddr;

/// The side of the data source a sample was taken on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Received on the data source.
    Ingress,
    /// Sent on the data source.
    Egress,
}

/// Sub-interfaces learned per agent: (agent, ifIndex) → the data source (port) it belongs to.
#[derive(Debug, Default)]
pub struct Ports {
    parents: Capped<(IpAddr, u32), u32, MAX_INTERFACES>,
}

fn index(i: Interface) -> Option<u32> {
    match i {
        Interface::Index(v) if v != 0 => Some(v),
        _ => None,
    }
}

impl Ports {
    /// The direction of sample `f` of `agent`; a sample that says nothing either way (no side
    /// is the data source or a known sub-interface) counts as ingress.
    pub fn classify(&mut self, agent: IpAddr, f: &FlowSample<'_>) -> Direction {
        let port = f.source.index;
        let (input, output) = (index(f.input), index(f.output));
        if input == Some(port) {
            return Direction::Ingress;
        }
        if output == Some(port) {
            return Direction::Egress;
        }
        let vlans = f.records.iter().find_map(|r| match r {
            FlowRecord::Switch(s) => Some((s.src_vlan != 0, s.dst_vlan != 0)),
            _ => None,
        });
        let (sub, direction) = match vlans {
            Some((true, false)) => (input, Direction::Ingress),
            Some((false, true)) => (output, Direction::Egress),
            _ => return self.known(agent, port, input, output),
        };
        if let Some(sub) = sub
            && let Some(parent) = self.parents.entry((agent, sub))
        {
            *parent = port;
        }
        direction
    }

    /// The direction from learned sub-interfaces: a side that belongs to the data source is
    /// where it was sampled, a side that belongs to another port is not.
    fn known(&self, agent: IpAddr, port: u32, input: Option<u32>, output: Option<u32>) -> Direction {
        let parent = |i: Option<u32>| i.and_then(|i| self.parents.get(&(agent, i))).copied();
        match (parent(input), parent(output)) {
            (Some(p), _) if p == port => Direction::Ingress,
            (_, Some(p)) if p == port => Direction::Egress,
            (Some(_), _) => Direction::Egress,
            _ => Direction::Ingress,
        }
    }

    /// Sub-interfaces that did not fit in the table.
    pub fn overflow(&self) -> u64 {
        self.parents.overflow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sflow::{DataSource, ExtendedSwitch};
    use std::net::Ipv4Addr;

    fn sample(source: u32, input: u32, output: u32, vlans: Option<(u32, u32)>) -> FlowSample<'static> {
        FlowSample {
            sequence: 1,
            source: DataSource::interface(source),
            sampling_rate: 1,
            sample_pool: 1,
            drops: 0,
            input: Interface::Index(input),
            output: Interface::Index(output),
            records: vlans
                .map(|(i, o)| {
                    FlowRecord::Switch(ExtendedSwitch { src_vlan: i, src_priority: 0, dst_vlan: o, dst_priority: 0 })
                })
                .into_iter()
                .collect(),
        }
    }

    #[test]
    fn sub_interfaces_on_either_side() {
        let agent = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let mut p = Ports::default();
        // Ports 1 and 2; 11 = 1.100, 21 = 2.200.
        let cases = [
            (sample(1, 1, 2, None), Direction::Ingress, "rx on port 1"),
            (sample(2, 1, 2, None), Direction::Egress, "tx on port 2"),
            (sample(2, 1, 21, Some((0, 200))), Direction::Egress, "tx toward sub-interface 2.200"),
            (sample(1, 11, 2, Some((100, 0))), Direction::Ingress, "rx on sub-interface 1.100"),
            (sample(2, 11, 21, Some((100, 200))), Direction::Egress, "tx 1.100 -> 2.200, sampled at 2"),
            (sample(1, 11, 21, Some((100, 200))), Direction::Ingress, "rx 1.100 -> 2.200, sampled at 1"),
            (sample(2, 0, 21, Some((0, 0))), Direction::Egress, "input unknown, output a known sub of 2"),
        ];
        for (s, want, what) in cases {
            assert_eq!(p.classify(agent, &s), want, "{what}");
        }
        let other = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9));
        assert_eq!(
            p.classify(other, &sample(2, 11, 21, Some((100, 200)))),
            Direction::Ingress,
            "learned per agent: nothing known of this one, so the default"
        );
        assert_eq!(p.overflow(), 0);
    }
}
