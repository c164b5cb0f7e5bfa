//! The plan that turns one configuration into another, written as the commands that would
//! make the change (`vecflow plan`, `vecflow apply`).

use crate::config::{AdminState, Config, IpPrefix, LocalLabel, Mac, Payload, Route};
use std::collections::BTreeMap;
use std::net::IpAddr;

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

/// One interface's (or sub-interface's) live settings, as the plan compares them: state,
/// MTU, addresses, MPLS, cross-connect, VRF.
type LiveSettings = (AdminState, Option<u16>, Vec<IpPrefix>, bool, Option<String>, Option<String>);

/// Every interface's and sub-interface's live settings, by name.
fn live_settings(c: &Config) -> BTreeMap<String, LiveSettings> {
    let mut out = BTreeMap::new();
    for (name, i) in &c.interfaces {
        out.insert(name.clone(), (i.state, i.mtu, i.addresses.clone(), i.mpls, i.l2xc.clone(), i.vrf.clone()));
        for (id, s) in &i.sub_interfaces {
            let live = (s.state, s.mtu, s.addresses.clone(), s.mpls, s.l2xc.clone(), s.vrf.clone());
            out.insert(format!("{name}.{id}"), live);
        }
    }
    out
}

/// ` vrf NAME` for a route or command in VRF `vrf`, nothing for the default table.
fn vrf_words(vrf: &Option<String>) -> String {
    vrf.as_ref().map_or(String::new(), |v| format!(" vrf {v}"))
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
    let routes = |c: &Config| -> BTreeMap<(Option<String>, IpPrefix), Route> {
        c.routes.iter().map(|r| ((r.vrf.clone(), r.prefix), r.clone())).collect()
    };
    let (ra, rb) = (routes(old), routes(new));
    out.extend(ra.keys().filter(|k| !rb.contains_key(k)).map(|(v, p)| format!("ip route del {p}{}", vrf_words(v))));
    let neighbors = |c: &Config| -> BTreeMap<(String, IpAddr), Mac> {
        c.neighbors.iter().map(|n| ((n.interface.clone(), n.address), n.mac)).collect()
    };
    let (na, nb) = (neighbors(old), neighbors(new));
    out.extend(na.keys().filter(|k| !nb.contains_key(k)).map(|(i, a)| format!("ip neighbor del {i} {a}")));
    // VRFs come before the interfaces and routes that move into them, and go after.
    for (name, v) in &new.vrfs {
        if old.vrfs.get(name) != Some(v) {
            out.push(format!("vrf add {name} table {}", v.table));
        }
    }
    out.extend(interface_plan(&a, &b));
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
        out.extend(agent_plan(a, b));
    }
    for ((i, a), mac) in &nb {
        if na.get(&(i.clone(), *a)) != Some(mac) {
            out.push(format!("ip neighbor {i} {a} {}", mac.0));
        }
    }
    for (k, r) in &rb {
        if ra.get(k) != Some(r) {
            out.push(route_add(&k.1, r));
        }
    }
    for (l, e) in &lb {
        if la.get(l) != Some(e) {
            out.push(label_add(*l, e));
        }
    }
    out.extend(old.vrfs.keys().filter(|n| !new.vrfs.contains_key(*n)).map(|n| format!("vrf del {n}")));
    out
}

/// The commands that change each interface both `a` and `b` have: addresses removed, MTU,
/// cross-connect, MPLS, VRF, addresses added, admin state, in that order.
fn interface_plan(a: &BTreeMap<String, LiveSettings>, b: &BTreeMap<String, LiveSettings>) -> Vec<String> {
    let mut out = Vec::new();
    for (name, (state, mtu, addrs, mpls, l2xc, vrf)) in b {
        let Some((state0, mtu0, addrs0, mpls0, l2xc0, vrf0)) = a.get(name) else { continue };
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
        if vrf != vrf0 {
            out.push(format!("set interface vrf {name} {}", vrf.as_deref().unwrap_or("default")));
        }
        out.extend(
            addrs.iter().filter(|p| !addrs0.contains(p)).map(|p| format!("set interface ip address {name} {p}")),
        );
        if state != state0 {
            out.push(format!("set interface state {name} {}", if *state == AdminState::Up { "up" } else { "down" }));
        }
    }
    out
}

/// The commands that change the agent's live settings from `a` to `b`.
fn agent_plan(a: &crate::config::SflowConfig, b: &crate::config::SflowConfig) -> Vec<String> {
    let direction = |d| serde_json::to_value(d).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default();
    let changes = [
        (a.sampling_rate != b.sampling_rate, format!("sflow sampling-rate {}", b.sampling_rate)),
        (a.polling_interval != b.polling_interval, format!("sflow polling-interval {}", b.polling_interval)),
        (a.header_bytes != b.header_bytes, format!("sflow header-bytes {}", b.header_bytes)),
        (a.direction != b.direction, format!("sflow direction {}", direction(b.direction))),
    ];
    changes.into_iter().filter(|(changed, _)| *changed).map(|(_, c)| c).collect()
}

/// The `ip route add` command that makes route `r` to `p`.
fn route_add(p: &IpPrefix, r: &Route) -> String {
    let mut cmd = format!("ip route add {p}");
    if let Some(next) = &r.next_vrf {
        return format!("{cmd} next-vrf {next}{}", vrf_words(&r.vrf));
    }
    for (k, h) in r.next_hops().iter().enumerate() {
        cmd += &format!(" via {}", h.via);
        if let Some(i) = &h.interface {
            cmd += &format!(" {i}");
        }
        if r.paths.get(k).is_some() && h.weight != 1 {
            cmd += &format!(" weight {}", h.weight);
        }
    }
    // Before out-labels, which take the rest of the line.
    cmd += &vrf_words(&r.vrf);
    if !r.out_labels.is_empty() {
        cmd += &format!(" out-labels {}", labels_text(&r.out_labels));
    }
    cmd
}

/// The `mpls local-label add` command that makes entry `e` for label `l`.
fn label_add(l: u32, e: &LocalLabel) -> String {
    let mut cmd = format!("mpls local-label add {l}");
    if let (Some(via), Some(i)) = (e.via, &e.interface) {
        cmd += &format!(" via {via} {i}");
    }
    if e.payload == Payload::Ip6 {
        cmd += " payload ip6";
    }
    if let Some(v) = &e.vrf {
        cmd += &format!(" vrf {v}");
    }
    if !e.out_labels.is_empty() {
        cmd += &format!(" out-labels {}", labels_text(&e.out_labels));
    }
    cmd
}

/// Labels as a command takes them: separated by spaces.
fn labels_text(labels: &[u32]) -> String {
    labels.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
}

/// The answer to the API's `plan` and `apply` methods: what the configuration `yaml` would
/// change on `dp`, as commands (text, one per line, and JSON), applied too when `apply`. An
/// error names the field, or why the change is refused; a refused apply changes nothing.
pub fn plan_yaml(
    dp: &mut crate::control::engine::Dataplane,
    yaml: &str,
    apply: bool,
) -> Result<(String, serde_json::Value), String> {
    let config = Config::load(yaml).map_err(|e| e.to_string())?;
    let commands = dp.plan(&config).map_err(|e| e.to_string())?;
    if apply {
        dp.apply(&config).map_err(|e| e.to_string())?;
        tracing::info!("applied a new configuration: {} change(s)", commands.len());
    }
    let text = commands.iter().map(|c| format!("{c}\n")).collect();
    Ok((text, serde_json::json!({ "commands": commands, "applied": apply })))
}
