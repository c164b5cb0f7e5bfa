//! The embedded traffic generator (T-Rex-like streams) and its sink.
//!
//! Rx side, node `generator-input`: each poll of a generator interface fills one vector of up
//! to 256 fresh frames. Every frame is written whole from its stream's template, then its
//! per-packet fields are set: the source and destination addresses walked over their ranges
//! (IPv4 for `ipv4-udp`/`mpls`, IPv6 for `ipv6-udp`, MAC for `l2`) and, for IP, the header and
//! UDP checksums they imply (computed from precomputed partial sums, not by re-summing the
//! frame).
//!
//! Tx side, node `generator-tx`: the sink reads every byte of each frame once (folding it into
//! a digest so the reads cannot be optimised away), counts it and frees the buffer.

use crate::drivers::pace::Rate;
use crate::interface::stream_config::{RangeMode, StreamConfig, Template};
use crate::runtime::buffer::{BufferMeta, BufferPool, HEADROOM};
use crate::runtime::stats::counter_set;
use crate::runtime::vector::VECTOR_SIZE;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use wire::ethernet::field;
use wire::{EtherType, MacAddr, checksum, ipv4, ipv6, mpls::MplsLabel, udp};

mod port;
mod sink;

pub use port::GeneratorPort;
pub use sink::sink;

counter_set! {
    /// One worker's generator and sink totals.
    GenCounters,
    /// Generator and sink totals (one worker or summed).
    GenStats {
        /// Frames the generator emitted.
        generated,
        /// Polls where the buffer pool ran dry, so the generator emitted fewer frames.
        no_buffer,
        /// Frames the sink read (their bytes are in the output interfaces' tx counters).
        sink_packets,
        /// XOR of every 8-byte word the sink read (proves the reads happen).
        sink_digest,
    }
}

/// Ethertype of `l2` template frames: IEEE 802 local experimental ethertype 1.
pub const L2_ETHERTYPE: u16 = 0x88b5;

/// Frames up to this length are copied with one fixed-size copy.
const SMALL_FRAME: usize = 64;

/// Walks `0..count` by increments or at random.
#[derive(Debug, Clone)]
struct Walk {
    count: u32,
    mode: RangeMode,
    cur: u32,
}

impl Walk {
    /// Writes the next `out.len()` offsets of the walk into `out`.
    #[inline]
    fn fill(&mut self, out: &mut [u32], rng: &mut u64) {
        match self.mode {
            RangeMode::Increment => {
                let (mut cur, count) = (self.cur, self.count);
                for o in out {
                    *o = cur;
                    cur += 1;
                    if cur == count {
                        cur = 0;
                    }
                }
                self.cur = cur;
            }
            RangeMode::Random => {
                let (mut r, count) = (*rng, u64::from(self.count));
                for o in out {
                    *o = ((u64::from(wyrand(&mut r) as u32) * count) >> 32) as u32;
                }
                *rng = r;
            }
        }
    }
}

/// wyrand: a fast 64-bit PRNG (passes BigCrush), enough for address ranges.
#[inline(always)]
fn wyrand(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0xa076_1d64_78bd_642f);
    let t = u128::from(*state) * u128::from(*state ^ 0xe703_7ed1_a0b4_28db);
    (t >> 64) as u64 ^ t as u64
}

/// Where a stream's varying fields are and the partial checksums they complete.
#[derive(Debug, Clone, Copy)]
enum Fields {
    /// MAC addresses vary (template `l2`): destination at 0, source at 6.
    Mac,
    /// IPv4 addresses vary; `ip` is the IPv4 header offset, `udp` the UDP header offset.
    Ipv4 {
        ip: usize,
        udp: usize,
        /// Sum of the IPv4 header words except the addresses and the checksum.
        ip_sum: u32,
        /// Sum of the UDP pseudo-header (without addresses), header and payload words.
        udp_sum: u32,
    },
    /// IPv6 addresses vary; `ip` is the IPv6 header offset (UDP right after it).
    Ipv6 {
        ip: usize,
        /// Sum of the UDP pseudo-header (without addresses), header and payload words.
        udp_sum: u32,
    },
}

/// A compiled stream: its template frame and how to vary it.
#[derive(Debug, Clone)]
pub struct Stream {
    /// The frame, padded with zeros to at least `SMALL_FRAME` bytes.
    template: Vec<u8>,
    len: usize,
    fields: Fields,
    src_base: u128,
    dst_base: u128,
    /// Destinations walked instead of `dst_base` + offset (`dst-addresses`).
    dst_list: Option<DstList>,
    src: Walk,
    dst: Walk,
    /// The top label's offset in the frame, its label stack entry and the walk over the
    /// labels added to it (`label-range`).
    top_label: Option<(usize, u32, Walk)>,
    rng: u64,
    rate: Option<Rate>,
    /// Packets still to send (`count`); `u64::MAX` for no end.
    remaining: u64,
}

impl Stream {
    /// Compiles a validated stream for an interface whose MAC is `if_mac`; `tsc_hz` paces it.
    pub fn new(cfg: &StreamConfig, if_mac: MacAddr, tsc_hz: u64) -> Self {
        let len = cfg.frame_size as usize - 4;
        let mut t = vec![0u8; len.max(SMALL_FRAME)];
        let dst_mac = cfg.dst_mac.map_or(if_mac, |m| m.0);
        t[field::DST].copy_from_slice(&dst_mac.0);
        t[field::SRC].copy_from_slice(&cfg.src_mac.0.0);
        let mut at = 12;
        if let Some(vid) = cfg.vlan {
            t[at..at + 4].copy_from_slice(&[0x81, 0x00, (vid >> 8) as u8, vid as u8]);
            at += 4;
        }
        let ethertype = match cfg.template {
            Template::L2 => L2_ETHERTYPE,
            Template::Ipv4Udp => EtherType::IPV4,
            Template::Mpls => EtherType::MPLS,
            Template::Ipv6Udp => EtherType::IPV6,
        };
        t[at..at + 2].copy_from_slice(&ethertype.to_be_bytes());
        at += 2;
        let top_label_at = at;
        for (k, &label) in cfg.labels.iter().enumerate() {
            let e = MplsLabel { label, tc: 0, bos: k + 1 == cfg.labels.len(), ttl: cfg.ttl };
            t[at..at + 4].copy_from_slice(&e.to_u32().to_be_bytes());
            at += 4;
        }
        let v6 = cfg.src_ip().is_ipv6();
        let payload_start = match cfg.template {
            Template::L2 => at,
            _ if v6 => at + ipv6::HEADER_LEN + udp::HEADER_LEN,
            _ => at + ipv4::HEADER_LEN + udp::HEADER_LEN,
        };
        for (k, b) in t[payload_start..len].iter_mut().enumerate() {
            *b = k as u8;
        }
        let fields = match cfg.template {
            Template::L2 => Fields::Mac,
            Template::Ipv4Udp | Template::Mpls if !v6 => {
                let (ip, u) = (at, at + ipv4::HEADER_LEN);
                let zero = Ipv4Addr::UNSPECIFIED;
                ipv4::write_header(&mut t[ip..u], (len - ip) as u16, cfg.ttl, ipv4::protocol::UDP, zero, zero);
                udp::write_header(&mut t[u..len], zero, zero, cfg.src_port, cfg.dst_port);
                // Partial sums with zero addresses and zero checksums.
                t[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
                t[u + 6..u + 8].copy_from_slice(&[0, 0]);
                let ip_sum = checksum::sum_words(&t[ip..u], 0);
                let udp_sum = checksum::sum_words(&t[u..len], u32::from(ipv4::protocol::UDP) + (len - u) as u32);
                Fields::Ipv4 { ip, udp: u, ip_sum, udp_sum }
            }
            Template::Ipv6Udp | Template::Mpls | Template::Ipv4Udp => {
                let (ip, u) = (at, at + ipv6::HEADER_LEN);
                let zero = Ipv6Addr::UNSPECIFIED;
                ipv6::write_header(&mut t[ip..u], (len - u) as u16, ipv4::protocol::UDP, cfg.ttl, zero, zero);
                udp::write_header(&mut t[u..len], zero, zero, cfg.src_port, cfg.dst_port);
                t[u + 6..u + 8].copy_from_slice(&[0, 0]);
                let udp_sum = checksum::sum_words(&t[u..len], u32::from(ipv4::protocol::UDP) + (len - u) as u32);
                Fields::Ipv6 { ip, udp_sum }
            }
        };
        let ip = |a: IpAddr| match a {
            IpAddr::V4(a) => u128::from(u32::from(a)),
            IpAddr::V6(a) => u128::from(a),
        };
        let (src_base, dst_base) = match fields {
            Fields::Mac => (u128::from(cfg.src_mac.0.to_u64()), u128::from(dst_mac.to_u64())),
            Fields::Ipv4 { .. } | Fields::Ipv6 { .. } => (ip(cfg.src_ip()), ip(cfg.dst_ip())),
        };
        let list = &cfg.dst_addresses;
        let dst_count = if list.is_empty() { cfg.dst_range.count } else { list.len() as u32 };
        let mut dst = Walk { count: dst_count, mode: cfg.dst_range.mode, cur: 0 };
        let mut rng = cfg.seed;
        let dst_list = (!list.is_empty()).then(|| DstList::new(list, &mut dst, &mut rng));
        let top_label = cfg.label_range.map(|r| {
            let entry = u32::from_be_bytes(t[top_label_at..top_label_at + 4].try_into().expect("4 bytes"));
            (top_label_at, entry, Walk { count: r.count, mode: r.mode, cur: 0 })
        });
        Stream {
            template: t,
            len,
            fields,
            src_base,
            dst_base,
            dst_list,
            src: Walk { count: cfg.src_range.count, mode: cfg.src_range.mode, cur: 0 },
            dst,
            top_label,
            rng,
            rate: cfg.rate_pps.map(|pps| Rate::new(pps, tsc_hz)),
            remaining: cfg.count.unwrap_or(u64::MAX),
        }
    }

    /// Frame length in the buffer (frame size minus FCS).
    pub fn frame_len(&self) -> usize {
        self.len
    }

    /// Writes one frame into each buffer of `bufs` (at most [`VECTOR_SIZE`]), received on
    /// `port`. Returns the bytes written.
    pub fn fill(&mut self, pool: &mut BufferPool, bufs: &[u32], port: u16) -> u64 {
        let n = bufs.len();
        let (mut src, mut dst) = ([0u32; VECTOR_SIZE], [0u32; VECTOR_SIZE]);
        self.src.fill(&mut src[..n], &mut self.rng);
        match &mut self.dst_list {
            Some(list) => list.take(&mut self.dst, &mut self.rng, &mut dst[..n]),
            None => self.dst.fill(&mut dst[..n], &mut self.rng),
        }
        // Opaque to the optimiser, so that each store of it is one 16-byte copy rather than a
        // store per field.
        let meta = std::hint::black_box(pool.received(self.len, port));
        let addrs = Addrs {
            sb: self.src_base,
            db: self.dst_base,
            list: self.dst_list.as_ref().map(|l| (l.addrs(), &*l.ahead)),
            src: &src[..n],
            dst: &dst[..n],
        };
        if self.len <= SMALL_FRAME {
            let t: &[u8; SMALL_FRAME] = self.template[..SMALL_FRAME].try_into().expect("padded template");
            // The common layouts get loops with constant offsets: untagged and tagged IPv4.
            match self.fields {
                Fields::Ipv4 { ip: 14, ip_sum, udp_sum, .. } => {
                    fill_small_ipv4::<14>(pool, bufs, *t, meta, &addrs, ip_sum, udp_sum)
                }
                Fields::Ipv4 { ip: 18, ip_sum, udp_sum, .. } => {
                    fill_small_ipv4::<18>(pool, bufs, *t, meta, &addrs, ip_sum, udp_sum)
                }
                Fields::Ipv6 { ip: 14, udp_sum } => fill_small_ipv6::<14>(pool, bufs, *t, meta, &addrs, udp_sum),
                fields => {
                    for (k, &i) in bufs.iter().enumerate() {
                        let frame: &mut [u8; SMALL_FRAME] =
                            (&mut pool.slot_mut(i)[HEADROOM..HEADROOM + SMALL_FRAME]).try_into().expect("64 bytes");
                        *frame = *t;
                        fields.write(frame, addrs.src(k), addrs.dst(k));
                        addrs.prefetch_ahead(k);
                        *pool.meta_mut(i) = meta;
                    }
                }
            }
        } else {
            for (k, &i) in bufs.iter().enumerate() {
                let frame = &mut pool.slot_mut(i)[HEADROOM..HEADROOM + self.len];
                frame.copy_from_slice(&self.template[..self.len]);
                self.fields.write(frame, addrs.src(k), addrs.dst(k));
                addrs.prefetch_ahead(k);
                *pool.meta_mut(i) = meta;
            }
        }
        if let Some((at, entry, walk)) = &mut self.top_label {
            let mut offsets = [0u32; VECTOR_SIZE];
            walk.fill(&mut offsets[..n], &mut self.rng);
            for (&i, &o) in bufs.iter().zip(&offsets[..n]) {
                let label = entry.wrapping_add(o << 12);
                pool.frame_mut(i)[*at..*at + 4].copy_from_slice(&label.to_be_bytes());
            }
        }
        (n * self.len) as u64
    }
}

/// A destination list (`dst-addresses`) and the indices into it drawn a vector ahead: a
/// table's worth of addresses does not fit in the cache, so the entries a vector will use
/// are prefetched while the vector before it is being made, one per frame made (a burst of
/// 256 prefetches would outrun the misses the core can have in flight).
#[derive(Debug, Clone)]
struct DstList {
    /// The addresses are `storage[start..start + len]`, which begins on a 2 MiB boundary
    /// and is advised to use transparent huge pages: drawn at random, the entries of a large
    /// list otherwise miss the TLB too, which a prefetch does not hide.
    storage: Vec<u128>,
    start: usize,
    len: usize,
    ahead: Box<[u32; VECTOR_SIZE]>,
}

impl DstList {
    /// The list of `addrs`, with a vector of indices drawn from `walk` (with `rng`) and asked
    /// for.
    fn new(addrs: &[Ipv6Addr], walk: &mut Walk, rng: &mut u64) -> Self {
        const HUGE: usize = 2 << 20;
        let len = addrs.len();
        // Zeroed memory this large is mapped fresh, untouched until written below.
        let mut storage = vec![0u128; len + HUGE / 16];
        let start = storage.as_ptr().cast::<u8>().align_offset(HUGE) / 16;
        let list = &mut storage[start..start + len];
        #[cfg(not(miri))]
        // SAFETY: advice on memory this vector owns (no effect on its contents); failure is
        // harmless.
        unsafe {
            libc::madvise(list.as_mut_ptr().cast(), len * 16, libc::MADV_HUGEPAGE);
        }
        for (slot, &a) in list.iter_mut().zip(addrs) {
            *slot = u128::from(a);
        }
        let mut ahead = Box::new([0u32; VECTOR_SIZE]);
        walk.fill(&mut ahead[..], rng);
        DstList { storage, start, len, ahead }
    }

    /// The addresses.
    fn addrs(&self) -> &[u128] {
        &self.storage[self.start..self.start + self.len]
    }

    /// The next `out.len()` indices, drawn a vector ago; as many are drawn to replace them
    /// (the frames made with `out` prefetch their entries, [`Addrs::prefetch_ahead`]).
    fn take(&mut self, walk: &mut Walk, rng: &mut u64, out: &mut [u32]) {
        let n = out.len();
        out.copy_from_slice(&self.ahead[..n]);
        self.ahead.copy_within(n.., 0);
        walk.fill(&mut self.ahead[VECTOR_SIZE - n..], rng);
    }
}

/// The address bases and the per-packet offsets drawn for one vector (for destinations from
/// a list, the offsets are indices into it).
struct Addrs<'a> {
    sb: u128,
    db: u128,
    /// A destination list and its indices drawn for the next vector.
    list: Option<(&'a [u128], &'a [u32; VECTOR_SIZE])>,
    src: &'a [u32],
    dst: &'a [u32],
}

impl Addrs<'_> {
    #[inline(always)]
    fn src(&self, k: usize) -> u128 {
        self.sb.wrapping_add(u128::from(self.src[k]))
    }

    #[inline(always)]
    fn dst(&self, k: usize) -> u128 {
        match self.list {
            Some((list, _)) => list[self.dst[k] as usize],
            None => self.db.wrapping_add(u128::from(self.dst[k])),
        }
    }

    /// Starts loading the list entry of the next vector's `k`-th destination (none without a
    /// list), while frame `k` of this one is made.
    #[inline(always)]
    fn prefetch_ahead(&self, k: usize) {
        if let Some((list, ahead)) = self.list {
            crate::runtime::prefetch(&list[ahead[k] as usize]);
        }
    }
}

/// Frames of up to 64 bytes with an IPv4 header at the constant offset `IP` (UDP right after).
/// The template is taken by value so that it stays in registers across the loop.
#[inline(always)]
fn fill_small_ipv4<const IP: usize>(
    pool: &mut BufferPool,
    bufs: &[u32],
    t: [u8; SMALL_FRAME],
    meta: BufferMeta,
    addrs: &Addrs<'_>,
    ip_sum: u32,
    udp_sum: u32,
) {
    let (sb, db) = (addrs.sb as u32, addrs.db as u32);
    for ((&i, &s), &d) in bufs.iter().zip(addrs.src).zip(addrs.dst) {
        let frame: &mut [u8; SMALL_FRAME] =
            (&mut pool.slot_mut(i)[HEADROOM..HEADROOM + SMALL_FRAME]).try_into().expect("64 bytes");
        *frame = t;
        write_ipv4(frame, IP, IP + 20, ip_sum, udp_sum, sb.wrapping_add(s), db.wrapping_add(d));
        *pool.meta_mut(i) = meta;
    }
}

/// Frames of up to 64 bytes with an IPv6 header at the constant offset `IP` (UDP right after).
#[inline(always)]
fn fill_small_ipv6<const IP: usize>(
    pool: &mut BufferPool,
    bufs: &[u32],
    t: [u8; SMALL_FRAME],
    meta: BufferMeta,
    addrs: &Addrs<'_>,
    udp_sum: u32,
) {
    for (k, &i) in bufs.iter().enumerate() {
        let frame: &mut [u8; SMALL_FRAME] =
            (&mut pool.slot_mut(i)[HEADROOM..HEADROOM + SMALL_FRAME]).try_into().expect("64 bytes");
        *frame = t;
        write_ipv6(frame, IP, udp_sum, addrs.src(k), addrs.dst(k));
        addrs.prefetch_ahead(k);
        *pool.meta_mut(i) = meta;
    }
}

/// Writes IPv6 source `s` and destination `d` and the UDP checksum they complete.
#[inline(always)]
fn write_ipv6(frame: &mut [u8], ip: usize, udp_sum: u32, s: u128, d: u128) {
    // The one's-complement sum of 32-bit words, then folded, equals the 16-bit one (RFC 1071).
    let words = |a: u128| (a >> 96) as u64 + ((a >> 64) as u32) as u64 + ((a >> 32) as u32) as u64 + (a as u32) as u64;
    let sum = u64::from(udp_sum) + words(s) + words(d);
    let sum = (sum & 0xffff_ffff) + (sum >> 32);
    let sum = (sum & 0xffff_ffff) + (sum >> 32);
    let udp_csum = match !checksum::fold(sum as u32) {
        0 => 0xffff,
        c => c,
    };
    let h = &mut frame[ip..ip + ipv6::HEADER_LEN + udp::HEADER_LEN];
    h[8..24].copy_from_slice(&s.to_be_bytes());
    h[24..40].copy_from_slice(&d.to_be_bytes());
    h[46..48].copy_from_slice(&udp_csum.to_be_bytes());
}

/// Writes IPv4 source `s` and destination `d` and the IPv4 and UDP checksums they complete.
#[inline(always)]
fn write_ipv4(frame: &mut [u8], ip: usize, udp: usize, ip_sum: u32, udp_sum: u32, s: u32, d: u32) {
    let a = (s >> 16) + (s & 0xffff) + (d >> 16) + (d & 0xffff);
    let ip_csum = !checksum::fold(ip_sum + a);
    let udp_csum = match !checksum::fold(udp_sum + a) {
        0 => 0xffff,
        c => c,
    };
    let h = &mut frame[ip..ip + 20];
    h[10..12].copy_from_slice(&ip_csum.to_be_bytes());
    h[12..16].copy_from_slice(&s.to_be_bytes());
    h[16..20].copy_from_slice(&d.to_be_bytes());
    frame[udp + 6..udp + 8].copy_from_slice(&udp_csum.to_be_bytes());
}

impl Fields {
    /// Writes source `s` and destination `d` (and the checksums they imply) into `frame`.
    #[inline(always)]
    fn write(self, frame: &mut [u8], s: u128, d: u128) {
        match self {
            Fields::Mac => {
                frame[field::DST].copy_from_slice(&d.to_be_bytes()[10..]);
                frame[field::SRC].copy_from_slice(&s.to_be_bytes()[10..]);
            }
            Fields::Ipv4 { ip, udp, ip_sum, udp_sum } => {
                write_ipv4(frame, ip, udp, ip_sum, udp_sum, s as u32, d as u32)
            }
            Fields::Ipv6 { ip, udp_sum } => write_ipv6(frame, ip, udp_sum, s, d),
        }
    }
}

#[cfg(test)]
mod tests;
