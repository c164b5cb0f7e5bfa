//! The per-worker graph runtime: node ids, the pending-vector queue, dispatch and splitting.
//!
//! A node receives a whole vector. When all its packets go to the same next node it hands the
//! vector on unchanged ([`Graph::forward`], O(1)); otherwise it writes each packet's next node
//! into [`Graph::nexts`] and calls [`Graph::split`], which builds one vector per next node.
//! [`Graph::run`] walks pending vectors depth-first, timing each node call with one TSC read.

use crate::interface::{IfCounters, MAX_INTERFACES, Tables};
use crate::l3::fib::Fibs;
use crate::runtime::buffer::BufferPool;
use crate::runtime::counter::Counter;
use crate::runtime::drops::{DropReason, N_REASONS};
use crate::runtime::stats::counter_set;
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
    Ip4Local = "ip4-local": "packets for this router's own addresses: answers ICMP echo requests, drops the rest",
    Ip4Arp = "ip4-arp": "packets whose next hop has no MAC: drops them and sends a rate-limited ARP request",
    Ip4Frag = "ip4-frag": "cuts packets larger than the output MTU (DF clear) into fragments",
    Icmp4Error = "icmp4-error": "sends ICMP time exceeded / unreachable / fragmentation needed about dropped packets, rate-limited",
    ArpInput = "arp-input": "answers ARP requests for the interface's addresses, reports senders to the neighbor table",
    Ip6Input = "ip6-input": "checks IPv6 version, payload length against the frame, multicast source and loopback destination",
    Ip6Lookup = "ip6-lookup": "longest-prefix match of the destination for a whole vector, the walks interleaved level by level with prefetching",
    FlowClassify = "flow-classify": "classifies frames of interfaces with flow rules (megaflow cache: EMC, Cuckoo Distributor, ranked subtables) and outputs, drops (acl) or passes them on",
    Ip6Rewrite = "ip6-rewrite": "checks hop limit and MTU, decrements the hop limit, pushes out-labels, writes next-hop and own MAC, sets the output interface",
    Ip6Local = "ip6-local": "IPv6 packets for this router: answers ICMPv6 echo requests and neighbor solicitations, learns from neighbor discovery, drops the rest",
    Ip6Nd = "ip6-nd": "IPv6 packets whose next hop has no MAC: drops them and sends a rate-limited neighbor solicitation",
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

counter_set! {
    /// One worker's sFlow sampler counters for one data source (physical port).
    SflowCounters,
    /// sFlow sampler counters of one data source (one worker or summed).
    SflowStats {
        /// Packets the sampler saw.
        seen,
        /// Packets the receive sampler saw that the graph then dropped: `seen − dropped` is
        /// the data source's sample pool (forwarded packets) on this worker.
        dropped,
        /// Samples copied into the ring.
        taken,
        /// Samples lost because the ring was full.
        ring_full,
        /// Discard samples copied into the ring.
        discards,
        /// Drops not reported because of the rate limit or a full ring.
        discards_lost,
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
    }
}

counter_set! {
    /// One worker's megaflow cache counters (`show flow-cache`).
    FlowCacheCounters,
    /// Summed over workers.
    FlowCacheStats {
        /// Packets classified.
        lookups,
        /// Answered by the exact-match cache.
        emc_hits,
        /// Answered by the subtable the Cuckoo Distributor predicted.
        cd_hits,
        /// Answered by the ranked megaflow search.
        dpcls_hits,
        /// Answered by the rule table (a megaflow installed).
        upcalls,
        /// Subtables probed for the CD and megaflow hits.
        subtables_probed,
    }
}

/// Everything a worker counts, shared read-only with the main thread.
pub struct WorkerCounters {
    /// Per node, indexed by `NodeId as usize`.
    pub nodes: Vec<NodeCounters>,
    /// Per interface, indexed by interface index.
    pub ifs: Vec<IfCounters>,
    /// Per input interface and drop reason: `errors[if_index * N_REASONS + reason]`.
    pub errors: Vec<Counter>,
    /// Generator and sink totals.
    pub generator: GenCounters,
    /// sFlow samplers, per data source (physical port index).
    pub sflow: Vec<SflowCounters>,
    /// Packets the worker made itself and events it reported.
    pub punt: crate::neighbor::punt::PuntCounters,
    /// Packets each flow rule matched, by rule id.
    pub flow_hits: Vec<Counter>,
    /// What the worker's megaflow cache did.
    pub flow_cache: FlowCacheCounters,
    /// Loop timing.
    pub looping: LoopCounters,
    /// Trace requests from the main thread and the traces finished.
    pub trace: crate::runtime::trace::TraceShared,
}

impl WorkerCounters {
    /// All counters at zero.
    pub fn new() -> Self {
        Self {
            nodes: (0..N_NODES).map(|_| NodeCounters::default()).collect(),
            ifs: (0..MAX_INTERFACES).map(|_| IfCounters::default()).collect(),
            errors: (0..MAX_INTERFACES * N_REASONS).map(|_| Counter::default()).collect(),
            generator: GenCounters::default(),
            sflow: (0..MAX_INTERFACES).map(|_| SflowCounters::default()).collect(),
            punt: Default::default(),
            flow_hits: (0..crate::flows::MAX_FLOWS).map(|_| Counter::default()).collect(),
            flow_cache: FlowCacheCounters::default(),
            looping: LoopCounters::default(),
            trace: Default::default(),
        }
    }

    /// The drop counter of `(input interface, reason)`.
    #[inline(always)]
    pub fn error(&self, rx_if: u16, reason: DropReason) -> &Counter {
        &self.errors[(rx_if as usize % MAX_INTERFACES) * N_REASONS + reason as usize]
    }

    /// The sFlow sampler counters of data source `port`.
    #[inline(always)]
    pub fn sflow(&self, port: u16) -> &SflowCounters {
        self.sflow.get(port as usize).unwrap_or(&self.sflow[0])
    }

    /// The counters of interface `index` (indices beyond the table share slot 0, "unknown").
    #[inline(always)]
    pub fn interface(&self, index: u16) -> &IfCounters {
        self.ifs.get(index as usize).unwrap_or(&self.ifs[0])
    }
}

impl Default for WorkerCounters {
    fn default() -> Self {
        Self::new()
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
    pub fn push(&mut self, g: &mut Graph, i: u32) {
        let v = *self.v.get_or_insert_with(|| g.vectors.alloc(0));
        g.vectors[v].push(i);
        if g.vectors[v].len() == VECTOR_SIZE {
            g.forward(v, self.next);
            self.v = None;
        }
    }

    /// Queues what is left.
    pub fn finish(self, g: &mut Graph) {
        if let Some(v) = self.v {
            g.forward(v, self.next);
        }
    }
}

/// One worker's graph state: its buffers and vectors, the tables it forwards with, and the
/// queue of vectors waiting for a node.
pub struct Graph {
    /// The worker's AF_XDP sockets (their UMEM is `pool`; declared first, so they close
    /// before the pool is unmapped).
    pub xsk: crate::drivers::af_xdp::XskSockets,
    /// The worker's packet buffers.
    pub pool: BufferPool,
    /// The instruction-set variant its SIMD nodes run ([`crate::runtime::isa::chosen`] when made).
    pub isa: crate::runtime::isa::Isa,
    /// The worker's megaflow cache for `flow-classify`, made when first needed, and the TSC
    /// of its last clock tick.
    pub flow_cache: Option<(classifier::MegaflowCache, u64)>,
    /// The worker's vectors.
    pub vectors: VectorPool,
    /// Forwarding tables (an immutable snapshot).
    pub tables: Arc<Tables>,
    /// The IPv4 and IPv6 FIBs (updated in place by the main thread).
    pub fib: Fibs,
    /// Counters shared with the main thread.
    pub counters: Arc<WorkerCounters>,
    /// Scratch: next node per packet of the vector being split.
    pub nexts: [NodeId; VECTOR_SIZE],
    /// sFlow samplers and sample ring, when sFlow is on.
    pub sflow: Option<crate::sflow::SflowWorker>,
    /// The worker's AF_PACKET send sockets (none until the worker opens them).
    pub tx: crate::drivers::af_packet::TxSockets,
    /// The capture files its pcap interfaces transmit into.
    pub pcap_out: crate::drivers::pcap::PcapSinks,
    /// Its line to the main thread and the limits on packets it makes itself.
    pub punt: crate::neighbor::punt::Punt,
    /// The packet tracer.
    pub trace: crate::runtime::trace::Tracer,
    pending: Vec<(NodeId, VecHandle)>,
}

impl Graph {
    /// A graph with `buffers` packet buffers, forwarding with `tables` and `fib`.
    pub fn new(buffers: u32, tables: Arc<Tables>, fib: Fibs, counters: Arc<WorkerCounters>) -> std::io::Result<Self> {
        Ok(Self::with_pool(BufferPool::new(buffers)?, tables, fib, counters))
    }

    /// A graph over buffer pool `pool`, forwarding with `tables` and `fib`.
    pub fn with_pool(pool: BufferPool, tables: Arc<Tables>, fib: Fibs, counters: Arc<WorkerCounters>) -> Self {
        Self {
            xsk: Default::default(),
            pool,
            isa: crate::runtime::isa::chosen(),
            flow_cache: None,
            vectors: VectorPool::new(),
            tables,
            fib,
            counters,
            nexts: [NodeId::ErrorDrop; VECTOR_SIZE],
            sflow: None,
            tx: Default::default(),
            pcap_out: Default::default(),
            trace: Default::default(),
            punt: crate::neighbor::punt::Punt::new(None, None, tsc::hz()),
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
        let c = &self.counters.nodes[node as usize];
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
    pub fn dispatch(&mut self, node: NodeId, v: VecHandle) {
        match node {
            NodeId::EthernetInput => crate::ethernet::input::run(self, v),
            NodeId::L2Xconnect => crate::ethernet::l2_xconnect::run(self, v),
            NodeId::Ip4Input => crate::ip4::input::run(self, v),
            NodeId::Ip4Lookup => crate::ip4::lookup::run(self, v),
            NodeId::Ip4Rewrite => crate::ip4::rewrite::run(self, v),
            NodeId::MplsInput => crate::mpls::input::run(self, v),
            NodeId::MplsLookup => crate::mpls::lookup::run(self, v),
            NodeId::MplsRewrite => crate::mpls::rewrite::run(self, v),
            NodeId::InterfaceOutput => crate::interface::output::run(self, v),
            NodeId::Ip4Local => crate::ip4::local::run(self, v),
            NodeId::Ip4Arp => crate::ip4::arp::run(self, v),
            NodeId::Ip4Frag => crate::ip4::frag::run(self, v),
            NodeId::Icmp4Error => crate::ip4::icmp_error::run(self, v),
            NodeId::ArpInput => crate::ip4::arp_input::run(self, v),
            NodeId::Ip6Input => crate::ip6::input::run(self, v),
            NodeId::Ip6Lookup => crate::ip6::lookup::run(self, v),
            NodeId::Ip6Rewrite => crate::ip6::rewrite::run(self, v),
            NodeId::FlowClassify => crate::flows::classify::run(self, v),
            NodeId::Ip6Local => crate::ip6::local::run(self, v),
            NodeId::Ip6Nd => crate::ip6::nd::run(self, v),
            NodeId::Icmp6Error => crate::ip6::icmp_error::run(self, v),
            NodeId::GeneratorTx => crate::drivers::generator::sink(self, v),
            NodeId::AfPacketTx => crate::drivers::af_packet::tx(self, v),
            NodeId::AfXdpTx => crate::drivers::af_xdp::tx(self, v),
            NodeId::PcapTx => crate::drivers::pcap::tx(self, v),
            NodeId::ErrorDrop => crate::interface::error_drop::run(self, v),
            NodeId::GeneratorInput | NodeId::AfPacketInput | NodeId::AfXdpInput | NodeId::PcapInput => {
                unreachable!("input nodes are polled, not queued")
            }
        }
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
            let c = &self.counters.nodes[node as usize];
            c.calls.add(1);
            c.vectors.add(n);
            c.clocks.add(tsc::ticks(t, t2));
            t = t2;
        }
        t
    }

    /// The IPv4 header of buffer `i`, at its `l3_offset`; `None` when the frame is too short
    /// to hold one. For the nodes' cold paths: hot loops read the fields in place.
    pub fn ipv4(&self, i: u32) -> Option<wire::Ipv4Packet<&[u8]>> {
        wire::Ipv4Packet::new_checked(self.pool.frame(i).get(usize::from(self.pool.meta(i).l3_offset)..)?).ok()
    }

    /// The IPv6 header of buffer `i`, at its `l3_offset`; `None` when the frame is too short
    /// to hold one. For the nodes' cold paths.
    pub fn ipv6(&self, i: u32) -> Option<wire::Ipv6Packet<&[u8]>> {
        wire::Ipv6Packet::new_checked(self.pool.frame(i).get(usize::from(self.pool.meta(i).l3_offset)..)?).ok()
    }

    /// Counts the packet in buffer `i` as taken by this router (answered in place): `rx_local`
    /// of its input interface, and not forwarded for sFlow's sample pool. Call it while the
    /// buffer's metadata still names the input interface.
    pub fn consumed(&self, i: u32) {
        let rx_if = self.pool.meta(i).rx_if;
        self.counters.interface(rx_if).rx_local.add(1);
        if let Some(sf) = &self.sflow {
            sf.consumed(self.tables.get(rx_if).port, &self.counters);
        }
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
