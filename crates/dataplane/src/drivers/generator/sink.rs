//! The `generator-tx` node: the sink that reads, counts and frees what the graph sends to a
//! generator interface.

use crate::drivers::DriversWorker;
use crate::drivers::GeneratorCounting;
use crate::interface::InterfaceCounters;
use crate::interface::TxRun;
use crate::runtime::buffer::BufferPool;
use crate::runtime::graph::Graph;
use crate::runtime::vector::VecHandle;

/// Reads frame `i` of `len` bytes once. Returns the XOR of its 8-byte little-endian words
/// and its first word. Frames of up to 64 bytes are read as the whole 64-byte line holding
/// them (a fixed-size read, no length-dependent branches); longer ones word by word, the last
/// word overlapping when the length is not a multiple of 8.
#[inline(always)]
fn read_frame(pool: &BufferPool, i: u32, len: usize) -> (u64, u64) {
    let (line, _) = pool.line(i).as_chunks::<8>();
    let first = u64::from_le_bytes(line[0]);
    if len <= 64 {
        return (line.iter().fold(0, |x, w| x ^ u64::from_le_bytes(*w)), first);
    }
    let f = pool.frame(i);
    let (words, _) = f.as_chunks::<8>();
    let last = u64::from_le_bytes(f[len - 8..].try_into().expect("8 bytes"));
    (words.iter().fold(last, |x, w| x ^ u64::from_le_bytes(*w)), first)
}

/// The `generator-tx` node: reads each frame once, counts it on its output interface (tx
/// packets, octets, unicast/multicast/broadcast) and in the sink totals, frees it.
#[inline(never)]
pub fn sink<F: DriversWorker>(g: &mut Graph<F>, v: VecHandle) {
    let mut digest = 0u64;
    let mut run = TxRun::default();
    for &i in g.vectors[v].indices() {
        let m = *g.pool.meta(i);
        if m.tx_if != run.tx_if {
            run.flush(g.counters.interface(run.tx_if));
            run = TxRun { tx_if: m.tx_if, ..TxRun::default() };
        }
        let (x, first) = read_frame(&g.pool, i, m.len() as usize);
        run.add_le(m.len(), first);
        digest ^= x;
    }
    run.flush(g.counters.interface(run.tx_if));
    let c = g.counters.generator();
    c.sink_packets.add(g.vectors[v].len() as u64);
    c.sink_digest.set(c.sink_digest.get() ^ digest);
    g.pool.free(g.vectors[v].indices());
    g.vectors.free(v);
}
