//! Counter polling: every `polling-interval` seconds, each sFlow data source sends its
//! interface counters — generic (0:1), ethernet (0:2) and port name (0:1005) for a port, generic
//! and VLAN (0:5) for each of its sub-interfaces. Each poller starts at a random offset within
//! the interval so that polls do not bunch up. Counters the dataplane does not keep are sent as
//! all-ones, unknown gauges (speed, direction) as 0.
//!
//! A port's generic counters include its sub-interfaces' traffic (the IF-MIB view of the
//! port); each sub-interface also reports its own.

use super::PortCounters;
use crate::interface::{IfStats, Interface, LinkState, RxMode};
use sflow::{CounterRecord, CountersSample, DataSource, EthernetCounters, IfCounters, Sample, VlanCounters};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// IANA ifType ethernetCsmacd.
const IF_TYPE_ETHERNET: u32 = 6;
/// IF-MIB TruthValue.
const TRUE: u32 = 1;
const FALSE: u32 = 2;

/// One interface polled: a data source, or a sub-interface reported with it.
struct Polled {
    interface: Interface,
    seq: u32,
}

/// One data source's poller.
struct Poller {
    port: Polled,
    subs: Vec<Polled>,
    next: Instant,
}

/// The counter pollers of every sFlow data source.
pub struct Polling {
    interval: Duration,
    pollers: Vec<Poller>,
    workers: Vec<Arc<dyn PortCounters>>,
    links: Arc<Vec<LinkState>>,
    /// Every interface, for pollers added later.
    interfaces: Vec<Interface>,
    /// The ifIndex each interface is reported as.
    if_indices: super::IfIndices,
    rng: u64,
}

impl Polling {
    /// Pollers for `ports` (with their sub-interfaces found in `interfaces`) every `interval`
    /// seconds (0 = never), their first polls spread with `seed`.
    pub fn new(
        interval: u32,
        ports: &[u16],
        interfaces: &[Interface],
        workers: Vec<Arc<dyn PortCounters>>,
        links: Arc<Vec<LinkState>>,
        seed: u64,
    ) -> Self {
        let mut p = Polling {
            interval: Duration::from_secs(u64::from(interval)),
            pollers: Vec::new(),
            workers,
            links,
            interfaces: interfaces.to_vec(),
            if_indices: super::IfIndices::default(),
            rng: seed | 1,
        };
        p.reconfigure(interval, ports);
        p
    }

    /// Reports each interface as `if_indices` says (default: its interface index).
    pub fn reporting(mut self, if_indices: super::IfIndices) -> Self {
        self.if_indices = if_indices;
        self
    }

    /// Polls `ports` every `interval` seconds (0 = never) from now on: a port polled before
    /// keeps its sequence numbers (and its schedule, brought forward to the new interval), a
    /// new one starts at a random offset within the interval.
    pub fn reconfigure(&mut self, interval: u32, ports: &[u16]) {
        let now = Instant::now();
        let period = Duration::from_secs(u64::from(interval));
        let mut old = std::mem::take(&mut self.pollers);
        self.interval = period;
        if interval == 0 {
            return;
        }
        for &p in ports {
            if let Some(k) = old.iter().position(|o| o.port.interface.index == p) {
                let mut poller = old.swap_remove(k);
                poller.next = poller.next.min(now + period);
                self.pollers.push(poller);
                continue;
            }
            let Some(port) = self.interfaces.iter().find(|i| i.index == p).cloned() else { continue };
            let subs = self
                .interfaces
                .iter()
                .filter(|i| i.parent == Some(p))
                .map(|i| Polled { interface: i.clone(), seq: 0 })
                .collect();
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let offset_ms = 1 + self.rng % (u64::from(interval) * 1000);
            self.pollers.push(Poller {
                port: Polled { interface: port, seq: 0 },
                subs,
                next: now + Duration::from_millis(offset_ms),
            });
        }
    }

    /// The counter samples due at `now` (all of them when `all`), sequence numbers advanced.
    pub fn due(&mut self, now: Instant, all: bool) -> Vec<Sample<'static>> {
        let mut out = Vec::new();
        for k in 0..self.pollers.len() {
            if !all && self.pollers[k].next > now {
                continue;
            }
            self.pollers[k].next += self.interval;
            let sub_stats: Vec<IfStats> = self.pollers[k].subs.iter().map(|s| self.stats(s.interface.index)).collect();
            let mut port_stats = self.stats(self.pollers[k].port.interface.index);
            for s in &sub_stats {
                port_stats += *s;
            }
            let p = &mut self.pollers[k];
            let link = &self.links[usize::from(p.port.interface.index) % self.links.len().max(1)];
            port_stats.in_discards += link.rx_miss.get();
            p.port.seq = p.port.seq.wrapping_add(1);
            let name = Cow::Owned(p.port.interface.name.clone().into_bytes());
            let admin = |index: u16| self.links[usize::from(index) % self.links.len().max(1)].admin_up.get() == 1;
            let ifx = |index: u16| self.if_indices.of(index);
            out.push(counters(
                &p.port,
                ifx(p.port.interface.index),
                admin(p.port.interface.index),
                link,
                &port_stats,
                vec![CounterRecord::Ethernet(EthernetCounters::UNKNOWN), CounterRecord::PortName(name)],
            ));
            for (sub, stats) in p.subs.iter_mut().zip(&sub_stats) {
                sub.seq = sub.seq.wrapping_add(1);
                let vlan = VlanCounters {
                    vlan_id: u32::from(sub.interface.vlan.unwrap_or(0)),
                    // Both directions, as the sFlow VLAN structure counts them.
                    octets: stats.rx_octets + stats.tx_octets,
                    ucast_pkts: (stats.rx_unicast + stats.tx_unicast) as u32,
                    multicast_pkts: (stats.rx_multicast + stats.tx_multicast) as u32,
                    broadcast_pkts: (stats.rx_broadcast + stats.tx_broadcast) as u32,
                    discards: (stats.in_discards + stats.in_errors + stats.in_unknown_protos + stats.out_discards)
                        as u32,
                };
                let (index, vlan) = (sub.interface.index, vec![CounterRecord::Vlan(vlan)]);
                out.push(counters(sub, ifx(index), admin(index), link, stats, vlan));
            }
        }
        out
    }

    fn stats(&self, index: u16) -> IfStats {
        let mut s = IfStats::default();
        for w in &self.workers {
            w.interface(index).add_to(&mut s);
        }
        s
    }
}

/// The counter sample of `p` (administratively `admin_up`; `link` its port's link), reported
/// as ifIndex `if_index`, with `s`: generic counters first, then `more`.
fn counters(
    p: &Polled,
    if_index: u32,
    admin_up: bool,
    link: &LinkState,
    s: &IfStats,
    more: Vec<CounterRecord<'static>>,
) -> Sample<'static> {
    let i = &p.interface;
    let generic = IfCounters {
        if_index,
        if_type: IF_TYPE_ETHERNET,
        if_speed: link.speed.get(),
        // Full duplex when the kernel knows a speed (Ethernet links here are), else unknown.
        if_direction: if link.speed.get() > 0 { 1 } else { 0 },
        // ifAdminStatus in bit 0, ifOperStatus in bit 1.
        if_status: u32::from(admin_up) | u32::from(admin_up && link.oper_up.get() == 1) << 1,
        in_octets: s.rx_octets,
        in_ucast_pkts: s.rx_unicast as u32,
        in_multicast_pkts: s.rx_multicast as u32,
        in_broadcast_pkts: s.rx_broadcast as u32,
        in_discards: s.in_discards as u32,
        in_errors: s.in_errors as u32,
        in_unknown_protos: s.in_unknown_protos as u32,
        out_octets: s.tx_octets,
        out_ucast_pkts: s.tx_unicast as u32,
        out_multicast_pkts: s.tx_multicast as u32,
        out_broadcast_pkts: s.tx_broadcast as u32,
        out_discards: s.out_discards as u32,
        out_errors: s.out_errors as u32,
        promiscuous_mode: if matches!(i.mode, RxMode::L2Xconnect { .. }) { TRUE } else { FALSE },
    };
    let mut records = vec![CounterRecord::Generic(generic)];
    records.extend(more);
    Sample::Counters(CountersSample { sequence: p.seq, source: DataSource::interface(if_index), records })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::datapath::WorkerCounters;
    use crate::interface::build::build_interfaces;

    fn links() -> Arc<Vec<LinkState>> {
        Arc::new((0..crate::net::MAX_INTERFACES).map(|_| LinkState::default()).collect())
    }

    fn setup(interval: u32) -> Polling {
        let cfg = Config::load("interfaces: {p0: {index: 1}, p1: {index: 2}, p2: {index: 3}}").unwrap();
        Polling::new(
            interval,
            &[1, 2, 3],
            &build_interfaces(&cfg.interfaces, cfg.workers.count, |_| 0),
            vec![Arc::new(WorkerCounters::new()) as Arc<dyn PortCounters>],
            links(),
            7,
        )
    }

    #[test]
    fn interval_zero_never_polls_even_at_stop() {
        let mut p = setup(0);
        assert!(p.due(Instant::now() + Duration::from_secs(3600), true).is_empty());
    }

    #[test]
    fn first_polls_fall_within_the_interval_then_every_interval() {
        let mut p = setup(2);
        let t0 = Instant::now();
        assert!(
            p.pollers.iter().all(|q| q.next > t0 && q.next <= t0 + Duration::from_secs(2) + Duration::from_millis(5))
        );
        let offsets: std::collections::BTreeSet<_> = p.pollers.iter().map(|q| q.next).collect();
        assert_eq!(offsets.len(), 3, "spread, not synchronised");
        let first = p.due(t0 + Duration::from_secs(2), false);
        assert_eq!(first.len(), 3);
        assert!(p.due(t0 + Duration::from_secs(2), false).is_empty(), "next ones are an interval later");
        assert_eq!(p.due(t0 + Duration::from_millis(4100), false).len(), 3);
        let Sample::Counters(c) = &first[0] else { panic!() };
        assert_eq!(c.sequence, 1);
    }

    /// A sub-interface's VLAN record counts both directions; its port's generic counters
    /// include it.
    #[test]
    fn vlan_counters_count_both_directions() {
        let cfg =
            Config::load("interfaces: {p0: {index: 1, sub-interfaces: {7: {encapsulation: {dot1q: 70}}}}}").unwrap();
        let ifs = build_interfaces(&cfg.interfaces, cfg.workers.count, |_| 0);
        let sub = ifs.iter().find(|i| i.name == "p0.7").unwrap().index;
        let w = Arc::new(WorkerCounters::new());
        let c = w.interface(sub);
        for (counter, n) in [
            (&c.rx_octets, 1000),
            (&c.rx_unicast, 10),
            (&c.tx_octets, 500),
            (&c.tx_unicast, 5),
            (&c.rx_broadcast, 1),
            (&c.tx_multicast, 2),
            (&c.in_discards, 3),
            (&c.out_discards, 4),
        ] {
            counter.add(n);
        }
        let mut p = Polling::new(1, &[1], &ifs, vec![w as Arc<dyn PortCounters>], links(), 7);
        let samples = p.due(Instant::now(), true);
        let vlan = samples.iter().find_map(|s| match s {
            Sample::Counters(c) => c.records.iter().find_map(|r| match r {
                CounterRecord::Vlan(v) => Some(*v),
                _ => None,
            }),
            _ => None,
        });
        let want = VlanCounters {
            vlan_id: 70,
            octets: 1500,
            ucast_pkts: 15,
            multicast_pkts: 2,
            broadcast_pkts: 1,
            discards: 7,
        };
        assert_eq!(vlan, Some(want));
    }
}
