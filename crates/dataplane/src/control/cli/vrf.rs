//! VRF commands: each VRF's table id, interfaces and routes.

use super::{Command, Registry, Reply, change, settings, words};
use crate::config::VrfConfig;
use crate::control::engine::Dataplane;
use serde_json::json;
use std::fmt::Write;

/// Adds these commands to `r`.
pub(super) fn register(r: &mut Registry) {
    r.register(Command {
        words: "show vrf",
        help: "the default table and each VRF: table id, interfaces, IPv4 and IPv6 routes",
        run: show_vrf,
    });
    r.register(Command { words: "vrf add", help: "vrf add NAME table N: a VRF (or its new table id)", run: vrf_add });
    r.register(Command {
        words: "vrf del",
        help: "vrf del NAME: a VRF no interface and no route is in any more",
        run: vrf_del,
    });
    r.register(Command {
        words: "set interface vrf",
        help: "set interface vrf IF NAME|default: the VRF the interface routes in",
        run: set_interface_vrf,
    });
}

fn vrf_add(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let usage = "vrf add NAME table N";
    let [name, "table", table] = words(args, usage)? else { return Err(format!("usage: {usage}")) };
    let table = table.parse().map_err(|_| format!("vrf add: table '{table}' is not a number"))?;
    change(dp, "vrf add", |c| {
        c.vrfs.insert(name.to_string(), VrfConfig { table });
        Ok(())
    })
}

fn vrf_del(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let [name] = words(args, "vrf del NAME")?;
    change(dp, "vrf del", |c| c.vrfs.remove(name).map(|_| ()).ok_or_else(|| format!("vrf del: no VRF '{name}'")))
}

fn set_interface_vrf(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let [name, vrf] = words(args, "set interface vrf IF NAME|default")?;
    change(dp, "set interface vrf", |c| {
        *settings(c, name)?.vrf = (vrf != "default").then(|| vrf.to_string());
        Ok(())
    })
}

fn show_vrf(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    if !args.is_empty() {
        return Err("usage: show vrf".into());
    }
    let vrfs = dp.vrf_summaries();
    let mut text =
        format!("{:<16} {:>10} {:>11} {:>11}  {}\n", "VRF", "Table", "IPv4 routes", "IPv6 routes", "Interfaces");
    for v in &vrfs {
        let _ = writeln!(
            text,
            "{:<16} {:>10} {:>11} {:>11}  {}",
            v.name,
            v.table,
            v.ipv4_routes,
            v.ipv6_routes,
            v.interfaces.join(", ")
        );
    }
    Ok(Reply { text, json: json!({"vrfs": vrfs}) })
}
