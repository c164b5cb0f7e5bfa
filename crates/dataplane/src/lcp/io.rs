//! The linux-cp control thread: writes punted frames to the TAPs and hands what Linux writes
//! on them to the worker that sends for their interface.

use super::worker::Frame;
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;

/// How long the thread waits for a TAP to be readable before it looks at the punted frames
/// again, when the last look found none: the most a punted frame waits.
const WAIT_MS: i32 = 1;

/// What the control thread counts per TAP.
#[derive(Debug, Default)]
pub struct TapCounters {
    /// Frames written to the TAP.
    pub punted: AtomicU64,
    /// Of those, the control class's (routing and neighbor protocols).
    pub punted_control: AtomicU64,
    /// Punted frames the TAP did not take (its queue full: nothing reads it in Linux).
    pub punt_lost: AtomicU64,
    /// Frames read from the TAP and handed to a worker.
    pub injected: AtomicU64,
    /// Frames read from the TAP and lost: no free byte buffer, or the worker's queue full.
    pub inject_lost: AtomicU64,
}

/// A TAP as the control thread uses it.
pub(super) struct TapIo {
    /// The vecflow interface.
    pub index: u16,
    /// The TAP, non-blocking.
    pub file: File,
    /// The worker that sends for the interface: where its frames go.
    pub worker: usize,
    /// Its counters (shown by `show lcp`).
    pub counters: Arc<TapCounters>,
}

/// The thread's ends of one worker's channels.
pub(super) struct WorkerLine {
    /// Frames the worker punted: the control class's, then the other class's.
    pub punted: [Receiver<Frame>; 2],
    /// Their byte buffers, back to it once written.
    pub spare: SyncSender<Vec<u8>>,
    /// Frames for it to send.
    pub inject: SyncSender<Frame>,
    /// Its eventfd, written when it has frames to send.
    pub wake: Arc<std::os::fd::OwnedFd>,
}

/// What the thread needs.
pub(super) struct Io {
    pub taps: Vec<TapIo>,
    pub workers: Vec<WorkerLine>,
    /// Byte buffers of injected frames, back from the workers.
    pub used: Receiver<Vec<u8>>,
    /// Empty byte buffers for frames read from the TAPs.
    pub free: Vec<Vec<u8>>,
    pub stop: Arc<AtomicBool>,
}

/// Starts the thread.
pub(super) fn spawn(io: Io) -> io::Result<JoinHandle<()>> {
    for t in &io.taps {
        set_nonblocking(&t.file)?;
    }
    std::thread::Builder::new().name("vecflow-lcp".into()).spawn(move || {
        crate::runtime::privileges::thread_start();
        run(io)
    })
}

fn set_nonblocking(f: &File) -> io::Result<()> {
    // SAFETY: fcntl on an open descriptor.
    let flags = unsafe { libc::fcntl(f.as_raw_fd(), libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(f.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn run(mut io: Io) {
    let by_index: BTreeMap<u16, usize> = io.taps.iter().enumerate().map(|(k, t)| (t.index, k)).collect();
    let mut fds: Vec<libc::pollfd> =
        io.taps.iter().map(|t| libc::pollfd { fd: t.file.as_raw_fd(), events: libc::POLLIN, revents: 0 }).collect();
    let mut busy = false;
    while !io.stop.load(Relaxed) {
        // While workers keep punting, the TAPs are only looked at, not waited for.
        let wait = if busy { 0 } else { WAIT_MS };
        // SAFETY: `fds` holds `fds.len()` pollfds of open descriptors.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait) };
        busy = false;
        io.free.extend(io.used.try_iter());
        if ready > 0 {
            let mut woken = vec![false; io.workers.len()];
            for (k, pfd) in fds.iter().enumerate() {
                if pfd.revents & libc::POLLIN != 0 && read_tap(&mut io.taps[k], &io.workers, &mut io.free) {
                    woken[io.taps[k].worker] = true;
                }
            }
            for (w, _) in io.workers.iter().zip(woken).filter(|(_, woken)| *woken) {
                super::worker::wake(&w.wake);
            }
        }
        // The control class first: a full TAP queue loses the bulk class's frames before its.
        for w in &io.workers {
            let (control, other) =
                (w.punted[0].try_iter().map(|f| (true, f)), w.punted[1].try_iter().map(|f| (false, f)));
            for (is_control, f) in control.chain(other) {
                busy = true;
                if let Some(&k) = by_index.get(&f.interface) {
                    // A full TAP queue (nothing reads it in Linux) loses the frame, as a
                    // link would.
                    let written = io.taps[k].file.write(&f.bytes).is_ok_and(|n| n == f.bytes.len());
                    let c = &io.taps[k].counters;
                    if written { &c.punted } else { &c.punt_lost }.fetch_add(1, Relaxed);
                    if written && is_control {
                        c.punted_control.fetch_add(1, Relaxed);
                    }
                }
                // Back to the worker: it holds at most as many as the channel does.
                let _ = w.spare.try_send(f.bytes);
            }
        }
    }
}

/// Reads what Linux wrote on `tap` (up to a vector's worth) and hands it to its worker; true
/// when it handed over any.
fn read_tap(tap: &mut TapIo, workers: &[WorkerLine], free: &mut Vec<Vec<u8>>) -> bool {
    let mut handed = false;
    let mut scratch = [0u8; 64];
    for _ in 0..crate::runtime::vector::VECTOR_SIZE {
        // No buffer free (the worker holds them all): the frame is read and lost, as a full
        // tx ring would lose it.
        let Some(mut bytes) = free.pop() else {
            if tap.file.read(&mut scratch).is_ok() {
                tap.counters.inject_lost.fetch_add(1, Relaxed);
            }
            return handed;
        };
        bytes.resize(super::worker::FRAME_BYTES, 0);
        match tap.file.read(&mut bytes) {
            Ok(n) if n > 0 => {
                bytes.truncate(n);
                match workers[tap.worker].inject.try_send(Frame { interface: tap.index, bytes }) {
                    Ok(()) => {
                        handed = true;
                        tap.counters.injected.fetch_add(1, Relaxed)
                    }
                    Err(TrySendError::Full(f) | TrySendError::Disconnected(f)) => {
                        free.push(f.bytes);
                        tap.counters.inject_lost.fetch_add(1, Relaxed)
                    }
                };
            }
            _ => {
                free.push(bytes);
                return handed;
            }
        }
    }
    handed
}
