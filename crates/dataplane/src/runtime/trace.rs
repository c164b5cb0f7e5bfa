//! The packet tracer (VPP's `trace add`): follows a few packets from an input node through
//! every node of the graph, recording after each node what it made of the packet.
//!
//! The main thread arms it ([`TraceShared::arm`]: an input node and a number of packets per
//! worker). Each worker notices between two rounds (one atomic load per round), marks the
//! first packets that input node delivers with [`TRACED`] in their metadata, and while such
//! packets are in the graph ([`Tracer::active`], one check per vector) records, after each
//! node ran on a vector holding some, each one's metadata and first bytes. A vector runs to
//! completion within one round, so at the round's end every traced packet has left the graph
//! and the worker hands the finished traces to the main thread ([`TraceShared::take`]).
//! Untraced, the tracer costs one predictable branch per vector.

use crate::runtime::buffer::{BufferMeta, BufferPool};
use crate::runtime::graph::NodeId;
use crate::runtime::published::Published;
use crate::runtime::vector::Vector;
use std::sync::Mutex;

/// `BufferMeta::flags` bit: the packet is traced.
pub const TRACED: u8 = 1;
/// `BufferMeta::flags` bit: the receive sampler took an sFlow sample of the packet.
pub const SAMPLED_RX: u8 = 2;
/// `BufferMeta::flags` bit: the transmit sampler took an sFlow sample of the packet.
pub const SAMPLED_TX: u8 = 4;
/// Bytes of the frame kept per trace entry.
pub const HEAD: usize = 64;
/// Most packets one `trace add` traces per worker.
pub const MAX_PACKETS: u32 = 10_000;

/// What a node left a traced packet as.
#[derive(Debug, Clone)]
pub struct TraceEntry {
    /// The node that ran.
    pub node: NodeId,
    /// TSC after it ran.
    pub tsc: u64,
    /// The packet's metadata after it ran.
    pub meta: BufferMeta,
    /// The frame's first bytes after it ran (`len` of them are valid).
    pub head: [u8; HEAD],
    /// How many of `head` are the frame's.
    pub len: usize,
}

/// One traced packet's path.
#[derive(Debug, Clone)]
pub struct PacketTrace {
    /// The worker that forwarded it.
    pub worker: u16,
    /// Node by node.
    pub entries: Vec<TraceEntry>,
}

/// A trace request, as the main thread arms it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// The input node whose packets are traced.
    pub input: NodeId,
    /// Packets to trace, per worker.
    pub count: u32,
}

/// What the main thread and one worker share about tracing.
#[derive(Debug, Default)]
pub struct TraceShared {
    /// The request being served (`None`: disarmed).
    request: Published<Option<Request>>,
    done: Mutex<Vec<PacketTrace>>,
}

impl TraceShared {
    /// Arms (`Some`) or disarms (`None`) the worker's tracer; the traces it finished stay.
    pub fn arm(&self, request: Option<Request>) {
        self.request.set(request);
    }

    /// The traces the worker finished so far, oldest first.
    pub fn finished(&self) -> Vec<PacketTrace> {
        self.done.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Forgets the finished traces.
    pub fn clear(&self) {
        self.done.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }
}

/// A worker's side of the tracer.
#[derive(Debug, Default)]
pub struct Tracer {
    /// The worker's number.
    worker: u16,
    /// The generation of the request being served.
    generation: u64,
    /// The input node being traced and the packets still to trace.
    armed: Option<(NodeId, u32)>,
    /// Traced packets may be in the graph (from marking to the end of the round).
    pub active: bool,
    /// The traces of this round: the buffer each packet is in, and its trace.
    packets: Vec<(u32, PacketTrace)>,
    /// The traced buffers of the vector the current node runs on.
    current: Vec<u32>,
}

/// The entry of buffer `i` as `node` left it.
fn entry(node: NodeId, pool: &BufferPool, i: u32, tsc: u64) -> TraceEntry {
    let frame = pool.frame(i);
    let len = frame.len().min(HEAD);
    let mut head = [0u8; HEAD];
    head[..len].copy_from_slice(&frame[..len]);
    TraceEntry { node, tsc, meta: *pool.meta(i), head, len }
}

impl Tracer {
    /// The tracer of worker `worker`, unarmed.
    pub fn new(worker: u16) -> Self {
        Tracer { worker, ..Tracer::default() }
    }

    /// Takes a new request from `shared` if the main thread armed or disarmed since the last
    /// look. One atomic load when nothing changed.
    #[inline]
    pub fn refresh(&mut self, shared: &TraceShared) {
        if let Some(request) = shared.request.changed_since(&mut self.generation) {
            self.armed = request.map(|r| (r.input, r.count));
        }
    }

    /// Whether packets from `input` are to be traced.
    #[inline]
    pub fn wants(&self, input: NodeId) -> bool {
        matches!(self.armed, Some((node, left)) if node == input && left > 0)
    }

    /// Marks the first packets of `v`, just delivered by the input node being traced, as
    /// traced (as many as are left to trace), recording the input node's entry for each.
    #[cold]
    pub fn mark_input(&mut self, pool: &mut BufferPool, v: &Vector, tsc: u64) {
        let Some((node, left)) = &mut self.armed else { return };
        let n = (*left as usize).min(v.len());
        for &i in &v.indices()[..n] {
            pool.meta_mut(i).flags |= TRACED;
            let first = entry(*node, pool, i, tsc);
            self.packets.push((i, PacketTrace { worker: self.worker, entries: vec![first] }));
        }
        *left -= n as u32;
        self.active |= n > 0;
    }

    /// Before a node runs on `v`: notes which of its packets are traced.
    #[cold]
    pub fn before(&mut self, pool: &BufferPool, v: &Vector) {
        self.current.clear();
        self.current.extend(v.indices().iter().copied().filter(|&i| pool.meta(i).flags & TRACED != 0));
    }

    /// After `node` ran: records for each packet noted by [`Tracer::before`] what it made of
    /// it. A traced packet the tracer did not know (one the graph made from a traced one,
    /// such as an ICMP error or a fragment) starts a trace of its own.
    #[cold]
    pub fn after(&mut self, node: NodeId, pool: &BufferPool, tsc: u64) {
        for &i in &self.current {
            let e = entry(node, pool, i, tsc);
            match self.packets.iter_mut().rev().find(|(b, _)| *b == i) {
                Some((_, p)) => p.entries.push(e),
                None => self.packets.push((i, PacketTrace { worker: self.worker, entries: vec![e] })),
            }
        }
    }

    /// At the end of a round: every traced packet has left the graph; hands the traces over.
    #[cold]
    pub fn finish(&mut self, shared: &TraceShared) {
        let mut done = shared.done.lock().unwrap_or_else(|p| p.into_inner());
        let room = (MAX_PACKETS as usize * 4).saturating_sub(done.len());
        done.extend(self.packets.drain(..).map(|(_, p)| p).take(room));
        self.packets.clear();
        self.active = false;
    }
}
