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
        help: "mpls local-label add|del LABEL [via ADDRESS IF out-labels L ...]",
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
            LabelEntry::Swap { adj, out } => {
                format!("swap to {:?} {}", out.labels(), adjacency_detail(dp, adjacency(dp, adj)))
            }
            LabelEntry::Pop { payload: Payload::Ip4 } => {
                "pop (end of stack), then route the IPv4 packet by the FIB".to_string()
            }
            LabelEntry::Pop { payload: Payload::Ip6 } => {
                "pop (end of stack), then route the IPv6 packet by the FIB".to_string()
            }
        };
        let _ = writeln!(text, "{label:<10} {detail}");
        rows.push(json!({"label": label, "entry": entry, "detail": detail}));
    }
    Ok(Reply { text, json: json!({"labels": rows}) })
}

fn local_label(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let usage = "usage: mpls local-label add|del LABEL [via ADDRESS IF out-labels L ... | payload ip4|ip6]";
    let (args, out) = out_labels(args)?;
    let (add, label, rest) = match args {
        ["add", l, rest @ ..] => (true, l, rest),
        ["del", l] => (false, l, &[][..]),
        _ => return Err(usage.into()),
    };
    let label: u32 = label.parse().map_err(|_| format!("mpls local-label: '{label}' is not a label"))?;
    let (via, interface, payload) = match rest {
        [] => (None, None, Payload::Ip4),
        ["payload", "ip4"] => (None, None, Payload::Ip4),
        ["payload", "ip6"] => (None, None, Payload::Ip6),
        ["via", a, i] => {
            let a: IpAddr = a.parse().map_err(|_| format!("mpls local-label: '{a}' is not an IP address"))?;
            (Some(a), Some(i.to_string()), Payload::Ip4)
        }
        _ => return Err(usage.into()),
    };
    change(dp, "mpls local-label", |c| {
        let labels = &mut c.mpls.local_labels;
        let at = labels.iter().position(|l| l.label == label);
        match (add, at) {
            (false, Some(k)) => {
                labels.remove(k);
            }
            (false, None) => return Err(format!("no local label {label}")),
            (true, at) => {
                let entry = LocalLabel { label, via, interface, out_labels: out, payload };
                match at {
                    Some(k) => labels[k] = entry,
                    None => labels.push(entry),
                }
            }
        }
        Ok(())
    })
}
