//! rtnetlink sockets in the linux-cp namespace, on the `netlink-sys` and
//! `netlink-packet-route` crates: a request socket (dumps, address changes, each answered
//! before the next) and an event socket subscribed to link, address, route and next-hop
//! object notifications. Next-hop objects, which the crate does not know, are read by
//! [`super::nexthops`].

use netlink_packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_DUMP_INTR, NLM_F_REPLACE, NLM_F_REQUEST, NetlinkBuffer, NetlinkHeader,
    NetlinkMessage, NetlinkPayload,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::LinkMessage;
use netlink_packet_route::neighbour::NeighbourMessage;
use netlink_packet_route::route::RouteMessage;
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_ROUTE};
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use super::nexthops::{self, NextHopMessage};
use super::route_bytes::{self, RouteUpdate};
use crate::net::IpPrefix;

/// The event socket's receive buffer: room for a burst of notifications (a full routing
/// table, in the next step) before the kernel reports an overrun.
pub const EVENT_BUFFER: usize = 64 << 20;

/// The rtnetlink multicast groups the listener follows: links, IPv4 and IPv6 addresses and
/// routes, next-hop objects, neighbors.
const GROUPS: [u32; 7] = [
    libc::RTNLGRP_LINK,
    libc::RTNLGRP_NEIGH,
    libc::RTNLGRP_IPV4_IFADDR,
    libc::RTNLGRP_IPV6_IFADDR,
    libc::RTNLGRP_IPV4_ROUTE,
    libc::RTNLGRP_IPV6_ROUTE,
    nexthops::RTNLGRP_NEXTHOP,
];

/// One rtnetlink message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// One `netlink-packet-route` reads (a link's, an address's, a neighbor's), with its
    /// header's flags.
    Rtnetlink {
        /// The message.
        message: RouteNetlinkMessage,
        /// The netlink header's flags.
        flags: u16,
    },
    /// A route's, read from its bytes.
    Route(RouteUpdate),
    /// A next-hop object's.
    NextHop(NextHopMessage),
}

/// One rtnetlink socket of the namespace it was opened in.
#[derive(Debug)]
pub struct Netlink {
    socket: Socket,
    seq: u32,
    buf: Vec<u8>,
}

/// What [`Netlink::recv`] got.
#[derive(Debug)]
pub enum Received {
    /// Messages (possibly none: a datagram of acknowledgements).
    Messages(Vec<Message>),
    /// Nothing arrived within the socket's timeout.
    Idle,
    /// The kernel dropped notifications for want of buffer room (`ENOBUFS`).
    Overrun,
}

impl Netlink {
    /// A request socket in the current thread's namespace.
    pub fn requests() -> io::Result<Netlink> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.set_ext_ack(true).ok();
        Ok(Netlink { socket, seq: 0, buf: vec![0; 1 << 16] })
    }

    /// An event socket in the current thread's namespace: subscribed to link and address
    /// notifications, with a receive buffer of `buffer` bytes (`SO_RCVBUFFORCE`, which root
    /// may set above the system's limit) and a receive timeout of `timeout`, so that its
    /// reader can look at a stop flag.
    pub fn events(timeout: std::time::Duration, buffer: usize) -> io::Result<Netlink> {
        let n = Netlink::requests()?;
        for group in GROUPS {
            n.socket.add_membership(group)?;
        }
        let fd = n.socket.as_raw_fd();
        let bytes = libc::c_int::try_from(buffer).unwrap_or(libc::c_int::MAX);
        if setsockopt(fd, libc::SO_RCVBUFFORCE, &bytes).is_err() {
            n.socket.set_rx_buf_sz(buffer)?;
        }
        let tv = libc::timeval { tv_sec: timeout.as_secs() as _, tv_usec: timeout.subsec_micros() as _ };
        setsockopt(fd, libc::SO_RCVTIMEO, &tv)?;
        Ok(n)
    }

    /// Every link, address, neighbor, next-hop object and route of the namespace, handed to
    /// `sink` as they are read (each kind dumped once); true when the kernel marked none of
    /// the dumps interrupted by a change (`NLM_F_DUMP_INTR`). Once `stop` is set it ends
    /// between two reads with [`io::ErrorKind::Interrupted`] (a full table's dump takes
    /// seconds), leaving the socket for nothing but closing.
    pub fn dump_each(&mut self, stop: &AtomicBool, sink: &mut dyn FnMut(Message)) -> io::Result<bool> {
        let objects = self.dump_objects(stop, sink)?;
        Ok(self.dump_routes(stop, sink)? && objects)
    }

    /// Every link, address, neighbor and next-hop object, as [`Netlink::dump_each`] gives them.
    pub fn dump_objects(&mut self, stop: &AtomicBool, sink: &mut dyn FnMut(Message)) -> io::Result<bool> {
        self.dump_kinds(&Dump::OBJECTS, stop, sink)
    }

    /// Every IPv4 and IPv6 route, as [`Netlink::dump_each`] gives them.
    pub fn dump_routes(&mut self, stop: &AtomicBool, sink: &mut dyn FnMut(Message)) -> io::Result<bool> {
        self.dump_kinds(&Dump::ROUTES, stop, sink)
    }

    /// Dumps `kinds` in order; true when the kernel marked none interrupted.
    fn dump_kinds(&mut self, kinds: &[Dump], stop: &AtomicBool, sink: &mut dyn FnMut(Message)) -> io::Result<bool> {
        let mut consistent = true;
        for &kind in kinds {
            match self.dump(kind, stop, sink) {
                Ok(whole) => consistent &= whole,
                Err(e) if kind == Dump::NextHops && e.raw_os_error() == Some(libc::EOPNOTSUPP) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(consistent)
    }

    /// Dumps `kind` once, handing each message to `sink`; false when the kernel marked the
    /// dump interrupted by a change.
    fn dump(&mut self, kind: Dump, stop: &AtomicBool, sink: &mut dyn FnMut(Message)) -> io::Result<bool> {
        let stopping = || io::Error::new(io::ErrorKind::Interrupted, "stopping");
        if stop.load(Relaxed) {
            return Err(stopping());
        }
        let route = |family| {
            let mut m = RouteMessage::default();
            m.header.address_family = family;
            RouteNetlinkMessage::GetRoute(m)
        };
        let seq = match kind {
            Dump::Links => self.send(RouteNetlinkMessage::GetLink(LinkMessage::default()), DUMP)?,
            Dump::Addresses => self.send(RouteNetlinkMessage::GetAddress(AddressMessage::default()), DUMP)?,
            Dump::Neighbors => self.send(RouteNetlinkMessage::GetNeighbour(NeighbourMessage::default()), DUMP)?,
            Dump::NextHops => self.send_bytes(nexthops::dump_request)?,
            Dump::Routes4 => self.send(route(AddressFamily::Inet), DUMP)?,
            Dump::Routes6 => self.send(route(AddressFamily::Inet6), DUMP)?,
        };
        let mut interrupted = false;
        loop {
            if stop.load(Relaxed) {
                // The rest of the dump is left unread: the socket takes no other request.
                return Err(stopping());
            }
            for (header, payload) in self.read()? {
                if header.sequence_number != seq {
                    continue;
                }
                interrupted |= header.flags & NLM_F_DUMP_INTR != 0;
                match payload {
                    NetlinkPayload::InnerMessage(m) => sink(m),
                    NetlinkPayload::Done(_) => return Ok(!interrupted),
                    NetlinkPayload::Error(e) => return Err(e.to_io()),
                    _ => {}
                }
            }
        }
    }

    /// Sets `prefix` on link `ifindex` (adds it, or replaces it when it is there).
    pub fn add_address(&mut self, ifindex: u32, prefix: IpPrefix) -> io::Result<()> {
        let m = address_message(ifindex, prefix);
        self.request(RouteNetlinkMessage::NewAddress(m), NLM_F_CREATE | NLM_F_REPLACE)
    }

    /// Removes `prefix` from link `ifindex`; one that is not there is no error.
    pub fn del_address(&mut self, ifindex: u32, prefix: IpPrefix) -> io::Result<()> {
        match self.request(RouteNetlinkMessage::DelAddress(address_message(ifindex, prefix)), 0) {
            Err(e) if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) => Ok(()),
            other => other,
        }
    }

    /// Sends `message` and waits for the kernel's acknowledgement.
    fn request(&mut self, message: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
        let seq = self.send(message, NLM_F_REQUEST | NLM_F_ACK | flags)?;
        loop {
            for (header, payload) in self.read()? {
                if let (true, NetlinkPayload::Error(e)) = (header.sequence_number == seq, payload) {
                    return match e.code {
                        None => Ok(()),
                        Some(_) => Err(e.to_io()),
                    };
                }
            }
        }
    }

    fn send(&mut self, message: RouteNetlinkMessage, flags: u16) -> io::Result<u32> {
        self.send_bytes(|seq| {
            let mut header = NetlinkHeader::default();
            header.flags = flags;
            header.sequence_number = seq;
            let mut packet = NetlinkMessage::new(header, NetlinkPayload::from(message));
            packet.finalize();
            let mut bytes = vec![0; packet.buffer_len()];
            packet.serialize(&mut bytes);
            bytes
        })
    }

    /// Sends the message `bytes` makes for the next sequence number; returns that number.
    fn send_bytes(&mut self, bytes: impl FnOnce(u32) -> Vec<u8>) -> io::Result<u32> {
        self.seq = self.seq.wrapping_add(1);
        self.socket.send_to(&bytes(self.seq), &SocketAddr::new(0, 0), 0)?;
        Ok(self.seq)
    }

    /// Blocks for one datagram and parses its messages (see `Received`).
    pub fn recv(&mut self) -> io::Result<Received> {
        match self.read() {
            Ok(messages) => Ok(Received::Messages(
                messages
                    .into_iter()
                    .filter_map(|(_, p)| match p {
                        NetlinkPayload::InnerMessage(m) => Some(m),
                        _ => None,
                    })
                    .collect(),
            )),
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => Ok(Received::Overrun),
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => Ok(Received::Idle),
            Err(e) => Err(e),
        }
    }

    /// Throws away every queued datagram (after an overrun: they are older than the dump
    /// that follows, and replayed after it they would undo what it found).
    pub fn discard_queued(&mut self) -> io::Result<()> {
        loop {
            match self.socket.recv(&mut &mut self.buf[..], libc::MSG_DONTWAIT | libc::MSG_TRUNC) {
                Ok(_) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// One datagram's messages. Messages the crate cannot parse (kinds it does not know)
    /// are skipped, not an error: the kernel gains attributes faster than any parser.
    fn read(&mut self) -> io::Result<Vec<(NetlinkHeader, NetlinkPayload<Message>)>> {
        let n = loop {
            // A peek into no room copies nothing and says how long the datagram is.
            let n = self.socket.recv(&mut &mut self.buf[..0], libc::MSG_PEEK | libc::MSG_TRUNC)?;
            if n <= self.buf.len() {
                break self.socket.recv(&mut &mut self.buf[..], 0)?;
            }
            self.buf.resize(n.next_power_of_two(), 0);
        };
        Ok(parse(&self.buf[..n]))
    }
}

/// The messages of one rtnetlink datagram `buf`. Messages that cannot be parsed (kinds the
/// crates do not know, or malformed) are skipped, and a length that runs past the datagram
/// ends it. The fuzz target `netlink` feeds it arbitrary bytes.
pub fn parse(buf: &[u8]) -> Vec<(NetlinkHeader, NetlinkPayload<Message>)> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < buf.len() {
        let Ok(frame) = NetlinkBuffer::new_checked(&buf[at..]) else { break };
        let len = frame.length() as usize;
        if len == 0 {
            break;
        }
        let kind = frame.message_type();
        let mut header = NetlinkHeader::default();
        (header.message_type, header.flags, header.sequence_number) = (kind, frame.flags(), frame.sequence_number());
        let payload = &buf[at + 16..at + len];
        if matches!(kind, nexthops::RTM_NEWNEXTHOP | nexthops::RTM_DELNEXTHOP) {
            if let Some(m) = nexthops::parse(kind, payload) {
                out.push((header, NetlinkPayload::InnerMessage(Message::NextHop(m))));
            }
        } else if matches!(kind, route_bytes::RTM_NEWROUTE | route_bytes::RTM_DELROUTE) {
            if let Some(r) = route_bytes::parse(kind, frame.flags(), payload) {
                out.push((header, NetlinkPayload::InnerMessage(Message::Route(r))));
            }
        } else {
            match NetlinkMessage::<RouteNetlinkMessage>::deserialize(&buf[at..at + len]) {
                Ok(m) => out.push((m.header, route_payload(m.payload, m.header.flags))),
                Err(e) => tracing::debug!("linux-cp netlink: skipping a message: {e}"),
            }
        }
        at += (len + 3) & !3;
    }
    out
}

/// What a dump asks for, in the order they are dumped (next-hop objects before the routes
/// that name them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dump {
    Links,
    Addresses,
    Neighbors,
    NextHops,
    Routes4,
    Routes6,
}

impl Dump {
    /// Everything but the routes, dumped first.
    const OBJECTS: [Dump; 4] = [Dump::Links, Dump::Addresses, Dump::Neighbors, Dump::NextHops];
    /// The routes, dumped after the objects they name.
    const ROUTES: [Dump; 2] = [Dump::Routes4, Dump::Routes6];
}

/// The dump request flags.
const DUMP: u16 = NLM_F_REQUEST | NLM_F_DUMP;

/// `payload` (of a message with header flags `flags`) with its inner message as a [`Message`].
fn route_payload(payload: NetlinkPayload<RouteNetlinkMessage>, flags: u16) -> NetlinkPayload<Message> {
    match payload {
        NetlinkPayload::InnerMessage(message) => NetlinkPayload::InnerMessage(Message::Rtnetlink { message, flags }),
        NetlinkPayload::Done(d) => NetlinkPayload::Done(d),
        NetlinkPayload::Error(e) => NetlinkPayload::Error(e),
        NetlinkPayload::Overrun(o) => NetlinkPayload::Overrun(o),
        _ => NetlinkPayload::Noop,
    }
}

/// An address message for `prefix` on link `ifindex`.
fn address_message(ifindex: u32, prefix: IpPrefix) -> AddressMessage {
    let mut m = AddressMessage::default();
    m.header.family = if prefix.addr.is_ipv4() { AddressFamily::Inet } else { AddressFamily::Inet6 };
    m.header.prefix_len = prefix.len;
    m.header.index = ifindex;
    m.attributes.push(AddressAttribute::Local(prefix.addr));
    m.attributes.push(AddressAttribute::Address(prefix.addr));
    m
}

/// `setsockopt(fd, SOL_SOCKET, option, value)`.
fn setsockopt<T>(fd: libc::c_int, option: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live `T` whose size is passed with it.
    let r = unsafe {
        libc::setsockopt(fd, libc::SOL_SOCKET, option, (value as *const T).cast(), size_of::<T>() as libc::socklen_t)
    };
    if r == 0 { Ok(()) } else { Err(io::Error::last_os_error()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dump_ends_early_once_asked_to_stop() {
        let mut whole = 0;
        let read = Netlink::requests().unwrap().dump_each(&AtomicBool::new(false), &mut |_| whole += 1);
        assert!(read.is_ok() && whole > 0, "{read:?}: the namespace has a link at least (lo)");
        let stop = AtomicBool::new(false);
        let mut seen = 0;
        let stopped = Netlink::requests().unwrap().dump_each(&stop, &mut |_| {
            seen += 1;
            stop.store(true, Relaxed);
        });
        assert_eq!(stopped.map_err(|e| e.kind()), Err(io::ErrorKind::Interrupted));
        assert!(seen < whole, "{seen} of {whole} messages");
    }
}
