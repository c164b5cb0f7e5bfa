//! Interface commands: hardware, state and counters, addresses, and the `set interface` changes.

use super::{Command, Registry, Reply, change, cleared, settings, words};
use crate::config::{AdminState, IpPrefix, PollMode};
use crate::control::engine::Dataplane;
use serde_json::json;
use std::fmt::Write;

/// Adds these commands to `r`.
pub(super) fn register(r: &mut Registry) {
    r.register(Command {
        words: "show hardware",
        help: "each physical interface's driver: host interface, rings and queues, capture files, link",
        run: show_hardware,
    });
    r.register(Command {
        words: "show interface",
        help: "interfaces with their state and counters; optional interface name",
        run: show_interface,
    });
    r.register(Command {
        words: "show interface address",
        help: "each interface's IPv4 and IPv6 addresses, the link-local one derived from its MAC included",
        run: show_interface_address,
    });
    r.register(Command {
        words: "clear interfaces",
        help: "show interface counts from now (sFlow and Prometheus counters never reset)",
        run: |dp, args| cleared(dp, args, "interfaces", Dataplane::clear_interfaces),
    });
    r.register(Command { words: "set interface state", help: "set interface state IF up|down", run: set_state });
    r.register(Command {
        words: "set interface mtu",
        help: "set interface mtu IF BYTES (68 to buffers.data-size less 18: 2030 by default)",
        run: set_mtu,
    });
    r.register(Command {
        words: "set interface ip address",
        help: "set interface ip address [del] IF A.B.C.D/LEN",
        run: set_address,
    });
    r.register(Command { words: "set interface mpls", help: "set interface mpls IF enable|disable", run: set_mpls });
    r.register(Command {
        words: "set interface l2 xconnect",
        help: "set interface l2 xconnect IF PEER: every frame IF receives leaves through PEER",
        run: set_xconnect,
    });
    r.register(Command { words: "set interface l3", help: "set interface l3 IF: undo a cross-connect", run: set_l3 });
    r.register(Command {
        words: "set interface description",
        help: "set interface description IF TEXT ...",
        run: set_description,
    });
    r.register(Command {
        words: "set interface rx-mode",
        help: "set interface rx-mode IF polling|interrupt|adaptive|busy-poll: how workers wait for its rx queues",
        run: set_rx_mode,
    });
}

fn show_hardware(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let mut text = format!("{:<16} {:>4} {:<10} {:<18} {:>5}  {}\n", "Name", "Idx", "Driver", "MAC", "MTU", "Details");
    let mut rows = Vec::new();
    for i in dp.interfaces().iter().filter(|i| i.parent.is_none()) {
        let cfg = dp.config().interfaces.get(&i.name);
        let link = dp.link(i.index);
        let (up, speed) = (link.oper_up.get() == 1, link.speed.get());
        let details = match i.driver {
            crate::interface::DriverKind::Generator => {
                let streams = cfg.and_then(|c| c.generator.as_ref()).map_or(0, |g| g.streams.len());
                json!({"streams": streams})
            }
            crate::interface::DriverKind::AfPacket | crate::interface::DriverKind::AfXdp => {
                let host = dp.host_link(i.index);
                let mut d = json!({"host_interface": host.map(|h| &h.name), "host_ifindex": host.map(|h| h.ifindex),
                    "host_mtu": host.map(|h| h.mtu), "rx_mode": cfg.map(|c| c.rx_mode)});
                let own = if i.driver == crate::interface::DriverKind::AfXdp {
                    let a = cfg.and_then(|c| c.af_xdp).unwrap_or_default();
                    let (xdp, zero_copy) = dp.xdp_attachment(i.index).unwrap_or(("none", false));
                    let ids = |ids: Vec<u32>| ids.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
                    // The NAPI instances set for busy polling ("none" while no socket reported one).
                    let busy = cfg.is_some_and(|c| c.rx_mode == crate::config::PollMode::BusyPoll).then(|| {
                        let set = ids(dp.busy_poll_napis(i.index));
                        if set.is_empty() { "none".to_string() } else { set }
                    });
                    json!({"queues": a.queues, "ring_size": a.ring_size, "xdp": xdp,
                        "copy": if zero_copy { "zero-copy" } else { "copy" }, "napi": ids(dp.xdp_napi_ids(i.index)),
                        "busy_poll_napi": busy})
                } else {
                    let a = cfg.and_then(|c| c.af_packet).unwrap_or_default();
                    json!({"rx_queues": a.rx_queues, "block_size": a.block_size, "blocks": a.blocks,
                        "block_timeout_ms": a.block_timeout_ms})
                };
                d.as_object_mut().expect("an object").extend(own.as_object().expect("an object").clone());
                d
            }
            crate::interface::DriverKind::Pcap => {
                let p = cfg.and_then(|c| c.pcap.clone());
                json!({"read": p.as_ref().and_then(|p| p.read.clone()), "loop": p.as_ref().is_some_and(|p| p.looping),
                    "rate_pps": p.as_ref().map_or(0, |p| p.rate_pps), "write": p.and_then(|p| p.write)})
            }
        };
        let mut words: Vec<String> = details
            .as_object()
            .expect("an object")
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| format!("{}={}", k.replace('_', "-"), v.as_str().map_or(v.to_string(), str::to_string)))
            .collect();
        words.push(format!(
            "link {}{}",
            if up { "up" } else { "down" },
            match speed {
                0 => String::new(),
                s => format!(" {} Mbit/s", s / 1_000_000),
            }
        ));
        let driver = serde_json::to_value(i.driver).expect("a name");
        let _ = writeln!(
            text,
            "{:<16} {:>4} {:<10} {:<18} {:>5}  {}",
            i.name,
            i.index,
            driver.as_str().unwrap_or("?"),
            i.mac,
            i.mtu,
            words.join(", ")
        );
        rows.push(
            json!({"interface": i.name, "index": i.index, "driver": driver, "mac": i.mac.to_string(), "mtu": i.mtu,
            "link": {"up": up, "speed": speed}, "details": details}),
        );
    }
    Ok(Reply { text, json: json!({"interfaces": rows}) })
}

fn show_interface(dp: &mut Dataplane, args: &[&str]) -> Result<Reply, String> {
    let selected: Vec<_> =
        dp.interfaces().iter().filter(|i| args.is_empty() || args.contains(&i.name.as_str())).collect();
    if let Some(missing) = args.iter().find(|a| !dp.interfaces().iter().any(|i| i.name == **a)) {
        return Err(format!("show interface: no interface named '{missing}'"));
    }
    let mut text =
        format!("{:<16} {:>4} {:>7} {:>6}  {:<20} {:>16}\n", "Name", "Idx", "State", "MTU", "Counter", "Count");
    let mut list = Vec::new();
    for i in selected {
        let s = dp.interface_stats_shown(i.index);
        let link = dp.link(i.index);
        let link_up = link.oper_up.get() == 1;
        let state = match (i.admin_up, link_up) {
            (false, _) => "down",
            (true, true) => "up",
            (true, false) => "no-link",
        };
        let mut counters = serde_json::to_value(s).expect("plain counters");
        if i.parent.is_none() {
            counters["rx_miss"] = dp.rx_miss_shown(i.index).into();
        }
        let speed = link.speed.get();
        let mut first = true;
        for (k, v) in counters.as_object().expect("struct").iter() {
            if v.as_u64() == Some(0) {
                continue;
            }
            let head =
                if first { format!("{:<16} {:>4} {:>7} {:>6}", i.name, i.index, state, i.mtu) } else { String::new() };
            let _ = writeln!(text, "{head:<36}  {:<20} {:>16}", k.replace('_', " "), v);
            first = false;
        }
        if first {
            let _ = writeln!(text, "{:<16} {:>4} {:>7} {:>6}", i.name, i.index, state, i.mtu);
        }
        if speed > 0 {
            let _ = writeln!(text, "{:<36}  {:<20} {:>16}", "", "link speed (Mbit/s)", speed / 1_000_000);
        }
        let vrf = dp.vrfs().name(i.vrf).unwrap_or("default");
        if i.vrf != crate::l3::vrf::DEFAULT_VRF {
            let _ = writeln!(text, "{:<36}  {:<20} {:>16}", "", "vrf", vrf);
        }
        let rates = dp.rates(i.index);
        if let Some(r) = rates.filter(|r| r.rx_pps + r.tx_pps > 0.0) {
            for (what, pps, bps) in [("rx", r.rx_pps, r.rx_bps), ("tx", r.tx_pps, r.tx_bps)] {
                let line = format!("{pps:.0} pps, {:.2} Mbit/s", bps / 1e6);
                let _ = writeln!(text, "{:<36}  {:<20} {:>16}", "", format!("{what} rate"), line);
            }
        }
        list.push(json!({"interface": i, "vrf": vrf, "link": {"up": link_up, "speed": speed}, "counters": counters,
                   "rates": rates}));
    }
    Ok(Reply { text, json: json!({"interfaces": list}) })
}

fn show_interface_address(dp: &mut Dataplane, _args: &[&str]) -> Result<Reply, String> {
    let mut text = String::new();
    let mut rows = Vec::new();
    for i in dp.interfaces().iter().filter(|i| !i.addresses.is_empty()) {
        let _ = writeln!(text, "{} ({})", i.name, if i.admin_up { "up" } else { "down" });
        let configured = dp.config().addresses_of(&i.name);
        let mut addresses = Vec::new();
        for a in &i.addresses {
            // Not configured: the kernel's on the TAP (linux-cp), or the link-local one vecflow
            // derived from the MAC.
            let kernel = dp.linux_cp().is_some_and(|l| l.kernel_owned(i.index, &configured).contains(a));
            let source = match (configured.contains(a), kernel) {
                (true, _) => "config",
                (false, true) => "kernel",
                (false, false) => "derived",
            };
            let note = if crate::config::is_link_local(a.addr) { "  link-local" } else { "" };
            let _ = writeln!(text, "  {a:<44} {source}{note}");
            addresses.push(json!({"address": a.to_string(), "source": source}));
        }
        rows.push(json!({"interface": i.name, "addresses": addresses}));
    }
    Ok(Reply { text, json: json!({ "interfaces": rows }) })
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
    let [name, mode] = words(args, "set interface rx-mode IF polling|interrupt|adaptive|busy-poll")?;
    let mode = match mode {
        "polling" => PollMode::Polling,
        "interrupt" => PollMode::Interrupt,
        "adaptive" => PollMode::Adaptive,
        "busy-poll" => PollMode::BusyPoll,
        other => {
            return Err(format!("set interface rx-mode: '{other}' is not polling, interrupt, adaptive or busy-poll"));
        }
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
