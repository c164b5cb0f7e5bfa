//! The hooks the nodes call, wired to the features that own them: linux-cp takes the host's
//! copies ([`crate::l3::HostCopy`]), sFlow samples what `ethernet-input` receives
//! ([`crate::ethernet::RxSampling`]), what `interface-output` sends and what `error-drop`
//! drops ([`crate::interface::TxSampling`]), and the IPv4 and IPv6 inputs take their half of
//! `ethernet-input`'s fused fast paths ([`crate::ethernet::EthernetWorker`]).

use super::{Features, WorkerCounters};
use crate::ethernet::EthernetNext;
use crate::ethernet::fused::RxTally;
use crate::mpls::MplsNext;
use crate::runtime::buffer::BufferPool;
use crate::runtime::isa::Isa;
use crate::runtime::vector::Vector;
use crate::{flows, ip4, ip6, lcp, mpls};
use wire::MacAddr;

impl crate::l3::HostCopy for Features {
    #[inline(always)]
    fn has_host(&self) -> bool {
        self.lcp.is_some()
    }

    #[inline(always)]
    fn copy_up(&mut self, pool: &BufferPool, i: u32) {
        if let Some(lcp) = &mut self.lcp {
            // A copy the TAP's rate or queue refuses is the host's loss, not the packet's.
            let _ = lcp.copy_up(pool, i);
        }
    }
}

impl crate::ethernet::RxSampling for Features {
    #[inline(always)]
    fn sample_rx(&mut self, pool: &mut BufferPool, v: &mut Vector, port: u16, counters: &WorkerCounters) {
        if let Some(sf) = &mut self.sflow {
            sf.sample(pool, v, port, crate::sflow::RX, counters);
        }
    }
}

impl crate::interface::TxSampling for Features {
    #[inline(always)]
    fn sampling(&self) -> bool {
        self.sflow.is_some()
    }

    #[inline(always)]
    fn sample_tx(&mut self, pool: &mut BufferPool, v: &mut Vector, port: u16, counters: &WorkerCounters) {
        if let Some(sf) = &mut self.sflow {
            sf.sample(pool, v, port, crate::sflow::TX, counters);
        }
    }

    #[inline(always)]
    fn sample_tx_one(&mut self, pool: &mut BufferPool, i: u32, port: u16, counters: &WorkerCounters) {
        if let Some(sf) = &mut self.sflow {
            sf.sample_one(pool, i, port, crate::sflow::TX, counters);
        }
    }

    #[inline(always)]
    fn not_forwarded(&self, rx_if: u16, counters: &WorkerCounters) {
        if let Some(sf) = &self.sflow {
            sf.consumed(self.tables.interfaces.get(rx_if).port, counters);
        }
    }

    #[inline(always)]
    fn sample_drops(&mut self, pool: &BufferPool, v: &Vector, counters: &WorkerCounters) {
        if let Some(sf) = &mut self.sflow {
            sf.dropped(pool, v, &self.tables.interfaces, &super::registry::DROPS, counters);
        }
    }
}

impl crate::ethernet::EthernetWorker for Features {
    const NEXT: EthernetNext = EthernetNext {
        ip4_input: ip4::nodes::IP4_INPUT,
        ip4_lookup: ip4::nodes::IP4_LOOKUP,
        arp_input: ip4::nodes::ARP_INPUT,
        ip6_input: ip6::nodes::IP6_INPUT,
        ip6_lookup: ip6::nodes::IP6_LOOKUP,
        mpls_input: mpls::nodes::MPLS_INPUT,
        mpls_lookup: mpls::nodes::MPLS_LOOKUP,
        flow_classify: flows::nodes::FLOW_CLASSIFY,
        linux_cp_punt: lcp::nodes::LINUX_CP_PUNT,
    };

    #[inline(always)]
    fn plain_ip4(isa: Isa, pool: &BufferPool, indices: &[u32], max_frame: u16, mac: MacAddr) -> Option<RxTally> {
        crate::ip4::input::plain_frames(isa, pool, indices, max_frame, mac)
    }

    #[inline(always)]
    fn plain_ip6(pool: &BufferPool, indices: &[u32], max_frame: u16, mac: MacAddr) -> Option<RxTally> {
        crate::ip6::input::plain_frames(pool, indices, max_frame, mac)
    }

    #[inline(always)]
    fn plain_mpls(pool: &BufferPool, indices: &[u32], max_frame: u16, mac: MacAddr) -> Option<RxTally> {
        crate::mpls::input::plain_frames(pool, indices, max_frame, mac)
    }
}

impl crate::mpls::MplsWorker for Features {
    const NEXT: MplsNext = MplsNext {
        ip4_input: ip4::nodes::IP4_INPUT,
        ip6_input: ip6::nodes::IP6_INPUT,
        ip4_arp: ip4::nodes::IP4_ARP,
        ip6_nd: ip6::nodes::IP6_ND,
    };
}
