//! Every SIMD variant this CPU runs gives the scalar code's verdicts: on proptest-made mixes
//! of good and damaged IPv4 frames (every lane position, every vector tail) and through the
//! whole graph, byte for byte, with the same drop counters.

mod common;

use common::drive;
use dataplane::ip4;
use dataplane::runtime::graph::NodeId;
use dataplane::runtime::isa::Isa;
use proptest::prelude::*;
use std::net::Ipv4Addr;
use wire::MacAddr;

/// port0 receives; 48.0.0.0/24 goes out of port1.
const YAML: &str = "
interfaces:
  port0: {index: 1, mac: '9c:69:b4:61:a1:dc', addresses: [100.64.0.1/31]}
  port1: {index: 2, mac: '9c:69:b4:61:a1:dd', addresses: [100.64.1.1/31]}
routes:
  - {prefix: 48.0.0.0/24, via: 100.64.1.0}
neighbors:
  - {interface: port1, address: 100.64.1.0, mac: '00:1b:21:06:00:01'}
";

/// How a frame is damaged.
#[derive(Debug, Clone)]
enum Damage {
    None,
    /// Byte `at` of the IPv4 header set to `value`, the checksum fixed or not.
    Byte {
        at: usize,
        value: u8,
        fix: bool,
    },
    /// The frame cut to `len` bytes.
    Cut(usize),
    /// A VLAN tag in front of the IPv4 header (another l3 offset).
    Tagged,
    /// Another destination MAC (multicast, broadcast, another host's).
    Dst([u8; 6]),
    /// Another ethertype.
    EtherType(u16),
}

/// port0's MAC.
const MAC: [u8; 6] = [0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdc];

/// An Ethernet/IPv4/UDP frame to port0's MAC of `payload` UDP bytes, damaged.
fn frame(dst: u8, ttl: u8, payload: usize, damage: &Damage) -> Vec<u8> {
    let ip_len = 28 + payload;
    let mut f = vec![0u8; 14 + ip_len];
    f[..6].copy_from_slice(&MAC);
    f[6..12].copy_from_slice(&[0x00, 0x1b, 0x21, 0x06, 0x00, 0x00]);
    f[12..14].copy_from_slice(&[8, 0]);
    let (src, dst) = (Ipv4Addr::new(16, 0, 0, 1), Ipv4Addr::new(48, 0, 0, dst));
    wire::ipv4::write_header(&mut f[14..34], ip_len as u16, ttl, 17, src, dst);
    wire::udp::write_header(&mut f[34..], src, dst, 1024, 2048);
    match *damage {
        Damage::None => {}
        Damage::Byte { at, value, fix } => {
            f[14 + at] = value;
            if fix {
                f[24..26].copy_from_slice(&[0, 0]);
                let c = wire::checksum::checksum(&f[14..34]);
                f[24..26].copy_from_slice(&c.to_be_bytes());
            }
        }
        Damage::Cut(len) => f.truncate(len),
        Damage::Tagged => {
            f.splice(12..12, [0x81, 0x00, 0x00, 0x07]);
        }
        Damage::Dst(mac) => f[..6].copy_from_slice(&mac),
        Damage::EtherType(et) => f[12..14].copy_from_slice(&et.to_be_bytes()),
    }
    f
}

fn arb_frame() -> impl Strategy<Value = Vec<u8>> {
    let damage = prop_oneof![
        8 => Just(Damage::None),
        1 => (0usize..20, any::<u8>(), any::<bool>()).prop_map(|(at, value, fix)| Damage::Byte { at, value, fix }),
        1 => (0usize..80).prop_map(Damage::Cut),
        1 => Just(Damage::Tagged),
        1 => prop_oneof![Just([0xff; 6]), Just([1, 0, 0x5e, 0, 0, 1]), Just([0xff, 0xff, 0xff, 0xff, 0xff, 0xfe])].prop_map(Damage::Dst),
        // Other hosts: one byte of port0's MAC changed (the group bit kept clear).
        1 => (0usize..6, 1u8..=255).prop_map(|(at, x)| {
            let mut mac = MAC;
            mac[at] ^= if at == 0 { x & !1 | 2 } else { x };
            Damage::Dst(mac)
        }),
        1 => prop_oneof![Just(0x86dd_u16), Just(0x0806), Just(0x0008), any::<u16>()].prop_map(Damage::EtherType),
    ];
    (any::<u8>(), 0u8..4, 0usize..100, damage)
        .prop_map(|(dst, ttl, payload, d)| frame(dst, ttl.max(1) * 60, payload, &d))
}

/// What the fused `ethernet-input` → `ip4-input` pass must say of `frames` with `max_frame`,
/// from its definition: every frame sized, to port0's MAC or a group, untagged IPv4, passing
/// `fast_ok` at offset 14.
fn plain_frames_oracle(frames: &[Vec<u8>], max_frame: u16) -> Option<dataplane::ethernet::fused::RxTally> {
    common::fused_oracle(frames, max_frame, MAC, 0x0800, ip4::input::fast_ok)
}

/// The variants to compare with the scalar one: every other one this CPU runs.
fn simd_variants() -> Vec<Isa> {
    Isa::available().into_iter().filter(|&i| i != Isa::Scalar).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, rng_seed: proptest::test_runner::RngSeed::Fixed(11), ..ProptestConfig::default() })]

    /// `ip4-input`'s fast pass: the same verdict for every packet alone (every lane 0), for
    /// the vector from each of its first 17 packets on (every lane position and tail length),
    /// and for the whole vector.
    #[test]
    fn ip4_input_fast_pass_agrees_with_scalar(frames in proptest::collection::vec(arb_frame(), 1..=256)) {
        let mut g = common::graph(YAML).0;
        let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        let v = g.inject(1, &refs).unwrap();
        let indices = g.vectors[v].indices().to_vec();
        for isa in simd_variants() {
            for k in 0..indices.len() {
                let one = &indices[k..=k];
                prop_assert_eq!(ip4::input::all_fast_ok(isa, &g.pool, one), ip4::input::all_fast_ok(Isa::Scalar, &g.pool, one), "{} packet {}", isa.name(), k);
            }
            for from in 0..indices.len().min(17) {
                let tail = &indices[from..];
                prop_assert_eq!(ip4::input::all_fast_ok(isa, &g.pool, tail), ip4::input::all_fast_ok(Isa::Scalar, &g.pool, tail), "{} from {}", isa.name(), from);
            }
        }
    }

    /// The fused `ethernet-input` → `ip4-input` pass: the scalar code gives its definition's
    /// answer, and every variant the scalar one's, for every packet alone, every tail of the
    /// vector and the whole vector, at frame limits around the frames' sizes.
    #[test]
    fn fused_pass_agrees_with_its_definition(frames in proptest::collection::vec(arb_frame(), 1..=256), max_frame in 30u16..150) {
        let mut g = common::graph(YAML).0;
        let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
        let v = g.inject(1, &refs).unwrap();
        let indices = g.vectors[v].indices().to_vec();
        let scalar = |ix: &[u32]| ip4::input::plain_frames(Isa::Scalar, &g.pool, ix, max_frame, MacAddr(MAC));
        prop_assert_eq!(scalar(&indices), plain_frames_oracle(&frames, max_frame));
        for k in 0..indices.len() {
            prop_assert_eq!(scalar(&indices[k..=k]), plain_frames_oracle(&frames[k..=k], max_frame), "packet {}", k);
        }
        for isa in simd_variants() {
            let simd = |ix: &[u32]| ip4::input::plain_frames(isa, &g.pool, ix, max_frame, MacAddr(MAC));
            for k in 0..indices.len() {
                prop_assert_eq!(simd(&indices[k..=k]), scalar(&indices[k..=k]), "{} packet {}", isa.name(), k);
            }
            for from in 0..indices.len().min(17) {
                prop_assert_eq!(simd(&indices[from..]), scalar(&indices[from..]), "{} from {}", isa.name(), from);
            }
        }
    }

    /// The whole graph: the same frames out, byte for byte, and the same drops.
    #[test]
    fn every_variant_forwards_byte_identically(frames in proptest::collection::vec(arb_frame(), 1..=256)) {
        let run = |isa: Isa| {
            let mut g = common::graph(YAML).0;
            g.isa = isa;
            let out = drive(&mut g, 1, &frames, dataplane::interface::nodes::INTERFACE_OUTPUT);
            let drops: Vec<u64> = dataplane::datapath::registry::all_drops().map(|r| g.counters.error(1, r).get()).collect();
            let node = |n: NodeId| {
                let c = &g.counters.nodes[n.index()];
                (c.calls.get(), c.vectors.get(), c.fused.get())
            };
            (out, drops, common::stats(&g, 1), [dataplane::ip4::nodes::IP4_INPUT, dataplane::ip4::nodes::IP4_LOOKUP, dataplane::interface::nodes::ERROR_DROP].map(node))
        };
        let scalar = run(Isa::Scalar);
        for isa in simd_variants() {
            prop_assert!(run(isa) == scalar, "{} differs from scalar", isa.name());
        }
    }
}

/// Frames whose every packet is good take the fast pass in every variant (so the proptests
/// above compare the SIMD code, not only its refusals).
#[test]
fn good_vectors_pass_in_every_variant() {
    let frames: Vec<Vec<u8>> = (0..256).map(|k| frame(k as u8, 64, k % 50, &Damage::None)).collect();
    let mut g = common::graph(YAML).0;
    let refs: Vec<&[u8]> = frames.iter().map(|f| &f[..]).collect();
    let v = g.inject(1, &refs).unwrap();
    for isa in Isa::available() {
        assert!(ip4::input::all_fast_ok(isa, &g.pool, g.vectors[v].indices()), "{}", isa.name());
        let fused = ip4::input::plain_frames(isa, &g.pool, g.vectors[v].indices(), 1518, MacAddr(MAC));
        assert_eq!(fused, plain_frames_oracle(&frames, 1518), "{}", isa.name());
        assert!(fused.is_some(), "{}", isa.name());
    }
}

/// A plain IPv4 vector goes from `ethernet-input` straight to `ip4-lookup`, counted as an
/// `ip4-input` call; while the packet tracer runs, through `ip4-input` itself, so that traces
/// show each node. Either way the interface counts the same.
#[test]
fn the_fused_pass_counts_ip4_input_and_steps_aside_for_the_tracer() {
    let frames: Vec<Vec<u8>> = (0..100).map(|k| frame(k as u8, 64, k % 50, &Damage::None)).collect();
    common::check_fused_pass(YAML, &frames, dataplane::ip4::nodes::IP4_INPUT, dataplane::ip4::nodes::IP4_LOOKUP);
}
