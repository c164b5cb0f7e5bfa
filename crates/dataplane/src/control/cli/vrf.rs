//! VRF commands: each VRF's table id, interfaces and routes.

use super::{Command, Registry, Reply};
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
