//! The VRF scenarios of `vecflow bench`: many small tables against one big one, with the same
//! routes and traffic on the same 802.1Q sub-interfaces.

use super::scenarios::splitmix;
use super::{Row, VrfMemoryMeasured};
use anyhow::Context;
use dataplane::Dataplane;
use dataplane::config::{Config, IpPrefix, Route};
use dataplane::l3::LabelStack;
use dataplane::l3::objects::{NextHop, Target};
use dataplane::l3::rib::{RouteChange, Source};
use std::fmt::Write;
use std::net::{IpAddr, Ipv4Addr};

/// VRFs (and VLANs, on each port) of `ip4-vrf`.
const VRFS: u32 = 64;

/// Routes in each VRF of `ip4-vrf`.
const ROUTES_PER_VRF: usize = 1000;

/// The routes of customer `k` (0-based), seeded: its own /8 ((k + 10).0.0.0/8) and 999
/// prefixes inside it, 20 % /16, 20 % /20 and 60 % /24.
fn customer_routes(k: u32) -> Vec<(u32, u8)> {
    let base = (k + 10) << 24;
    let mut rng = 0x7f7f_0000_u64 + u64::from(k);
    let mut seen = std::collections::HashSet::new();
    let mut routes = vec![(base, 8)];
    while routes.len() < ROUTES_PER_VRF {
        let r = splitmix(&mut rng);
        let len = match r % 10 {
            0 | 1 => 16,
            2 | 3 => 20,
            _ => 24,
        };
        let prefix = (base | (r >> 40) as u32 & 0x00ff_ffff) & (u32::MAX << (32 - len));
        if seen.insert((prefix, len)) {
            routes.push((prefix, len));
        }
    }
    routes
}

/// [`VRFS`] customers on 802.1Q sub-interfaces of port0 (VLAN k + 1, 10.k.0.0/31) and port1
/// (the same VLAN, 10.k.1.0/31, a static neighbor at 10.k.1.1), each customer's
/// [`ROUTES_PER_VRF`] routes toward its port1 neighbor. In VRFs (`vrfs`: customer k in VRF
/// `ck`) or all in the default table. port0 sends 64-byte UDP from each customer's VLAN in
/// turn, vector by vector, to random addresses of its /8, as fast as the worker can.
fn customers(core: Option<u16>, vrfs: bool) -> Config {
    let mut y = String::new();
    if vrfs {
        y.push_str("vrfs:\n");
        (0..VRFS).for_each(|k| _ = writeln!(y, "  c{k}: {{table: {}}}", 100 + k));
    }
    let vrf = |k: u32| if vrfs { format!(", vrf: c{k}") } else { String::new() };
    y.push_str("interfaces:\n  port0:\n    mac: 9c:69:b4:61:a1:dc\n    sub-interfaces:\n");
    (0..VRFS).for_each(|k| {
        _ = writeln!(y, "      {0}: {{encapsulation: {{dot1q: {0}}}, addresses: [10.{k}.0.0/31]{1}}}", k + 1, vrf(k))
    });
    y.push_str("    generator:\n      streams:\n");
    (0..VRFS).for_each(|k| {
        _ = writeln!(
            y,
            "        - {{vlan: {}, src-ip: 16.0.0.1, src-range: {{count: 254}}, dst-ip: {}.0.0.0, \
             dst-range: {{count: 16777216, mode: random}}, seed: {}}}",
            k + 1,
            k + 10,
            k + 1
        )
    });
    y.push_str("  port1:\n    mac: 9c:69:b4:61:a1:dd\n    sub-interfaces:\n");
    (0..VRFS).for_each(|k| {
        _ = writeln!(y, "      {0}: {{encapsulation: {{dot1q: {0}}}, addresses: [10.{k}.1.0/31]{1}}}", k + 1, vrf(k))
    });
    y.push_str("neighbors:\n");
    (0..VRFS).for_each(|k| {
        _ = writeln!(y, "  - {{interface: port1.{}, address: 10.{k}.1.1, mac: 00:1b:21:06:00:01}}", k + 1)
    });
    let mut c = Config::load(&y).expect("the ip4-vrf scenarios are valid");
    c.workers.cores = core.into_iter().collect();
    for k in 0..VRFS {
        for (prefix, len) in customer_routes(k) {
            let mut r = Route::via(
                IpPrefix { addr: Ipv4Addr::from(prefix).into(), len },
                Ipv4Addr::new(10, k as u8, 1, 1).into(),
            );
            r.vrf = vrfs.then(|| format!("c{k}"));
            c.routes.push(r);
        }
    }
    c
}

/// [`VRFS`] customers, each in its own VRF of [`ROUTES_PER_VRF`] routes.
pub(super) fn ip4_vrf(core: Option<u16>) -> Config {
    customers(core, true)
}

/// `ip4-vrf`'s routes and traffic all in the default table.
pub(super) fn ip4_vrf_one(core: Option<u16>) -> Config {
    customers(core, false)
}

/// VRFs `vrf-memory` makes.
pub(super) const MEMORY_VRFS: usize = 1000;

/// IPv4 routes `vrf-memory` gives each VRF.
const MEMORY_ROUTES: usize = 100;

/// The address of sub-interface `k` of `vrf-memory`'s port: 10.x.y.1/24, one /24 each.
fn memory_subnet(k: usize) -> [u8; 3] {
    [10, (k / 256) as u8, (k % 256) as u8]
}

/// `vrf-memory`'s configuration: one port with [`MEMORY_VRFS`] sub-interfaces, each on its own
/// /24, in its own VRF (`vrfs`) or all in the default table.
fn memory_config(core: Option<u16>, vrfs: bool) -> anyhow::Result<Config> {
    let mut y = String::new();
    if vrfs {
        y.push_str("vrfs:\n");
        (0..MEMORY_VRFS).for_each(|k| _ = writeln!(y, "  v{k}: {{table: {}}}", 1000 + k));
    }
    y.push_str("interfaces:\n  port0:\n    sub-interfaces:\n");
    for k in 0..MEMORY_VRFS {
        let [a, b, c] = memory_subnet(k);
        let vrf = if vrfs { format!(", vrf: v{k}") } else { String::new() };
        _ = writeln!(y, "      {0}: {{encapsulation: {{dot1q: {0}}}, addresses: [{a}.{b}.{c}.1/24]{vrf}}}", k + 1);
    }
    let mut c = Config::load(&y).context("the vrf-memory configuration")?;
    c.workers.cores = core.into_iter().collect();
    Ok(c)
}

/// `vrf-memory`: a dataplane starts with [`MEMORY_VRFS`] sub-interfaces in the default table;
/// then one live change puts each in a VRF of its own (empty but for its connected routes),
/// and one batch gives every VRF a default route and 99 /16–/24s (seeded). Reported: the
/// growth of the resident size at each step.
pub(super) fn vrf_memory(core: Option<u16>) -> anyhow::Result<Row> {
    let resident = || dataplane::control::cli::resident().0;
    let settle = || std::thread::sleep(std::time::Duration::from_millis(300));
    let mut dp = Dataplane::start(&memory_config(core, false)?)?;
    settle();
    let before = resident();
    dp.apply(&memory_config(core, true)?).context("making the VRFs")?;
    settle();
    let empty = resident();
    let mut rng = 0x5eed_0f0f_u64;
    let mut batch = Vec::with_capacity(MEMORY_VRFS * MEMORY_ROUTES);
    for k in 0..MEMORY_VRFS {
        let vrf = dp.vrfs().index(Some(&format!("v{k}")));
        let name = format!("port0.{}", k + 1);
        let tx_if = dp.interfaces().iter().find(|i| i.name == name).context("a sub-interface")?.index;
        let [a, b, c] = memory_subnet(k);
        let hop = NextHop { via: IpAddr::V4(Ipv4Addr::new(a, b, c, 2)), tx_if, weight: 1 };
        let target = Some(Target::Paths { hops: vec![hop], push: LabelStack::EMPTY });
        let mut prefixes = std::collections::BTreeSet::from([(0u32, 0u8)]);
        while prefixes.len() < MEMORY_ROUTES {
            let r = splitmix(&mut rng);
            let len = 16 + (r % 9) as u8;
            prefixes.insert(((r >> 32) as u32 & (u32::MAX << (32 - len)), len));
        }
        batch.extend(prefixes.into_iter().map(|(p, len)| RouteChange {
            vrf,
            prefix: IpAddr::V4(Ipv4Addr::from(p)),
            len,
            source: Source::Kernel,
            target: target.clone(),
        }));
    }
    dp.apply_routes(&batch).context("the VRFs' routes")?;
    settle();
    let routed = resident();
    dp.stop()?;
    Ok(Row::VrfMemory(VrfMemoryMeasured {
        name: "vrf-memory",
        vrfs: MEMORY_VRFS,
        routes_per_vrf: MEMORY_ROUTES,
        empty_bytes: empty.saturating_sub(before),
        routes_bytes: routed.saturating_sub(empty),
    }))
}
