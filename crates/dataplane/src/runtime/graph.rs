//! The per-worker graph runtime: node ids, the pending-vector queue, dispatch and splitting.
//!
//! A node receives a whole vector. When all its packets go to the same next node it hands the
//! vector on unchanged ([`Graph::forward`], O(1)); otherwise it writes each packet's next node
//! into [`Graph::nexts`] and calls [`Graph::split`], which builds one vector per next node.
//! [`Graph::run`] walks pending vectors depth-first, timing each node call with one TSC read.
//!
//! The graph is generic over the features' state ([`Features`]): the runtime knows node ids
//! only as indices ([`NodeId`]; each feature declares its own nodes with [`declare_nodes!`])
//! and the buffers, and calls [`Features::dispatch`] to run a node, so it knows no protocol
//! and no node. The datapath module above runtime and features fills it in.

use crate::runtime::buffer::BufferPool;
use crate::runtime::drops::DropReason;
use crate::runtime::stats::counter_set;
use crate::runtime::trace::Tracer;
use crate::runtime::tsc;
use crate::runtime::vector::{VECTOR_SIZE, VecHandle, VectorPool};
use std::sync::Arc;

/// A node of the graph: its index in the list the features declare together (each feature
/// its own nodes, `ip4::nodes::IP4_INPUT`, with [`declare_nodes!`]; `datapath` gathers them
/// and checks that their indices run from 0 without a gap). The runtime names none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(u8);

impl NodeId {
    /// The node at `index` of the declared list.
    pub const fn new(index: u8) -> Self {
        NodeId(index)
    }

    /// Its index in the declared list (of per-node counters, of the split's outputs).
    #[inline(always)]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// What `show runtime` tells of a node: its id, its name and what it does.
#[derive(Debug, Clone, Copy)]
pub struct NodeInfo {
    /// Its id.
    pub id: NodeId,
    /// Its name, as `show runtime` prints it.
    pub name: &'static str,
    /// One line saying what it does.
    pub description: &'static str,
}

/// Declares a feature's nodes: for each `CONST = index, "name", "what it does";` a
/// `pub const CONST: NodeId` (documented by its description), and `NODES`, the list of their
/// [`NodeInfo`] that `datapath` gathers with every other feature's.
macro_rules! declare_nodes {
    ($($konst:ident = $index:literal, $name:literal, $desc:literal;)*) => {
        $(
            #[doc = $desc]
            pub const $konst: $crate::runtime::graph::NodeId = $crate::runtime::graph::NodeId::new($index);
        )*

        /// The nodes declared here, for `show runtime`.
        pub const NODES: &[$crate::runtime::graph::NodeInfo] =
            &[$($crate::runtime::graph::NodeInfo { id: $konst, name: $name, description: $desc }),*];
    };
}
pub(crate) use declare_nodes;

/// The most nodes a graph can have: the width of the split's table of outputs.
pub const MAX_NODES: usize = 64;

counter_set! {
    /// One worker's runtime counters for one node.
    NodeCounters,
    /// Runtime counters of one node (one worker or summed).
    NodeStats {
        /// Times the node was called with a vector (input nodes: polls that produced packets).
        calls,
        /// Packets processed (VPP calls these "vectors").
        vectors,
        /// Input nodes only: polls that found nothing to do, after which the worker idled.
        suspends,
        /// TSC ticks spent in the node.
        clocks,
        /// Packets of `vectors` the node handled inside another node's fused pass (e.g.
        /// `ip4-input` inside `ethernet-input`): their ticks are in that node's `clocks`.
        fused,
    }
}

counter_set! {
    /// One worker's loop timing.
    LoopCounters,
    /// A worker's loop timing.
    LoopStats {
        /// TSC when the worker started forwarding.
        start_tsc,
        /// TSC at the last loop iteration.
        last_tsc,
        /// Loop iterations.
        loops,
        /// Buffers free in the worker's pool at the last loop iteration.
        buffers_free,
        /// The fewest buffers the pool had free at the end of any loop iteration.
        buffers_low,
    }
}

/// Gathers the buffers a node makes (replies, errors, fragments) into vectors for one next
/// node: full vectors are queued as they fill, the last one by [`Outbox::finish`].
pub struct Outbox {
    next: NodeId,
    v: Option<VecHandle>,
}

impl Outbox {
    /// An empty outbox for node `next`.
    pub fn new(next: NodeId) -> Self {
        Outbox { next, v: None }
    }

    /// Adds buffer `i`.
    pub fn push<F: Features>(&mut self, g: &mut Graph<F>, i: u32) {
        let v = *self.v.get_or_insert_with(|| g.vectors.alloc(0));
        g.vectors[v].push(i);
        if g.vectors[v].len() == VECTOR_SIZE {
            g.forward(v, self.next);
            self.v = None;
        }
    }

    /// Queues what is left.
    pub fn finish<F: Features>(self, g: &mut Graph<F>) {
        if let Some(v) = self.v {
            g.forward(v, self.next);
        }
    }
}

/// What the features add to a worker's graph: their per-worker state, their counters, and the
/// one `match` that runs a node on a vector.
pub trait Features: Sized {
    /// Everything a worker counts, shared read-only with the main thread.
    type Counters: CountsNodes;

    /// The node that counts and frees dropped packets ([`Graph::mark_drop`] sends them there).
    const ERROR_DROP: NodeId;

    /// Runs node `node` on vector `v`.
    fn dispatch(g: &mut Graph<Self>, node: NodeId, v: VecHandle);
}

/// A worker's counters as the runtime sees them: one set per node.
pub trait CountsNodes {
    /// The runtime counters of `node`.
    fn node(&self, node: NodeId) -> &NodeCounters;
}

/// One worker's graph state: its buffers and vectors, the features' state, and the queue of
/// vectors waiting for a node.
pub struct Graph<F: Features> {
    /// The features' per-worker state (declared first, so AF_XDP sockets close before the
    /// pool holding their UMEM is unmapped).
    pub features: F,
    /// The worker's packet buffers.
    pub pool: BufferPool,
    /// The instruction-set variant its SIMD nodes run ([`crate::runtime::isa::chosen`] when made).
    pub isa: crate::runtime::isa::Isa,
    /// The worker's vectors.
    pub vectors: VectorPool,
    /// Counters shared with the main thread.
    pub counters: Arc<F::Counters>,
    /// Scratch: next node per packet of the vector being split.
    pub nexts: [NodeId; VECTOR_SIZE],
    /// The packet tracer.
    pub trace: Tracer,
    pending: Vec<(NodeId, VecHandle)>,
}

impl<F: Features> Graph<F> {
    /// A graph over buffer pool `pool`, with the features' state `features`.
    pub fn with_pool(pool: BufferPool, features: F, counters: Arc<F::Counters>) -> Self {
        Self {
            features,
            pool,
            isa: crate::runtime::isa::chosen(),
            vectors: VectorPool::new(),
            counters,
            nexts: [F::ERROR_DROP; VECTOR_SIZE],
            trace: Default::default(),
            pending: Vec::with_capacity(VectorPool::CAPACITY),
        }
    }

    /// Queues vector `v` for node `next`, unchanged.
    #[inline(always)]
    pub fn forward(&mut self, v: VecHandle, next: NodeId) {
        self.pending.push((next, v));
    }

    /// Splits vector `v` by `self.nexts[k]` (the next node of its k-th packet), keeping the
    /// packets' order within each new vector, and queues the new vectors.
    pub fn split(&mut self, v: VecHandle) {
        let mut outs: [Option<VecHandle>; MAX_NODES] = [None; MAX_NODES];
        let mut used = 0u64;
        let port = self.vectors[v].port;
        for k in 0..self.vectors[v].len() {
            let next = self.nexts[k].index();
            let h = *outs[next].get_or_insert_with(|| {
                used |= 1 << next;
                self.vectors.alloc(port)
            });
            let i = self.vectors[v].indices()[k];
            self.vectors[h].push(i);
        }
        self.vectors.free(v);
        // In node order, as the nodes' indices go.
        while used != 0 {
            let next = used.trailing_zeros() as usize;
            used &= used - 1;
            if let Some(h) = outs[next] {
                self.pending.push((NodeId::new(next as u8), h));
            }
        }
    }

    /// Counts a call of `node` on a vector of `n` packets that a fused pass made inside the
    /// running node (whose ticks include it): the calls and packets show as `node`'s, and how
    /// many were fused.
    #[inline]
    pub fn count_fused(&self, node: NodeId, n: u64) {
        let c = self.counters.node(node);
        c.calls.add(1);
        c.vectors.add(n);
        c.fused.add(n);
    }

    /// Sends packet `k` of the vector being split to `error-drop` with `reason`.
    #[inline]
    pub fn mark_drop(&mut self, k: usize, buffer: u32, reason: DropReason) {
        self.pool.meta_mut(buffer).error = reason.raw();
        self.nexts[k] = F::ERROR_DROP;
    }

    /// The vectors waiting, as (node, handle), last queued last.
    pub fn pending(&self) -> &[(NodeId, VecHandle)] {
        &self.pending
    }

    /// Removes and returns the most recently queued vector, without running it.
    pub fn take_pending(&mut self) -> Option<(NodeId, VecHandle)> {
        self.pending.pop()
    }

    /// Runs node `node` on vector `v` once (no timing). Tests use it to check one node.
    #[inline(always)]
    pub fn dispatch(&mut self, node: NodeId, v: VecHandle) {
        F::dispatch(self, node, v)
    }

    /// Runs every pending vector to completion, charging each node call its TSC ticks.
    /// `t` is the TSC at entry; returns the TSC at exit.
    pub fn run(&mut self, mut t: u64) -> u64 {
        self.pool.settle();
        while let Some((node, v)) = self.pending.pop() {
            let n = self.vectors[v].len() as u64;
            if self.trace.active {
                self.trace.before(&self.pool, &self.vectors[v]);
            }
            self.dispatch(node, v);
            let t2 = tsc::now();
            if self.trace.active {
                self.trace.after(node, &self.pool, t2);
            }
            let c = self.counters.node(node);
            c.calls.add(1);
            c.vectors.add(n);
            c.clocks.add(tsc::ticks(t, t2));
            t = t2;
        }
        t
    }

    /// A fresh buffer for a packet the worker makes itself (a reply, an ICMP error, an ARP
    /// request, a fragment), or `None` when none is free. Never a buffer freed during the
    /// current run (see [`BufferPool::settle`]).
    pub fn alloc_buffer(&mut self) -> Option<u32> {
        self.pool.alloc_settled()
    }

    /// Copies `frames` into fresh buffers as one vector received on interface `port` and
    /// returns it (not queued). Returns `None` when the pool has too few free buffers.
    /// Used by tests and by capture-replay drivers; at most [`VECTOR_SIZE`] frames.
    pub fn inject(&mut self, port: u16, frames: &[&[u8]]) -> Option<VecHandle> {
        assert!(frames.len() <= VECTOR_SIZE);
        if self.pool.free_count() < frames.len() {
            return None;
        }
        let v = self.vectors.alloc(port);
        let n = self.pool.alloc(&mut self.vectors[v].slots_mut()[..frames.len()]);
        self.vectors[v].set_len(n);
        self.pool.settle();
        for (k, f) in frames.iter().enumerate() {
            let i = self.vectors[v].indices()[k];
            self.pool.write_frame(i, f);
            self.pool.meta_mut(i).rx_if = port;
        }
        Some(v)
    }
}
