//! Commands that change a running dataplane, in VPP's words, and the plan that turns one
//! configuration into another as such commands.
//!
//! Every change is made the same way: a copy of the running configuration is edited and
//! applied whole ([`Dataplane::apply`]): validated, refused if only a restart could make it,
//! otherwise swapped in without disturbing what it does not touch. So a command can never
//! leave the dataplane half-changed, and `show config` always prints what runs.

use crate::config::{AdminState, Config, IpPrefix, LocalLabel, Mac, Neighbor, Payload, PollMode, Route};
use crate::control::cli::{Command, Registry, Reply};
use crate::control::engine::Dataplane;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// Adds the configuration commands to `r`.
pub fn register(r: &mut Registry) {
    let commands: [(&'static str, &'static str, crate::control::cli::Handler); 21] = [
        ("show config", "the running configuration as YAML (vecflow apply takes it back)", show_config),
        ("set interface state", "set interface state IF up|down", set_state),
        ("set interface mtu", "set interface mtu IF BYTES (68-2030)", set_mtu),
        ("set interface ip address", "set interface ip address [del] IF A.B.C.D/LEN", set_address),
        ("set interface mpls", "set interface mpls IF enable|disable", set_mpls),
        (
            "set interface l2 xconnect",
            "set interface l2 xconnect IF PEER: every frame IF receives leaves through PEER",
            set_xconnect,
        ),
        ("set interface l3", "set interface l3 IF: undo a cross-connect", set_l3),
        ("set interface description", "set interface description IF TEXT ...", set_description),
        (
            "set interface rx-mode",
            "set interface rx-mode IF polling|interrupt|adaptive: how workers wait for its rx queues",
            set_rx_mode,
        ),
        ("flow add", "flow add [priority=N,]MATCH,actions=output:IF|drop|normal (ovs-ofctl syntax)", flow_add),
        ("flow del", "flow del ID: remove the flow rule show flows lists as ID", flow_del),
        ("ip route add", "ip route add PREFIX via ADDRESS [IF] [out-labels L ...]", route_add),
        ("ip route del", "ip route del PREFIX", route_del),
        ("ip neighbor", "ip neighbor [del] IF ADDRESS [MAC]: a static neighbor", neighbor),
        ("mpls local-label", "mpls local-label add|del LABEL [via ADDRESS IF out-labels L ...]", local_label),
        ("sflow sampling-rate", "sflow sampling-rate N: the default 1-in-N of sampled interfaces", sflow_rate),
        ("sflow polling-interval", "sflow polling-interval SECONDS: counter samples (0 = none)", sflow_polling),
        ("sflow header-bytes", "sflow header-bytes B: bytes of each sampled frame exported (64-256)", sflow_header),
        ("sflow direction", "sflow direction rx|tx|both: the default direction sampled", sflow_direction),
        (
            "sflow drop-monitoring",
            "sflow drop-monitoring enable|disable [IF]: discard samples (of IF, else of every sampled interface)",
            sflow_drops,
        ),
        (
            "sflow enable",
            "sflow enable IF [disable] [sampling-rate N] [direction rx|tx|both]: sample an interface (or stop)",
            sflow_enable,
        ),
    ];
    for (words, help, run) in commands {
        r.register(Command { words, help, run });
    }
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

/// Applies `edit` to a copy of the running configuration, then the copy to the dataplane.
fn change(
    dp: &mut Dataplane,
    what: &str,
    edit: impl FnOnce(&mut Config) -> Result<(), String>,
) -> Result<Reply, String> {
    let mut c = dp.config().clone();
    edit(&mut c)?;
    dp.apply(&c).map_err(|e| format!("{what}: {e}"))?;
    Ok(Reply { text: String::new(), json: json!({"applied": what}) })
}

/// The settings an interface and a sub-interface share, of interface `name` (`parent.id`
/// for a sub-interface).
struct Settings<'a> {
    state: &'a mut AdminState,
    mtu: &'a mut Option<u16>,
    addresses: &'a mut Vec<IpPrefix>,
    mpls: &'a mut bool,
    l2xc: &'a mut Option<String>,
}

fn settings<'a>(c: &'a mut Config, name: &str) -> Result<Settings<'a>, String> {
    let unknown = || format!("no interface named '{name}'");
    if c.interfaces.contains_key(name) {
        let i = c.interfaces.get_mut(name).expect("checked");
        return Ok(Settings {
            state: &mut i.state,
            mtu: &mut i.mtu,
            addresses: &mut i.addresses,
            mpls: &mut i.mpls,
            l2xc: &mut i.l2xc,
        });
    }
    let (parent, sub) = name.rsplit_once('.').ok_or_else(unknown)?;
    let sub: u32 = sub.parse().map_err(|_| unknown())?;
    let s = c.interfaces.get_mut(parent).and_then(|p| p.sub_interfaces.get_mut(&sub)).ok_or_else(unknown)?;
    Ok(Settings {
        state: &mut s.state,
        mtu: &mut s.mtu,
        addresses: &mut s.addresses,
        mpls: &mut s.mpls,
        l2xc: &mut s.l2xc,
    })
}

/// `args` as exactly `N` words, or the usage line.
fn words<'a, const N: usize>(args: &[&'a str], usage: &str) -> Result<[&'a str; N], String> {
    <[&str; N]>::try_from(args).map_err(|_| format!("usage: {usage}"))
}

fn show_config(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let text = serde_saphyr::to_string(dp.config()).map_err(|e| e.to_string())?;
    Ok(Reply { text, json: serde_json::to_value(dp.config()).map_err(|e| e.to_string())? })
}

fn set_state(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let [name, state] = words(args, "set interface state IF up|down")?;
    let state = match state {
        "up" => AdminState::Up,
        "down" => AdminState::Down,
        other => return Err(format!("set interface state: '{other}' is neither up nor down")),
    };
    change(dp, "set interface state", |c| {
        *settings(c, name)?.state = state;
        Ok(())
    })
}

fn set_mtu(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let [name, mtu] = words(args, "set interface mtu IF BYTES")?;
    let mtu: u16 = mtu.parse().map_err(|_| format!("set interface mtu: '{mtu}' is not a number of bytes"))?;
    change(dp, "set interface mtu", |c| {
        *settings(c, name)?.mtu = Some(mtu);
        Ok(())
    })
}

fn set_address(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let (del, rest) = match args {
        ["del", rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let [name, prefix] = words(rest, "set interface ip address [del] IF PREFIX")?;
    let prefix: IpPrefix = prefix.parse()?;
    change(dp, "set interface ip address", |c| {
        let addresses = settings(c, name)?.addresses;
        match (del, addresses.iter().position(|a| *a == prefix)) {
            (true, Some(k)) => {
                addresses.remove(k);
            }
            (true, None) => return Err(format!("{name} has no address {prefix}")),
            (false, Some(_)) => return Err(format!("{name} already has {prefix}")),
            (false, None) => addresses.push(prefix),
        }
        Ok(())
    })
}

fn set_mpls(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let [name, on] = words(args, "set interface mpls IF enable|disable")?;
    let on = match on {
        "enable" => true,
        "disable" => false,
        other => return Err(format!("set interface mpls: '{other}' is neither enable nor disable")),
    };
    change(dp, "set interface mpls", |c| {
        *settings(c, name)?.mpls = on;
        Ok(())
    })
}

fn set_xconnect(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let [name, peer] = words(args, "set interface l2 xconnect IF PEER")?;
    change(dp, "set interface l2 xconnect", |c| {
        *settings(c, name)?.l2xc = Some(peer.to_string());
        Ok(())
    })
}

fn set_description(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let [name, text @ ..] = args else { return Err("usage: set interface description IF TEXT ...".into()) };
    let text = (!text.is_empty()).then(|| text.join(" "));
    change(dp, "set interface description", |c| {
        c.interfaces.get_mut(*name).ok_or_else(|| format!("no interface named '{name}'"))?.description = text;
        Ok(())
    })
}

fn set_rx_mode(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let [name, mode] = words(args, "set interface rx-mode IF polling|interrupt|adaptive")?;
    let mode = match mode {
        "polling" => PollMode::Polling,
        "interrupt" => PollMode::Interrupt,
        "adaptive" => PollMode::Adaptive,
        other => return Err(format!("set interface rx-mode: '{other}' is not polling, interrupt or adaptive")),
    };
    change(dp, "set interface rx-mode", |c| {
        c.interfaces.get_mut(name).ok_or_else(|| format!("no interface named '{name}'"))?.rx_mode = mode;
        Ok(())
    })
}

fn set_l3(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let [name] = words(args, "set interface l3 IF")?;
    change(dp, "set interface l3", |c| {
        *settings(c, name)?.l2xc = None;
        Ok(())
    })
}

/// `out-labels L ...` at the end of `args`, and the words before it.
fn out_labels<'a>(args: &'a [&'a str]) -> Result<(&'a [&'a str], Vec<u32>), String> {
    match args.iter().position(|w| *w == "out-labels") {
        Some(k) => {
            let labels = args[k + 1..]
                .iter()
                .map(|l| l.parse::<u32>().map_err(|_| format!("out-labels: '{l}' is not a label")))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((&args[..k], labels))
        }
        None => Ok((args, Vec::new())),
    }
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
        let route = Route { prefix, via, interface, out_labels: out };
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

/// The one number of `args`.
fn number<T: std::str::FromStr>(args: &[&str], usage: &str) -> Result<T, String> {
    let [n] = words(args, usage)?;
    n.parse().map_err(|_| format!("usage: {usage} ('{n}' is not a number)"))
}

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

/// The commands that change interface `name`'s sFlow settings from `a` to `b`.
fn sflow_plan(
    name: &str,
    a: Option<crate::config::InterfaceSflow>,
    b: Option<crate::config::InterfaceSflow>,
) -> Vec<String> {
    let off =
        crate::config::InterfaceSflow { enable: false, sampling_rate: None, direction: None, drop_monitoring: false };
    let (a, b) = (a.unwrap_or(off), b.unwrap_or(off));
    let mut out = Vec::new();
    if (a.enable, a.sampling_rate, a.direction) != (b.enable, b.sampling_rate, b.direction) {
        let mut cmd = format!("sflow enable {name}");
        if !b.enable {
            cmd += " disable";
        }
        if let Some(r) = b.sampling_rate {
            cmd += &format!(" sampling-rate {r}");
        }
        if let Some(d) = b.direction.and_then(|d| serde_json::to_value(d).ok()) {
            cmd += &format!(" direction {}", d.as_str().unwrap_or_default());
        }
        out.push(cmd);
    }
    if a.drop_monitoring != b.drop_monitoring {
        out.push(format!("sflow drop-monitoring {} {name}", if b.drop_monitoring { "enable" } else { "disable" }));
    }
    out
}

/// One interface's (or sub-interface's) live settings, as the plan compares them.
type LiveSettings = (AdminState, Option<u16>, Vec<IpPrefix>, bool, Option<String>);

/// Every interface's and sub-interface's live settings, by name.
fn live_settings(c: &Config) -> BTreeMap<String, LiveSettings> {
    let mut out = BTreeMap::new();
    for (name, i) in &c.interfaces {
        out.insert(name.clone(), (i.state, i.mtu, i.addresses.clone(), i.mpls, i.l2xc.clone()));
        for (id, s) in &i.sub_interfaces {
            out.insert(format!("{name}.{id}"), (s.state, s.mtu, s.addresses.clone(), s.mpls, s.l2xc.clone()));
        }
    }
    out
}

/// The commands that turn running configuration `old` into `new` (both validated, `new` not
/// needing a restart), in an order each could run in.
pub fn plan(old: &Config, new: &Config) -> Vec<String> {
    let mut out = Vec::new();
    let (a, b) = (live_settings(old), live_settings(new));
    // Labels and routes that go away first, then interface changes, then what is added.
    let labels = |c: &Config| -> BTreeMap<u32, LocalLabel> {
        c.mpls.local_labels.iter().map(|l| (l.label, l.clone())).collect()
    };
    let (la, lb) = (labels(old), labels(new));
    out.extend(la.keys().filter(|l| !lb.contains_key(l)).map(|l| format!("mpls local-label del {l}")));
    let routes = |c: &Config| -> BTreeMap<IpPrefix, Route> { c.routes.iter().map(|r| (r.prefix, r.clone())).collect() };
    let (ra, rb) = (routes(old), routes(new));
    out.extend(ra.keys().filter(|p| !rb.contains_key(p)).map(|p| format!("ip route del {p}")));
    let neighbors = |c: &Config| -> BTreeMap<(String, IpAddr), Mac> {
        c.neighbors.iter().map(|n| ((n.interface.clone(), n.address), n.mac)).collect()
    };
    let (na, nb) = (neighbors(old), neighbors(new));
    out.extend(na.keys().filter(|k| !nb.contains_key(k)).map(|(i, a)| format!("ip neighbor del {i} {a}")));
    for (name, (state, mtu, addrs, mpls, l2xc)) in &b {
        let Some((state0, mtu0, addrs0, mpls0, l2xc0)) = a.get(name) else { continue };
        out.extend(
            addrs0.iter().filter(|p| !addrs.contains(p)).map(|p| format!("set interface ip address del {name} {p}")),
        );
        if mtu != mtu0 {
            out.push(format!("set interface mtu {name} {}", mtu.unwrap_or(crate::config::DEFAULT_MTU)));
        }
        if l2xc != l2xc0 {
            out.push(match l2xc {
                Some(peer) => format!("set interface l2 xconnect {name} {peer}"),
                None => format!("set interface l3 {name}"),
            });
        }
        if mpls != mpls0 {
            out.push(format!("set interface mpls {name} {}", if *mpls { "enable" } else { "disable" }));
        }
        out.extend(
            addrs.iter().filter(|p| !addrs0.contains(p)).map(|p| format!("set interface ip address {name} {p}")),
        );
        if state != state0 {
            out.push(format!("set interface state {name} {}", if *state == AdminState::Up { "up" } else { "down" }));
        }
    }
    for (name, i) in &new.interfaces {
        let Some(o) = old.interfaces.get(name) else { continue };
        if o.description != i.description {
            out.push(format!("set interface description {name} {}", i.description.as_deref().unwrap_or("")));
        }
        if o.rx_mode != i.rx_mode {
            let mode = serde_json::to_value(i.rx_mode).ok().and_then(|v| v.as_str().map(str::to_string));
            out.push(format!("set interface rx-mode {name} {}", mode.unwrap_or_default()));
        }
        out.extend(sflow_plan(name, o.sflow, i.sflow));
    }
    if let (Some(a), Some(b)) = (&old.sflow, &new.sflow) {
        let direction =
            |d| serde_json::to_value(d).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
        let changes = [
            (a.sampling_rate != b.sampling_rate, format!("sflow sampling-rate {}", b.sampling_rate)),
            (a.polling_interval != b.polling_interval, format!("sflow polling-interval {}", b.polling_interval)),
            (a.header_bytes != b.header_bytes, format!("sflow header-bytes {}", b.header_bytes)),
            (a.direction != b.direction, format!("sflow direction {}", direction(b.direction))),
        ];
        out.extend(changes.into_iter().filter(|(changed, _)| *changed).map(|(_, c)| c));
    }
    for ((i, a), mac) in &nb {
        if na.get(&(i.clone(), *a)) != Some(mac) {
            out.push(format!("ip neighbor {i} {a} {}", mac.0));
        }
    }
    for (p, r) in &rb {
        if ra.get(p) != Some(r) {
            let mut cmd = format!("ip route add {p} via {}", r.via);
            if let Some(i) = &r.interface {
                cmd += &format!(" {i}");
            }
            if !r.out_labels.is_empty() {
                cmd +=
                    &format!(" out-labels {}", r.out_labels.iter().map(u32::to_string).collect::<Vec<_>>().join(" "));
            }
            out.push(cmd);
        }
    }
    for (l, e) in &lb {
        if la.get(l) != Some(e) {
            let mut cmd = format!("mpls local-label add {l}");
            if let (Some(via), Some(i)) = (e.via, &e.interface) {
                cmd += &format!(" via {via} {i}");
            }
            if e.payload == Payload::Ip6 {
                cmd += " payload ip6";
            }
            if !e.out_labels.is_empty() {
                cmd +=
                    &format!(" out-labels {}", e.out_labels.iter().map(u32::to_string).collect::<Vec<_>>().join(" "));
            }
            out.push(cmd);
        }
    }
    out
}
