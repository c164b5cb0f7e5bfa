//! Every SIMD variant this CPU runs gives the scalar code's verdicts: on proptest-made mixes
//! of good and damaged IPv4 frames (every lane position, every vector tail) and through the
//! whole graph, byte for byte, with the same drop counters.

mod common;

use common::drive;
use dataplane::errors::DropReason;
use dataplane::graph::NodeId;
use dataplane::isa::Isa;
use dataplane::nodes::ip4_input;
use proptest::prelude::*;
use std::net::Ipv4Addr;

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
}

/// An Ethernet/IPv4/UDP frame to port0's MAC of `payload` UDP bytes, damaged.
fn frame(dst: u8, ttl: u8, payload: usize, damage: &Damage) -> Vec<u8> {
    let ip_len = 28 + payload;
    let mut f = vec![0u8; 14 + ip_len];
    f[..6].copy_from_slice(&[0x9c, 0x69, 0xb4, 0x61, 0xa1, 0xdc]);
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
    }
    f
}

fn arb_frame() -> impl Strategy<Value = Vec<u8>> {
    let damage = prop_oneof![
        8 => Just(Damage::None),
        1 => (0usize..20, any::<u8>(), any::<bool>()).prop_map(|(at, value, fix)| Damage::Byte { at, value, fix }),
        1 => (0usize..80).prop_map(Damage::Cut),
        1 => Just(Damage::Tagged),
    ];
    (any::<u8>(), 0u8..4, 0usize..100, damage)
        .prop_map(|(dst, ttl, payload, d)| frame(dst, ttl.max(1) * 60, payload, &d))
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
                prop_assert_eq!(ip4_input::all_fast_ok(isa, &g.pool, one), ip4_input::all_fast_ok(Isa::Scalar, &g.pool, one), "{} packet {}", isa.name(), k);
            }
            for from in 0..indices.len().min(17) {
                let tail = &indices[from..];
                prop_assert_eq!(ip4_input::all_fast_ok(isa, &g.pool, tail), ip4_input::all_fast_ok(Isa::Scalar, &g.pool, tail), "{} from {}", isa.name(), from);
            }
        }
    }

    /// The whole graph: the same frames out, byte for byte, and the same drops.
    #[test]
    fn every_variant_forwards_byte_identically(frames in proptest::collection::vec(arb_frame(), 1..=256)) {
        let run = |isa: Isa| {
            let mut g = common::graph(YAML).0;
            g.isa = isa;
            let out = drive(&mut g, 1, &frames, NodeId::InterfaceOutput);
            let drops: Vec<u64> = DropReason::ALL.iter().map(|&r| g.counters.error(1, r).get()).collect();
            (out, drops)
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
        assert!(ip4_input::all_fast_ok(isa, &g.pool, g.vectors[v].indices()), "{}", isa.name());
    }
}
