//! `fib-churn`: how fast the FIB takes route changes, end to end.
//!
//! A dataplane runs `ip4-lab` (its pair forwarding on config routes, as fast as the worker
//! can) with IPv6 addresses added. The main thread hands it batches of kernel-sourced
//! changes through [`Dataplane::apply_routes`], which returns once workers forward on them
//! (the objects published, the FIB changed, every worker past a vector boundary): a full IPv4
//! table from empty (the 1 M prefixes of `ip4-1m`), a full IPv6 table (the 230 k of
//! `ip6-bgp`), 10 000 withdrawals, and a flap (those 10 000 announced and withdrawn ten
//! times, one batch each way). The pair's packets that reached `error-drop` meanwhile are
//! `forward_lost`.

use super::scenarios::{ip4_lab, ip4_table, ip6_bgp_table};
use super::{ChurnMeasured, Row};
use anyhow::Context;
use dataplane::Dataplane;
use dataplane::l3::LabelStack;
use dataplane::l3::objects::{NextHop, Target};
use dataplane::l3::rib::{RouteChange, Source};
use dataplane::runtime::graph::NodeId;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};

/// Routes withdrawn (and flapped) in the withdrawal and flap steps.
const WITHDRAWN: usize = 10_000;
/// Times the flap announces and withdraws them.
const FLAPS: usize = 10;

/// Packets node `node` has handled so far, over the workers: `error-drop`'s were dropped,
/// `generator-input`'s made by the pair's generators.
fn packets_at(dp: &Dataplane, node: NodeId) -> u64 {
    dp.runtime().iter().flat_map(|w| w.nodes.iter()).filter(|(n, _)| *n == node).map(|(_, s)| s.vectors).sum()
}

/// The change that announces (`Some` next hop) or withdraws a kernel route.
fn change(prefix: IpAddr, len: u8, hop: Option<NextHop>) -> RouteChange {
    let target = hop.map(|h| Target::Paths { hops: vec![h], push: LabelStack::EMPTY });
    RouteChange { vrf: dataplane::l3::vrf::DEFAULT_VRF, prefix, len, source: Source::Kernel, target }
}

/// Changes per second of one batch.
fn rate(dp: &mut Dataplane, batch: &[RouteChange]) -> anyhow::Result<f64> {
    let t = Instant::now();
    dp.apply_routes(batch).context("fib-churn batch")?;
    Ok(batch.len() as f64 / t.elapsed().as_secs_f64())
}

/// One run of `fib-churn`, the worker on `core`.
pub(super) fn churn(core: Option<u16>, warmup: f64) -> anyhow::Result<Row> {
    let mut config = ip4_lab(core);
    for (port, net) in [("port0", 0x100u16), ("port1", 0x101)] {
        let i = config.interfaces.get_mut(port).context("lab port")?;
        i.addresses.push(format!("2001:db8:{net:x}::1/64").parse().map_err(anyhow::Error::msg)?);
        let address = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, net, 0, 0, 0, 0, 2));
        config.neighbors.push(dataplane::config::Neighbor {
            interface: port.into(),
            address,
            mac: dataplane::config::Mac("00:1b:21:06:00:00".parse().map_err(anyhow::Error::msg)?),
        });
    }
    let mut dp = Dataplane::start(&config)?;
    let index = |name: &str| dp.interfaces().iter().find(|i| i.name == name).map(|i| i.index).context("lab port");
    let ports = [index("port0")?, index("port1")?];
    let hop4 = |k: usize| NextHop {
        via: IpAddr::V4(Ipv4Addr::new(100, 64, (k % 2) as u8, 0)),
        tx_if: ports[k % 2],
        weight: 1,
    };
    let hop6 = |k: usize| NextHop {
        via: IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0x100 + (k % 2) as u16, 0, 0, 0, 0, 2)),
        tx_if: ports[k % 2],
        weight: 1,
    };
    let v4: Vec<(IpAddr, u8)> = ip4_table().into_iter().map(|(p, l)| (IpAddr::V4(Ipv4Addr::from(p)), l)).collect();
    let v6: Vec<(IpAddr, u8)> = ip6_bgp_table().into_iter().map(|(p, l)| (IpAddr::V6(Ipv6Addr::from(p)), l)).collect();
    let full4: Vec<RouteChange> = v4.iter().enumerate().map(|(k, &(p, l))| change(p, l, Some(hop4(k)))).collect();
    let full6: Vec<RouteChange> = v6.iter().enumerate().map(|(k, &(p, l))| change(p, l, Some(hop6(k)))).collect();
    let step = v4.len() / WITHDRAWN;
    let some: Vec<usize> = (0..WITHDRAWN).map(|k| k * step).collect();
    let withdraw: Vec<RouteChange> = some.iter().map(|&k| change(v4[k].0, v4[k].1, None)).collect();
    let announce: Vec<RouteChange> = some.iter().map(|&k| full4[k].clone()).collect();
    std::thread::sleep(Duration::from_secs_f64(warmup));
    let lost_before = packets_at(&dp, dataplane::interface::nodes::ERROR_DROP);
    let generated_before = packets_at(&dp, dataplane::drivers::nodes::GENERATOR_INPUT);
    let ip4_full_per_s = rate(&mut dp, &full4)?;
    let ip6_full_per_s = rate(&mut dp, &full6)?;
    let ip4_withdraw_per_s = rate(&mut dp, &withdraw)?;
    let t = Instant::now();
    for _ in 0..FLAPS {
        dp.apply_routes(&announce).context("fib-churn flap")?;
        dp.apply_routes(&withdraw).context("fib-churn flap")?;
    }
    let ip4_flap_per_s = (2 * FLAPS * WITHDRAWN) as f64 / t.elapsed().as_secs_f64();
    let forward_lost = packets_at(&dp, dataplane::interface::nodes::ERROR_DROP) - lost_before;
    let forwarded_meanwhile =
        packets_at(&dp, dataplane::drivers::nodes::GENERATOR_INPUT) - generated_before - forward_lost;
    let (ip4_routes, ip6_routes) = (dp.fib().ip4.len(), dp.fib().ip6.len());
    dp.stop()?;
    Ok(Row::Churn(ChurnMeasured {
        name: "fib-churn",
        ip4_full_per_s,
        ip6_full_per_s,
        ip4_withdraw_per_s,
        ip4_flap_per_s,
        forward_lost,
        forwarded_meanwhile,
        ip4_routes,
        ip6_routes,
    }))
}
