use super::*;
use crate::l3::fib::Fibs;
use std::sync::Arc;

/// Source routes of empty tables, no VRF.
fn no_routes() -> SourceRoutes {
    SourceRoutes::new(Fibs::new(1, false).unwrap(), Arc::new(crate::l3::vrf::PublishedVrfs::new(Default::default())))
}
use crate::l3::LabelStack;
use std::net::{IpAddr, Ipv4Addr};

/// A sample of a frame tagged with priority 5 on VLAN 100, routed: `extended_switch`
/// carries the received priority and the router record the next hop.
#[test]
fn flow_samples_carry_the_received_priority_and_the_next_hop() {
    let mut slot = Slot::EMPTY;
    let frame: Vec<u8> = [
        &[2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x81, 0x00, 0xa0, 100, 8, 0][..],
        &[0x45, 0, 0, 46, 0, 0, 0, 0, 64, 17, 0, 0, 16, 0, 0, 1, 48, 0, 0, 5],
    ]
    .concat();
    slot.header[..frame.len()].copy_from_slice(&frame);
    (slot.header_len, slot.frame_len, slot.port, slot.input, slot.output) = (frame.len() as u16, 60, 1, 3, 2);
    (slot.in_vlan, slot.routed, slot.next_hop, slot.dst_prefix_len) =
        (100, true, Ipv4Addr::new(10, 7, 0, 9).into(), 24);
    (slot.pool, slot.drops, slot.rate) = (1234, 5, 10);
    let src = Source { pool: 1234, drops: 5, ..Source::default() };
    let Sample::Flow(f) = flow_sample(&slot, &src, &no_routes(), &Default::default()) else { panic!("a flow sample") };
    assert_eq!((f.sample_pool, f.drops, f.sampling_rate), (1234, 5, 10));
    assert!(f.records.contains(&FlowRecord::Switch(ExtendedSwitch {
        src_vlan: 100,
        src_priority: 5,
        dst_vlan: 0,
        dst_priority: 0
    })));
    assert!(f.records.contains(&FlowRecord::Router(ExtendedRouter {
        next_hop: IpAddr::V4(Ipv4Addr::new(10, 7, 0, 9)),
        src_mask_len: 0,
        dst_mask_len: 24
    })));
    assert!(!f.records.iter().any(|r| matches!(r, FlowRecord::Mpls(_))), "no labels, no MPLS record");
}

/// A label-switched sample: an MPLS record with both stacks and the swap's next hop, and
/// no router record.
#[test]
fn label_switched_samples_carry_extended_mpls() {
    let mut slot = Slot::EMPTY;
    (slot.header_len, slot.frame_len, slot.port, slot.input, slot.output) = (64, 60, 2, 2, 1);
    (slot.next_hop, slot.routed) = (Ipv4Addr::new(100, 64, 0, 0).into(), false);
    (slot.in_labels, slot.out_labels) = (LabelStack::new(&[18, 77]), LabelStack::new(&[30, 31, 77]));
    let Sample::Flow(f) = flow_sample(&slot, &Source::default(), &no_routes(), &Default::default()) else { panic!() };
    let mpls = FlowRecord::Mpls(ExtendedMpls {
        next_hop: IpAddr::V4(Ipv4Addr::new(100, 64, 0, 0)),
        in_stack: vec![18, 77],
        out_stack: vec![30, 31, 77],
    });
    assert!(f.records.contains(&mpls), "{:?}", f.records);
    assert!(!f.records.iter().any(|r| matches!(r, FlowRecord::Router(_))));
}
