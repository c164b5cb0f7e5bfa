//! Sending datagrams to collectors: one non-blocking UDP socket, batches with `sendmmsg`.

use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// A non-blocking UDP socket that reaches IPv4 and IPv6 collectors.
pub struct Sender {
    socket: Socket,
    dual: bool,
}

impl Sender {
    /// A dual-stack socket on an ephemeral port, or IPv4 only where IPv6 is off.
    pub fn new() -> std::io::Result<Self> {
        let dual = Socket::new(Domain::IPV6, Type::DGRAM, Some(Protocol::UDP)).and_then(|s| {
            s.set_only_v6(false)?;
            s.bind(&SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0).into())?;
            Ok(s)
        });
        let (socket, dual) = match dual {
            Ok(s) => (s, true),
            Err(_) => {
                let s = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP))?;
                s.bind(&SocketAddr::from(([0, 0, 0, 0], 0)).into())?;
                (s, false)
            }
        };
        socket.set_nonblocking(true)?;
        Ok(Sender { socket, dual })
    }

    /// The address to send to, as this socket's family needs it (`None`: unreachable).
    fn target(&self, to: SocketAddr) -> Option<SockAddr> {
        match (to.ip(), self.dual) {
            (IpAddr::V4(v4), true) => Some(SocketAddr::new(IpAddr::V6(v4.to_ipv6_mapped()), to.port()).into()),
            (IpAddr::V6(_), false) => None,
            _ => Some(to.into()),
        }
    }

    /// Sends every datagram of `batch` to `to` with as few system calls as possible; returns
    /// how many went out. Never blocks: a full socket buffer, a refused or unreachable
    /// collector just sends fewer.
    pub fn send_batch(&self, batch: &[&[u8]], to: SocketAddr) -> usize {
        let Some(addr) = self.target(to) else { return 0 };
        let mut sent = 0;
        while sent < batch.len() {
            let n = self.sendmmsg(&batch[sent..], &addr);
            if n == 0 {
                break;
            }
            sent += n;
        }
        sent
    }

    #[cfg(target_os = "linux")]
    fn sendmmsg(&self, batch: &[&[u8]], addr: &SockAddr) -> usize {
        use std::os::fd::AsRawFd;
        const MAX: usize = 64;
        let n = batch.len().min(MAX);
        // SAFETY: every iovec points into a datagram of `batch` and every msghdr at its iovec
        // and at `addr`; all of them outlive the call, which only reads them (and writes
        // `msg_len`). A zeroed msghdr/mmsghdr is a valid empty value.
        unsafe {
            let mut iov: [libc::iovec; MAX] = std::mem::zeroed();
            let mut msgs: [libc::mmsghdr; MAX] = std::mem::zeroed();
            for k in 0..n {
                iov[k] = libc::iovec { iov_base: batch[k].as_ptr() as *mut libc::c_void, iov_len: batch[k].len() };
                let h = &mut msgs[k].msg_hdr;
                h.msg_name = addr.as_ptr() as *mut libc::c_void;
                h.msg_namelen = addr.len();
                h.msg_iov = &mut iov[k];
                h.msg_iovlen = 1;
            }
            let r = libc::sendmmsg(self.socket.as_raw_fd(), msgs.as_mut_ptr(), n as libc::c_uint, libc::MSG_DONTWAIT);
            if r < 0 { 0 } else { r as usize }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn sendmmsg(&self, batch: &[&[u8]], addr: &SockAddr) -> usize {
        batch.iter().take_while(|d| self.socket.send_to(d, addr).is_ok()).count()
    }
}
