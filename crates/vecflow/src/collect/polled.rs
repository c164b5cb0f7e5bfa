//! Interface counters from counter polls (generic record 0:1), accumulated poll by poll modulo
//! their width: 2³² for packet and discard counters and for the agent's uptime, 2⁶⁴ for octets.
//! A late poll (its sample sequence behind) adds nothing; after an agent restart the next poll
//! is a new baseline.

use super::accumulate::Accumulated;
use super::sequence::{Sequence, Step};
use sflow::IfCounters;

/// One interface's polls.
#[derive(Debug, Default)]
pub struct Polled {
    seq: Sequence,
    epoch: u64,
    /// Polls received.
    pub polls: u64,
    /// Polls that arrived late or twice.
    pub out_of_order: u64,
    /// The counters, accumulated.
    pub totals: Totals,
}

/// Each counter accumulated over consecutive polls.
#[derive(Debug, Default)]
pub struct Totals {
    /// Agent uptime, milliseconds.
    pub uptime_ms: Accumulated,
    /// ifInOctets.
    pub in_octets: Accumulated,
    /// ifInUcastPkts.
    pub in_ucast: Accumulated,
    /// ifInMulticastPkts.
    pub in_mcast: Accumulated,
    /// ifInBroadcastPkts.
    pub in_bcast: Accumulated,
    /// ifOutOctets.
    pub out_octets: Accumulated,
    /// ifOutUcastPkts.
    pub out_ucast: Accumulated,
    /// ifOutMulticastPkts.
    pub out_mcast: Accumulated,
    /// ifOutBroadcastPkts.
    pub out_bcast: Accumulated,
    /// ifInDiscards.
    pub in_discards: Accumulated,
    /// ifInErrors.
    pub in_errors: Accumulated,
    /// ifOutDiscards.
    pub out_discards: Accumulated,
}

impl Totals {
    /// Calls `f` with each total, its reading in `c` (at `uptime_ms`) and its width in bits.
    fn each(&mut self, uptime_ms: u32, c: &IfCounters, f: fn(&mut Accumulated, u64, u32)) {
        let w = |v: u32| (u64::from(v), 32);
        for (total, (value, bits)) in [
            (&mut self.uptime_ms, w(uptime_ms)),
            (&mut self.in_octets, (c.in_octets, 64)),
            (&mut self.in_ucast, w(c.in_ucast_pkts)),
            (&mut self.in_mcast, w(c.in_multicast_pkts)),
            (&mut self.in_bcast, w(c.in_broadcast_pkts)),
            (&mut self.out_octets, (c.out_octets, 64)),
            (&mut self.out_ucast, w(c.out_ucast_pkts)),
            (&mut self.out_mcast, w(c.out_multicast_pkts)),
            (&mut self.out_bcast, w(c.out_broadcast_pkts)),
            (&mut self.in_discards, w(c.in_discards)),
            (&mut self.in_errors, w(c.in_errors)),
            (&mut self.out_discards, w(c.out_discards)),
        ] {
            f(total, value, bits);
        }
    }
}

impl Polled {
    /// Adds poll `sequence` of `c` taken at `uptime_ms` by an agent that has restarted `epoch`
    /// times.
    pub fn add(&mut self, sequence: u32, epoch: u64, uptime_ms: u32, c: &IfCounters) {
        self.polls += 1;
        if self.epoch != epoch {
            self.epoch = epoch;
            self.seq.restart(sequence);
            self.totals.each(uptime_ms, c, |a, v, _| a.rebase(v));
            return;
        }
        match self.seq.step(sequence) {
            Step::Behind { .. } => self.out_of_order += 1,
            Step::First | Step::Ahead { .. } => self.totals.each(uptime_ms, c, |a, v, bits| a.advance(v, bits)),
        }
    }
}
