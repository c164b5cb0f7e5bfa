//! The XDP program that hands an interface's frames to our AF_XDP sockets, assembled here in
//! eBPF instructions (no clang, no C toolchain, no object file), loaded with `bpf(2)` and
//! attached through a `bpf_link` (it goes away with the process, even after a crash), or
//! through netlink on kernels without XDP links (detached on drop, so on exit and on the
//! signals `vecflow run` handles).
//!
//! The program is five instructions (six slots: loading a map takes two):
//! ```text
//! r2 = *(u32 *)(r1 + 16)          ; ctx->rx_queue_index
//! r1 = map_fd(xsks) ll            ; the XSKMAP, by file descriptor
//! r3 = XDP_PASS                   ; what happens when the queue has no socket
//! call bpf_redirect_map           ; to the socket of this queue
//! exit
//! ```

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const BPF_MAP_CREATE: libc::c_int = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_int = 2;
const BPF_PROG_LOAD: libc::c_int = 5;
const BPF_LINK_CREATE: libc::c_int = 28;
const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
/// `enum bpf_attach_type`'s `BPF_XDP`.
const BPF_XDP: u32 = 37;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
/// `prog_flags`: the program handles frames in several buffers (multi-buffer XDP).
const BPF_F_XDP_HAS_FRAGS: u32 = 1 << 5;
const BPF_PSEUDO_MAP_FD: u8 = 1;
const XDP_PASS: i32 = 2;
/// Offset of `rx_queue_index` in `struct xdp_md`.
const XDP_MD_RX_QUEUE_INDEX: i16 = 16;
const XDP_FLAGS_UPDATE_IF_NOEXIST: u32 = 1 << 0;
const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;
const IFLA_XDP: u16 = 43;
const IFLA_XDP_FD: u16 = 1;
const IFLA_XDP_FLAGS: u16 = 3;
const NLA_F_NESTED: u16 = 1 << 15;

/// One eBPF instruction (`struct bpf_insn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Insn {
    /// Opcode.
    pub code: u8,
    /// Destination register (low nibble) and source register (high nibble).
    pub regs: u8,
    /// Signed offset.
    pub off: i16,
    /// Signed immediate.
    pub imm: i32,
}

impl Insn {
    const fn new(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Self {
        Insn { code, regs: dst | src << 4, off, imm }
    }
}

/// The redirect program's instructions for the XSKMAP with descriptor `map_fd`.
pub fn program(map_fd: RawFd) -> [Insn; 6] {
    const LDX_W: u8 = 0x61; // BPF_LDX | BPF_MEM | BPF_W
    const LD_IMM64: u8 = 0x18; // BPF_LD | BPF_IMM | BPF_DW
    const MOV64_K: u8 = 0xb7; // BPF_ALU64 | BPF_MOV | BPF_K
    const CALL: u8 = 0x85; // BPF_JMP | BPF_CALL
    const EXIT: u8 = 0x95; // BPF_JMP | BPF_EXIT
    [
        Insn::new(LDX_W, 2, 1, XDP_MD_RX_QUEUE_INDEX, 0),
        Insn::new(LD_IMM64, 1, BPF_PSEUDO_MAP_FD, 0, map_fd),
        Insn::new(0, 0, 0, 0, 0), // upper half of the 64-bit immediate
        Insn::new(MOV64_K, 3, 0, 0, XDP_PASS),
        Insn::new(CALL, 0, 0, 0, BPF_FUNC_REDIRECT_MAP),
        Insn::new(EXIT, 0, 0, 0, 0),
    ]
}

/// `bpf(cmd, attr)` on an attribute block of 128 bytes (zero where not set); returns the
/// non-negative result or the error.
///
/// # Safety
/// Every pointer the block holds for `cmd` must point to memory valid for what the kernel does
/// with it during the call: read (instructions, license, key, value) or write (the verifier
/// log, as long as the log size given).
unsafe fn bpf(cmd: libc::c_int, attr: &mut [u64; 16]) -> io::Result<libc::c_int> {
    // SAFETY: `attr` is a writable 128-byte block, large enough for every command used here
    // (the kernel reads at most the size passed and wants the bytes it does not know zeroed);
    // the pointers in it are the caller's to vouch for.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), std::mem::size_of_val(attr) as u32) };
    if r < 0 { Err(io::Error::last_os_error()) } else { Ok(r as libc::c_int) }
}

/// Writes `words` (32-bit fields in order) into `attr` from its start.
fn put_u32s(attr: &mut [u64; 16], at: usize, words: &[u32]) {
    for (k, &w) in words.iter().enumerate() {
        let i = at + k;
        let shift = if i.is_multiple_of(2) { 0 } else { 32 };
        attr[i / 2] = attr[i / 2] & !(0xffff_ffff << shift) | u64::from(w) << shift;
    }
}

/// Explains an error of a `bpf(2)` command in words an operator can act on.
fn bpf_error(what: &str, e: io::Error) -> io::Error {
    let hint = match e.raw_os_error() {
        Some(libc::EPERM) => " (needs root, or CAP_BPF with CAP_NET_ADMIN)",
        Some(libc::ENOSYS) => " (the kernel has no bpf() system call)",
        _ => "",
    };
    io::Error::new(e.kind(), format!("{what}: {e}{hint}"))
}

/// A failed `BPF_PROG_LOAD`: the kernel's errno, and the error explained, with the
/// verifier's log.
struct LoadError {
    errno: Option<i32>,
    explained: io::Error,
}

/// Loads `insns` as an XDP program with `flags` (`prog_flags`).
fn load_program(insns: &[Insn], flags: u32) -> Result<OwnedFd, LoadError> {
    let license = c"Dual MIT/GPL";
    let mut log = vec![0u8; 4096];
    let mut attr = [0u64; 16];
    // prog_type, insn_cnt, insns, license, log_level, log_size, log_buf, prog_flags (offset 44)
    put_u32s(&mut attr, 0, &[BPF_PROG_TYPE_XDP, insns.len() as u32]);
    attr[1] = insns.as_ptr() as u64;
    attr[2] = license.as_ptr() as u64;
    put_u32s(&mut attr, 6, &[1, log.len() as u32]);
    attr[4] = log.as_mut_ptr() as u64;
    put_u32s(&mut attr, 11, &[flags]);
    set_name(&mut attr, 48, "vecflow_xdp");
    // expected_attach_type (offset 68)
    put_u32s(&mut attr, 17, &[BPF_XDP]);
    // SAFETY: the instructions, the license and the log (of the size given) live across
    // the call.
    match unsafe { bpf(BPF_PROG_LOAD, &mut attr) } {
        // SAFETY: on success BPF_PROG_LOAD returns a new descriptor that we own.
        Ok(fd) => Ok(unsafe { OwnedFd::from_raw_fd(fd) }),
        Err(raw) => {
            let text = String::from_utf8_lossy(&log[..log.iter().position(|&b| b == 0).unwrap_or(0)]);
            let errno = raw.raw_os_error();
            let e = bpf_error("loading the XDP program", raw);
            Err(LoadError { errno, explained: io::Error::new(e.kind(), format!("{e}; verifier: {}", text.trim())) })
        }
    }
}

/// The program and the map of sockets it redirects to, loaded (not yet attached).
pub struct XdpProgram {
    map: OwnedFd,
    prog: OwnedFd,
    /// Loaded with `BPF_F_XDP_HAS_FRAGS`: it sees frames in several buffers (multi-buffer XDP)
    /// whole, so a driver may pass them on (false on a kernel before 5.18).
    pub frags: bool,
}

impl XdpProgram {
    /// Creates an XSKMAP for queues `0..queues` and loads the redirect program over it. The
    /// kernel's verifier checks the instructions here.
    pub fn load(queues: u32) -> io::Result<Self> {
        let mut attr = [0u64; 16];
        put_u32s(&mut attr, 0, &[BPF_MAP_TYPE_XSKMAP, 4, 4, queues.max(1)]);
        set_name(&mut attr, 28, "vecflow_xsks");
        // SAFETY: the block holds no pointers; on success BPF_MAP_CREATE returns a new
        // descriptor that we own.
        let map = unsafe { OwnedFd::from_raw_fd(bpf(BPF_MAP_CREATE, &mut attr).map_err(|e| bpf_error("XSKMAP", e))?) };
        let insns = program(map.as_raw_fd());
        let (prog, frags) = match load_program(&insns, BPF_F_XDP_HAS_FRAGS) {
            Ok(prog) => (prog, true),
            // A kernel that does not know the flag refuses it.
            Err(e) if e.errno == Some(libc::EINVAL) => (load_program(&insns, 0).map_err(|e| e.explained)?, false),
            Err(e) => return Err(e.explained),
        };
        Ok(XdpProgram { map, prog, frags })
    }

    /// Puts socket `xsk` in the map at `queue`: frames received on that queue go to it.
    pub fn insert(&self, queue: u32, xsk: RawFd) -> io::Result<()> {
        let (key, value) = (queue, xsk as u32);
        let mut attr = [0u64; 16];
        put_u32s(&mut attr, 0, &[self.map.as_raw_fd() as u32]);
        attr[1] = &key as *const u32 as u64;
        attr[2] = &value as *const u32 as u64;
        // SAFETY: `key` and `value` live across the call; the kernel only reads them.
        unsafe { bpf(BPF_MAP_UPDATE_ELEM, &mut attr) }
            .map(drop)
            .map_err(|e| bpf_error(&format!("XSKMAP entry {queue}"), e))
    }

    /// Attaches the program to interface `ifindex` in `mode` (native first, then SKB, for
    /// [`XdpMode::Auto`]), replacing a program left there by an earlier run (attached through
    /// netlink; one held by another process's link stays, and the error says so).
    pub fn attach(&self, ifindex: u32, mode: XdpMode) -> io::Result<Attachment> {
        let modes: &[XdpMode] = match mode {
            XdpMode::Auto => &[XdpMode::Native, XdpMode::Skb],
            XdpMode::Native => &[XdpMode::Native],
            XdpMode::Skb => &[XdpMode::Skb],
        };
        let mut last = io::Error::other("no XDP mode tried");
        for &m in modes {
            match self.attach_in(ifindex, m) {
                Ok(a) => return Ok(a),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Attaches in one mode: a link, else netlink; a stale netlink program is replaced once.
    fn attach_in(&self, ifindex: u32, mode: XdpMode) -> io::Result<Attachment> {
        let flags = mode.flags();
        match self.link(ifindex, mode) {
            Ok(a) => Ok(a),
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                // A program is there already. One attached through netlink (an earlier run
                // that could not use a link, or another tool) is replaced; one held by a live
                // link is not ours to take.
                tracing::warn!("ifindex {ifindex}: replacing the XDP program attached to it (left by an earlier run?)");
                netlink_set_xdp(ifindex, -1, flags).map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("an XDP program is attached and cannot be removed ({e}); is another vecflow running?"),
                    )
                })?;
                self.link(ifindex, mode).map_err(|e| attach_error(mode, e))
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
                // No XDP links in this kernel (or a refusal netlink will explain): netlink,
                // detached when the attachment drops.
                netlink_set_xdp(ifindex, self.prog.as_raw_fd(), flags | XDP_FLAGS_UPDATE_IF_NOEXIST)
                    .map_err(|e| attach_error(mode, e))?;
                Ok(Attachment { ifindex, mode, via: Via::Netlink })
            }
            Err(e) => Err(attach_error(mode, e)),
        }
    }

    /// Attaches through a `bpf_link` on `ifindex` in `mode`; the kernel's error as it is.
    fn link(&self, ifindex: u32, mode: XdpMode) -> io::Result<Attachment> {
        let mut attr = [0u64; 16];
        put_u32s(&mut attr, 0, &[self.prog.as_raw_fd() as u32, ifindex, BPF_XDP, mode.flags()]);
        // SAFETY: the block holds no pointers; on success BPF_LINK_CREATE returns a new
        // descriptor that we own.
        let fd = unsafe { OwnedFd::from_raw_fd(bpf(BPF_LINK_CREATE, &mut attr)?) };
        Ok(Attachment { ifindex, mode, via: Via::Link(fd) })
    }
}

/// Explains why attaching in `mode` failed.
fn attach_error(mode: XdpMode, e: io::Error) -> io::Error {
    let hint = match e.raw_os_error() {
        Some(libc::EOPNOTSUPP) if mode == XdpMode::Native => " (the driver has no native XDP: use mode skb or auto)",
        Some(libc::EINVAL | libc::ERANGE) => " (is the interface's MTU too large for XDP?)",
        Some(libc::EPERM) => " (needs root, or CAP_BPF with CAP_NET_ADMIN)",
        _ => "",
    };
    io::Error::new(e.kind(), format!("attaching the XDP program in {} mode: {e}{hint}", mode.name()))
}

/// Writes NUL-terminated `name` (at most 15 bytes) into `attr` at byte `at`.
fn set_name(attr: &mut [u64; 16], at: usize, name: &str) {
    for (k, b) in name.bytes().take(15).enumerate() {
        let i = at + k;
        attr[i / 8] |= u64::from(b) << (8 * (i % 8));
    }
}

/// How the XDP program runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpMode {
    /// Native where the driver has it, SKB otherwise.
    Auto,
    /// In the driver (before an skb exists).
    Native,
    /// Generic: after the skb is built (any driver, slower).
    Skb,
}

impl XdpMode {
    fn flags(self) -> u32 {
        match self {
            XdpMode::Native => XDP_FLAGS_DRV_MODE,
            XdpMode::Skb | XdpMode::Auto => XDP_FLAGS_SKB_MODE,
        }
    }

    /// The mode's name in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            XdpMode::Auto => "auto",
            XdpMode::Native => "native",
            XdpMode::Skb => "skb",
        }
    }
}

enum Via {
    /// A `bpf_link`: closing it detaches the program.
    Link(#[allow(dead_code, reason = "held only to be closed on drop")] OwnedFd),
    /// Netlink: detached explicitly on drop.
    Netlink,
}

/// The program attached to one interface; detached when dropped.
pub struct Attachment {
    ifindex: u32,
    mode: XdpMode,
    via: Via,
}

impl Attachment {
    /// The mode it runs in (native or skb).
    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// True when attached through a `bpf_link`.
    pub fn is_link(&self) -> bool {
        matches!(self.via, Via::Link(_))
    }
}

impl Drop for Attachment {
    fn drop(&mut self) {
        if let Via::Netlink = self.via
            && let Err(e) = netlink_set_xdp(self.ifindex, -1, self.mode.flags())
        {
            tracing::warn!("ifindex {}: detaching the XDP program: {e}", self.ifindex);
        }
    }
}

/// Sets (program descriptor `fd`) or clears (`fd` = -1) the XDP program of interface
/// `ifindex` with an `RTM_SETLINK` request, and waits for the kernel's answer.
fn netlink_set_xdp(ifindex: u32, fd: RawFd, flags: u32) -> io::Result<()> {
    // nlmsghdr (16) + ifinfomsg (16) + IFLA_XDP (4) { IFLA_XDP_FD (8), IFLA_XDP_FLAGS (8) }
    let mut msg = Vec::with_capacity(52);
    let total = 16 + 16 + 4 + 8 + 8;
    msg.extend_from_slice(&(total as u32).to_ne_bytes());
    msg.extend_from_slice(&libc::RTM_SETLINK.to_ne_bytes());
    msg.extend_from_slice(&((libc::NLM_F_REQUEST | libc::NLM_F_ACK) as u16).to_ne_bytes());
    msg.extend_from_slice(&1u32.to_ne_bytes()); // sequence
    msg.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it in
    msg.extend_from_slice(&[libc::AF_UNSPEC as u8, 0, 0, 0]);
    msg.extend_from_slice(&(ifindex as i32).to_ne_bytes());
    msg.extend_from_slice(&[0; 8]); // flags, change
    msg.extend_from_slice(&20u16.to_ne_bytes());
    msg.extend_from_slice(&(IFLA_XDP | NLA_F_NESTED).to_ne_bytes());
    msg.extend_from_slice(&8u16.to_ne_bytes());
    msg.extend_from_slice(&IFLA_XDP_FD.to_ne_bytes());
    msg.extend_from_slice(&fd.to_ne_bytes());
    msg.extend_from_slice(&8u16.to_ne_bytes());
    msg.extend_from_slice(&IFLA_XDP_FLAGS.to_ne_bytes());
    msg.extend_from_slice(&flags.to_ne_bytes());
    debug_assert_eq!(msg.len(), total);
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, libc::NETLINK_ROUTE) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is ours.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    let timeout = libc::timeval { tv_sec: 2, tv_usec: 0 };
    crate::drivers::set_opt(sock.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVTIMEO, &timeout, "SO_RCVTIMEO")?;
    // SAFETY: sockaddr_nl is plain data; zero (pid 0) addresses the kernel.
    let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
    kernel.nl_family = libc::AF_NETLINK as u16;
    // SAFETY: `msg` and `kernel` are valid for the lengths given; the kernel only reads them.
    let sent = unsafe {
        libc::sendto(
            sock.as_raw_fd(),
            msg.as_ptr().cast(),
            msg.len(),
            0,
            (&kernel as *const libc::sockaddr_nl).cast(),
            std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut answer = [0u8; 1024];
    // SAFETY: `answer` is writable for its length.
    let n = unsafe { libc::recv(sock.as_raw_fd(), answer.as_mut_ptr().cast(), answer.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let answer = &answer[..n as usize];
    // nlmsghdr, then for NLMSG_ERROR the error code (0 = the acknowledgement).
    if answer.len() >= 20 && u16::from_ne_bytes([answer[4], answer[5]]) == libc::NLMSG_ERROR as u16 {
        let code = i32::from_ne_bytes(answer[16..20].try_into().expect("4 bytes"));
        return if code == 0 { Ok(()) } else { Err(io::Error::from_raw_os_error(-code)) };
    }
    Err(io::Error::other("netlink: no acknowledgement"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_reads_the_queue_and_redirects_with_pass_as_fallback() {
        let p = program(7);
        assert_eq!((p[0].code, p[0].regs, p[0].off), (0x61, 0x12, 16), "r2 = ctx->rx_queue_index");
        assert_eq!((p[1].code, p[1].regs, p[1].imm), (0x18, 0x11, 7), "r1 = map fd 7 (pseudo)");
        assert_eq!((p[3].regs, p[3].imm), (3, XDP_PASS));
        assert_eq!((p[4].code, p[4].imm), (0x85, 51), "bpf_redirect_map");
        assert_eq!(p[5].code, 0x95);
        assert_eq!(std::mem::size_of::<Insn>(), 8);
    }

    #[test]
    fn attribute_fields_land_where_the_kernel_reads_them() {
        let mut attr = [0u64; 16];
        put_u32s(&mut attr, 0, &[1, 2, 3]);
        put_u32s(&mut attr, 17, &[37]);
        assert_eq!(attr[0], 1 | 2 << 32);
        assert_eq!(attr[1], 3);
        assert_eq!(attr[8], 37 << 32);
        set_name(&mut attr, 48, "ab");
        assert_eq!(attr[6], u64::from(b'a') | u64::from(b'b') << 8);
    }
}

#[cfg(test)]
mod kernel_tests {
    use super::*;
    use crate::drivers::af_xdp::kernel_tests::in_new_netns;

    #[test]
    fn the_verifier_accepts_the_program_and_a_stale_one_is_replaced() {
        in_new_netns(|| {
            let program = XdpProgram::load(4).expect("the kernel's verifier accepts the program");
            // What an earlier run attached through netlink and left behind.
            let stale = XdpProgram::load(1).unwrap();
            netlink_set_xdp(1, stale.prog.as_raw_fd(), XDP_FLAGS_SKB_MODE).unwrap();
            let attached = program.attach(1, XdpMode::Auto).expect("replaces the stale program");
            assert_eq!(attached.mode(), XdpMode::Skb, "lo has no native XDP");
            assert!(attached.is_link());
            let again = XdpProgram::load(1).unwrap().attach(1, XdpMode::Skb);
            let e = again.err().expect("a live link is not taken over").to_string();
            assert!(e.contains("another vecflow"), "{e}");
        });
    }
}
