//! The kernel's `netdev` generic netlink family, for the NAPI settings busy polling relies on:
//! `defer-hard-irqs` (how many polls a device's interrupt stays masked for after one found
//! work) and `gro-flush-timeout` (the timer, in nanoseconds, that polls in the application's
//! place meanwhile). Per NAPI instance, read with `napi-get` and written with `napi-set`
//! (Linux 6.13 and later; older kernels refuse the command).

use netlink_packet_core::{
    DecodeError, Emitable, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, NetlinkMessage, NetlinkPayload, Nla, NlasIterator,
    ParseableParametrized, emit_u32, emit_u64, parse_u32, parse_u64,
};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::{GenlFamily, GenlHeader, GenlMessage};
use netlink_sys::{Socket, SocketAddr, protocols::NETLINK_GENERIC};
use std::fmt::Debug;
use std::io;
use std::os::fd::AsRawFd;

/// `NETDEV_CMD_NAPI_GET`.
const NAPI_GET: u8 = 11;
/// `NETDEV_CMD_NAPI_SET`.
const NAPI_SET: u8 = 14;
/// `NETDEV_A_NAPI_IFINDEX`.
const A_IFINDEX: u16 = 1;
/// `NETDEV_A_NAPI_ID`.
const A_ID: u16 = 2;
/// `NETDEV_A_NAPI_DEFER_HARD_IRQS`.
const A_DEFER_HARD_IRQS: u16 = 5;
/// `NETDEV_A_NAPI_GRO_FLUSH_TIMEOUT`.
const A_GRO_FLUSH_TIMEOUT: u16 = 6;

/// The busy-polling settings of one NAPI instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NapiSettings {
    /// Polls the device's interrupt stays masked for after one that found work.
    pub defer_hard_irqs: u32,
    /// How long the kernel waits for the next poll before it polls itself, in nanoseconds.
    pub gro_flush_timeout_ns: u64,
}

/// One attribute of the family's `napi` set (the ones vecflow reads or writes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NapiAttr {
    Ifindex(u32),
    Id(u32),
    DeferHardIrqs(u32),
    GroFlushTimeout(u64),
}

impl Nla for NapiAttr {
    fn value_len(&self) -> usize {
        match self {
            NapiAttr::GroFlushTimeout(_) => 8,
            _ => 4,
        }
    }

    fn kind(&self) -> u16 {
        match self {
            NapiAttr::Ifindex(_) => A_IFINDEX,
            NapiAttr::Id(_) => A_ID,
            NapiAttr::DeferHardIrqs(_) => A_DEFER_HARD_IRQS,
            NapiAttr::GroFlushTimeout(_) => A_GRO_FLUSH_TIMEOUT,
        }
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match *self {
            NapiAttr::Ifindex(v) | NapiAttr::Id(v) | NapiAttr::DeferHardIrqs(v) => emit_u32(buffer, v),
            NapiAttr::GroFlushTimeout(v) => emit_u64(buffer, v),
        }
        .expect("the buffer is value_len() long")
    }
}

/// A message of the netdev family: a command and its NAPI attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NetdevMessage {
    cmd: u8,
    attrs: Vec<NapiAttr>,
}

impl GenlFamily for NetdevMessage {
    fn family_name() -> &'static str {
        "netdev"
    }

    fn command(&self) -> u8 {
        self.cmd
    }

    fn version(&self) -> u8 {
        1
    }
}

impl Emitable for NetdevMessage {
    fn buffer_len(&self) -> usize {
        self.attrs.as_slice().buffer_len()
    }

    fn emit(&self, buffer: &mut [u8]) {
        self.attrs.as_slice().emit(buffer)
    }
}

impl ParseableParametrized<[u8], GenlHeader> for NetdevMessage {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        let mut attrs = Vec::new();
        for nla in NlasIterator::new(buf) {
            let nla = nla?;
            let value = nla.value();
            // `uint` attributes are 4 or 8 bytes, as the value needs.
            let wide = |v: &[u8]| if v.len() == 8 { parse_u64(v) } else { parse_u32(v).map(u64::from) };
            attrs.push(match nla.kind() {
                A_IFINDEX => NapiAttr::Ifindex(parse_u32(value)?),
                A_ID => NapiAttr::Id(parse_u32(value)?),
                A_DEFER_HARD_IRQS => NapiAttr::DeferHardIrqs(parse_u32(value)?),
                A_GRO_FLUSH_TIMEOUT => NapiAttr::GroFlushTimeout(wide(value)?),
                _ => continue,
            });
        }
        Ok(NetdevMessage { cmd: header.cmd, attrs })
    }
}

/// A generic netlink socket talking to the netdev family.
pub struct Netdev {
    socket: Socket,
    family: u16,
    seq: u32,
    buf: Vec<u8>,
}

impl Netdev {
    /// Opens the socket and looks the family up; fails on a kernel without it (before 6.5).
    pub fn open() -> io::Result<Netdev> {
        let mut socket = Socket::new(NETLINK_GENERIC)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        // The kernel answers at once; a reply that never comes must not hold the main thread.
        let timeout = libc::timeval { tv_sec: 2, tv_usec: 0 };
        super::set_opt(socket.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVTIMEO, &timeout, "SO_RCVTIMEO")?;
        let mut netdev = Netdev { socket, family: 0, seq: 0, buf: vec![0; 16384] };
        let ask = GenlCtrl { cmd: GenlCtrlCmd::GetFamily, nlas: vec![GenlCtrlAttrs::FamilyName("netdev".into())] };
        let replies = netdev.exchange(GenlMessage::from_payload(ask), NLM_F_ACK).map_err(|e| {
            io::Error::new(e.kind(), format!("the kernel's netdev netlink family (Linux 6.5 and later): {e}"))
        })?;
        let id = replies.iter().flat_map(|r| &r.nlas).find_map(|a| match a {
            GenlCtrlAttrs::FamilyId(id) => Some(*id),
            _ => None,
        });
        netdev.family = id.ok_or_else(|| io::Error::other("netdev netlink family: no id in the reply"))?;
        Ok(netdev)
    }

    /// The NAPI instances of device `ifindex` (only while it is up), with their settings.
    pub fn napis(&mut self, ifindex: u32) -> io::Result<Vec<(u32, NapiSettings)>> {
        let ask = NetdevMessage { cmd: NAPI_GET, attrs: vec![NapiAttr::Ifindex(ifindex)] };
        let replies = self.exchange(self.message(ask), NLM_F_DUMP)?;
        Ok(replies.iter().filter_map(|m| Some((id_of(m)?, settings_of(m)))).collect())
    }

    /// The settings of NAPI instance `id`.
    pub fn napi(&mut self, id: u32) -> io::Result<NapiSettings> {
        let ask = NetdevMessage { cmd: NAPI_GET, attrs: vec![NapiAttr::Id(id)] };
        let replies = self.exchange(self.message(ask), NLM_F_ACK)?;
        replies.first().map(settings_of).ok_or_else(|| io::Error::other(format!("NAPI {id}: no reply")))
    }

    /// Sets the settings of NAPI instance `id` (needs `CAP_NET_ADMIN`, Linux 6.13 and later).
    pub fn set_napi(&mut self, id: u32, s: NapiSettings) -> io::Result<()> {
        let attrs = vec![
            NapiAttr::Id(id),
            NapiAttr::DeferHardIrqs(s.defer_hard_irqs),
            NapiAttr::GroFlushTimeout(s.gro_flush_timeout_ns),
        ];
        self.exchange(self.message(NetdevMessage { cmd: NAPI_SET, attrs }), NLM_F_ACK).map(drop)
    }

    fn message(&self, m: NetdevMessage) -> GenlMessage<NetdevMessage> {
        let mut m = GenlMessage::from_payload(m);
        m.set_resolved_family_id(self.family);
        m
    }

    /// Sends `message` with `flags` and returns the replies, until the kernel's
    /// acknowledgement or the end of the dump; a kernel error is returned as one.
    fn exchange<F>(&mut self, message: GenlMessage<F>, flags: u16) -> io::Result<Vec<F>>
    where
        F: GenlFamily + Emitable + ParseableParametrized<[u8], GenlHeader> + Debug,
    {
        self.seq = self.seq.wrapping_add(1);
        let mut packet = NetlinkMessage::from(message);
        packet.header.flags = NLM_F_REQUEST | flags;
        packet.header.sequence_number = self.seq;
        packet.finalize();
        let mut bytes = vec![0; packet.buffer_len()];
        packet.serialize(&mut bytes);
        self.socket.send(&bytes, 0)?;
        let mut out = Vec::new();
        loop {
            let n = self.socket.recv(&mut &mut self.buf[..], 0)?;
            let mut at = 0;
            while at < n {
                let m = NetlinkMessage::<GenlMessage<F>>::deserialize(&self.buf[at..n])
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("netdev netlink: {e}")))?;
                let len = m.header.length as usize;
                if m.header.sequence_number == self.seq {
                    match m.payload {
                        NetlinkPayload::InnerMessage(g) => out.push(g.payload),
                        NetlinkPayload::Done(_) => return Ok(out),
                        NetlinkPayload::Error(e) => return e.code.map_or(Ok(out), |_| Err(e.to_io())),
                        _ => {}
                    }
                }
                if len == 0 {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "netdev netlink: a message of length 0"));
                }
                at += (len + 3) & !3;
            }
        }
    }
}

fn id_of(m: &NetdevMessage) -> Option<u32> {
    m.attrs.iter().find_map(|a| if let NapiAttr::Id(id) = a { Some(*id) } else { None })
}

fn settings_of(m: &NetdevMessage) -> NapiSettings {
    let mut s = NapiSettings { defer_hard_irqs: 0, gro_flush_timeout_ns: 0 };
    for a in &m.attrs {
        match *a {
            NapiAttr::DeferHardIrqs(v) => s.defer_hard_irqs = v,
            NapiAttr::GroFlushTimeout(v) => s.gro_flush_timeout_ns = v,
            _ => {}
        }
    }
    s
}
