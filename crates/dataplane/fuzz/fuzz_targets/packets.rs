//! Arbitrary frames on arbitrary input interfaces through the real graph of a config with an
//! L2 cross-connect, IPv4 routes (one with out-labels, one in a tbl8 group), IPv6 routes (one
//! with out-labels, one via a link-local next hop, one to a neighbor that is missing; ICMPv6
//! and neighbor discovery to our addresses, with good checksums), MPLS
//! swap and pop to IPv4 and to IPv6,
//! 802.1Q sub-interfaces (routed and cross-connected), an interface that is down, a small MTU,
//! flow rules (drop, output, normal) on p0 and p4, and sFlow at 1:1 in both directions with drop
//! monitoring; jumbo buffers (`buffers.data-size` 9216) with p0 at MTU 9000, so frames up to
//! a buffer's size reach the nodes and their fragmentation to p1's MTU of 200; and frames
//! with arbitrary `virtio_net_hdr`s cut or completed as af-packet-input does
//! ([`dataplane::drivers::offload`]), whose segments then go through the graph. After every input: no panic, no
//! buffer or vector leak, no drop without a named reason, and per input interface
//! rx = forwarded + taken locally (answered) + dropped.
#![no_main]

use dataplane::config::Config;
use dataplane::control::routes::build_forwarding;
use dataplane::datapath::Graph;
use dataplane::datapath::WorkerCounters;
use dataplane::interface::{IfStats, Interface};
use dataplane::datapath::registry::N_REASONS;
use dataplane::runtime::qsbr::Qsbr;
use dataplane::runtime::vector::VectorPool;
use dataplane::sflow::ring::{Consumer, Ring};
use dataplane::sflow::{DataSource, DropBudget, RX, SflowWorker, TX, WorkerBudget};
use libfuzzer_sys::fuzz_target;
use std::sync::{Arc, Mutex, OnceLock};

const YAML: &str = "
buffers: {data-size: 9216}
interfaces:
  p0: {index: 1, mac: '02:00:00:00:00:01', addresses: [100.64.0.1/31, '2001:db8:100::1/64'], mpls: true, mtu: 9000}
  p1: {index: 2, mac: '02:00:00:00:00:02', addresses: [100.64.1.1/31, '2001:db8:101::1/64'], mpls: true, mtu: 200}
  p2:
    index: 3
    mac: '02:00:00:00:00:03'
    sub-interfaces:
      100: {encapsulation: {dot1q: 100}, addresses: [10.100.0.1/24]}
      200: {encapsulation: {dot1q: 200}, l2xc: p3}
  p3: {index: 4, l2xc: p2.200}
  p4: {index: 5, l2xc: p5}
  p5: {index: 6, l2xc: p4}
  p6: {index: 7, state: down, addresses: [100.64.6.1/31]}
routes:
  - {prefix: 48.0.0.0/24, via: 100.64.1.0}
  - {prefix: 48.0.1.128/25, via: 100.64.0.0}
  - {prefix: 60.0.0.0/8, via: 100.64.1.0, out-labels: [100, 101, 102]}
  - {prefix: 70.0.0.7/32, via: 10.100.0.2}
  - {prefix: '2001:db8:48::/48', via: '2001:db8:101::2'}
  - {prefix: '2001:db8:60::/48', via: '2001:db8:101::2', out-labels: [200, 201]}
  - {prefix: '2001:db8:70::/64', via: 'fe80::7', interface: p0}
  - {prefix: '2001:db8:80::/40', via: '2001:db8:100::99'}
  - {prefix: '::/0', via: '2001:db8:100::2'}
neighbors:
  - {interface: p0, address: 100.64.0.0, mac: '00:1b:21:06:00:00'}
  - {interface: p1, address: 100.64.1.0, mac: '00:1b:21:06:00:01'}
  - {interface: p2.100, address: 10.100.0.2, mac: '00:1b:21:06:00:02'}
  - {interface: p0, address: '2001:db8:100::2', mac: '00:1b:21:06:00:00'}
  - {interface: p1, address: '2001:db8:101::2', mac: '00:1b:21:06:00:01'}
  - {interface: p0, address: 'fe80::7', mac: '00:1b:21:06:00:07'}
flows:
  - priority=10,in_port=p4,udp,nw_src=48.0.0.0/8,actions=drop
  - priority=20,in_port=p0,udp,nw_dst=48.0.1.128/25,tp_dst=0x0/0xff00,actions=output:p5
  - priority=5,in_port=p0,ip,actions=normal
mpls:
  local-labels:
    - {label: 16, via: 100.64.1.0, interface: p1, out-labels: [17]}
    - {label: 18, via: 100.64.0.0, interface: p0, out-labels: [30, 31, 32, 33]}
    - {label: 19}
    - {label: 20, payload: ip6}
";

struct State {
    graph: Graph,
    consumer: Consumer,
    interfaces: Vec<Interface>,
}

fn state() -> &'static Mutex<State> {
    static STATE: OnceLock<Mutex<State>> = OnceLock::new();
    STATE.get_or_init(|| {
        let cfg = Config::load(YAML).expect("the fuzz config is valid");
        let f = build_forwarding(&cfg, Arc::new(Qsbr::new(1))).expect("it builds");
        let mut graph = Graph::new(
            dataplane::runtime::buffer::BufferPool::with_data_size(2048, cfg.buffers.data_size).unwrap(),
            f.tables,
            f.fib.fibs(),
            Arc::new(WorkerCounters::new()),
        );
        let ports: Vec<u16> = f.interfaces.iter().filter(|i| i.parent.is_none()).map(|i| i.index).collect();
        let sources: Vec<DataSource> = ports.iter().map(|&port| DataSource { port, rate: 1, stages: RX | TX }).collect();
        let (producer, consumer) = Ring::new(1024).split();
        let peers = vec![graph.counters.clone()];
        // Every drop on every port becomes a discard sample: tokens for all of them.
        let budget = DropBudget::new(1);
        (0..dataplane::datapath::registry::N_REASONS).for_each(|r| budget.grant(0, r, u64::MAX));
        let budget = WorkerBudget::new(budget, 0);
        graph.features.sflow = Some(SflowWorker::new(&sources, &ports, budget, 128, 7, producer, peers));
        Mutex::new(State { graph, consumer, interfaces: f.interfaces })
    })
}

/// Builds frame `k` of the input from a template byte and the fuzzer's bytes, so that valid
/// Ethernet, 802.1Q, IPv4, IPv6 and MPLS headers are easy to reach and then mutate.
fn frame(template: u8, body: &[u8]) -> Vec<u8> {
    let mut f = vec![2, 0, 0, 0, 0, 1, 0, 0x1b, 0x21, 0, 0, 9];
    let ip = |f: &mut Vec<u8>, dst: [u8; 4]| {
        let mut h = [0u8; 20];
        let total = (20 + body.len()).min(9000) as u16;
        wire::ipv4::write_header(&mut h, total, 64, 17, [16, 0, 0, 1].into(), dst.into());
        f.extend_from_slice(&h);
    };
    match template % 8 {
        0 => {} // raw: the body is the rest of the header and beyond
        1 => {
            f.extend_from_slice(&[8, 0]);
            let d = [[48, 0, 0, 5], [48, 0, 1, 200], [60, 1, 2, 3], [70, 0, 0, 7], [100, 64, 0, 1], [9, 9, 9, 9]];
            ip(&mut f, d[usize::from(body.first().copied().unwrap_or(0)) % d.len()]);
        }
        2 | 3 => {
            f.extend_from_slice(&[0x88, 0x47]);
            let label = [16u32, 18, 19, 77][usize::from(template / 8 % 4)];
            let ttl = body.first().copied().unwrap_or(64);
            f.extend_from_slice(&((label << 12) | 0x100 | u32::from(ttl)).to_be_bytes());
            ip(&mut f, [48, 0, 0, 9]);
        }
        4 | 5 => {
            let vid = [100u16, 200, 300][usize::from(template / 8 % 3)];
            f.extend_from_slice(&[0x81, 0x00]);
            f.extend_from_slice(&vid.to_be_bytes());
            f.extend_from_slice(&[8, 0]);
            ip(&mut f, [48, 0, 0, 5]);
        }
        6 | 7 => {
            if template % 8 == 7 {
                // Label 20 pops to IPv6.
                let ttl = body.first().copied().unwrap_or(64);
                f.extend_from_slice(&[0x88, 0x47]);
                f.extend_from_slice(&((20u32 << 12) | 0x100 | u32::from(ttl)).to_be_bytes());
            } else {
                f.extend_from_slice(&[0x86, 0xdd]);
            }
            // Forwarded, ours (global and p0's link-local), all-nodes, p0's solicited-node group.
            let d = [
                "2001:db8:48::5",
                "2001:db8:60::1",
                "2001:db8:70::9",
                "2001:db8:80::1",
                "2001:db8:100::1",
                "fe80::ff:fe00:1",
                "fe80::1",
                "ff02::1",
                "ff02::1:ff00:1",
                "9::9",
            ];
            // The first 4 body bytes choose the destination, source, next header and hop
            // limit; the rest is the payload: UDP, ICMPv6 (its checksum made right, so that
            // echo and ND are reached) or a fragment header; hop limit 64, 255 (ND's) or 1.
            let (choice, payload) = body.split_at(body.len().min(4));
            let pick = |k: usize, n: usize| usize::from(choice.get(k).copied().unwrap_or(0)) % n;
            let dst: std::net::Ipv6Addr = d[pick(0, d.len())].parse().unwrap();
            let src: std::net::Ipv6Addr = ["2001:db8:16::1", "fe80::7", "::"][pick(1, 3)].parse().unwrap();
            let next = [17, wire::icmpv6::PROTOCOL, 44][pick(2, 3)];
            let hop = [64, 255, 1][pick(3, 3)];
            let len = payload.len().min(9000);
            let mut h = [0u8; 40];
            wire::ipv6::write_header(&mut h, len as u16, next, hop, src, dst);
            f.extend_from_slice(&h);
            let mut payload = payload.to_vec();
            if next == wire::icmpv6::PROTOCOL && len >= 4 {
                wire::icmpv6::fill_checksum(src, dst, &mut payload[..len]);
            }
            f.extend_from_slice(&payload);
            f.truncate(9300);
            return f;
        }
        _ => unreachable!("template % 8"),
    }
    f.extend_from_slice(body);
    f.truncate(9300);
    f
}

/// What af-packet-input makes of frame `f` with the `virtio_net_hdr` of `body`'s first 10
/// bytes: the segments of a super-frame it can cut (at most 64 of them), else the frame with
/// its partial checksum completed, else nothing (dropped as `rx-truncated`).
fn offloaded(f: &[u8], body: &[u8], largest: usize) -> Vec<Vec<u8>> {
    use dataplane::drivers::offload::{Plan, VNET_HDR_LEN, VnetHdr, complete_partial};
    let mut h = [0u8; VNET_HDR_LEN];
    let n = body.len().min(VNET_HDR_LEN);
    h[..n].copy_from_slice(&body[..n]);
    let h = VnetHdr::parse(&h);
    if h.gso() != VnetHdr::GSO_NONE {
        let Some(plan) = Plan::new(f, &h, largest) else { return Vec::new() };
        return (0..plan.count().min(64))
            .map(|k| {
                let mut out = vec![0u8; largest];
                let len = plan.write(f, k, &mut out);
                out.truncate(len);
                out
            })
            .collect();
    }
    let mut f = f.to_vec();
    if h.flags & VnetHdr::NEEDS_CSUM != 0 && !complete_partial(&mut f, h.csum_start.into(), h.csum_offset.into()) {
        return Vec::new();
    }
    if f.len() > largest { Vec::new() } else { vec![f] }
}

/// Interface `i`'s (received, forwarded or taken locally, dropped).
fn totals(g: &Graph, i: u16) -> (u64, u64, u64) {
    let mut s = IfStats::default();
    g.counters.interface(i).add_to(&mut s);
    let dropped = (0..N_REASONS).map(|r| g.counters.errors[usize::from(i) * N_REASONS + r].get()).sum();
    (s.rx_packets, s.rx_forwarded + s.rx_local, dropped)
}

fuzz_target!(|data: &[u8]| {
    let mut st = state().lock().unwrap_or_else(|e| e.into_inner());
    let State { graph: g, consumer, interfaces } = &mut *st;
    let ports: Vec<u16> = interfaces.iter().filter(|i| i.parent.is_none()).map(|i| i.index).collect();
    // Records: [port, template, length, body] …, grouped into vectors by port; the body is
    // length² / 7 bytes (fine steps for short frames, up to 9 289 for jumbo ones).
    let mut rest = data;
    while rest.len() >= 3 {
        let (port, template, len) = (rest[0], rest[1], usize::from(rest[2]).pow(2) / 7);
        let body = &rest[3..(3 + len).min(rest.len())];
        rest = &rest[(3 + len).min(rest.len())..];
        let count = 1 + usize::from(template >> 5) * 36; // up to 253 copies: fills vectors
        let f = frame(template, body);
        // A port byte with its top bit set: the frame came from a packet socket with the
        // virtio_net_hdr its first 10 body bytes make, as af-packet-input handles it (a
        // super-frame cut into its segments, a partial checksum completed).
        let offloaded = (port & 0x80 != 0).then(|| offloaded(&f, body, g.pool.data_capacity()));
        let frames: Vec<&[u8]> = match &offloaded {
            Some(segments) => segments.iter().map(|s| &s[..]).collect(),
            None => std::iter::repeat_n(&f[..], count).collect(),
        };
        if frames.is_empty() {
            continue;
        }
        let port = ports[usize::from(port) % ports.len()];
        let v = g.inject(port, &frames).expect("the pool is full between inputs");
        g.forward(v, dataplane::ethernet::nodes::ETHERNET_INPUT);
        g.run(0);
        if let Some(sf) = &mut g.features.sflow {
            sf.publish(&g.pool, &g.features.tables.interfaces, &g.features.tables.l3);
        }
        consumer.drain(usize::MAX, |_| true);
        assert_eq!(g.pool.free_count(), g.pool.capacity() as usize, "a buffer leaked");
        assert_eq!(g.vectors.free_count(), VectorPool::CAPACITY, "a vector leaked");
    }
    for i in interfaces.iter() {
        let (rx, fwd, dropped) = totals(g, i.index);
        assert_eq!(rx, fwd + dropped, "{}: rx = forwarded + local + dropped", i.name);
        let unnamed = g.counters.errors[usize::from(i.index) * N_REASONS + dataplane::interface::drops::UNSPECIFIED.index()].get();
        assert_eq!(unnamed, 0, "{}: a drop without a reason", i.name);
    }
});
