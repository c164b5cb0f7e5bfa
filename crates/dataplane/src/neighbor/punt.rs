//! A worker's line to the main thread, and the limits on packets a worker makes itself.
//!
//! Workers learn neighbors from ARP and neighbor discovery and start resolutions; they tell the main thread through
//! a bounded channel ([`Event`]) that they only ever `try_send` to (never blocking; an event
//! that does not fit is counted as lost). The main thread polls that channel rather than
//! waiting on it, so that a send never has a sleeping receiver to wake (which would take a
//! lock). The other way, the main thread asks one worker to send refresh probes ([`Probe`]).
//!
//! ARP requests and neighbor solicitations are limited per next hop (one per second, as
//! Linux's `retrans_time`) and
//! ICMP messages per worker by a token bucket, so that no flood of misses or errors turns
//! into a flood of generated packets.

use crate::runtime::graph::Features;
use crate::runtime::rate::TokenBucket;
use crate::runtime::stats::counter_set;
use std::net::IpAddr;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use wire::MacAddr;

/// What a worker tells the main thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// An ARP or ND packet on `interface` said `address` is at `mac`.
    Learned {
        /// Interface it arrived on.
        interface: u16,
        /// The sender's (ARP, solicitation) or target's (advertisement) address.
        address: IpAddr,
        /// Its MAC.
        mac: MacAddr,
        /// How much the packet tells.
        how: Learn,
    },
    /// The worker sent an ARP request or a neighbor solicitation for `address` on
    /// `interface` (a packet missed).
    Resolving {
        /// Output interface.
        interface: u16,
        /// The next hop.
        address: IpAddr,
    },
}

/// What a packet that names a neighbor's MAC tells about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learn {
    /// The neighbor is reachable: an ARP packet addressed to us (a request for, or a reply
    /// to, one of our addresses) or a solicited neighbor advertisement. The entry is created
    /// or refreshed, `reachable`.
    Confirmed,
    /// The neighbor sent us a neighbor solicitation with its link-layer address: the entry
    /// is created `stale` (RFC 4861 §7.2.3), or updated (then `stale`) when the MAC changed.
    Claimed,
    /// Overheard: an ARP packet not addressed to us, an unsolicited advertisement with the
    /// override flag. Only an existing entry is updated (RFC 826's merge), `stale` when the
    /// MAC changed.
    Overheard,
}

/// A request from the main thread: send an ARP request (IPv4) or a neighbor solicitation
/// (IPv6) for `address` on `interface`, to `mac` (a unicast probe of a known neighbor) or
/// broadcast (the solicited-node multicast group).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Output interface.
    pub interface: u16,
    /// Address to resolve.
    pub address: IpAddr,
    /// Where to send it; broadcast when `None`.
    pub mac: Option<MacAddr>,
}

counter_set! {
    /// One worker's counters of what it made itself and told the main thread.
    PuntCounters,
    /// Summed over workers.
    PuntStats {
        /// ARP requests sent (misses and probes).
        arp_requests,
        /// ARP replies sent for our addresses.
        arp_replies,
        /// Neighbor solicitations sent (misses and probes).
        nd_solicitations,
        /// Neighbor advertisements sent for our addresses.
        nd_advertisements,
        /// ICMP messages sent (echo replies and errors).
        icmp_sent,
        /// ICMP errors not sent because of the rate limit (or no free buffer).
        icmp_limited,
        /// Events the main thread's channel had no room for.
        events_lost,
    }
}

/// Minimum gap between two ARP requests or solicitations for one next hop (one per second,
/// as Linux).
const RESOLVE_GAP_SECONDS: u64 = 1;
/// Buckets of the per-next-hop limiter (a hash collision only delays a request).
const RESOLVE_BUCKETS: usize = 1024;
/// ICMP messages a worker may send per second, and at once.
const ICMP_RATE: u64 = 1000;
const ICMP_BURST: u64 = 100;

/// A worker's side: its channel ends and rate limiters.
pub struct Punt {
    events: Option<SyncSender<Event>>,
    probes: Option<Receiver<Probe>>,
    hz: u64,
    resolve_sent: Box<[u64; RESOLVE_BUCKETS]>,
    /// The ICMP messages it may send.
    icmp: TokenBucket,
}

impl Punt {
    /// A worker's side, reporting to `events` and serving `probes` (either may be absent, as
    /// in tests); `hz` is the TSC frequency.
    pub fn new(events: Option<SyncSender<Event>>, probes: Option<Receiver<Probe>>, hz: u64) -> Self {
        Punt {
            events,
            probes,
            hz: hz.max(1),
            resolve_sent: Box::new([0; RESOLVE_BUCKETS]),
            icmp: TokenBucket::new(ICMP_RATE, ICMP_BURST, hz),
        }
    }

    /// Tells the main thread `event`, or counts it lost when the channel is full or gone.
    pub fn report(&self, event: Event, counters: &PuntCounters) {
        let sent = match &self.events {
            Some(tx) => match tx.try_send(event) {
                Ok(()) => true,
                Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => false,
            },
            None => false,
        };
        if !sent {
            counters.events_lost.add(1);
        }
    }

    /// The next probe the main thread asked for, if any.
    pub fn next_probe(&self) -> Option<Probe> {
        self.probes.as_ref()?.try_recv().ok()
    }

    /// True (and the request counted against the limit) when an ARP request or a neighbor
    /// solicitation for `address` on `interface` may go out at TSC `now`.
    pub fn resolve_allowed(&mut self, interface: u16, address: IpAddr, now: u64) -> bool {
        let bits = match address {
            IpAddr::V4(a) => u64::from(u32::from(a)),
            IpAddr::V6(a) => {
                let x = u128::from(a);
                (x as u64) ^ (x >> 64) as u64 ^ 1 << 63
            }
        };
        let h = (bits ^ u64::from(interface) << 32).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let slot = &mut self.resolve_sent[(h >> 54) as usize % RESOLVE_BUCKETS];
        if *slot != 0 && now.saturating_sub(*slot) < RESOLVE_GAP_SECONDS * self.hz {
            return false;
        }
        *slot = now.max(1);
        true
    }

    /// True (and one token spent) when an ICMP message may go out at TSC `now`.
    pub fn icmp_allowed(&mut self, now: u64) -> bool {
        self.icmp.take(now)
    }
}

/// What the nodes that make packets of their own or report neighbors need of a worker, as a
/// trait the composition of the features (`datapath`) implements.
pub trait PuntWorker: Features<Counters: PuntCounting> {
    /// The worker's line to the main thread and its rate limits.
    fn punt(&mut self) -> &mut Punt;
}

/// The counters of the packets a worker makes itself and the events it reports.
pub trait PuntCounting {
    /// Those counters.
    fn punt(&self) -> &PuntCounters;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_is_limited_per_next_hop_and_icmp_per_worker() {
        let hz = 1_000_000;
        let mut p = Punt::new(None, None, hz);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        assert!(p.resolve_allowed(1, a, 5));
        assert!(!p.resolve_allowed(1, a, 5 + hz / 2), "within a second");
        assert!(p.resolve_allowed(1, "10.0.0.2".parse().unwrap(), 5), "another next hop");
        assert!(p.resolve_allowed(1, a, 5 + hz));
        let b: IpAddr = "2001:db8::1".parse().unwrap();
        assert!(p.resolve_allowed(1, b, 5) && !p.resolve_allowed(1, b, 6), "IPv6 next hops alike");
        assert!(p.resolve_allowed(1, "2001:db8::2".parse().unwrap(), 6));
        let sent = (0..1000).filter(|_| p.icmp_allowed(10)).count();
        assert_eq!(sent as u64, ICMP_BURST, "a burst, then nothing at the same instant");
        // One second later: the bucket is full again (refill 1000/s, capped at the burst).
        assert_eq!((0..1000).filter(|_| p.icmp_allowed(10 + hz)).count() as u64, ICMP_BURST);
        // 10 ms later: 10 tokens.
        assert_eq!((0..1000).filter(|_| p.icmp_allowed(10 + hz + hz / 100)).count(), 10);
    }

    #[test]
    fn events_that_do_not_fit_are_counted_lost() {
        let (tx, rx) = std::sync::mpsc::sync_channel(1);
        let p = Punt::new(Some(tx), None, 1);
        let c = PuntCounters::default();
        let e = Event::Resolving { interface: 1, address: "10.0.0.1".parse().unwrap() };
        p.report(e, &c);
        p.report(e, &c);
        assert_eq!(rx.try_recv(), Ok(e));
        assert_eq!(c.events_lost.get(), 1);
    }
}
