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

/// Opens the listening socket: dual-stack [::] by default, falling back to 0.0.0.0.
fn bind(addr: Option<IpAddr>, port: u16) -> anyhow::Result<UdpSocket> {
    let open = |ip: IpAddr| -> std::io::Result<UdpSocket> {
        let sa = SocketAddr::new(ip, port);
        let s = Socket::new(Domain::for_address(sa), Type::DGRAM, Some(Protocol::UDP))?;
        if ip.is_ipv6() {
            s.set_only_v6(addr.is_some())?;
        }
        // Bursts of datagrams arrive faster than they are printed; a large buffer avoids loss.
        let _ = s.set_recv_buffer_size(4 << 20);
        s.bind(&sa.into())?;
        Ok(s.into())
    };
    let sock = match addr {
        Some(ip) => open(ip).with_context(|| format!("listening on {}", SocketAddr::new(ip, port)))?,
        None => open(IpAddr::V6(Ipv6Addr::UNSPECIFIED))
            .or_else(|_| open(IpAddr::V4(Ipv4Addr::UNSPECIFIED)))
            .with_context(|| format!("listening on UDP port {port}"))?,
    };
    sock.set_read_timeout(Some(POLL))?;
    Ok(sock)
}

/// Receives datagrams until `each` says stop, Ctrl-C, or the deadline.
pub fn udp(
    addr: Option<IpAddr>,
    port: u16,
    stop: &AtomicBool,
    deadline: Option<Instant>,
    each: &mut dyn FnMut(&Received<'_>) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let sock = bind(addr, port)?;
    eprintln!("vecflow collect: listening on {}", sock.local_addr()?);
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) && deadline.is_none_or(|d| Instant::now() < d) {
        match sock.recv_from(&mut buf) {
            Ok((n, from)) => {
                let from = SocketAddr::new(canonical(from.ip()), from.port());
                if !each(&Received { from, unix_secs: now_unix(), bytes: &buf[..n] })? {
                    break;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e).context("receiving"),
        }
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
