//! `arp-input`: ARP on interfaces with IPv4 addresses (RFC 826).
//!
//! A request for one of the input interface's own addresses is answered in place: the
//! buffer becomes the reply and goes back out of that interface through `interface-output`.
//! The sender of any ARP packet is reported to the main thread, which keeps the neighbor
//! table ([`crate::neighbor`]): one addressed to us (a request for, or a reply to, one of our
//! addresses) creates an entry, others only update one; a sender outside the interface's subnets,
//! `0.0.0.0` (an ARP probe) or with a group MAC is never learned. Everything that is not
//! answered ends in `error-drop`: `arp-reply` and `arp-not-for-us` are punts (counted, not
//! charged to the interface as discards), a packet that is not Ethernet/IPv4 ARP is
//! `arp-malformed`. With linux-cp on, every well-formed ARP packet is first copied up the
//! input interface's TAP ([`crate::l3::HostCopy`]).

use crate::ip4::drops;
use crate::l3::L3Worker;
use crate::neighbor::punt::PuntCounting;
use crate::neighbor::punt::{Event, Learn};
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;
use std::net::Ipv4Addr;
use wire::arp::{self, Arp};
use wire::ethernet::field as ethernet;

/// Processes one vector.
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        let m = *g.pool.meta(i);
        let parsed = g.pool.frame(i).get(usize::from(m.l3_offset)..).map(Arp::parse);
        let Some(Ok(a)) = parsed else {
            g.mark_drop(k, i, drops::ARP_MALFORMED);
            continue;
        };
        // linux-cp: Linux gets a copy of every ARP packet, for its own neighbor entries.
        g.features.copy_up(&g.pool, i);
        let ours = g.features.interfaces().is_own_address(m.rx_if, a.tpa);
        let on_link = g.features.interfaces().addresses.iter().any(|&(x, p)| x == m.rx_if && p.contains(a.spa));
        if a.spa != Ipv4Addr::UNSPECIFIED && on_link && !a.sha.is_group() {
            let how = if ours { Learn::Confirmed } else { Learn::Overheard };
            let event = Event::Learned { interface: m.rx_if, address: a.spa.into(), mac: a.sha, how };
            g.features.punt().report(event, g.counters.punt());
        }
        if a.op == arp::REQUEST && ours {
            crate::interface::consumed(g, i);
            reply(g, i, &a);
            g.nexts[k] = crate::interface::nodes::INTERFACE_OUTPUT;
        } else {
            let reason = if a.op == arp::REPLY { drops::ARP_REPLY } else { drops::ARP_NOT_FOR_US };
            g.mark_drop(k, i, reason);
        }
    }
    g.split(v);
}

/// Turns request `a` in buffer `i` into our reply, sent back out of the interface it came in
/// on (as a packet this router originates).
fn reply<F: L3Worker>(g: &mut Graph<F>, i: u32, a: &Arp) {
    let m = *g.pool.meta(i);
    let mac = g.features.interfaces().get(m.rx_if).mac;
    let answer = Arp { op: arp::REPLY, sha: mac, spa: a.tpa, tha: a.sha, tpa: a.spa };
    let l3 = usize::from(m.l3_offset);
    let f = g.pool.frame_mut(i);
    let requester: [u8; 6] = f[ethernet::SRC].try_into().expect("a full Ethernet header");
    f[..6].copy_from_slice(&requester);
    f[ethernet::SRC].copy_from_slice(&mac.0);
    answer.write(&mut f[l3..l3 + arp::LEN]);
    let meta = g.pool.meta_mut(i);
    meta.tx_if = meta.rx_if;
    meta.rx_if = 0;
    g.counters.punt().arp_replies.add(1);
}
