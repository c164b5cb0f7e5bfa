//! Flow rule commands: the rules with their hits, the megaflow caches, adding and removing rules.

use super::{Command, Registry, Reply, change};
use crate::control::engine::Dataplane;
use serde_json::json;
use std::fmt::Write;

/// Adds these commands to `r`.
pub(super) fn register(r: &mut Registry) {
    r.register(Command {
        words: "show flows",
        help: "the flow rules, by id, with the packets each matched since the rules last changed",
        run: show_flows,
    });
    r.register(Command {
            words: "show flow-cache",
            help: "the workers' megaflow caches: lookups, EMC / Cuckoo Distributor / megaflow hits, upcalls, subtables probed per hit",
            run: show_flow_cache,
        });
    r.register(Command {
        words: "flow add",
        help: "flow add [priority=N,]MATCH,actions=output:IF|drop|normal (ovs-ofctl syntax)",
        run: flow_add,
    });
    r.register(Command {
        words: "flow del",
        help: "flow del ID: remove the flow rule show flows lists as ID",
        run: flow_del,
    });
}

fn show_flows(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let hits = dp.flow_hits();
    let mut text = format!("{:>4} {:>12}  {}\n", "Id", "Packets", "Rule");
    let mut rows = Vec::new();
    for (id, (rule, n)) in dp.config().flows.iter().zip(hits).enumerate() {
        let _ = writeln!(text, "{id:>4} {n:>12}  {rule}");
        rows.push(json!({"id": id, "rule": rule, "packets": n}));
    }
    Ok(Reply { text, json: json!({ "flows": rows }) })
}

fn show_flow_cache(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let s = dp.flow_cache_stats();
    let hits = s.cd_hits + s.dpcls_hits;
    let per_hit = if hits == 0 { 0.0 } else { s.subtables_probed as f64 / hits as f64 };
    let text = format!(
        "lookups {}\nemc hits {}\ncd hits {}\nmegaflow hits {}\nupcalls {}\nsubtables probed per hit {per_hit:.2}\n",
        s.lookups, s.emc_hits, s.cd_hits, s.dpcls_hits, s.upcalls
    );
    let json = json!({"lookups": s.lookups, "emc_hits": s.emc_hits, "cd_hits": s.cd_hits,
        "megaflow_hits": s.dpcls_hits, "upcalls": s.upcalls, "subtables_per_hit": per_hit});
    Ok(Reply { text, json })
}

fn flow_add(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    if args.is_empty() {
        return Err("usage: flow add [priority=N,]MATCH,actions=output:IF|drop|normal".into());
    }
    let rule = args.join(" ");
    change(dp, "flow add", |c| {
        c.flows.push(rule);
        Ok(())
    })
}

fn flow_del(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let [id] = args else { return Err("usage: flow del ID".into()) };
    change(dp, "flow del", |c| {
        let k = id.parse::<usize>().ok().filter(|&k| k < c.flows.len());
        let k = k.ok_or_else(|| format!("flow del: no flow rule {id} (show flows lists them)"))?;
        c.flows.remove(k);
        Ok(())
    })
}
