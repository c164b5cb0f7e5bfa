//! linux-cp commands: each interface's TAP and what crossed it.

use super::{Command, Registry, Reply};
use crate::control::engine::Dataplane;
use serde_json::json;
use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

/// Adds these commands to `r`.
pub(super) fn register(r: &mut Registry) {
    r.register(Command {
        words: "show lcp",
        help: "linux-cp: each interface's TAP (name, Linux ifindex, namespace) and the frames punted to it and injected from it",
        run: show_lcp,
    });
}

fn show_lcp(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let Some(lcp) = dp.linux_cp() else {
        return Ok(Reply { text: "linux-cp is off\n".into(), json: json!({"enabled": false}) });
    };
    let mut text = format!("namespace {}\n", lcp.netns());
    for (netns, vrf, _) in lcp.listeners().skip(1) {
        let _ = writeln!(text, "namespace {netns} (VRF {})", dp.vrfs().name(vrf).unwrap_or("?"));
    }
    let _ = writeln!(
        text,
        "{:<16} {:<16} {:>8} {:>12} {:>10} {:>10} {:>10} {:>12} {:>11} {:>12}",
        "Interface",
        "TAP",
        "ifindex",
        "punted",
        "punt-lost",
        "policed",
        "queue-full",
        "injected",
        "inject-lost",
        "punted-ctl"
    );
    let mut rows = Vec::new();
    for (index, tap, ifindex, c) in lcp.pairs() {
        let name = dp.interfaces().iter().find(|i| i.index == index).map_or("?", |i| i.name.as_str());
        let drops = dp.drops_of(index);
        let (full, policed) =
            (drops[crate::lcp::drops::PUNT_QUEUE_FULL.index()], drops[crate::lcp::drops::PUNT_POLICED.index()]);
        let (punted, punt_lost) = (c.punted.load(Relaxed), c.punt_lost.load(Relaxed));
        let (injected, inject_lost) = (c.injected.load(Relaxed), c.inject_lost.load(Relaxed));
        let control = c.punted_control.load(Relaxed);
        let _ = writeln!(
            text,
            "{name:<16} {tap:<16} {ifindex:>8} {punted:>12} {punt_lost:>10} {policed:>10} {full:>10} {injected:>12} {inject_lost:>11} {control:>12}"
        );
        rows.push(json!({
            "interface": name, "tap": tap, "ifindex": ifindex, "punted": punted, "punt_lost": punt_lost,
            "punt_policed": policed, "punt_queue_full": full, "injected": injected, "inject_lost": inject_lost,
            "punted_control": control,
        }));
    }
    let duplicates = dp.drops_of(0)[crate::lcp::drops::LCP_DUPLICATE_ANSWER.index()];
    let _ = writeln!(text, "answers from Linux dropped (vecflow answered): {duplicates}");
    let mut namespaces = Vec::new();
    for (netns, vrf, counters) in lcp.listeners() {
        let listener = counters.map(|c| {
            let counts = [&c.messages, &c.dumps, &c.overruns, &c.resync_changes].map(|n| n.load(Relaxed));
            let [messages, dumps, overruns, found] = counts;
            let which = if vrf == 0 { String::new() } else { format!(" ({netns})") };
            let _ = writeln!(
                text,
                "netlink listener{which}: {messages} messages, {dumps} dumps, {overruns} overruns, {found} changes found by re-dumps"
            );
            json!({"messages": messages, "dumps": dumps, "overruns": overruns, "resync_changes": found})
        });
        namespaces.push(json!({"netns": netns, "vrf": dp.vrfs().name(vrf).unwrap_or("default"), "listener": listener}));
    }
    let listener = namespaces[0]["listener"].clone();
    let routes = kernel_routes(dp, lcp.table(), lcp.view_counts(), &mut text);
    Ok(Reply {
        text,
        json: json!({
            "enabled": true, "netns": lcp.netns(), "namespaces": namespaces, "pairs": rows, "duplicate_answers": duplicates, "listener": listener,
            "kernel_routes": routes,
        }),
    })
}

/// The kernel's routes in the mirrored table: how many the FIB holds, by kind, and how many
/// it does not, by why; as a line each and JSON.
fn kernel_routes(dp: &Dataplane, table: u32, view: crate::lcp::ViewCounts, text: &mut String) -> serde_json::Value {
    let k = dp.kernel_routes();
    let (largest_batch, longest_slice) = k.largest();
    let slice_ms = longest_slice.as_secs_f64() * 1e3;
    let _ = writeln!(
        text,
        "kernel view: {} routes, {} waiting to be mirrored (at most {}), largest batch {largest_batch}, longest slice {slice_ms:.1} ms",
        view.routes, view.waiting, view.most_waiting
    );
    let mirrored: Vec<(&str, u64)> = k.by_kind().collect();
    let unmirrored = k.unmirrored();
    let list =
        |v: &mut dyn Iterator<Item = (&str, u64)>| v.map(|(w, n)| format!("{w} {n}")).collect::<Vec<_>>().join(", ");
    let total: u64 = mirrored.iter().map(|(_, n)| n).sum();
    let _ = writeln!(text, "kernel routes (table {table}): {total} mirrored ({})", list(&mut mirrored.iter().copied()));
    let skipped: u64 = unmirrored.values().sum();
    let _ = writeln!(
        text,
        "kernel routes not mirrored: {skipped}{}",
        if skipped == 0 {
            String::new()
        } else {
            format!(" ({})", list(&mut unmirrored.iter().map(|(w, n)| (*w, *n))))
        }
    );
    json!({
        "table": table,
        "mirrored": mirrored.into_iter().collect::<std::collections::BTreeMap<_, _>>(),
        "unmirrored": unmirrored,
        "view_routes": view.routes,
        "waiting": view.waiting,
        "most_waiting": view.most_waiting,
        "largest_batch": largest_batch,
        "longest_slice_ms": slice_ms,
    })
}
