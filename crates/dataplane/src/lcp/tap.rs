//! A persistent TAP device: made, or adopted by name when it already exists (a restart), and
//! set to a vecflow interface's MAC, MTU, state and carrier. Every call runs in the caller's
//! network namespace (see [`super::Netns::run`]).

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use wire::MacAddr;

/// Longest Linux interface name.
pub const MAX_NAME: usize = 15;

/// An open TAP device.
#[derive(Debug)]
pub struct Tap {
    /// Its name.
    pub name: String,
    /// Its Linux interface index.
    pub ifindex: u32,
    file: File,
    /// A datagram socket in the TAP's namespace, for the interface ioctls.
    ctl: OwnedFd,
}

/// An `ifreq` naming `name`.
fn ifreq(name: &str) -> libc::ifreq {
    // SAFETY: `ifreq` is plain old data; all zeroes is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name.bytes().take(MAX_NAME)) {
        *d = s as libc::c_char;
    }
    req
}

/// An error naming the device and what was being done.
fn failed(name: &str, what: &str) -> io::Error {
    let e = io::Error::last_os_error();
    io::Error::new(e.kind(), format!("{name}: {what}: {e}"))
}

impl Tap {
    /// Opens TAP `name`, making it persistent, or adopts it when a TAP of that name exists. A
    /// device of that name that is not a TAP is an error naming it. Frames are read and
    /// written whole, with no packet-information header and no virtio-net header (so no
    /// offloads: every frame arrives complete and within the MTU).
    pub fn open(name: &str) -> io::Result<Tap> {
        if name.is_empty() || name.len() > MAX_NAME {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{name:?}: not a Linux interface name")));
        }
        let file = File::options().read(true).write(true).open("/dev/net/tun")?;
        let mut req = ifreq(name);
        req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads an `ifreq`; the descriptor is the open tun device.
        if unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF, &mut req) } < 0 {
            let e = io::Error::last_os_error();
            let why = if e.raw_os_error() == Some(libc::EINVAL) || e.raw_os_error() == Some(libc::EBUSY) {
                "a device of this name exists and is not a TAP vecflow can own"
            } else {
                "making the TAP"
            };
            return Err(io::Error::new(e.kind(), format!("{name}: {why}: {e}")));
        }
        // SAFETY: TUNSETPERSIST takes an integer argument.
        if unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETPERSIST, 1 as libc::c_ulong) } < 0 {
            return Err(failed(name, "making the TAP persistent"));
        }
        // SAFETY: a plain socket call; the descriptor is owned below.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(failed(name, "opening a control socket"));
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        let ctl = unsafe { OwnedFd::from_raw_fd(fd) };
        let ifindex = std::ffi::CString::new(name).map_or(0, |c| {
            // SAFETY: a NUL-terminated name; the call reads it only.
            unsafe { libc::if_nametoindex(c.as_ptr()) }
        });
        Ok(Tap { name: name.to_string(), ifindex, file, ctl })
    }

    /// Another handle on the TAP's frames (the same open device).
    pub fn file(&self) -> io::Result<File> {
        self.file.try_clone()
    }

    /// The TAP's MAC address.
    pub fn mac(&self) -> io::Result<MacAddr> {
        let mut req = ifreq(&self.name);
        self.ioctl(libc::SIOCGIFHWADDR, &mut req, "reading the MAC address")?;
        // SAFETY: the kernel filled `ifru_hwaddr`.
        let data = unsafe { req.ifr_ifru.ifru_hwaddr.sa_data };
        Ok(MacAddr(std::array::from_fn(|k| data[k] as u8)))
    }

    /// The TAP's MTU.
    pub fn mtu(&self) -> io::Result<u16> {
        let mut req = ifreq(&self.name);
        self.ioctl(libc::SIOCGIFMTU, &mut req, "reading the MTU")?;
        // SAFETY: the kernel filled `ifru_mtu`.
        Ok(u16::try_from(unsafe { req.ifr_ifru.ifru_mtu }).unwrap_or(u16::MAX))
    }

    /// Sets the TAP's MAC address.
    pub fn set_mac(&self, mac: MacAddr) -> io::Result<()> {
        let mut req = ifreq(&self.name);
        // SAFETY: writing the `ifru_hwaddr` member of a zeroed union.
        unsafe {
            req.ifr_ifru.ifru_hwaddr.sa_family = libc::ARPHRD_ETHER;
            for (d, s) in req.ifr_ifru.ifru_hwaddr.sa_data.iter_mut().zip(mac.0) {
                *d = s as libc::c_char;
            }
        }
        self.ioctl(libc::SIOCSIFHWADDR, &mut req, "setting the MAC address")
    }

    /// Sets the TAP's MTU.
    pub fn set_mtu(&self, mtu: u16) -> io::Result<()> {
        let mut req = ifreq(&self.name);
        req.ifr_ifru.ifru_mtu = libc::c_int::from(mtu);
        self.ioctl(libc::SIOCSIFMTU, &mut req, "setting the MTU")
    }

    /// Sets the TAP administratively up or down.
    pub fn set_up(&self, up: bool) -> io::Result<()> {
        let mut req = ifreq(&self.name);
        self.ioctl(libc::SIOCGIFFLAGS, &mut req, "reading the flags")?;
        // SAFETY: the kernel filled `ifru_flags`.
        let flags = unsafe { req.ifr_ifru.ifru_flags };
        let up_flag = libc::IFF_UP as libc::c_short;
        req.ifr_ifru.ifru_flags = if up { flags | up_flag } else { flags & !up_flag };
        self.ioctl(libc::SIOCSIFFLAGS, &mut req, "setting the state")
    }

    /// Sets the TAP's carrier (what daemons see as the link going up or down).
    pub fn set_carrier(&self, on: bool) -> io::Result<()> {
        let mut on = libc::c_int::from(on);
        // SAFETY: TUNSETCARRIER reads an int; the descriptor is the TAP's.
        if unsafe { libc::ioctl(self.file.as_raw_fd(), libc::TUNSETCARRIER, &mut on) } < 0 {
            return Err(failed(&self.name, "setting the carrier"));
        }
        Ok(())
    }

    /// Turns off what would make Linux configure the TAP behind vecflow's back: router
    /// advertisements, address autoconfiguration, ICMP redirects.
    pub fn quiet_sysctls(&self) -> io::Result<()> {
        let n = &self.name;
        let mut paths = vec![format!("/proc/sys/net/ipv4/conf/{n}/accept_redirects")];
        if std::path::Path::new(&format!("/proc/sys/net/ipv6/conf/{n}")).exists() {
            for knob in ["accept_ra", "autoconf", "accept_redirects"] {
                paths.push(format!("/proc/sys/net/ipv6/conf/{n}/{knob}"));
            }
        }
        for p in paths {
            std::fs::write(&p, "0").map_err(|e| io::Error::new(e.kind(), format!("writing 0 to {p}: {e}")))?;
        }
        Ok(())
    }

    /// An interface ioctl on the control socket.
    fn ioctl(&self, request: libc::Ioctl, req: &mut libc::ifreq, what: &str) -> io::Result<()> {
        // SAFETY: the interface ioctls read or fill an `ifreq`; the socket is ours.
        if unsafe { libc::ioctl(self.ctl.as_raw_fd(), request as _, req as *mut libc::ifreq) } < 0 {
            return Err(failed(&self.name, what));
        }
        Ok(())
    }
}
