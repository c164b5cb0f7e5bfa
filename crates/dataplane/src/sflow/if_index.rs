//! The ifIndex sFlow reports for an interface (`sflow.if-index`): vecflow's interface index,
//! or the Linux ifindex of the interface's linux-cp TAP, so that a collector that also polls
//! the router's SNMP (which sees the TAPs) can join the two, as hsflowd's `osIndex` does for
//! VPP.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `sflow.if-index`: which number names an interface in samples and counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum IfIndexSource {
    /// vecflow's interface index.
    #[default]
    Vecflow,
    /// The Linux ifindex of the interface's linux-cp TAP (needs `linux-cp`).
    Linux,
}

/// The ifIndex reported for each interface index; an index without one reports itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IfIndices(Vec<u32>);

impl IfIndices {
    /// Each interface index of `pairs` reported as its number there.
    pub fn mapped(pairs: impl IntoIterator<Item = (u16, u32)>) -> IfIndices {
        let mut map = Vec::new();
        for (index, reported) in pairs {
            let at = usize::from(index);
            if map.len() <= at {
                map.resize(at + 1, 0);
            }
            map[at] = reported;
        }
        IfIndices(map)
    }

    /// The ifIndex of interface `index` (0, no interface, stays 0).
    pub fn of(&self, index: u16) -> u32 {
        match self.0.get(usize::from(index)) {
            Some(&reported) if reported != 0 => reported,
            _ => u32::from(index),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapped_indices_report_their_number_and_the_rest_themselves() {
        let m = IfIndices::mapped([(1, 7), (3, 9)]);
        assert_eq!([0, 1, 2, 3, 4].map(|i| m.of(i)), [0, 7, 2, 9, 4]);
        assert_eq!(IfIndices::default().of(5), 5);
    }
}
