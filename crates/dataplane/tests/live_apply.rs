//! Live apply equals a fresh start: for random sequences of valid configurations A → B → C
//! that differ only in what can change live (interfaces' state, MTU, addresses, MPLS, L2
//! cross-connects, descriptions and sFlow; VRFs, interfaces moved between them with the same
//! address in two; routes with one or several paths, in a VRF or not; static neighbors; MPLS
//! labels; sFlow's settings), applied in turn to a running dataplane, what an operator can
//! see after the last apply is what a dataplane started on C shows: the JSON of `show ip
//! fib` (of each VRF too), `show ip6 fib`, `show mpls fib`, `show ip neighbors`, `show
//! sflow`, `show flows`, `show vrf`, `show interface` and `show interface address`, without counters, ages,
//! rates, memory figures and internal indices (adjacency and load-balance numbers, flow ids),
//! and without paths' up/down (liveness is a matter of time: a next hop nobody answers is
//! marked down 3 s after its first probe). And an apply that is refused (a change only a
//! restart can make) changes none of it.

use dataplane::config::Config;
use dataplane::control::cli::Registry;
use dataplane::control::engine::Dataplane;
use proptest::prelude::*;
use serde_json::Value;

/// What an operator sees, without what differs between two runs of one configuration.
fn observable(dp: &mut Dataplane) -> Vec<(String, Value)> {
    let registry = Registry::with_builtins();
    let mut commands: Vec<String> = [
        "show ip fib",
        "show ip6 fib",
        "show mpls fib",
        "show ip neighbors",
        "show sflow",
        "show flows",
        "show vrf",
        "show interface",
        "show interface address",
    ]
    .map(String::from)
    .to_vec();
    commands.extend(dp.vrfs().iter().map(|(name, _, _)| format!("show ip fib vrf {name}")));
    commands
        .iter()
        .map(|c| {
            let mut json = registry.execute(dp, c).unwrap_or_else(|e| panic!("{c}: {e}")).json;
            strip(&mut json);
            (c.to_string(), json)
        })
        .collect()
}

/// Keys whose values are counters, ages, rates, memory figures, internal indices or liveness.
const UNSTABLE: [&str; 16] = [
    "adjacency_index",
    "adj",
    "load_balance",
    "bytes",
    "bytes_per_route",
    "tbl8_in_use",
    "age",
    "counters",
    "rates",
    "sampler",
    "samples_sent",
    "totals",
    "packets",
    "id",
    "up",
    "link",
];

fn strip(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|k, _| !UNSTABLE.contains(&k.as_str()));
            map.values_mut().for_each(strip);
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

/// One port's choices: up, MTU, MPLS, description, sFlow (with its own rate or not).
type PortChoice = (bool, u16, bool, bool, Option<Option<u32>>);

/// One configuration's live-changeable choices.
#[derive(Debug, Clone)]
struct Live {
    /// p0..p3.
    ports: [PortChoice; 4],
    /// IPv6 on p1; addresses on p2 and p3 instead of cross-connecting them.
    p1_v6: bool,
    p2_p3_l3: bool,
    /// The VRFs of p2 and p3 when they are L3: none, red or blue.
    vrfs: [u8; 2],
    /// Which of the route, neighbor and label pools are in.
    routes: [bool; 6],
    neighbors: [bool; 4],
    labels: [bool; 3],
    /// A neighbor's MAC variant.
    mac: u8,
    sflow: (u32, u32, u32),
}

fn live() -> impl Strategy<Value = Live> {
    let port = (
        any::<bool>(),
        prop::sample::select(vec![1500u16, 1400, 2000]),
        any::<bool>(),
        any::<bool>(),
        prop::option::of(prop::option::of(prop::sample::select(vec![10u32, 500]))),
    );
    (
        [port.clone(), port.clone(), port.clone(), port],
        any::<bool>(),
        any::<bool>(),
        [0u8..3, 0u8..3],
        any::<[bool; 6]>(),
        any::<[bool; 4]>(),
        any::<[bool; 3]>(),
        0u8..3,
        (
            prop::sample::select(vec![100u32, 1000]),
            prop::sample::select(vec![10u32, 20]),
            prop::sample::select(vec![64u32, 128]),
        ),
    )
        .prop_map(|(ports, p1_v6, p2_p3_l3, vrfs, routes, neighbors, labels, mac, sflow)| Live {
            ports,
            p1_v6,
            p2_p3_l3,
            vrfs,
            routes,
            neighbors,
            labels,
            mac,
            sflow,
        })
}

/// The YAML of `l`, with `workers` workers (a restart-only setting).
fn yaml(l: &Live, workers: u16) -> String {
    let mut out = format!("workers: {{count: {workers}, buffers: 2048}}\nmetrics: {{enabled: false}}\n");
    let vrf = |k: usize| [None, Some("red"), Some("blue")][usize::from(l.vrfs[k])].filter(|_| l.p2_p3_l3);
    let used: Vec<(&str, u32)> =
        [("red", 10), ("blue", 20)].into_iter().filter(|(n, _)| vrf(0) == Some(n) || vrf(1) == Some(n)).collect();
    if !used.is_empty() {
        let list: Vec<String> = used.iter().map(|(n, t)| format!("{n}: {{table: {t}}}")).collect();
        out += &format!("vrfs: {{{}}}\n", list.join(", "));
    }
    out += "interfaces:\n";
    for (i, &(up, mtu, mpls, described, sflow)) in l.ports.iter().enumerate() {
        let mut fields = vec![format!("index: {}", i + 1), format!("mtu: {mtu}")];
        if !up {
            fields.push("state: down".into());
        }
        if mpls {
            fields.push("mpls: true".into());
        }
        if described {
            fields.push(format!("description: 'port {i}'"));
        }
        match sflow {
            Some(Some(rate)) => fields.push(format!("sflow: {{enable: true, sampling-rate: {rate}}}")),
            Some(None) => fields.push("sflow: {enable: true}".into()),
            None => {}
        }
        let addresses = match i {
            0 => vec!["10.0.0.1/24".to_string(), "'2001:db8::1/64'".into()],
            1 => {
                let mut a = vec!["10.0.1.1/24".to_string()];
                if l.p1_v6 {
                    a.push("'2001:db8:1::1/64'".into());
                }
                a
            }
            // p3 has p2's address when they are in different tables.
            3 if l.p2_p3_l3 && vrf(0) != vrf(1) => vec!["10.0.2.1/24".to_string()],
            _ if l.p2_p3_l3 => vec![format!("10.0.{i}.1/24")],
            _ => {
                fields.push(format!("l2xc: p{}", 5 - i));
                vec![]
            }
        };
        if !addresses.is_empty() {
            fields.push(format!("addresses: [{}]", addresses.join(", ")));
        }
        if let Some(v) = (i >= 2).then(|| vrf(i - 2)).flatten() {
            fields.push(format!("vrf: {v}"));
        }
        out += &format!("  p{i}: {{{}}}\n", fields.join(", "));
    }
    let routes = [
        "{prefix: 48.0.0.0/8, via: 10.0.1.2}",
        "{prefix: 49.0.0.0/16, paths: [{via: 10.0.1.2, weight: 3}, {via: 10.0.0.2}]}",
        "{prefix: 50.0.0.0/24, via: 10.0.0.2, out-labels: [100, 101]}",
        "{prefix: '2001:db8:48::/48', via: '2001:db8::2'}",
        "{prefix: 48.1.0.0/16, paths: [{via: 10.0.0.2}, {via: 10.0.1.2}]}",
    ]
    .map(String::from);
    // A route on p2's subnet, in p2's table.
    let p2 = (l.p2_p3_l3 && l.routes[5]).then(|| match vrf(0) {
        Some(v) => format!("{{prefix: 48.0.0.0/8, via: 10.0.2.2, vrf: {v}}}"),
        None => "{prefix: 60.0.0.0/8, via: 10.0.2.2}".to_string(),
    });
    let chosen: Vec<&str> =
        routes.iter().zip(l.routes).filter(|(_, on)| *on).map(|(r, _)| r.as_str()).chain(p2.as_deref()).collect();
    if !chosen.is_empty() {
        out += &format!("routes: [{}]\n", chosen.join(", "));
    }
    let m = l.mac;
    let neighbors = [
        format!("{{interface: p1, address: 10.0.1.2, mac: '02:00:00:00:01:0{m}'}}"),
        "{interface: p0, address: 10.0.0.2, mac: '02:00:00:00:00:02'}".to_string(),
        format!("{{interface: p0, address: '2001:db8::2', mac: '02:00:00:00:00:1{m}'}}"),
        "{interface: p0, address: 10.0.0.9, mac: '02:00:00:00:00:09'}".to_string(),
    ];
    let chosen: Vec<&String> = neighbors.iter().zip(l.neighbors).filter(|(_, on)| *on).map(|(n, _)| n).collect();
    if !chosen.is_empty() {
        out += &format!("neighbors: [{}]\n", chosen.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "));
    }
    let labels =
        ["{label: 16, via: 10.0.1.2, interface: p1, out-labels: [17]}", "{label: 18}", "{label: 20, payload: ip6}"];
    let chosen: Vec<&str> = labels.iter().zip(l.labels).filter(|(_, on)| *on).map(|(r, _)| *r).collect();
    if !chosen.is_empty() {
        out += &format!("mpls: {{local-labels: [{}]}}\n", chosen.join(", "));
    }
    let (rate, polling, header) = l.sflow;
    out += &format!(
        "sflow: {{sampling-rate: {rate}, polling-interval: {polling}, header-bytes: {header}, collectors: [{{address: 127.0.0.1, port: 9}}]}}\n"
    );
    out += "flows: ['priority=10,in_port=p0,udp,actions=drop']\n";
    out
}

fn config(text: &str) -> Config {
    Config::load(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn live_apply_of_a_then_b_then_c_shows_what_a_fresh_start_on_c_shows(a in live(), b in live(), c in live()) {
        let (a, b, c) = (config(&yaml(&a, 1)), config(&yaml(&b, 1)), yaml(&c, 1));
        let mut dp = Dataplane::start(&a).unwrap();
        dp.apply(&b).unwrap();
        dp.apply(&config(&c)).unwrap();
        let live = observable(&mut dp);
        // A change only a restart can make is refused, and changes nothing.
        let refused = config(&c.replace("workers: {count: 1", "workers: {count: 2"));
        prop_assert!(dp.apply(&refused).is_err());
        prop_assert_eq!(&observable(&mut dp), &live);
        dp.stop().unwrap();
        let mut fresh = Dataplane::start(&config(&c)).unwrap();
        let started = observable(&mut fresh);
        fresh.stop().unwrap();
        for ((command, l), (_, s)) in live.iter().zip(&started) {
            prop_assert_eq!(l, s, "{} differs after A -> B -> C from a start on C:\n{}", command, c);
        }
    }
}
