//! What the kernel says about a host interface: index, MTU, link state and speed (sysfs), and
//! whether the kernel would also act on its traffic (addresses, IPv6, forwarding), which
//! `vecflow run` warns about because the kernel still owns the interface.

use super::link_watch::WatchedLink;
use std::io;
use std::net::Ipv4Addr;

/// A port on a host interface (`af-packet` or `af-xdp`): which interface it is, what the
/// kernel says of its link, and the kernel drop counters of its rx queues.
pub struct HostPort {
    /// The interface's index.
    pub index: u16,
    /// What the kernel says of the host interface.
    pub link: HostLink,
    /// The kernel drop counters of its rx queues, one per queue.
    pub queues: Vec<super::KernelDrops>,
}

/// Facts about one Linux interface.
#[derive(Debug, Clone)]
pub struct HostLink {
    /// Its name.
    pub name: String,
    /// The kernel's interface index.
    pub ifindex: u32,
    /// Its MTU.
    pub mtu: u32,
    /// The link is up: the interface is administratively up and has carrier. That is what
    /// the kernel's transmit path checks, at once; its `operstate` follows the carrier up to
    /// a second later.
    pub oper_up: bool,
    /// Link speed in bits per second, 0 when the kernel does not know it.
    pub speed: u64,
    /// Its sysfs `carrier` and `speed`, read by the links thread (the files take the RTNL
    /// lock).
    watched: Option<WatchedLink>,
}

/// One line of a sysfs or procfs file, trimmed.
fn read_line(path: &str) -> io::Result<String> {
    Ok(std::fs::read_to_string(path)?.trim().to_string())
}

impl HostLink {
    /// Reads the facts of interface `name`; an error (with the reason in words) when it does
    /// not exist.
    pub fn read(name: &str) -> io::Result<Self> {
        let dir = format!("/sys/class/net/{name}");
        let ifindex = read_line(&format!("{dir}/ifindex")).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => io::Error::new(e.kind(), format!("no Linux interface named '{name}'")),
            _ => io::Error::new(e.kind(), format!("{dir}/ifindex: {e}")),
        })?;
        let parse = |what: &str, v: String| -> io::Result<u64> {
            v.parse().map_err(|_| io::Error::new(io::ErrorKind::InvalidData, format!("{dir}/{what}: '{v}'")))
        };
        let mtu = parse("mtu", read_line(&format!("{dir}/mtu"))?)?;
        let mut link = HostLink {
            name: name.to_string(),
            ifindex: parse("ifindex", ifindex)? as u32,
            mtu: mtu.min(u64::from(u32::MAX)) as u32,
            oper_up: false,
            speed: 0,
            watched: WatchedLink::watch(&dir),
        };
        link.refresh_carrier();
        link.refresh_speed();
        Ok(link)
    }

    /// Takes the link state the links thread last read (one load: every tick of the main
    /// loop); true when it changed.
    pub fn refresh_carrier(&mut self) -> bool {
        let up = self.watched.as_ref().is_some_and(WatchedLink::up);
        std::mem::replace(&mut self.oper_up, up) != up
    }

    /// Takes the link speed the links thread last read (it reads it every second).
    pub fn refresh_speed(&mut self) {
        self.speed = self.watched.as_ref().map_or(0, WatchedLink::speed);
    }

    /// What the kernel does with this interface that it should not while vecflow owns it,
    /// each as a sentence with the command that stops it.
    pub fn kernel_conflicts(&self) -> Vec<String> {
        let n = &self.name;
        let mut out = Vec::new();
        let v4 = ipv4_addresses(n);
        if !v4.is_empty() {
            let list: Vec<String> = v4.iter().map(Ipv4Addr::to_string).collect();
            out.push(format!(
                "host interface {n} has IPv4 addresses ({}): the kernel answers ARP and routes for them too \
                 (ip addr flush dev {n})",
                list.join(", ")
            ));
        }
        if read_line(&format!("/proc/sys/net/ipv6/conf/{n}/disable_ipv6")).is_ok_and(|v| v == "0") {
            out.push(format!(
                "host interface {n} has IPv6 enabled: the kernel sends its own neighbor discovery and router \
                 solicitations on it (sysctl -w net.ipv6.conf.{n}.disable_ipv6=1)"
            ));
        }
        if read_line(&format!("/proc/sys/net/ipv4/conf/{n}/forwarding")).is_ok_and(|v| v == "1") {
            out.push(format!(
                "host interface {n} has IPv4 forwarding on: the kernel may route what arrives there as well \
                 (sysctl -w net.ipv4.conf.{n}.forwarding=0)"
            ));
        }
        out
    }
}

/// The IPv4 addresses the kernel has on interface `name`.
fn ipv4_addresses(name: &str) -> Vec<Ipv4Addr> {
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list we free below; checked for failure.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return out;
    }
    let mut p = list;
    while !p.is_null() {
        // SAFETY: `p` is a node of the list getifaddrs returned, alive until freeifaddrs.
        let a = unsafe { &*p };
        // SAFETY: ifa_name is a NUL-terminated string owned by the list.
        let n = unsafe { std::ffi::CStr::from_ptr(a.ifa_name) };
        let family = if a.ifa_addr.is_null() {
            0
        } else {
            // SAFETY: a non-null ifa_addr points to a sockaddr, whose family says its type.
            i32::from(unsafe { (*a.ifa_addr).sa_family })
        };
        if n.to_bytes() == name.as_bytes() && family == libc::AF_INET {
            // SAFETY: the family is AF_INET, so the address is a sockaddr_in.
            let sin = unsafe { &*a.ifa_addr.cast::<libc::sockaddr_in>() };
            out.push(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)));
        }
        p = a.ifa_next;
    }
    // SAFETY: `list` came from getifaddrs and is freed once; no reference into it survives.
    unsafe { libc::freeifaddrs(list) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_read_and_missing_names_say_so() {
        let lo = HostLink::read("lo").unwrap();
        assert_eq!(lo.ifindex, 1);
        assert!(lo.mtu >= 1500);
        assert!(ipv4_addresses("lo").contains(&Ipv4Addr::LOCALHOST));
        let err = HostLink::read("vf-no-such-if").unwrap_err();
        assert_eq!(err.to_string(), "no Linux interface named 'vf-no-such-if'");
    }
}
