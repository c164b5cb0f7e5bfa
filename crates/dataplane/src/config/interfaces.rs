//! The checks of each interface against the rest of the configuration: its name, index and
//! MTU against the buffers, its sub-interfaces, cross-connects and generator streams, its
//! driver's settings (host interfaces and capture files used once, ring sizes against the
//! buffers, rx queues and placement against the workers).

use super::Config;
use crate::interface::config::{Driver, InterfaceConfig};
use crate::interface::driver_config::{MAX_PCAP_RATE, RING_FRAME_OVERHEAD};
use crate::interface::stream_config::validate_stream;
use crate::net::{ConfigError, MAX_INTERFACES, PollMode, invalid};

impl Config {
    /// Checks interface `name` and its sub-interfaces, then its driver's settings and its rx
    /// placement.
    pub(super) fn validate_interface(&self, name: &str, i: &InterfaceConfig) -> Result<(), ConfigError> {
        let f = |k: &str| format!("interfaces.{name}.{k}");
        if name.is_empty() || name.len() > 63 || !name.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:".contains(c))
        {
            return Err(invalid(
                format!("interfaces.{name}"),
                format!("name '{name}'"),
                "1–63 characters of a-z A-Z 0-9 - _ . / :",
            ));
        }
        if let Some(x) = i.index
            && (x == 0 || x as usize >= MAX_INTERFACES)
        {
            return Err(invalid(f("index"), x, format!("1 to {}", MAX_INTERFACES - 1)));
        }
        let max = self.buffers.max_mtu();
        if let Some(m) = i.mtu.filter(|m| !(68..=max).contains(m)) {
            let size = self.buffers.data_size;
            let raise = if size < crate::runtime::buffer::MAX_DATA_SIZE {
                format!("; raise buffers.data-size (up to {}) for more", crate::runtime::buffer::MAX_DATA_SIZE)
            } else {
                String::new()
            };
            return Err(invalid(f("mtu"), m, format!("68 to {max} (buffers.data-size {size} less 18{raise})")));
        }
        self.validate_driver(name, i)?;
        self.validate_placement(name, i)?;
        if let Some(peer) = &i.l2xc {
            if !self.has_interface(peer) || peer == name {
                return Err(invalid(f("l2xc"), peer, "the name of another configured interface"));
            }
            if !i.addresses.is_empty() {
                return Err(invalid(
                    f("addresses"),
                    format!("{} addresses", i.addresses.len()),
                    "none on an L2 cross-connected interface",
                ));
            }
        }
        for (sub, s) in &i.sub_interfaces {
            let sf = |k: &str| format!("interfaces.{name}.sub-interfaces.{sub}.{k}");
            if *sub == 0 {
                return Err(invalid(format!("interfaces.{name}.sub-interfaces"), sub, "sub-ids from 1"));
            }
            if !(1..=4094).contains(&s.encapsulation.dot1q) {
                return Err(invalid(sf("encapsulation.dot1q"), s.encapsulation.dot1q, "1 to 4094"));
            }
            if let Some(m) = s.mtu.filter(|&m| !(68..=i.mtu()).contains(&m)) {
                return Err(invalid(sf("mtu"), m, format!("68 to the parent's MTU ({})", i.mtu())));
            }
            if let Some(peer) = s.l2xc.as_ref().filter(|p| !self.has_interface(p) || **p == format!("{name}.{sub}")) {
                return Err(invalid(sf("l2xc"), peer, "the name of a configured interface"));
            }
            if s.l2xc.is_some() && !s.addresses.is_empty() {
                return Err(invalid(
                    sf("addresses"),
                    format!("{} addresses", s.addresses.len()),
                    "none on an L2 cross-connected sub-interface",
                ));
            }
        }
        let dups = i.sub_interfaces.values().map(|s| s.encapsulation.dot1q).collect::<std::collections::BTreeSet<_>>();
        if dups.len() != i.sub_interfaces.len() {
            return Err(invalid(
                format!("interfaces.{name}.sub-interfaces"),
                "a repeated dot1q tag",
                "each VLAN id on at most one sub-interface",
            ));
        }
        if let Some(g) = &i.generator {
            for (k, s) in g.streams.iter().enumerate() {
                validate_stream(&format!("interfaces.{name}.generator.streams[{k}]"), s, self.buffers.data_size)?;
            }
        }
        Ok(())
    }

    /// Rx placement: workers that exist, `worker` or `queues` (one per rx queue), not both.
    fn validate_placement(&self, name: &str, i: &InterfaceConfig) -> Result<(), ConfigError> {
        let f = |k: &str| format!("interfaces.{name}.rx-placement.{k}");
        let Some(p) = &i.rx_placement else { return Ok(()) };
        let workers = self.workers.count;
        let range = || format!("0 to {} (workers.count is {workers})", workers - 1);
        if let Some(w) = p.worker.filter(|&w| w >= workers) {
            return Err(invalid(f("worker"), w, range()));
        }
        if let Some((q, w)) = p.queues.iter().enumerate().find(|&(_, &w)| w >= workers) {
            return Err(invalid(f(&format!("queues[{q}]")), w, range()));
        }
        if p.worker.is_some() && !p.queues.is_empty() {
            return Err(invalid(f("queues"), "set with worker", "either worker or queues"));
        }
        if !p.queues.is_empty() && p.queues.len() != usize::from(i.rx_queue_count()) {
            return Err(invalid(
                f("queues"),
                format!("{} worker(s)", p.queues.len()),
                format!("one worker per rx queue: {}", i.rx_queue_count()),
            ));
        }
        Ok(())
    }

    /// The driver's own settings: a host interface exactly for `af-packet`, generator streams
    /// only on the generator, ring sizes in range, each host interface used once.
    fn validate_driver(&self, name: &str, i: &InterfaceConfig) -> Result<(), ConfigError> {
        let f = |k: &str| format!("interfaces.{name}.{k}");
        match (i.driver, &i.host_interface) {
            (Driver::AfPacket | Driver::AfXdp, None) => {
                return Err(invalid(f("host-interface"), "(missing)", "the Linux interface to use, e.g. eth1"));
            }
            (Driver::AfPacket | Driver::AfXdp, Some(h)) => {
                if h.is_empty() || h.len() > 15 || h.contains(['/', ' ', ':']) || h == "." || h == ".." {
                    return Err(invalid(
                        f("host-interface"),
                        h,
                        "a Linux interface name: 1 to 15 characters, no '/', ':' or space",
                    ));
                }
                if let Some((other, _)) =
                    self.interfaces.iter().find(|(n, o)| n.as_str() < name && o.host_interface.as_ref() == Some(h))
                {
                    return Err(invalid(
                        f("host-interface"),
                        h,
                        format!("a host interface no other interface uses ({other} has it)"),
                    ));
                }
            }
            (Driver::Generator | Driver::Pcap, Some(h)) => {
                return Err(invalid(f("host-interface"), h, "only with driver: af-packet or af-xdp"));
            }
            (Driver::Generator | Driver::Pcap, None) => {}
        }
        self.validate_pcap(name, i)?;
        if i.driver != Driver::Generator && i.generator.is_some() {
            return Err(invalid(f("generator"), "streams", "generator streams only with driver: generator"));
        }
        if i.rx_mode != PollMode::Polling && !matches!(i.driver, Driver::AfPacket | Driver::AfXdp) {
            return Err(invalid(f("rx-mode"), "set", "only with driver: af-packet or af-xdp"));
        }
        if i.rx_mode == PollMode::BusyPoll && i.driver != Driver::AfXdp {
            return Err(invalid(
                f("rx-mode"),
                "busy-poll",
                "polling, interrupt or adaptive (busy-poll only with driver: af-xdp)",
            ));
        }
        if let Some(a) = &i.af_xdp {
            if i.driver != Driver::AfXdp {
                return Err(invalid(f("af-xdp"), "settings", "af-xdp settings only with driver: af-xdp"));
            }
            if !a.ring_size.is_power_of_two() || !(64..=16384).contains(&a.ring_size) {
                return Err(invalid(f("af-xdp.ring-size"), a.ring_size, "a power of two from 64 to 16384"));
            }
            if !(1..=64).contains(&a.queues) {
                return Err(invalid(f("af-xdp.queues"), a.queues, "1 to 64"));
            }
            let b = &a.busy_poll;
            if !(1..=1024).contains(&b.budget) {
                return Err(invalid(f("af-xdp.busy-poll.budget"), b.budget, "1 to 1024"));
            }
            if !(1..=1000).contains(&b.defer_hard_irqs) {
                return Err(invalid(f("af-xdp.busy-poll.defer-hard-irqs"), b.defer_hard_irqs, "1 to 1000"));
            }
            if !(1..=1_000_000).contains(&b.gro_flush_timeout_us) {
                return Err(invalid(
                    f("af-xdp.busy-poll.gro-flush-timeout-us"),
                    b.gro_flush_timeout_us,
                    "1 to 1000000",
                ));
            }
        }
        if let Some(a) = &i.af_packet {
            if i.driver != Driver::AfPacket {
                return Err(invalid(f("af-packet"), "settings", "af-packet settings only with driver: af-packet"));
            }
            if !a.block_size.is_power_of_two() || !(4096..=1 << 22).contains(&a.block_size) {
                return Err(invalid(f("af-packet.block-size"), a.block_size, "a power of two from 4096 to 4194304"));
            }
            // A frame never spans blocks: the largest one, with the ring's headers, must fit.
            let least = (u32::from(self.buffers.data_size) + RING_FRAME_OVERHEAD).next_power_of_two();
            if a.block_size < least {
                return Err(invalid(
                    f("af-packet.block-size"),
                    a.block_size,
                    format!(
                        "a power of two from {least} to 4194304 (a block holds whole frames, up to buffers.data-size {})",
                        self.buffers.data_size
                    ),
                ));
            }
            if !(2..=1024).contains(&a.blocks) {
                return Err(invalid(f("af-packet.blocks"), a.blocks, "2 to 1024"));
            }
            if !(1..=1000).contains(&a.block_timeout_ms) {
                return Err(invalid(f("af-packet.block-timeout-ms"), a.block_timeout_ms, "1 to 1000"));
            }
            if !(1..=self.workers.count).contains(&a.rx_queues) {
                return Err(invalid(
                    f("af-packet.rx-queues"),
                    a.rx_queues,
                    format!("1 to {} (workers.count)", self.workers.count),
                ));
            }
        }
        Ok(())
    }

    /// Capture files exactly for driver `pcap`: something to read or write, loop and rate only
    /// with a read, no file written by two interfaces or both read and written.
    fn validate_pcap(&self, name: &str, i: &InterfaceConfig) -> Result<(), ConfigError> {
        let f = |k: &str| format!("interfaces.{name}.pcap{k}");
        let p = match (i.driver, &i.pcap) {
            (Driver::Pcap, None) => {
                return Err(invalid(f(""), "(missing)", "a capture to read and/or write, e.g. {read: in.pcap}"));
            }
            (Driver::Pcap, Some(p)) => p,
            (_, Some(_)) => return Err(invalid(f(""), "settings", "pcap settings only with driver: pcap")),
            (_, None) => return Ok(()),
        };
        if p.read.is_none() && p.write.is_none() {
            return Err(invalid(f(""), "{}", "read, write or both"));
        }
        if p.read.is_none() && (p.looping || p.rate_pps != 0) {
            return Err(invalid(f(if p.looping { ".loop" } else { ".rate-pps" }), "set", "only with pcap.read"));
        }
        if p.rate_pps > MAX_PCAP_RATE {
            return Err(invalid(f(".rate-pps"), p.rate_pps, format!("0 (as fast as possible) to {MAX_PCAP_RATE}")));
        }
        if let Some(w) = &p.write {
            if w.as_os_str().is_empty() {
                return Err(invalid(f(".write"), "\"\"", "a file name"));
            }
            let writers = self.interfaces.iter().filter_map(|(n, o)| Some((n, o.pcap.as_ref()?)));
            for (other, o) in writers {
                if o.read.as_ref() == Some(w) {
                    return Err(invalid(
                        f(".write"),
                        w.display(),
                        format!("a file no interface reads ({other} reads it)"),
                    ));
                }
                if other.as_str() < name && o.write.as_ref() == Some(w) {
                    return Err(invalid(
                        f(".write"),
                        w.display(),
                        format!("a file no other interface writes ({other} writes it)"),
                    ));
                }
            }
        }
        if p.read.as_ref().is_some_and(|r| r.as_os_str().is_empty()) {
            return Err(invalid(f(".read"), "\"\"", "a capture file name"));
        }
        Ok(())
    }
}
