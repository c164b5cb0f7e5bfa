//! MPLS commands: the local labels and their changes.

use super::ip::{adjacency, adjacency_detail};
use super::{Command, Registry, Reply, change, out_labels};
use crate::config::{LocalLabel, Payload};
use crate::control::engine::Dataplane;
use crate::l3::LabelEntry;
use serde_json::json;
use std::fmt::Write;
use std::net::IpAddr;

/// Adds these commands to `r`.
pub(super) fn register(r: &mut Registry) {
    r.register(Command {
        words: "show mpls fib",
        help: "MPLS local labels: swap (out-labels, next hop) or pop",
        run: show_mpls_fib,
    });
    r.register(Command {
        words: "mpls local-label",
        help: "mpls local-label add|del LABEL [via ADDRESS IF out-labels L ... | payload ip4|ip6 | vrf NAME]",
        run: local_label,
    });
}

fn show_mpls_fib(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let l3 = dp.l3();
    let mut text = format!("{:<10} {}\n", "Label", "Forwarding");
    let mut rows = Vec::new();
    for (label, e) in l3.labels.iter() {
        let entry = l3.label_entries[usize::from(e) - 1];
        let detail = match entry {
            LabelEntry::Swap { adj, out } if out.labels().is_empty() => {
                format!("pop (implicit null) and send on {}", adjacency_detail(dp, adjacency(dp, adj)))
            }
            LabelEntry::Swap { adj, out } => {
                format!("swap to {:?} {}", out.labels(), adjacency_detail(dp, adjacency(dp, adj)))
            }
            LabelEntry::Pop { payload, vrf } => {
                let family = if payload == Payload::Ip6 { "IPv6" } else { "IPv4" };
                let table = dp.vrfs().name(vrf).map_or("the input interface's".to_string(), |n| format!("VRF {n}'s"));
                format!("pop; look up the next label, or at the end of stack route the {family} packet by {table} FIB")
            }
        };
        let _ = writeln!(text, "{label:<10} {detail}");
        rows.push(json!({"label": label, "entry": entry, "detail": detail}));
    }
    Ok(Reply { text, json: json!({"labels": rows}) })
}

fn local_label(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let usage =
        "usage: mpls local-label add|del LABEL [via ADDRESS IF out-labels L ... | [payload ip4|ip6] [vrf NAME]]";
    let (args, out) = out_labels(args)?;
    let (add, label, rest) = match args {
        ["add", l, rest @ ..] => (true, l, rest),
        ["del", l] => (false, l, &[][..]),
        _ => return Err(usage.into()),
    };
    let label: u32 = label.parse().map_err(|_| format!("mpls local-label: '{label}' is not a label"))?;
    let (mut via, mut interface, mut payload, mut vrf) = (None, None, Payload::Ip4, None);
    let mut words = rest;
    while !words.is_empty() {
        words = match words {
            ["via", a, i, more @ ..] if via.is_none() => {
                via = Some(a.parse::<IpAddr>().map_err(|_| format!("mpls local-label: '{a}' is not an IP address"))?);
                interface = Some(i.to_string());
                more
            }
            ["payload", "ip4", more @ ..] => more,
            ["payload", "ip6", more @ ..] => {
                payload = Payload::Ip6;
                more
            }
            ["vrf", name, more @ ..] if vrf.is_none() => {
                vrf = Some(name.to_string());
                more
            }
            _ => return Err(usage.into()),
        };
    }
    change(dp, "mpls local-label", |c| {
        let labels = &mut c.mpls.local_labels;
        let at = labels.iter().position(|l| l.label == label);
        match (add, at) {
            (false, Some(k)) => {
                labels.remove(k);
            }
            (false, None) => return Err(format!("no local label {label}")),
            (true, at) => {
                let entry = LocalLabel { label, via, interface, out_labels: out, payload, vrf: vrf.clone() };
                match at {
                    Some(k) => labels[k] = entry,
                    None => labels.push(entry),
                }
            }
        }
        Ok(())
    })
}
