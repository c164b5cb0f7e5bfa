//! The per-worker graph runtime: node ids, the pending-vector queue, dispatch and splitting.
//!
//! A node receives a whole vector. When all its packets go to the same next node it hands the
//! vector on unchanged ([`Graph::forward`], O(1)); otherwise it writes each packet's next node
//! into [`Graph::nexts`] and calls [`Graph::split`], which builds one vector per next node.
//! [`Graph::run`] walks pending vectors depth-first, timing each node call with one TSC read.
//!
//! The graph is generic over the features' state ([`Features`]): the runtime knows the closed
//! list of node ids and the buffers, and calls [`Features::dispatch`] to run a node, so it
//! knows no protocol. The datapath module above runtime and features fills it in.

use crate::runtime::buffer::BufferPool;
use crate::runtime::drops::DropReason;
use crate::runtime::stats::counter_set;
use crate::runtime::trace::Tracer;
use crate::runtime::tsc;
use crate::runtime::vector::{VECTOR_SIZE, VecHandle, VectorPool};
use std::sync::Arc;

macro_rules! node_ids {
    ($($variant:ident = $name:literal: $desc:literal,)*) => {
        /// Every node of the graph. Input nodes (drivers' rx) are called by the worker loop;
        /// the rest are reached through vectors.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum NodeId {
            $(#[doc = $desc] $variant,)*
        }

        impl NodeId {
            /// Every node, in index order.
            pub const ALL: &'static [NodeId] = &[$(NodeId::$variant),*];

            /// The node's name as `show runtime` prints it.
            pub fn name(self) -> &'static str {
                match self { $(NodeId::$variant => $name,)* }
            }
        }
    };
}

node_ids! {
    GeneratorInput = "generator-input": "the embedded generator's rx side: fills fresh frames from stream templates",
    AfPacketInput = "af-packet-input": "copies frames from AF_PACKET rx rings into buffers, restoring stripped VLAN tags and offloaded checksums",
    AfXdpInput = "af-xdp-input": "hands frames the kernel wrote into our buffers (AF_XDP rx ring) to the graph as they are, refills the fill ring",
    PcapInput = "pcap-input": "copies frames of a pcap or pcapng file into buffers, once or looping, paced to a rate",
    EthernetInput = "ethernet-input": "checks frame length and interface state, counts unicast/multicast/broadcast, dispatches by interface mode and ethertype",
    L2Xconnect = "l2-xconnect": "sets the output interface to the cross-connected peer",
    Ip4Input = "ip4-input": "checks IPv4 version, header length, total length, checksum and TTL",
    Ip4Lookup = "ip4-lookup": "longest-prefix match of the destination for a whole vector, with prefetching",
    Ip4Rewrite = "ip4-rewrite": "checks TTL and MTU, decrements TTL (incremental checksum), pushes out-labels, writes next-hop and own MAC, sets the output interface",
    Ip4Local = "ip4-local": "packets for this router's own addresses: answers ICMP echo requests, drops the rest (or, with linux-cp, sends it up the TAP)",
    Ip4Arp = "ip4-arp": "packets whose next hop has no MAC: drops them and sends a rate-limited ARP request",
    Ip4Frag = "ip4-frag": "cuts packets larger than the output MTU (DF clear) into fragments",
    Icmp4Error = "icmp4-error": "sends ICMP time exceeded / unreachable / fragmentation needed about dropped packets, rate-limited",
    ArpInput = "arp-input": "answers ARP requests for the interface's addresses, reports senders to the neighbor table",
    Ip6Input = "ip6-input": "checks IPv6 version, payload length against the frame, multicast source and loopback destination",
    Ip6Lookup = "ip6-lookup": "longest-prefix match of the destination for a whole vector, the walks interleaved level by level with prefetching",
    FlowClassify = "flow-classify": "classifies frames of interfaces with flow rules (megaflow cache: EMC, Cuckoo Distributor, ranked subtables) and outputs, drops (acl) or passes them on",
    Ip6Rewrite = "ip6-rewrite": "checks hop limit and MTU, decrements the hop limit, pushes out-labels, writes next-hop and own MAC, sets the output interface",
    Ip6Local = "ip6-local": "IPv6 packets for this router: answers ICMPv6 echo requests and neighbor solicitations, learns from neighbor discovery, drops the rest (or, with linux-cp, sends it up the TAP)",
    Ip6Nd = "ip6-nd": "IPv6 packets whose next hop has no MAC: drops them and sends a rate-limited neighbor solicitation",
    LcpPunt = "linux-cp-punt": "packets for the router that vecflow does not answer: copied up the TAP of their input interface (linux-cp), freed",
    Icmp6Error = "icmp6-error": "sends ICMPv6 time exceeded / destination unreachable / packet too big about dropped packets, rate-limited",
    MplsInput = "mpls-input": "checks the top label stack entry is present and its TTL is above 1",
    MplsLookup = "mpls-lookup": "finds the local-label entry of the top label: swap, or pop at end of stack",
    MplsRewrite = "mpls-rewrite": "swaps the top label (TTL-1) and writes MACs, or pops the last label and hands IPv4 to ip4-input",
    InterfaceOutput = "interface-output": "checks the output interface's state and MTU, counts tx, hands frames to the driver",
    GeneratorTx = "generator-tx": "the generator's tx side (sink): reads each frame once and frees it",
    AfPacketTx = "af-packet-tx": "sends frames on AF_PACKET sockets, one sendmmsg per run of frames for one interface",
    AfXdpTx = "af-xdp-tx": "puts frames on AF_XDP tx rings (the buffers themselves, no copy) and wakes the kernel",
    PcapTx = "pcap-tx": "writes frames to the interface's capture file (or only counts them), frees them",
    ErrorDrop = "error-drop": "counts each dropped frame per input interface and reason, frees it",
}

impl NodeId {
    /// The drivers' rx input nodes (polled by workers, never queued).
    pub const INPUTS: &'static [NodeId] =
        &[NodeId::GeneratorInput, NodeId::AfPacketInput, NodeId::AfXdpInput, NodeId::PcapInput];
}

/// Number of graph nodes.
pub const N_NODES: usize = NodeId::ALL.len();
const _: () = assert!(N_NODES * N_NODES < VectorPool::CAPACITY);

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
            nexts: [NodeId::ErrorDrop; VECTOR_SIZE],
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
        let mut outs: [Option<VecHandle>; N_NODES] = [None; N_NODES];
        let port = self.vectors[v].port;
        for k in 0..self.vectors[v].len() {
            let next = self.nexts[k] as usize;
            let h = *outs[next].get_or_insert_with(|| self.vectors.alloc(port));
            let i = self.vectors[v].indices()[k];
            self.vectors[h].push(i);
        }
        self.vectors.free(v);
        for (node, h) in NodeId::ALL.iter().zip(outs) {
            if let Some(h) = h {
                self.pending.push((*node, h));
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
        self.pool.meta_mut(buffer).error = reason as u16;
        self.nexts[k] = NodeId::ErrorDrop;
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
