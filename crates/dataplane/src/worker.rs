//! Worker threads: each owns its buffers and rx queues and runs vectors to completion.
//!
//! The loop polls each of its rx queues once per round; a poll that yields a vector runs it
//! through the graph right away. A round that yields nothing counts a suspend on the input
//! node and sleeps briefly (50 µs), so an idle worker does not burn its core. A worker never
//! blocks on a lock, never allocates after start-up and makes no per-packet system call.

use crate::drivers::RxPort;
use crate::drivers::af_packet::TxSockets;
use crate::drivers::pcap::PcapSinks;
use crate::fib::Fib;
use crate::graph::{Graph, NodeId, Outbox, WorkerCounters};
use crate::interface::Tables;
use crate::punt::Punt;
use crate::qsbr::QsbrReader;
use crate::snapshot::TableReader;
use crate::tsc;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long an idle worker sleeps between rounds.
const IDLE_SLEEP: Duration = Duration::from_micros(50);

/// Everything a worker starts with.
pub struct WorkerSetup {
    /// Worker number, 0-based.
    pub id: u16,
    /// CPU to pin to, if any.
    pub core: Option<u16>,
    /// Packet buffers to allocate.
    pub buffers: u32,
    /// Forwarding tables: the snapshot to start with.
    pub tables: Arc<Tables>,
    /// Where newer snapshots come from.
    pub updates: TableReader,
    /// Its line to the main thread.
    pub punt: Punt,
    /// The IPv4 FIB.
    pub fib: Arc<Fib>,
    /// Where it announces quiescent states (between vectors); offline when the worker ends,
    /// also by a panic.
    pub qsbr: QsbrReader,
    /// Counters, shared with the main thread.
    pub counters: Arc<WorkerCounters>,
    /// The rx queues it polls.
    pub ports: Vec<RxPort>,
    /// Its AF_PACKET send sockets.
    pub tx: TxSockets,
    /// The capture files its pcap interfaces transmit into.
    pub pcap_out: PcapSinks,
    /// Set by the main thread to end the loop.
    pub stop: Arc<AtomicBool>,
    /// sFlow samplers and ring, when sFlow is on.
    pub sflow: Option<crate::sflow::SflowWorker>,
}

/// Pins the calling thread to CPU `core`.
pub fn pin_current_thread(core: u16) -> std::io::Result<()> {
    if usize::from(core) >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("CPU {core} is not a CPU number")));
    }
    // SAFETY: `cpu_set_t` is plain data, zero is a valid (empty) set, and `core` is below
    // CPU_SETSIZE (checked above), so CPU_SET writes inside it; sched_setaffinity(0, ...)
    // targets the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Sends the ARP probes the main thread asked for and runs them out; true when there were any.
fn send_probes(g: &mut Graph) -> bool {
    let mut out = Outbox::new(NodeId::InterfaceOutput);
    let mut any = false;
    while let Some(p) = g.punt.next_probe() {
        if let Some(r) = crate::nodes::ip4_arp::request(g, p.interface, p.address, p.mac) {
            out.push(g, r);
            any = true;
        }
    }
    out.finish(g);
    if any {
        g.run(tsc::now());
        if let Some(sf) = &mut g.sflow {
            sf.publish(&g.pool, &g.tables);
        }
    }
    any
}

/// Starts a worker thread named `vecflow-wk-N`.
pub fn spawn(setup: WorkerSetup) -> std::io::Result<JoinHandle<std::io::Result<()>>> {
    std::thread::Builder::new().name(format!("vecflow-wk-{}", setup.id)).spawn(move || run(setup))
}

fn run(mut s: WorkerSetup) -> std::io::Result<()> {
    if let Some(core) = s.core {
        pin_current_thread(core)
            .map_err(|e| std::io::Error::new(e.kind(), format!("worker {}: pin to CPU {core}: {e}", s.id)))?;
    }
    let mut g = Graph::new(s.buffers, s.tables, s.fib, s.counters.clone())?;
    g.sflow = s.sflow.take();
    g.tx = std::mem::take(&mut s.tx);
    g.pcap_out = std::mem::take(&mut s.pcap_out);
    g.punt = s.punt;
    g.trace = crate::trace::Tracer::new(s.id);
    let c = &s.counters;
    c.looping.start_tsc.set(tsc::now());
    while !s.stop.load(Relaxed) {
        s.updates.refresh(&mut g.tables);
        s.qsbr.quiescent();
        g.trace.refresh(&c.trace);
        if let Some(sf) = &mut g.sflow {
            sf.refresh();
        }
        let mut busy = send_probes(&mut g);
        for port in &mut s.ports {
            let t0 = tsc::now();
            let got = port.poll(&mut g, t0);
            if got.is_none() && g.pending().is_empty() {
                continue;
            }
            let t1 = tsc::now();
            let input = &c.nodes[port.node() as usize];
            if let Some(v) = got {
                input.calls.add(1);
                input.vectors.add(g.vectors[v].len() as u64);
                if g.trace.wants(port.node()) {
                    g.trace.mark_input(&mut g.pool, &g.vectors[v], t1);
                }
                g.forward(v, NodeId::EthernetInput);
            }
            input.clocks.add(tsc::ticks(t0, t1));
            g.run(t1);
            if g.trace.active {
                g.trace.finish(&c.trace);
            }
            if let Some(sf) = &mut g.sflow {
                sf.publish(&g.pool, &g.tables);
            }
            busy = true;
        }
        c.looping.loops.add(1);
        c.looping.last_tsc.set(tsc::now());
        if !busy {
            for port in &s.ports {
                c.nodes[port.node() as usize].suspends.add(1);
            }
            std::thread::sleep(IDLE_SLEEP);
        }
    }
    s.qsbr.offline();
    Ok(())
}
