//! sFlow commands: the agent and its data sources, and the live changes of its settings.

use super::{Command, Registry, Reply, change, number, words};
use crate::control::engine::Dataplane;
use serde_json::json;
use std::fmt::Write;

/// Adds these commands to `r`.
pub(super) fn register(r: &mut Registry) {
    r.register(Command {
        words: "show sflow",
        help: "sFlow agent settings and, per data source, samples taken, sent and dropped",
        run: show_sflow,
    });
    r.register(Command {
        words: "sflow sampling-rate",
        help: "sflow sampling-rate N: the default 1-in-N of sampled interfaces",
        run: sflow_rate,
    });
    r.register(Command {
        words: "sflow polling-interval",
        help: "sflow polling-interval SECONDS: counter samples (0 = none)",
        run: sflow_polling,
    });
    r.register(Command {
        words: "sflow header-bytes",
        help: "sflow header-bytes B: bytes of each sampled frame exported (64-256)",
        run: sflow_header,
    });
    r.register(Command {
        words: "sflow direction",
        help: "sflow direction rx|tx|both: the default direction sampled",
        run: sflow_direction,
    });
    r.register(Command {
        words: "sflow drop-monitoring",
        help: "sflow drop-monitoring enable|disable [IF]: discard samples (of IF, else of every sampled interface)",
        run: sflow_drops,
    });
    r.register(Command {
        words: "sflow enable",
        help: "sflow enable IF [disable] [sampling-rate N] [direction rx|tx|both]: sample an interface (or stop)",
        run: sflow_enable,
    });
}

fn show_sflow(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let Some((agent, totals, rows)) = dp.sflow() else {
        return Ok(Reply {
            text: "sFlow is off (no sflow: section in the configuration)\n".into(),
            json: json!({"enabled": false}),
        });
    };
    let sf = dp.config().sflow.as_ref().expect("sflow configured");
    let mut text = format!(
        "sFlow agent {agent} sub-agent {}: header-bytes {}, max-datagram-size {}, ring-depth {} per worker\n",
        sf.sub_agent_id, sf.header_bytes, sf.max_datagram_size, sf.ring_depth
    );
    let polling = match sf.polling_interval {
        0 => "off".to_string(),
        s => format!("every {s} s"),
    };
    let _ = writeln!(text, "counter polling {polling}, discard samples at most {} per second", sf.drop_limit);
    for c in &sf.collectors {
        let _ = writeln!(text, "collector {}", std::net::SocketAddr::new(c.address, c.port));
    }
    let _ = writeln!(
        text,
        "datagrams {} (sent {}, failed {}, refused {}), flow samples {}, counter samples {}, discard samples {}, \
         sampled packets dropped by the graph {}",
        totals.datagrams,
        totals.datagrams_sent,
        totals.send_failures,
        totals.refused,
        totals.samples_encoded,
        totals.counter_samples,
        totals.discard_samples,
        totals.samples_of_drops
    );
    let _ = writeln!(
        text,
        "fullest ring the agent found: {} of {} slots (samples lost to full rings: {}), longest agent pause {} µs",
        totals.ring_high_water,
        sf.ring_depth,
        rows.iter().map(|r| r.sampler.ring_full).sum::<u64>(),
        totals.longest_pause_us
    );
    let _ = writeln!(
        text,
        "{:<16} {:>6} {:>10} {:>14} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "Interface", "ifIdx", "rate", "seen", "taken", "sent", "dropped", "discards", "disc-lost"
    );
    for r in &rows {
        let _ = writeln!(
            text,
            "{:<16} {:>6} {:>10} {:>14} {:>10} {:>10} {:>10} {:>10} {:>10}",
            r.interface,
            r.if_index,
            r.sampling_rate,
            r.sampler.seen,
            r.sampler.taken,
            r.samples_sent,
            r.sampler.ring_full,
            r.sampler.discards,
            r.sampler.discards_lost
        );
    }
    let json = json!({"enabled": true, "agent": agent, "sub_agent_id": sf.sub_agent_id, "header_bytes": sf.header_bytes,
        "max_datagram_size": sf.max_datagram_size, "ring_depth": sf.ring_depth, "collectors": sf.collectors, "totals": totals, "sources": rows});
    Ok(Reply { text, json })
}

/// Edits the top-level sFlow settings (there must be an `sflow:` section: turning the agent
/// on needs a restart).
fn sflow_change(
    dp: &mut Dataplane,
    what: &str,
    edit: impl FnOnce(&mut crate::config::SflowConfig),
) -> Result<Reply, String> {
    change(dp, what, |c| {
        edit(c.sflow.as_mut().ok_or(SFLOW_OFF)?);
        Ok(())
    })
}

/// Why an sFlow setting cannot change.
const SFLOW_OFF: &str = "sFlow is off: add an sflow: section and restart vecflow";

fn sflow_rate(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let rate: u32 = number(args, "sflow sampling-rate N")?;
    sflow_change(dp, "sflow sampling-rate", |s| s.sampling_rate = rate)
}

fn sflow_polling(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let seconds: u32 = number(args, "sflow polling-interval SECONDS")?;
    sflow_change(dp, "sflow polling-interval", |s| s.polling_interval = seconds)
}

fn sflow_header(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let bytes: u16 = number(args, "sflow header-bytes B")?;
    sflow_change(dp, "sflow header-bytes", |s| s.header_bytes = bytes)
}

fn sflow_direction(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let [d] = words(args, "sflow direction rx|tx|both")?;
    let direction =
        serde_json::from_value(json!(d)).map_err(|_| format!("sflow direction: '{d}' is not rx, tx or both"))?;
    sflow_change(dp, "sflow direction", |s| s.direction = direction)
}

fn sflow_drops(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let (on, only) = match args {
        [on] => (on, None),
        [on, name] => (on, Some(*name)),
        _ => return Err("usage: sflow drop-monitoring enable|disable [IF]".into()),
    };
    let on = match *on {
        "enable" => true,
        "disable" => false,
        other => return Err(format!("sflow drop-monitoring: '{other}' is neither enable nor disable")),
    };
    change(dp, "sflow drop-monitoring", |c| {
        c.sflow.as_ref().ok_or(SFLOW_OFF)?;
        if let Some(name) = only {
            let i = c.interfaces.get_mut(name).ok_or_else(|| format!("no interface named '{name}'"))?;
            i.sflow.as_mut().ok_or_else(|| format!("{name} is not sampled (sflow enable {name})"))?.drop_monitoring =
                on;
            return Ok(());
        }
        for s in c.interfaces.values_mut().filter_map(|i| i.sflow.as_mut()).filter(|s| s.enable) {
            s.drop_monitoring = on;
        }
        Ok(())
    })
}

fn sflow_enable(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let usage = "usage: sflow enable IF [disable] [sampling-rate N] [direction rx|tx|both]";
    let [name, rest @ ..] = args else { return Err(usage.into()) };
    let (on, mut rest) = match rest {
        ["disable", rest @ ..] => (false, rest),
        rest => (true, rest),
    };
    let (mut rate, mut direction) = (None, None);
    while let [key, value, more @ ..] = rest {
        match *key {
            "sampling-rate" => rate = Some(value.parse::<u32>().map_err(|_| format!("{usage} ('{value}')"))?),
            "direction" => {
                direction = Some(
                    serde_json::from_value(json!(value)).map_err(|_| format!("sflow enable: direction '{value}'"))?,
                )
            }
            _ => return Err(usage.into()),
        }
        rest = more;
    }
    if !rest.is_empty() {
        return Err(usage.into());
    }
    change(dp, "sflow enable", |c| {
        c.sflow.as_ref().ok_or(SFLOW_OFF)?;
        let i = c
            .interfaces
            .get_mut(*name)
            .ok_or_else(|| format!("no interface named '{name}' (sFlow samples physical interfaces)"))?;
        let s = i.sflow.get_or_insert_with(|| serde_json::from_value(json!({"enable": false})).expect("defaults"));
        s.enable = on;
        s.sampling_rate = rate.or(s.sampling_rate);
        s.direction = direction.or(s.direction);
        Ok(())
    })
}
