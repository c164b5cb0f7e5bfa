//! Worker threads: each owns its buffers and rx queues and runs vectors to completion.
//!
//! The loop polls each of its rx queues once per round; a poll that yields a vector runs it
//! through the graph right away. A round that yields nothing counts a suspend on the input
//! node, then waits as its queues' interfaces' `rx-mode` says:
//! - any queue `polling` or `busy-poll`: the next round starts at once (the worker owns its
//!   core; `busy-poll` AF_XDP queues also run the device's NAPI in each poll, see
//!   `drivers::af_xdp::busy_poll`);
//! - all `interrupt`: it sleeps in `poll(2)` on the queues' sockets until one has frames;
//! - otherwise (`adaptive` ones): it polls on for [`ADAPTIVE_SPIN_US`] of empty rounds,
//!   then sleeps as in interrupt mode.
//!
//! A sleep lasts at most [`WAIT_MAX_MS`], so the worker still sees its stop flag, table
//! updates and ARP and ND probes to send (frames from linux-cp's TAPs wake it at once); while asleep it is offline for QSBR (never waited for).
//! Generator and capture queues are always ready: a worker with one sleeps 50 µs after an
//! empty round (a paced replay). A worker never blocks on a lock, never allocates after
//! start-up and makes no per-packet system call.

use crate::datapath::Tables;
use crate::datapath::WorkerCounters;
use crate::datapath::{Features, Graph};
use crate::drivers::{RxPort, WorkerPorts};
use crate::l3::fib::Fibs;
use crate::neighbor::punt::Punt;
use crate::net::PollMode;
use crate::runtime::graph::Outbox;
use crate::runtime::qsbr::QsbrReader;
use crate::runtime::snapshot::TableReader;
use crate::runtime::tsc;
use std::net::IpAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;
use std::time::Duration;

/// How long an idle worker with generator or capture queues sleeps between rounds.
const IDLE_SLEEP: Duration = Duration::from_micros(50);
/// Empty rounds an `adaptive` worker polls on for before it sleeps, in microseconds.
pub const ADAPTIVE_SPIN_US: u64 = 200;
/// The longest sleep in `poll(2)`, in milliseconds.
pub const WAIT_MAX_MS: i32 = 10;

/// How an idle worker waits before its next round.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Starts the next round at once.
    Spin,
    /// Sleeps a fixed while (queues without descriptors).
    Nap,
    /// Sleeps in `poll(2)` on its queues.
    Poll,
}

/// How a worker with `ports` waits after an empty round, when it has been idle long enough
/// for an `adaptive` queue to sleep (`spun_enough`) or not.
fn how_to_wait(ports: &[RxPort], tables: &Tables, spun_enough: bool) -> Wait {
    let (mut adaptive, mut always_ready) = (false, false);
    for p in ports {
        match p.waitable().map(|(_, port)| tables.interfaces.get(port).rx_mode) {
            Some(PollMode::Polling | PollMode::BusyPoll) => return Wait::Spin,
            Some(PollMode::Adaptive) => adaptive = true,
            Some(PollMode::Interrupt) => {}
            None => always_ready = true,
        }
    }
    if always_ready {
        Wait::Nap
    } else if adaptive && !spun_enough {
        Wait::Spin
    } else {
        Wait::Poll
    }
}

/// Sleeps until one of `ports` is readable, linux-cp's eventfd `wake` says frames wait to be
/// sent (it is reset then), or [`WAIT_MAX_MS`] passed.
fn sleep_on(ports: &[RxPort], wake: Option<std::os::fd::RawFd>) {
    let mut fds = [libc::pollfd { fd: -1, events: libc::POLLIN, revents: 0 }; 65];
    let mut n = 0;
    for fd in wake.into_iter().chain(ports.iter().filter_map(RxPort::waitable).map(|(fd, _)| fd)).take(fds.len()) {
        fds[n].fd = fd;
        n += 1;
    }
    // SAFETY: `fds[..n]` are initialised pollfd entries, writable for the kernel's revents.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), n as libc::nfds_t, WAIT_MAX_MS) };
    if let Some(fd) = wake
        && ready > 0
        && fds[0].revents & libc::POLLIN != 0
    {
        crate::lcp::worker::clear_wake(fd);
    }
}

/// Everything a worker starts with.
pub struct WorkerSetup {
    /// Worker number, 0-based.
    pub id: u16,
    /// CPU to pin to, if any.
    pub core: Option<u16>,
    /// Packet buffers to allocate.
    pub buffers: u32,
    /// Bytes of frame each buffer holds (`buffers.data-size`).
    pub data_size: u16,
    /// Forwarding tables: the snapshot to start with.
    pub tables: Arc<Tables>,
    /// Where newer snapshots come from.
    pub updates: TableReader<Tables>,
    /// Its line to the main thread.
    pub punt: Punt,
    /// The IPv4 FIB.
    pub fib: Fibs,
    /// Where it announces quiescent states (between vectors); offline when the worker ends,
    /// also by a panic.
    pub qsbr: QsbrReader,
    /// Counters, shared with the main thread.
    pub counters: Arc<WorkerCounters>,
    /// The rx queues it polls.
    pub ports: Vec<RxPort>,
    /// Its buffer pool, when made before the worker starts (AF_XDP registers it as UMEM);
    /// `None`: the worker makes its own of `buffers` buffers.
    pub pool: Option<crate::runtime::buffer::BufferPool>,
    /// The transmit side of its ports: AF_PACKET send sockets, AF_XDP sockets (over `pool`),
    /// capture files.
    pub drivers: WorkerPorts,
    /// Set by the main thread to end the loop.
    pub stop: Arc<AtomicBool>,
    /// sFlow samplers and ring, when sFlow is on.
    pub sflow: Option<crate::sflow::SflowWorker<WorkerCounters>>,
    /// Its channels to linux-cp's control thread, when linux-cp is on.
    pub lcp: Option<crate::lcp::LcpWorker>,
}

/// Sends the ARP and ND probes the main thread asked for and runs them out; true when there
/// were any.
fn send_probes(g: &mut Graph) -> bool {
    let any = queue_probes(g);
    if any {
        g.run(tsc::now());
        if let Some(sf) = &mut g.features.sflow {
            sf.publish(&g.pool, &g.features.tables.interfaces, &g.features.tables.l3);
        }
    }
    any
}

/// Starts a worker thread named `vecflow-wk-N`.
pub fn spawn(setup: WorkerSetup) -> std::io::Result<JoinHandle<std::io::Result<()>>> {
    std::thread::Builder::new().name(format!("vecflow-wk-{}", setup.id)).spawn(move || run(setup))
}

fn run(mut s: WorkerSetup) -> std::io::Result<()> {
    crate::runtime::privileges::thread_start();
    if let Some(core) = s.core {
        crate::runtime::cpu::pin_current_thread(core)
            .map_err(|e| std::io::Error::new(e.kind(), format!("worker {}: pin to CPU {core}: {e}", s.id)))?;
    }
    let pool = match s.pool {
        Some(p) => p,
        None => crate::runtime::buffer::BufferPool::with_data_size(s.buffers, s.data_size)?,
    };
    let features = Features {
        drivers: s.drivers,
        tables: s.tables,
        fib: s.fib,
        sflow: s.sflow,
        flow_cache: None,
        punt: s.punt,
        lcp: s.lcp.take(),
    };
    let mut g = Graph::with_pool(pool, features, s.counters.clone());
    g.trace = crate::runtime::trace::Tracer::new(s.id);
    let c = &s.counters;
    c.looping.start_tsc.set(tsc::now());
    let mut buffers_low = g.pool.free_count() as u64;
    c.looping.buffers_low.set(buffers_low);
    let adaptive_spin = tsc::hz() / 1_000_000 * ADAPTIVE_SPIN_US;
    let mut idle_since: Option<u64> = None;
    while !s.stop.load(Relaxed) {
        s.updates.refresh(&mut g.features.tables);
        s.qsbr.quiescent();
        g.trace.refresh(&c.trace);
        if let Some(sf) = &mut g.features.sflow {
            sf.refresh();
        }
        let mut busy = send_probes(&mut g) | inject(&mut g);
        for port in &mut s.ports {
            let t0 = tsc::now();
            let got = port.poll(&mut g, t0);
            if got.is_none() && g.pending().is_empty() {
                continue;
            }
            let t1 = tsc::now();
            let input = &c.nodes[port.node().index()];
            if let Some(v) = got {
                input.calls.add(1);
                input.vectors.add(g.vectors[v].len() as u64);
                if g.trace.wants(port.node()) {
                    g.trace.mark_input(&mut g.pool, &g.vectors[v], t1);
                }
                g.forward(v, crate::ethernet::nodes::ETHERNET_INPUT);
            }
            input.clocks.add(tsc::ticks(t0, t1));
            g.run(t1);
            if g.trace.active {
                g.trace.finish(&c.trace);
            }
            if let Some(sf) = &mut g.features.sflow {
                sf.publish(&g.pool, &g.features.tables.interfaces, &g.features.tables.l3);
            }
            busy = true;
        }
        let now = tsc::now();
        c.looping.loops.add(1);
        c.looping.last_tsc.set(now);
        let free = g.pool.free_count() as u64;
        c.looping.buffers_free.set(free);
        if free < buffers_low {
            buffers_low = free;
            c.looping.buffers_low.set(free);
        }
        if busy {
            idle_since = None;
            continue;
        }
        for port in &s.ports {
            c.nodes[port.node().index()].suspends.add(1);
        }
        let spun_enough = tsc::ticks(*idle_since.get_or_insert(now), now) >= adaptive_spin;
        match how_to_wait(&s.ports, &g.features.tables, spun_enough) {
            Wait::Spin => std::hint::spin_loop(),
            Wait::Nap => std::thread::sleep(IDLE_SLEEP),
            Wait::Poll => {
                s.qsbr.offline();
                sleep_on(&s.ports, g.features.lcp.as_ref().map(crate::lcp::LcpWorker::wake_fd));
            }
        }
    }
    s.qsbr.offline();
    Ok(())
}

/// Queues the probes the main thread asked for: an ARP request or a neighbor solicitation
/// each, for `interface-output`. Returns whether there were any.
fn queue_probes(g: &mut Graph) -> bool {
    let mut out = Outbox::new(crate::interface::nodes::INTERFACE_OUTPUT);
    let mut any = false;
    while let Some(p) = g.features.punt.next_probe() {
        let made = match p.address {
            IpAddr::V4(_) => crate::ip4::arp::request(g, p.interface, p.address, p.mac),
            IpAddr::V6(_) => crate::ip6::nd::solicit(g, p.interface, p.address, p.mac),
        };
        if let Some(r) = made {
            out.push(g, r);
            any = true;
        }
    }
    out.finish(g);
    any
}

/// Sends what Linux wrote on linux-cp's TAPs for this worker's interfaces. True when there
/// was some.
fn inject(g: &mut Graph) -> bool {
    if g.features.lcp.is_none() || !crate::lcp::worker::inject(g) {
        return false;
    }
    g.run(tsc::now());
    if let Some(sf) = &mut g.features.sflow {
        sf.publish(&g.pool, &g.features.tables.interfaces, &g.features.tables.l3);
    }
    true
}
