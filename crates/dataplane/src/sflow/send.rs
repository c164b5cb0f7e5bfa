//! Sending datagrams to collectors: one connected, non-blocking UDP socket per collector,
//! batches with `sendmmsg`.
//!
//! A connected socket is what lets the kernel tell us about a refusing collector: the ICMP
//! port (or host) unreachable it gets back is reported as `ECONNREFUSED` (or
//! `EHOSTUNREACH`, …) on the next send, once per ICMP message. An unconnected socket would
//! lose those errors silently.

use socket2::{Domain, Protocol, Socket, Type};
use std::net::SocketAddr;

/// What one batch to one collector came to.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    /// Datagrams handed to the kernel.
    pub sent: usize,
    /// Errors the kernel reported for earlier datagrams (an ICMP unreachable each).
    pub refused: usize,
}

/// One socket per collector, in the order of the collector list.
pub struct Sender {
    sockets: Vec<Option<Socket>>,
}

impl Sender {
    /// Connects a non-blocking UDP socket to each collector. A collector that cannot be
    /// reached at all (IPv6 off, no route) gets no socket: everything sent to it fails.
    pub fn new(collectors: &[SocketAddr]) -> Self {
        let sockets = collectors
            .iter()
            .map(|&to| {
                let socket = Socket::new(Domain::for_address(to), Type::DGRAM, Some(Protocol::UDP)).ok()?;
                socket.set_nonblocking(true).ok()?;
                socket.connect(&to.into()).ok()?;
                Some(socket)
            })
            .collect();
        Sender { sockets }
    }

    /// Sends every datagram of `batch` to collector `k` with as few system calls as possible.
    /// Never blocks: a full socket buffer or an unreachable collector just sends fewer.
    pub fn send_batch(&self, k: usize, batch: &[&[u8]]) -> Sent {
        let mut out = Sent::default();
        let Some(Some(socket)) = self.sockets.get(k) else { return out };
        while out.sent < batch.len() {
            match sendmmsg(socket, &batch[out.sent..]) {
                Ok(0) => break,
                Ok(n) => out.sent += n,
                // A pending ICMP error is reported (and cleared) instead of sending: count it
                // and go on, bounded so that a storm of them cannot keep the agent here.
                Err(e) if is_refusal(&e) && out.refused < batch.len() => out.refused += 1,
                Err(_) => break,
            }
        }
        out
    }
}

/// Errors the kernel raises on a connected UDP socket when an ICMP error came back.
fn is_refusal(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ECONNREFUSED | libc::EHOSTUNREACH | libc::ENETUNREACH | libc::EHOSTDOWN | libc::ENETDOWN)
    )
}

#[cfg(target_os = "linux")]
fn sendmmsg(socket: &Socket, batch: &[&[u8]]) -> std::io::Result<usize> {
    use std::os::fd::AsRawFd;
    const MAX: usize = 64;
    let n = batch.len().min(MAX);
    // SAFETY: every iovec points into a datagram of `batch` and every msghdr at its iovec; all
    // of them outlive the call, which only reads them (and writes `msg_len`). A zeroed
    // msghdr/mmsghdr is a valid empty value (no address: the socket is connected).
    let r = unsafe {
        let mut iov: [libc::iovec; MAX] = std::mem::zeroed();
        let mut msgs: [libc::mmsghdr; MAX] = std::mem::zeroed();
        for k in 0..n {
            iov[k] = libc::iovec { iov_base: batch[k].as_ptr() as *mut libc::c_void, iov_len: batch[k].len() };
            let h = &mut msgs[k].msg_hdr;
            h.msg_iov = &mut iov[k];
            h.msg_iovlen = 1;
        }
        libc::sendmmsg(socket.as_raw_fd(), msgs.as_mut_ptr(), n as libc::c_uint, libc::MSG_DONTWAIT)
    };
    if r < 0 { Err(std::io::Error::last_os_error()) } else { Ok(r as usize) }
}

#[cfg(not(target_os = "linux"))]
fn sendmmsg(socket: &Socket, batch: &[&[u8]]) -> std::io::Result<usize> {
    let mut n = 0;
    for d in batch {
        match socket.send(d) {
            Ok(_) => n += 1,
            Err(e) if n == 0 => return Err(e),
            Err(_) => break,
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::time::Duration;

    #[test]
    fn a_listening_collector_gets_every_datagram() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let sender = Sender::new(&[rx.local_addr().unwrap()]);
        let data: Vec<Vec<u8>> = (0..100u8).map(|k| vec![k; 200]).collect();
        let batch: Vec<&[u8]> = data.iter().map(Vec::as_slice).collect();
        assert_eq!(sender.send_batch(0, &batch), Sent { sent: 100, refused: 0 });
        let mut buf = [0u8; 512];
        for k in 0..100u8 {
            let n = rx.recv(&mut buf).unwrap();
            assert_eq!(&buf[..n], &data[k as usize][..]);
        }
    }

    #[test]
    fn a_refusing_collector_is_counted_and_does_not_stop_the_others() {
        let closed = UdpSocket::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let sender = Sender::new(&[closed, rx.local_addr().unwrap()]);
        let batch: &[&[u8]] = &[b"one", b"two"];
        let mut refused = 0;
        for _ in 0..10 {
            let s = sender.send_batch(0, batch);
            refused += s.refused;
            // Loopback answers with ICMP port unreachable at once.
            std::thread::sleep(Duration::from_millis(5));
            assert_eq!(sender.send_batch(1, batch).sent, 2);
        }
        assert!(refused > 0, "ICMP port unreachable is reported on the connected socket");
    }

    #[test]
    fn an_unknown_collector_index_sends_nothing() {
        assert_eq!(Sender::new(&[]).send_batch(3, &[b"x"]), Sent::default());
    }
}
