//! `ip4-frag`: IPv4 packets too big for the output interface's MTU and without DF set, cut
//! into fragments (RFC 791) after `ip4-rewrite` has rewritten them.
//!
//! Each fragment is a fresh buffer: the packet's link-layer header (MACs, any pushed labels),
//! an IPv4 header — the first fragment's with all options, the others' with only the options
//! whose copied flag is set — and the next piece of data, a multiple of 8 bytes except in the
//! last. The fragments go to `interface-output` as packets this router made (the original
//! counts as forwarded on its input interface once), the original buffer is freed. A packet that
//! needs more buffers than are free is dropped whole as `no-buffer`.

use crate::interface::InterfaceCounters;
use crate::ip4::drops;
use crate::l3::L3Worker;
use crate::l3::RouteMeta;
use crate::runtime::buffer::MAX_DATA_SIZE;
use crate::runtime::drops::DropReason;
use crate::runtime::graph::Graph;
use crate::runtime::graph::Outbox;
use crate::runtime::vector::VecHandle;
use wire::ipv4::field;
use wire::{checksum, field_u16};

/// Processes one vector.
#[inline(never)]
pub fn run<F: L3Worker>(g: &mut Graph<F>, v: VecHandle) {
    let mut out = Outbox::new(crate::interface::nodes::INTERFACE_OUTPUT);
    let mut dropped = Outbox::new(crate::interface::nodes::ERROR_DROP);
    for k in 0..g.vectors[v].len() {
        let i = g.vectors[v].indices()[k];
        match fragment(g, i, &mut out) {
            Ok(()) => g.pool.free(&[i]),
            Err(reason) => {
                g.pool.meta_mut(i).error = reason.raw();
                dropped.push(g, i);
            }
        }
    }
    g.vectors.free(v);
    out.finish(g);
    dropped.finish(g);
}

/// The options of `options` (an IPv4 header's bytes after the first 20) that every fragment
/// carries (copied flag set), zero padded to a multiple of 4, and their length.
fn copied_options(options: &[u8]) -> ([u8; 40], usize) {
    let (mut out, mut n, mut at) = ([0u8; 40], 0, 0);
    while at < options.len() {
        match options[at] {
            0 => break,
            1 => at += 1,
            kind => {
                let len = usize::from(*options.get(at + 1).unwrap_or(&0));
                if len < 2 || at + len > options.len() {
                    break; // malformed: carry nothing further
                }
                if kind & 0x80 != 0 {
                    out[n..n + len].copy_from_slice(&options[at..at + len]);
                    n += len;
                }
                at += len;
            }
        }
    }
    (out, n.div_ceil(4) * 4)
}

/// Cuts buffer `i` into fragments for its output interface's MTU and adds them to `out`.
fn fragment<F: L3Worker>(g: &mut Graph<F>, i: u32, out: &mut Outbox) -> Result<(), DropReason> {
    let m = *g.pool.meta(i);
    let l2 = usize::from(m.l3_offset);
    // Labels pushed in front of the IP header (l2 beyond Ethernet's 14 bytes) count against
    // the MTU; a fragment never outgrows a buffer either.
    let mtu = usize::from(g.features.interfaces().get(m.tx_if).mtu)
        .saturating_sub(l2.saturating_sub(14))
        .min(g.pool.data_capacity() - l2);
    let f = g.pool.frame(i);
    let ip = &f[l2..];
    let ihl = usize::from(ip[field::VERSION_IHL] & 0x0f) * 4;
    let total = usize::from(field_u16(ip, field::TOTAL_LEN)).min(ip.len());
    let flags = field_u16(ip, field::FLAGS_FRAGMENT);
    let (more_after, offset) = (flags & 0x2000, flags & 0x1fff);
    let (later_options, later_opt_len) = copied_options(&ip[20..ihl]);
    let (first_step, later_step) = ((mtu.saturating_sub(ihl)) & !7, (mtu.saturating_sub(20 + later_opt_len)) & !7);
    let data = total - ihl;
    if first_step == 0 || later_step == 0 {
        return Err(crate::interface::drops::MTU_EXCEEDED);
    }
    let count = 1 + data.saturating_sub(first_step).div_ceil(later_step);
    if g.pool.settled_count() < count {
        return Err(drops::FRAG_NO_BUFFER);
    }
    let mut frame = [0u8; MAX_DATA_SIZE as usize];
    let mut pos = 0;
    while pos < data {
        let f = g.pool.frame(i);
        let ip = &f[l2..];
        let (hl, step) = if pos == 0 { (ihl, first_step) } else { (20 + later_opt_len, later_step) };
        let n = step.min(data - pos);
        let last = pos + n == data;
        frame[..l2].copy_from_slice(&f[..l2]);
        let h = &mut frame[l2..l2 + hl];
        h[..20].copy_from_slice(&ip[..20]);
        if pos == 0 {
            h[20..].copy_from_slice(&ip[20..ihl]);
        } else {
            h[20..].copy_from_slice(&later_options[..later_opt_len]);
        }
        h[field::VERSION_IHL] = 0x40 | (hl / 4) as u8;
        h[field::TOTAL_LEN].copy_from_slice(&((hl + n) as u16).to_be_bytes());
        let mf = if last { more_after } else { 0x2000 };
        h[field::FLAGS_FRAGMENT].copy_from_slice(&(mf | (offset + (pos / 8) as u16)).to_be_bytes());
        h[field::CHECKSUM].copy_from_slice(&[0, 0]);
        let csum = checksum::checksum(h);
        h[field::CHECKSUM].copy_from_slice(&csum.to_be_bytes());
        frame[l2 + hl..l2 + hl + n].copy_from_slice(&ip[ihl + pos..ihl + pos + n]);
        let piece = g.alloc_buffer().expect("counted free above");
        g.pool.write_frame(piece, &frame[..l2 + hl + n]);
        // Fragments are packets this router makes: the original counts as forwarded once.
        let pm = g.pool.meta_mut(piece);
        (pm.tx_if, pm.l3_offset) = (m.tx_if, m.l3_offset);
        pm.set_adj(m.adj());
        pm.set_dst_prefix_len(m.dst_prefix_len());
        out.push(g, piece);
        pos += n;
    }
    g.counters.interface(m.rx_if).rx_forwarded.add(1);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_copied_options_are_carried_padded() {
        // NOP, record route (not copied, len 7), security (copied 0x82, len 4), EOL.
        let opts = [1, 7, 7, 4, 0, 0, 0, 0, 0x82, 4, 0xaa, 0xbb, 0, 0, 0, 0];
        let (o, n) = copied_options(&opts);
        assert_eq!(n, 4);
        assert_eq!(&o[..4], &[0x82, 4, 0xaa, 0xbb]);
        assert_eq!(copied_options(&[0x83, 3, 9]).1, 4, "3 bytes padded to 4");
        assert_eq!(copied_options(&[0x83, 40]).1, 0, "a length past the end carries nothing");
    }
}
