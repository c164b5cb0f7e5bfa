//! Routing commands: the IPv4 and IPv6 FIBs with their adjacencies, and static routes.

use super::{Command, Registry, Reply, change, out_labels, words};
use crate::config::{IpPrefix, Prefix, PrefixAddr};
use crate::control::engine::Dataplane;
use crate::l3::Adjacency;
use crate::l3::fib::{Fib6Writer, FibAddr, FibWriter, Leaf, Route};
use serde_json::{Value, json};
use std::fmt::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Adds these commands to `r`.
pub(super) fn register(r: &mut Registry) {
    r.register(Command {
        words: "show ip fib",
        help: "IPv4 routes and their adjacencies; optional prefix (exact) or address (longest match)",
        run: show_ip_fib,
    });
    r.register(Command {
        words: "show ip6 fib",
        help: "IPv6 routes and their adjacencies; optional prefix (exact) or address (longest match)",
        run: show_ip6_fib,
    });
    r.register(Command {
        words: "ip route add",
        help: "ip route add PREFIX via ADDRESS [IF] [out-labels L ...]",
        run: route_add,
    });
    r.register(Command { words: "ip route del", help: "ip route del PREFIX", run: route_del });
}

/// How adjacency `adj` forwards, in words.
pub(super) fn adjacency_detail(dp: &Dataplane, adj: Adjacency) -> String {
    let name = |i: u16| dp.interfaces().iter().find(|x| x.index == i).map_or("?".to_string(), |x| x.name.clone());
    match adj {
        Adjacency::Drop => "drop".to_string(),
        Adjacency::Local => "local (this router)".to_string(),
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

/// One `show ip fib` / `show ip6 fib` row.
fn fib_row<A: FibAddr>(dp: &Dataplane, r: Route<A>, text: &mut String) -> Value {
    let prefix = format!("{}/{}", r.prefix, r.len);
    let adj = adjacency(dp, r.adj);
    let detail = adjacency_detail(dp, adj);
    let _ = writeln!(text, "{prefix:<24} {:>6}  {detail}", r.adj);
    json!({"prefix": prefix, "adjacency_index": r.adj, "adjacency": adj, "detail": detail})
}

fn show_ip_fib(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    show_fib(dp, &dp.fib().ip4, "show ip fib", args)
}

fn show_ip6_fib(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    show_fib(dp, &dp.fib().ip6, "show ip6 fib", args)
}

/// What `show ip fib` and `show ip6 fib` need of a family's table.
trait ShownFib<A: FibAddr> {
    /// Every route, ordered.
    fn all(&self) -> Box<dyn Iterator<Item = Route<A>> + '_>;
    /// The longest match of `addr`.
    fn longest(&self, addr: A) -> Option<Leaf>;
    /// Number of routes.
    fn count(&self) -> usize;
    /// The table's memory use, as the end of the summary line and as JSON fields.
    fn usage(&self) -> (String, serde_json::Map<String, Value>);
}

impl ShownFib<Ipv4Addr> for FibWriter<Ipv4Addr> {
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

impl ShownFib<Ipv6Addr> for Fib6Writer {
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
fn show_fib<A: FibAddr + PrefixAddr>(
    dp: &Dataplane,
    fib: &impl ShownFib<A>,
    cmd: &str,
    args: &[&str],
) -> Result<Reply, String> {
    let routes: Vec<Route<A>> = match args {
        [] => fib.all().collect(),
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
    let mut text = format!("{:<24} {:>6}  {}\n", "Prefix", "Adj", "Forwarding");
    let rows: Vec<Value> = routes.iter().map(|r| fib_row(dp, *r, &mut text)).collect();
    let (total, (usage, fields)) = (fib.count(), fib.usage());
    let _ = writeln!(text, "{} of {total} routes; {usage}", rows.len());
    let mut json = json!({"routes": rows, "total_routes": total});
    if let Some(o) = json.as_object_mut() {
        o.extend(fields);
    }
    Ok(Reply { text, json })
}

fn route_add(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let usage = "ip route add PREFIX via ADDRESS [IF] [out-labels L ...]";
    let (args, out) = out_labels(args)?;
    let (prefix, via, interface) = match args {
        [p, "via", a] => (p, a, None),
        [p, "via", a, i] => (p, a, Some(i.to_string())),
        _ => return Err(format!("usage: {usage}")),
    };
    let prefix: IpPrefix = prefix.parse()?;
    let via: IpAddr = via.parse().map_err(|_| format!("ip route add: '{via}' is not an IP address"))?;
    change(dp, "ip route add", |c| {
        let route = crate::config::Route { prefix, via, interface, out_labels: out };
        match c.routes.iter_mut().find(|r| r.prefix == prefix) {
            Some(r) => *r = route,
            None => c.routes.push(route),
        }
        Ok(())
    })
}

fn route_del(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let [prefix] = words(args, "ip route del PREFIX")?;
    let prefix: IpPrefix = prefix.parse()?;
    change(dp, "ip route del", |c| {
        let before = c.routes.len();
        c.routes.retain(|r| r.prefix != prefix);
        if c.routes.len() == before { Err(format!("no route {prefix}")) } else { Ok(()) }
    })
}
