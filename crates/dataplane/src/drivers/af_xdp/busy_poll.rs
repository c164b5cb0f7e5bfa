//! The `busy-poll` rx mode of AF_XDP interfaces: preferred busy polling, as the kernel's
//! AF_XDP and NAPI documentation describe it.
//!
//! - Each of the interface's sockets gets `SO_PREFER_BUSY_POLL`, `SO_BUSY_POLL` (any value
//!   above 0: vecflow's calls never block, so it bounds nothing) and `SO_BUSY_POLL_BUDGET`.
//! - `af-xdp-input` calls `recvfrom` on every poll that did not fill a vector, and the
//!   kernel runs the device's NAPI (its receive processing) in that call, on the worker's core.
//! - Each NAPI instance that delivers to the sockets (`SO_INCOMING_NAPI_ID`, known once it
//!   delivered a frame) gets `defer-hard-irqs` and `gro-flush-timeout` through netdev netlink
//!   ([`crate::drivers::netdev`]), so the device's interrupt stays off while the worker's
//!   polls keep coming. What the instance had before is put back when the interface leaves
//!   the mode, and when vecflow stops.
//!
//! The control thread brings all this in line with the configuration once a second
//! ([`BusyPoll::follow`]), so `set interface rx-mode IF busy-poll` takes effect within a
//! second. Busy polling needs a NAPI id: on a driver whose XDP queues report none (veth
//! reports 0) the sockets get their options and the worker simply polls.

use crate::drivers::netdev::{NapiSettings, Netdev};
use crate::interface::driver_config::BusyPollConfig;
use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::os::fd::RawFd;

/// `SO_BUSY_POLL` of a busy-polling socket, in microseconds.
const BUSY_POLL_US: libc::c_int = 20;

/// Sets busy polling on AF_XDP socket `fd` with `budget` frames per poll, or clears it (`None`).
pub fn set_socket(fd: RawFd, budget: Option<u16>) -> io::Result<()> {
    let on = libc::c_int::from(budget.is_some());
    super::super::set_opt(fd, libc::SOL_SOCKET, libc::SO_PREFER_BUSY_POLL, &on, "SO_PREFER_BUSY_POLL")?;
    let us = if budget.is_some() { BUSY_POLL_US } else { 0 };
    super::super::set_opt(fd, libc::SOL_SOCKET, libc::SO_BUSY_POLL, &us, "SO_BUSY_POLL")?;
    if let Some(b) = budget {
        super::super::set_opt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_BUSY_POLL_BUDGET,
            &libc::c_int::from(b),
            "SO_BUSY_POLL_BUDGET",
        )?;
    }
    Ok(())
}

/// The NAPI settings `c` asks for.
fn wanted(c: &BusyPollConfig) -> NapiSettings {
    NapiSettings { defer_hard_irqs: c.defer_hard_irqs, gro_flush_timeout_ns: u64::from(c.gro_flush_timeout_us) * 1000 }
}

/// Busy polling as it is set up now: which interfaces have it, and the NAPI instances set
/// for it with the settings they had before (put back when dropped).
#[derive(Default)]
pub struct BusyPoll {
    /// Opened when first needed.
    netdev: Option<Netdev>,
    /// Interfaces in the mode, with their settings.
    on: BTreeMap<u16, BusyPollConfig>,
    /// NAPI instances set for busy polling: the interface and what they had before.
    napis: BTreeMap<u32, (u16, NapiSettings)>,
    /// NAPI instances that could not be set (said once in the log).
    refused: BTreeSet<u32>,
}

impl BusyPoll {
    /// Brings interface `port` (on host interface `name`, Linux ifindex `ifindex`), whose rx
    /// sockets are `sockets` (each with the NAPI id it reports, 0 for none yet), in line with
    /// `want`: busy polling with those settings, or none. Problems are logged, not returned:
    /// the interface forwards either way.
    pub fn follow(
        &mut self,
        port: u16,
        (name, ifindex): (&str, u32),
        sockets: &[(RawFd, u32)],
        want: Option<BusyPollConfig>,
    ) {
        let Some(want) = want else {
            if self.on.remove(&port).is_some() {
                for &(fd, _) in sockets {
                    if let Err(e) = set_socket(fd, None) {
                        tracing::warn!("{name}: busy polling off: {e}");
                    }
                }
                self.restore(|p| p == port);
                // Instances refused for this interface are tried again if it comes back.
                for &(_, id) in sockets {
                    self.refused.remove(&id);
                }
                tracing::info!("{name}: busy polling off");
            }
            return;
        };
        if self.on.get(&port) != Some(&want) {
            for &(fd, _) in sockets {
                if let Err(e) = set_socket(fd, Some(want.budget)) {
                    tracing::warn!("{name}: busy polling: {e}");
                }
            }
            let set: Vec<u32> = self.napis.iter().filter(|(_, (p, _))| *p == port).map(|(id, _)| *id).collect();
            for id in set {
                self.set(name, id, wanted(&want));
            }
            self.on.insert(port, want);
            // What the device has, for whoever wonders why no instance gets set (veth lists
            // instances its XDP sockets never report).
            let napis = self.netdev().and_then(|n| n.napis(ifindex)).map_or(0, |v| v.len());
            tracing::info!(
                "{name}: busy polling on (budget {}); the device has {napis} NAPI instance(s), each set once a socket reports it",
                want.budget
            );
        }
        for &(_, id) in sockets {
            if id == 0 || self.napis.contains_key(&id) || self.refused.contains(&id) {
                continue;
            }
            let before = self.netdev().and_then(|n| n.napi(id));
            match before {
                Ok(before) if self.set(name, id, wanted(&want)) => {
                    self.napis.insert(id, (port, before));
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!("{name}: NAPI {id}: cannot read its settings: {e}");
                    self.refused.insert(id);
                }
            }
        }
    }

    /// The NAPI instances set for busy polling on interface `port`.
    pub fn napis_of(&self, port: u16) -> Vec<u32> {
        self.napis.iter().filter(|(_, (p, _))| *p == port).map(|(id, _)| *id).collect()
    }

    /// Sets NAPI instance `id` to `s`; false (logged once) when the kernel refused.
    fn set(&mut self, name: &str, id: u32, s: NapiSettings) -> bool {
        match self.netdev().and_then(|n| n.set_napi(id, s)) {
            Ok(()) => {
                tracing::info!(
                    "{name}: NAPI {id}: defer-hard-irqs {}, gro-flush-timeout {} ns",
                    s.defer_hard_irqs,
                    s.gro_flush_timeout_ns
                );
                true
            }
            Err(e) => {
                if self.refused.insert(id) {
                    tracing::warn!(
                        "{name}: NAPI {id}: cannot set defer-hard-irqs and gro-flush-timeout (netdev napi-set, Linux 6.13 and later): {e}"
                    );
                }
                false
            }
        }
    }

    /// Puts back the settings of the NAPI instances of the interfaces `of` selects.
    fn restore(&mut self, of: impl Fn(u16) -> bool) {
        let back: Vec<(u32, NapiSettings)> =
            self.napis.iter().filter(|(_, (p, _))| of(*p)).map(|(id, (_, s))| (*id, *s)).collect();
        for (id, s) in back {
            self.napis.remove(&id);
            if let Err(e) = self.netdev().and_then(|n| n.set_napi(id, s)) {
                tracing::warn!("NAPI {id}: cannot put its settings back: {e}");
            }
        }
    }

    fn netdev(&mut self) -> io::Result<&mut Netdev> {
        if self.netdev.is_none() {
            self.netdev = Some(Netdev::open()?);
        }
        Ok(self.netdev.as_mut().expect("just opened"))
    }
}

impl Drop for BusyPoll {
    fn drop(&mut self) {
        self.restore(|_| true);
    }
}

/// Kernel tests: root, a network namespace of their own (skipped without root, failed
/// under `CI=true`).
#[cfg(test)]
mod kernel_tests {
    use super::*;
    use crate::drivers::af_xdp::bpf::{XdpMode, XdpProgram};
    use crate::drivers::af_xdp::kernel_tests::in_new_netns;
    use std::os::fd::AsRawFd;

    fn ip(args: &str) {
        let out = std::process::Command::new("ip").args(args.split(' ')).output().expect("ip(8)");
        assert!(out.status.success(), "ip {args}: {}", String::from_utf8_lossy(&out.stderr));
    }

    /// One `SOL_SOCKET` option of `fd`, as an int.
    fn option(fd: RawFd, name: libc::c_int) -> libc::c_int {
        // SAFETY: the options read are ints.
        unsafe { crate::drivers::get_opt::<libc::c_int>(fd, libc::SOL_SOCKET, name, "option") }.unwrap()
    }

    #[test]
    fn napi_settings_follow_the_mode_and_are_put_back() {
        in_new_netns(|| {
            ip("link add nv0 type veth peer name nv1");
            ip("link set nv0 up");
            ip("link set nv1 up");
            // SAFETY: a NUL-terminated name; if_nametoindex(3) asks this thread's namespace.
            let ifindex = unsafe { libc::if_nametoindex(c"nv0".as_ptr()) };
            assert_ne!(ifindex, 0);
            // Native XDP on veth gives each rx queue a NAPI instance.
            let program = XdpProgram::load(1).unwrap();
            let _attached = program.attach(ifindex, XdpMode::Native).unwrap();
            let napis = Netdev::open().unwrap().napis(ifindex).unwrap();
            let &(id, before) = napis.first().expect("veth with XDP has a NAPI instance");
            let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let fd = socket.as_raw_fd();
            let read = || Netdev::open().unwrap().napi(id).unwrap();

            let mut busy = BusyPoll::default();
            let config = BusyPollConfig { budget: 48, defer_hard_irqs: 3, gro_flush_timeout_us: 150 };
            busy.follow(7, ("nv0", ifindex), &[(fd, id)], Some(config));
            assert_eq!(read(), NapiSettings { defer_hard_irqs: 3, gro_flush_timeout_ns: 150_000 });
            assert_eq!(busy.napis_of(7), vec![id]);
            // (SO_PREFER_BUSY_POLL and SO_BUSY_POLL_BUDGET cannot be read back.)
            assert_eq!(option(fd, libc::SO_BUSY_POLL), BUSY_POLL_US);

            // Other settings reach the instance already set; its old ones are still kept.
            busy.follow(7, ("nv0", ifindex), &[(fd, id)], Some(BusyPollConfig { defer_hard_irqs: 5, ..config }));
            assert_eq!(read().defer_hard_irqs, 5);
            // Leaving the mode puts everything back.
            busy.follow(7, ("nv0", ifindex), &[(fd, id)], None);
            assert_eq!(read(), before);
            assert!(busy.napis_of(7).is_empty());
            assert_eq!(option(fd, libc::SO_BUSY_POLL), 0);
            // A socket that reports no NAPI (veth's XDP queues: 0) gets its options only.
            busy.follow(7, ("nv0", ifindex), &[(fd, 0)], Some(config));
            assert!(busy.napis_of(7).is_empty());
            assert_eq!(read(), before);
            // Stopping (the state dropped) puts back what is set.
            busy.follow(7, ("nv0", ifindex), &[(fd, id)], Some(config));
            assert_eq!(read().defer_hard_irqs, 3);
            drop(busy);
            assert_eq!(read(), before);
        });
    }
}
