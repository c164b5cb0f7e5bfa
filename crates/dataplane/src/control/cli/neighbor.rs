//! Neighbor commands: the IPv4 (ARP) and IPv6 (neighbor discovery) tables, static neighbors.

use super::{Command, Registry, Reply, change};
use crate::config::{Mac, Neighbor};
use crate::control::engine::Dataplane;
use serde_json::json;
use std::fmt::Write;
use std::net::IpAddr;

/// Adds these commands to `r`.
pub(super) fn register(r: &mut Registry) {
    r.register(Command {
        words: "show ip neighbors",
        help: "IPv4 neighbors (ARP): static and learned, with state and age",
        run: show_neighbors,
    });
    r.register(Command { words: "show neighbors", help: "the same as show ip neighbors", run: show_neighbors });
    r.register(Command {
        words: "show ip6 neighbors",
        help: "IPv6 neighbors (neighbor discovery): static and learned, with state and age",
        run: show_ip6_neighbors,
    });
    r.register(Command {
        words: "ip neighbor",
        help: "ip neighbor [del] IF ADDRESS [MAC]: a static neighbor",
        run: neighbor,
    });
}

fn show_neighbors(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    Ok(neighbor_table(dp, 16, |a| a.is_ipv4()))
}

fn show_ip6_neighbors(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    Ok(neighbor_table(dp, 40, |a| a.is_ipv6()))
}

/// The neighbors whose address is of the family `family` picks, as text (addresses `width`
/// wide) and JSON: interface, address, MAC, state, age in seconds.
fn neighbor_table(dp: &Dataplane, width: usize, family: fn(&std::net::IpAddr) -> bool) -> Reply {
    let name = |i: u16| dp.interfaces().iter().find(|x| x.index == i).map_or("?".into(), |x| x.name.clone());
    let mut text =
        format!("{:<16} {:<width$} {:<18} {:<11} {:>9}\n", "Interface", "Address", "MAC", "State", "Age (s)");
    let mut json_rows = Vec::new();
    for n in dp.neighbors().into_iter().filter(|n| family(&n.address)) {
        let (interface, address, mac, state, age) = (name(n.interface), n.address.to_string(), n.mac, n.state, n.age);
        let shown = mac.clone().unwrap_or_else(|| "-".into());
        let _ = writeln!(text, "{interface:<16} {address:<width$} {shown:<18} {:<11} {age:>9.1}", state.name());
        json_rows.push(json!({"interface": interface, "address": address, "mac": mac, "state": state, "age": age}));
    }
    Reply { text, json: json!({ "neighbors": json_rows }) }
}

fn neighbor(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let (del, rest) = match args {
        ["del", rest @ ..] => (true, rest),
        ["add", rest @ ..] => (false, rest),
        rest => (false, rest),
    };
    let (name, address, mac) = match (del, rest) {
        (true, [i, a]) => (i, a, None),
        (false, [i, a, m]) => (i, a, Some(m)),
        _ => return Err("usage: ip neighbor [add] IF ADDRESS MAC | ip neighbor del IF ADDRESS".into()),
    };
    let address: IpAddr = address.parse().map_err(|_| format!("ip neighbor: '{address}' is not an IP address"))?;
    let mac: Option<Mac> = mac
        .map(|m| serde_json::from_value(json!(m)).map_err(|_| format!("ip neighbor: '{m}' is not a MAC address")))
        .transpose()?;
    change(dp, "ip neighbor", |c| {
        let at = c.neighbors.iter().position(|n| n.interface == *name && n.address == address);
        match (mac, at) {
            (None, Some(k)) => {
                c.neighbors.remove(k);
            }
            (None, None) => return Err(format!("no static neighbor {address} on {name}")),
            (Some(mac), Some(k)) => c.neighbors[k].mac = mac,
            (Some(mac), None) => c.neighbors.push(Neighbor { interface: name.to_string(), address, mac }),
        }
        Ok(())
    })
}
