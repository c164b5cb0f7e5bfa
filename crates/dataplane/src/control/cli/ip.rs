//! Routing commands: the IPv4 and IPv6 FIBs with their adjacencies, and static routes.

use super::{Command, Registry, Reply, out_labels, words};
use crate::config::{IpPrefix, Prefix, PrefixAddr, RoutePath};
use crate::control::engine::Dataplane;
use crate::l3::Adjacency;
use crate::l3::fib::{Fib6Writer, FibWriter, Leaf, Route};
use crate::l3::multipath::{BUCKETS, LB};
use crate::net::AddrKey;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Adds these commands to `r`.
pub(super) fn register(r: &mut Registry) {
    r.register(Command {
        words: "show ip fib",
        help: "IPv4 routes, their sources and adjacencies: [vrf NAME] and an optional prefix (exact), address \
               (longest match) or summary",
        run: show_ip_fib,
    });
    r.register(Command {
        words: "show ip6 fib",
        help: "IPv6 routes, their sources and adjacencies: [vrf NAME] and an optional prefix (exact), address \
               (longest match) or summary",
        run: show_ip6_fib,
    });
    r.register(Command {
        words: "ip route add",
        help: "ip route add PREFIX via ADDRESS [IF] [weight W] [via ADDRESS [IF] [weight W] ...] [out-labels L ...] \
               [vrf NAME], or PREFIX next-vrf NAME [vrf NAME] (a lookup in VRF NAME)",
        run: route_add,
    });
    r.register(Command { words: "ip route del", help: "ip route del PREFIX [vrf NAME]", run: route_del });
}

/// How adjacency `adj` forwards, in words.
pub(super) fn adjacency_detail(dp: &Dataplane, adj: Adjacency) -> String {
    let name = |i: u16| dp.interfaces().iter().find(|x| x.index == i).map_or("?".to_string(), |x| x.name.clone());
    match adj {
        Adjacency::Drop => "drop".to_string(),
        Adjacency::Local => "local (this router)".to_string(),
        Adjacency::Reject(r) => format!("{} (reject route)", r.name()),
        Adjacency::Glean { tx_if } => format!("connected, out {}", name(tx_if)),
        Adjacency::Via { tx_if, next_hop, rewrite, push } => {
            let mac = rewrite.map_or("unresolved: no neighbor".to_string(), |r| {
                wire::MacAddr([r[0], r[1], r[2], r[3], r[4], r[5]]).to_string()
            });
            let labels = if push.is_empty() { String::new() } else { format!(" push {:?}", push.labels()) };
            format!("via {next_hop} out {} ({mac}){labels}", name(tx_if))
        }
    }
}

/// Adjacency `i`, or the drop adjacency for an index out of range.
pub(super) fn adjacency(dp: &Dataplane, i: u32) -> Adjacency {
    dp.l3().adjs.get(i as usize).copied().unwrap_or(Adjacency::Drop)
}

/// One `show ip fib` / `show ip6 fib` row: the route's source and where it goes; a
/// multipath route lists its paths, each with its weight, the buckets its weight's share
/// rounds to, and the buckets it holds (fewer while it is down).
fn fib_row<A: AddrKey>(dp: &Dataplane, vrf: u16, r: Route<A>, text: &mut String) -> Value {
    let prefix = format!("{}/{}", r.prefix, r.len);
    let source = dp.rib().installed(vrf, r.prefix.into(), r.len).map_or("?", |(s, _)| s.name());
    if let Some(next) = crate::l3::vrf::looked_up(r.adj) {
        let name = dp.vrfs().name(next).unwrap_or("default");
        let _ = writeln!(text, "{prefix:<24} {source:<9} {:>6}  lookup in VRF {name}", "-");
        return json!({"prefix": prefix, "source": source, "lookup_in_vrf": name});
    }
    if r.adj & LB == 0 {
        let adj = adjacency(dp, r.adj);
        let detail = adjacency_detail(dp, adj);
        let _ = writeln!(text, "{prefix:<24} {source:<9} {:>6}  {detail}", r.adj);
        return json!({"prefix": prefix, "source": source, "adjacency_index": r.adj, "adjacency": adj, "detail": detail});
    }
    let Some(lb) = dp.l3().lbs.get((r.adj & !LB) as usize) else {
        return json!({"prefix": prefix, "source": source, "load_balance": r.adj & !LB});
    };
    let _ = writeln!(
        text,
        "{prefix:<24} {source:<9} {:>6}  multipath: {} paths over {BUCKETS} buckets",
        format!("lb{}", r.adj & !LB),
        lb.paths.len()
    );
    let (wanted, held) = (lb.wanted(), lb.counts());
    // Listed by next hop ("via ADDR out IF …"), not in the object's adjacency order, which
    // depends on the order adjacencies were made in.
    let mut listed: Vec<(usize, String)> =
        lb.paths.iter().enumerate().map(|(k, p)| (k, adjacency_detail(dp, adjacency(dp, p.adj)))).collect();
    listed.sort_by(|a, b| a.1.cmp(&b.1));
    let paths: Vec<Value> = listed
        .into_iter()
        .map(|(k, detail)| {
            let p = &lb.paths[k];
            let state = if lb.live[k] { "up" } else { "down" };
            let _ = writeln!(
                text,
                "{:<42}  weight {:>3} buckets {:>3} (share {:>3}) {state:<4} {detail}",
                "", p.weight, held[k], wanted[k]
            );
            json!({"adjacency_index": p.adj, "weight": p.weight, "buckets": held[k], "share": wanted[k],
                   "up": lb.live[k], "detail": detail})
        })
        .collect();
    json!({"prefix": prefix, "source": source, "load_balance": r.adj & !LB, "buckets": BUCKETS, "paths": paths})
}

fn show_ip_fib(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let (vrf, args) = vrf_argument(dp, "show ip fib", args)?;
    match vrf {
        0 => show_fib(dp, 0, &dp.fib().ip4, "show ip fib", args),
        _ => show_fib(dp, vrf, dp.fib().vrf_ip4(vrf).ok_or("show ip fib: the VRF has no table")?, "show ip fib", args),
    }
}

fn show_ip6_fib(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let (vrf, args) = vrf_argument(dp, "show ip6 fib", args)?;
    match vrf {
        0 => show_fib(dp, 0, &dp.fib().ip6, "show ip6 fib", args),
        _ => {
            show_fib(dp, vrf, dp.fib().vrf_ip6(vrf).ok_or("show ip6 fib: the VRF has no table")?, "show ip6 fib", args)
        }
    }
}

/// The index of the VRF that `vrf NAME` among `args` names (the default table's, 0, without
/// one) and the other arguments; an error listing the VRFs for an unknown name.
fn vrf_argument<'a>(dp: &Dataplane, cmd: &str, args: &[&'a str]) -> Result<(u16, Vec<&'a str>), String> {
    let (name, rest) = vrf_name(args, &format!("{cmd} [vrf NAME] ..."))?;
    let Some(name) = name else { return Ok((0, rest)) };
    let index = dp.vrfs().iter().find(|(n, _, _)| *n == name).map(|(_, i, _)| i).ok_or_else(|| {
        let names: String = dp.vrfs().iter().map(|(n, _, _)| format!(", {n}")).collect();
        format!("{cmd}: no VRF '{name}'; VRFs: default{names}")
    })?;
    Ok((index, rest))
}

/// What `show ip fib` and `show ip6 fib` need of a family's table.
trait ShownFib<A: AddrKey> {
    /// Every route, ordered.
    fn all(&self) -> Box<dyn Iterator<Item = Route<A>> + '_>;
    /// The longest match of `addr`.
    fn longest(&self, addr: A) -> Option<Leaf>;
    /// Number of routes.
    fn count(&self) -> usize;
    /// The table's memory use, as the end of the summary line and as JSON fields.
    fn usage(&self) -> (String, serde_json::Map<String, Value>);
}

impl<const FIRST: u8> ShownFib<Ipv4Addr> for FibWriter<Ipv4Addr, FIRST> {
    fn all(&self) -> Box<dyn Iterator<Item = Route<Ipv4Addr>> + '_> {
        Box::new(self.routes())
    }
    fn longest(&self, addr: Ipv4Addr) -> Option<Leaf> {
        self.fib().lookup_addr(addr)
    }
    fn count(&self) -> usize {
        self.len()
    }
    fn usage(&self) -> (String, serde_json::Map<String, Value>) {
        let (in_use, groups) = (self.tbl8_in_use(), self.fib().tbl8_groups());
        let json = json!({"tbl8_in_use": in_use, "tbl8_groups": groups});
        (format!("tbl8 groups in use {in_use} of {groups}"), json.as_object().cloned().unwrap_or_default())
    }
}

impl<const FIRST: u32> ShownFib<Ipv6Addr> for Fib6Writer<FIRST> {
    fn all(&self) -> Box<dyn Iterator<Item = Route<Ipv6Addr>> + '_> {
        Box::new(self.routes())
    }
    fn longest(&self, addr: Ipv6Addr) -> Option<Leaf> {
        self.fib().lookup_addr(addr)
    }
    fn count(&self) -> usize {
        self.len()
    }
    fn usage(&self) -> (String, serde_json::Map<String, Value>) {
        let bytes = self.bytes();
        let per_route = bytes as f64 / self.len().max(1) as f64;
        let json = json!({"bytes": bytes, "bytes_per_route": per_route});
        (format!("{bytes} bytes, {per_route:.0} per route"), json.as_object().cloned().unwrap_or_default())
    }
}

/// The routes of one family's table: all, one prefix (exact) or the longest match of an
/// address, with the table's memory use (IPv4: tbl8 groups; IPv6: bytes).
fn show_fib<A: AddrKey + PrefixAddr>(
    dp: &Dataplane,
    vrf: u16,
    fib: &impl ShownFib<A>,
    cmd: &str,
    args: Vec<&str>,
) -> Result<Reply, String> {
    let routes: Vec<Route<A>> = match args[..] {
        [] => fib.all().collect(),
        ["summary"] => return Ok(fib_summary(dp, vrf, fib.all())),
        [a] if a.contains('/') => {
            let p: Prefix<A> = a.parse()?;
            let want = Route::new(p.addr, p.len, 0);
            fib.all().filter(|r| (r.prefix, r.len) == (want.prefix, want.len)).collect()
        }
        [a] => {
            let addr: A =
                a.parse().map_err(|_| format!("{cmd}: '{a}' is neither a prefix ({}) nor an address", A::FORM))?;
            let want = fib.longest(addr).map(|l| Route::new(addr, l.prefix_len, l.adj));
            fib.all().filter(|r| want.is_some_and(|w| (r.prefix, r.len) == (w.prefix, w.len))).collect()
        }
        _ => return Err(format!("{cmd}: at most one prefix or address")),
    };
    let mut text = format!("{:<24} {:<9} {:>6}  {}\n", "Prefix", "Source", "Adj", "Forwarding");
    let rows: Vec<Value> = routes.iter().map(|r| fib_row(dp, vrf, *r, &mut text)).collect();
    let (total, (usage, fields)) = (fib.count(), fib.usage());
    let _ = writeln!(text, "{} of {total} routes; {usage}", rows.len());
    let mut json = json!({"routes": rows, "total_routes": total});
    if let Some(o) = json.as_object_mut() {
        o.extend(fields);
    }
    Ok(Reply { text, json })
}

/// Counts of one family's routes by prefix length, by source and by number of paths.
fn fib_summary<A: AddrKey>(dp: &Dataplane, vrf: u16, routes: impl Iterator<Item = Route<A>>) -> Reply {
    let (mut by_len, mut by_source, mut by_paths) = (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
    let mut total = 0usize;
    for r in routes {
        total += 1;
        *by_len.entry(r.len).or_insert(0usize) += 1;
        let source = dp.rib().installed(vrf, r.prefix.into(), r.len).map_or("?", |(s, _)| s.name());
        *by_source.entry(source).or_insert(0usize) += 1;
        let paths =
            if r.adj & LB == 0 { 1 } else { dp.l3().lbs.get((r.adj & !LB) as usize).map_or(0, |l| l.paths.len()) };
        *by_paths.entry(paths).or_insert(0usize) += 1;
    }
    let list = |m: Vec<(String, usize)>| m.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", ");
    let text = format!(
        "{total} routes\nby prefix length: {}\nby source: {}\nby paths: {}\n",
        list(by_len.iter().map(|(l, n)| (format!("/{l}"), *n)).collect()),
        list(by_source.iter().map(|(s, n)| (s.to_string(), *n)).collect()),
        list(by_paths.iter().map(|(p, n)| (format!("{p}-path"), *n)).collect()),
    );
    let by_len: BTreeMap<String, usize> = by_len.into_iter().map(|(l, n)| (l.to_string(), n)).collect();
    let by_paths: BTreeMap<String, usize> = by_paths.into_iter().map(|(p, n)| (p.to_string(), n)).collect();
    Reply {
        text,
        json: json!({"total_routes": total, "by_length": by_len, "by_source": by_source, "by_paths": by_paths}),
    }
}

fn route_add(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let usage = "ip route add PREFIX via ADDRESS [IF] [weight W] [via ADDRESS [IF] [weight W] ...] [out-labels L ...] \
                 [vrf NAME], or PREFIX next-vrf NAME [vrf NAME]";
    let (vrf, args) = vrf_name(args, usage)?;
    let (next_vrf, args) = named(&args, "next-vrf", usage)?;
    if let Some(next) = next_vrf {
        let [prefix] = words(&args, usage)?;
        let prefix: IpPrefix = prefix.parse()?;
        let route = crate::config::Route {
            via: None,
            vrf: vrf.clone(),
            next_vrf: Some(next),
            ..crate::config::Route::via(prefix, prefix.addr)
        };
        dp.set_config_route(vrf.as_deref(), prefix, Some(route)).map_err(|e| format!("ip route add: {e}"))?;
        return Ok(Reply { text: String::new(), json: json!({"applied": "ip route add"}) });
    }
    let (args, out) = out_labels(&args)?;
    let [prefix, rest @ ..] = args else { return Err(format!("usage: {usage}")) };
    let prefix: IpPrefix = prefix.parse()?;
    let mut paths: Vec<RoutePath> = Vec::new();
    let mut words = rest.iter().peekable();
    while let Some(&w) = words.next() {
        match (w, paths.last_mut()) {
            ("via", _) => {
                let a = words.next().ok_or_else(|| format!("usage: {usage}"))?;
                let via: IpAddr = a.parse().map_err(|_| format!("ip route add: '{a}' is not an IP address"))?;
                paths.push(RoutePath { via, interface: None, weight: 1 });
            }
            ("weight", Some(p)) => {
                let n = words.next().ok_or_else(|| format!("usage: {usage}"))?;
                p.weight = n
                    .parse()
                    .ok()
                    .filter(|&w| w > 0)
                    .ok_or_else(|| format!("ip route add: weight '{n}' is not allowed; allowed: 1 to 255"))?;
            }
            (i, Some(p)) if p.interface.is_none() && p.weight == 1 => p.interface = Some(i.to_string()),
            _ => return Err(format!("usage: {usage}")),
        }
    }
    let route = match &paths[..] {
        [] => return Err(format!("usage: {usage}")),
        [one] if one.weight == 1 => crate::config::Route {
            via: Some(one.via),
            interface: one.interface.clone(),
            ..crate::config::Route::via(prefix, one.via)
        },
        _ => crate::config::Route {
            prefix,
            via: None,
            interface: None,
            paths,
            out_labels: Vec::new(),
            vrf: None,
            next_vrf: None,
        },
    };
    let route = crate::config::Route { out_labels: out, vrf: vrf.clone(), ..route };
    dp.set_config_route(vrf.as_deref(), prefix, Some(route)).map_err(|e| format!("ip route add: {e}"))?;
    Ok(Reply { text: String::new(), json: json!({"applied": "ip route add"}) })
}

fn route_del(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let usage = "ip route del PREFIX [vrf NAME]";
    let (vrf, args) = vrf_name(args, usage)?;
    let [prefix] = words(&args, usage)?;
    let prefix: IpPrefix = prefix.parse()?;
    if !dp
        .config()
        .routes
        .iter()
        .any(|r| r.vrf == vrf && (r.prefix.masked(), r.prefix.len) == (prefix.masked(), prefix.len))
    {
        let table = vrf.as_ref().map_or(String::new(), |v| format!(" in VRF {v}"));
        return Err(format!("ip route del: no route {prefix}{table}"));
    }
    dp.set_config_route(vrf.as_deref(), prefix, None).map_err(|e| format!("ip route del: {e}"))?;
    Ok(Reply { text: String::new(), json: json!({"applied": "ip route del"}) })
}

/// The VRF name of `vrf NAME` among `args` (`None` without one, or for `default`) and the
/// other arguments.
fn vrf_name<'a>(args: &[&'a str], usage: &str) -> Result<(Option<String>, Vec<&'a str>), String> {
    let (name, rest) = named(args, "vrf", usage)?;
    Ok((name.filter(|n| n != "default"), rest))
}

/// The value of `KEY VALUE` among `args` (`None` without one) and the other arguments.
fn named<'a>(args: &[&'a str], key: &str, usage: &str) -> Result<(Option<String>, Vec<&'a str>), String> {
    let Some(at) = args.iter().position(|&a| a == key) else { return Ok((None, args.to_vec())) };
    let value = args.get(at + 1).ok_or_else(|| format!("usage: {usage}"))?;
    Ok((Some(value.to_string()), args[..at].iter().chain(&args[at + 2..]).copied().collect()))
}
