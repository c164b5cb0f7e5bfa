//! Where datagrams come from: a UDP socket or a pcap file.

use super::{Received, now_unix};
use anyhow::Context;
use pcap_file::DataLink;
use pcap_file::pcap::PcapReader;
use socket2::{Domain, Protocol, Socket, Type};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a waiting socket checks for Ctrl-C and the deadline.
const POLL: Duration = Duration::from_millis(100);

/// Opens the listening socket: dual-stack [::] by default, falling back to 0.0.0.0. With
/// `reuse_port`, other collectors may listen on the same port (SO_REUSEPORT): the kernel gives
/// each sender (address and port) to one of them. Returns it with the receive buffer it got.
fn bind(l: &Listen) -> anyhow::Result<(UdpSocket, usize)> {
    let open = |ip: IpAddr| -> std::io::Result<Socket> {
        let sa = SocketAddr::new(ip, l.port);
        let s = Socket::new(Domain::for_address(sa), Type::DGRAM, Some(Protocol::UDP))?;
        if ip.is_ipv6() {
            s.set_only_v6(l.addr.is_some())?;
        }
        s.set_reuse_port(l.reuse_port)?;
        s.bind(&sa.into())?;
        Ok(s)
    };
    let sock = match l.addr {
        Some(ip) => open(ip).with_context(|| format!("listening on {}", SocketAddr::new(ip, l.port)))?,
        None => open(IpAddr::V6(Ipv6Addr::UNSPECIFIED))
            .or_else(|_| open(IpAddr::V4(Ipv4Addr::UNSPECIFIED)))
            .with_context(|| format!("listening on UDP port {}", l.port))?,
    };
    let buffer = receive_buffer(&sock, l.receive_buffer);
    sock.set_read_timeout(Some(POLL))?;
    Ok((sock.into(), buffer))
}

/// Sizes the socket's receive buffer, which takes the bursts (and the pauses of a busy host)
/// that the collector does not keep up with: past `net.core.rmem_max` with CAP_NET_ADMIN
/// (SO_RCVBUFFORCE), else as far as that limit allows. Returns the size it got.
fn receive_buffer(sock: &Socket, bytes: usize) -> usize {
    // Linux reports twice what was set (the other half is its bookkeeping).
    let got = || sock.recv_buffer_size().unwrap_or(0) / 2;
    let _ = sock.set_recv_buffer_size(bytes);
    if got() < bytes {
        let forced = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        // SAFETY: setsockopt(2) reads `size_of::<c_int>()` bytes from a live local; the fd is
        // the socket's own, open for this call.
        unsafe {
            libc::setsockopt(
                std::os::fd::AsRawFd::as_raw_fd(sock),
                libc::SOL_SOCKET,
                libc::SO_RCVBUFFORCE,
                std::ptr::from_ref(&forced).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
    got()
}

/// Where and how to listen.
pub struct Listen {
    /// Address; None: [::], else 0.0.0.0.
    pub addr: Option<IpAddr>,
    /// UDP port.
    pub port: u16,
    /// Share the port with other collectors (SO_REUSEPORT).
    pub reuse_port: bool,
    /// The socket's receive buffer, in bytes.
    pub receive_buffer: usize,
}

/// Receives datagrams until `each` says stop, Ctrl-C (SIGINT, SIGTERM), or the deadline. On
/// Ctrl-C and at the deadline it drains: it stops the kernel from giving it new datagrams,
/// then handles every one already waiting in its socket, so that nothing acknowledged to the
/// network is dropped (with `reuse_port`, the other collectors on the port get the senders).
pub fn udp(
    l: &Listen,
    stop: &AtomicBool,
    deadline: Option<Instant>,
    each: &mut dyn FnMut(&Received<'_>) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let (sock, buffer) = bind(l)?;
    eprintln!("vecflow collect: listening on {}", sock.local_addr()?);
    if buffer < l.receive_buffer {
        eprintln!(
            "vecflow collect: receive buffer {} KiB, not the {} KiB of --receive-buffer (raise net.core.rmem_max, or give vecflow CAP_NET_ADMIN)",
            buffer >> 10,
            l.receive_buffer >> 10
        );
    }
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|d| Instant::now() < d) {
        match receive(&sock, &mut buf, each) {
            Ok(true) => {}
            Ok(false) => return Ok(()),
            Err(e) if quiet(&e) => {}
            Err(e) => return Err(e.into()),
        }
    }
    drain(&sock, &mut buf, each)
}

/// Receives one datagram and hands it to `each`; its answer (go on?) is returned.
fn receive(
    sock: &UdpSocket,
    buf: &mut [u8],
    each: &mut dyn FnMut(&Received<'_>) -> anyhow::Result<bool>,
) -> Result<bool, ReceiveError> {
    let (n, from) = sock.recv_from(buf).map_err(ReceiveError::Io)?;
    let from = SocketAddr::new(canonical(from.ip()), from.port());
    each(&Received { from, unix_secs: now_unix(), bytes: &buf[..n] }).map_err(ReceiveError::Handler)
}

/// What [`receive`] can fail with: the socket, or the handler.
enum ReceiveError {
    Io(std::io::Error),
    Handler(anyhow::Error),
}

impl From<ReceiveError> for anyhow::Error {
    fn from(e: ReceiveError) -> Self {
        match e {
            ReceiveError::Io(e) => anyhow::Error::new(e).context("receiving"),
            ReceiveError::Handler(e) => e,
        }
    }
}

/// A timeout or an interrupted wait: nothing to receive yet.
fn quiet(e: &ReceiveError) -> bool {
    matches!(e, ReceiveError::Io(e) if matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
    ))
}

/// How long the drain waits for a datagram the kernel was already delivering.
const SETTLE: Duration = Duration::from_millis(50);

/// Ends a listening run without loss: connects the socket to its own address (a connected
/// UDP socket only takes datagrams from its peer, so the kernel sends no sender's datagrams
/// to it any more, and in a SO_REUSEPORT group gives them to the others), then handles
/// what is already queued until the socket stays empty for [`SETTLE`].
fn drain(
    sock: &UdpSocket,
    buf: &mut [u8],
    each: &mut dyn FnMut(&Received<'_>) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let local = sock.local_addr()?;
    let itself = match local.ip() {
        IpAddr::V4(a) if a.is_unspecified() => SocketAddr::new(Ipv4Addr::LOCALHOST.into(), local.port()),
        IpAddr::V6(a) if a.is_unspecified() => SocketAddr::new(Ipv6Addr::LOCALHOST.into(), local.port()),
        _ => local,
    };
    sock.connect(itself).context("closing the socket to new datagrams")?;
    sock.set_read_timeout(Some(SETTLE))?;
    let mut drained = 0u64;
    loop {
        match receive(sock, buf, each) {
            Ok(true) => drained += 1,
            Ok(false) => break,
            Err(e) if quiet(&e) => break,
            Err(e) => return Err(e.into()),
        }
    }
    if drained > 0 {
        eprintln!("vecflow collect: drained {drained} datagrams that were waiting");
    }
    Ok(())
}

/// IPv4-mapped IPv6 senders (from the dual-stack socket) shown as plain IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// The first word of an sFlow v5 datagram: its version.
const SFLOW_V5: [u8; 4] = [0, 0, 0, 5];

/// Reads from a pcap file every UDP datagram to `port`, or with no port (like sflowtool) every
/// UDP datagram whose payload starts with sFlow version 5, whatever its port.
pub fn pcap(
    path: &Path,
    port: Option<u16>,
    each: &mut dyn FnMut(&Received<'_>) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut reader = PcapReader::new(std::io::BufReader::new(file))
        .with_context(|| format!("{}: not a pcap file", path.display()))?;
    let link = reader.header().datalink;
    let l3_offset = match link {
        DataLink::ETHERNET => None,
        DataLink::LINUX_SLL => Some(16),
        DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => Some(0),
        DataLink::NULL | DataLink::LOOP => Some(4),
        other => anyhow::bail!(
            "{}: link type {other:?} is not supported (Ethernet, Linux cooked, raw IP, loopback)",
            path.display()
        ),
    };
    while let Some(pkt) = reader.next_packet() {
        let pkt = pkt.with_context(|| format!("reading {}", path.display()))?;
        let ip = match l3_offset {
            Some(o) => pkt.data.get(o..),
            None => ethernet_payload(&pkt.data),
        };
        if let Some((from, to, bytes)) = ip.and_then(udp_payload)
            && port.map_or(bytes.starts_with(&SFLOW_V5), |p| p == to)
            && !each(&Received { from, unix_secs: pkt.timestamp.as_secs(), bytes })?
        {
            break;
        }
    }
    Ok(())
}

/// The payload of an Ethernet frame carrying IP (after any VLAN tags).
fn ethernet_payload(f: &[u8]) -> Option<&[u8]> {
    let mut at = 12;
    loop {
        let et = u16::from_be_bytes([*f.get(at)?, *f.get(at + 1)?]);
        match et {
            0x8100 | 0x88a8 => at += 4,
            0x0800 | 0x86dd => return f.get(at + 2..),
            _ => return None,
        }
    }
}

/// The sender, destination port and payload of an IPv4 or IPv6 UDP packet (unfragmented).
fn udp_payload(ip: &[u8]) -> Option<(SocketAddr, u16, &[u8])> {
    let (src, udp) = match ip.first()? >> 4 {
        4 => {
            let p = wire::Ipv4Packet::new_checked(ip).ok()?;
            let frag = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff;
            if p.protocol() != 17 || frag != 0 {
                return None;
            }
            let end = usize::from(p.total_len()).min(ip.len());
            (IpAddr::V4(p.src()), ip.get(p.header_len()..end)?)
        }
        6 if ip.len() >= 40 && ip[6] == 17 => {
            let src: [u8; 16] = ip[8..24].try_into().ok()?;
            let end = (40 + usize::from(u16::from_be_bytes([ip[4], ip[5]]))).min(ip.len());
            (IpAddr::V6(Ipv6Addr::from(src)), ip.get(40..end)?)
        }
        _ => return None,
    };
    let u = wire::UdpDatagram::new_checked(udp).ok()?;
    let end = usize::from(u.len()).clamp(8, udp.len());
    Some((SocketAddr::new(src, u.src_port()), u.dst_port(), &udp[8..end]))
}
