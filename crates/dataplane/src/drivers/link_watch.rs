//! The carrier and speed of host interfaces, read by a thread of its own (`vecflow-links`).
//! The sysfs `carrier` and `speed` files are read under the kernel's RTNL lock, which a
//! routing daemon (or `ip -batch`) installing routes holds most of the time: one read waited
//! 240 ms while a full table loaded. The main thread answers the API, so it only reads what
//! this thread last saw. The thread reads every watched carrier every [`PERIOD`] and speed
//! every second, and stays asleep while nothing is watched.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Once, PoisonError, Weak};
use std::time::Duration;

/// How often the thread reads each carrier.
pub const PERIOD: Duration = Duration::from_millis(5);

/// How often the thread reads each speed, in periods: once a second.
const SPEED_EVERY: u32 = 200;

/// One watched interface: its `carrier` and `speed` files, kept open (each read at offset 0
/// asks the kernel again, one system call), and what they last said.
#[derive(Debug)]
struct Watched {
    carrier: File,
    speed_file: Option<File>,
    up: AtomicBool,
    speed: AtomicU64,
}

impl Watched {
    fn read_speed(&self) {
        self.speed.store(self.speed_file.as_ref().map_or(0, read_speed), Relaxed);
    }
}

/// The interfaces watched; one whose [`WatchedLink`] is dropped is forgotten.
static WATCHED: Mutex<Vec<Weak<Watched>>> = Mutex::new(Vec::new());
static THREAD: Once = Once::new();

/// The carrier and speed of one host interface, as the watching thread last read them.
#[derive(Debug, Clone)]
pub struct WatchedLink(Arc<Watched>);

impl WatchedLink {
    /// Watches the interface of sysfs directory `dir` (`/sys/class/net/NAME`), read once
    /// now; `None` when its `carrier` file cannot be opened.
    pub fn watch(dir: &str) -> Option<WatchedLink> {
        let carrier = File::open(format!("{dir}/carrier")).ok()?;
        let speed_file = File::open(format!("{dir}/speed")).ok();
        let up = AtomicBool::new(read_carrier(&carrier));
        let watched = Arc::new(Watched { carrier, speed_file, up, speed: AtomicU64::new(0) });
        watched.read_speed();
        WATCHED.lock().unwrap_or_else(PoisonError::into_inner).push(Arc::downgrade(&watched));
        THREAD.call_once(|| {
            let spawned = std::thread::Builder::new().name("vecflow-links".into()).spawn(watch_all);
            if let Err(e) = spawned {
                tracing::error!("could not start the thread that reads links' carrier and speed: {e}");
            }
        });
        Some(WatchedLink(watched))
    }

    /// Up (administratively, and with carrier) when last read.
    pub fn up(&self) -> bool {
        self.0.up.load(Relaxed)
    }

    /// The speed in bits per second when last read, 0 when the kernel does not know it.
    pub fn speed(&self) -> u64 {
        self.0.speed.load(Relaxed)
    }
}

/// "1" with carrier; "0" without; EINVAL while the interface is administratively down, an
/// error once it is gone. Links that do not report a carrier (tun, some virtual ones) read
/// "1" while up.
fn read_carrier(file: &File) -> bool {
    let mut buf = [0u8; 4];
    file.read_at(&mut buf, 0).is_ok_and(|n| n > 0 && buf[0] == b'1')
}

/// Mbit/s in the file; -1 or an error (EINVAL on links that are down) when unknown: 0.
fn read_speed(file: &File) -> u64 {
    let mut buf = [0u8; 24];
    let n = file.read_at(&mut buf, 0).unwrap_or(0);
    let text = std::str::from_utf8(&buf[..n]).unwrap_or("");
    text.trim().parse::<i64>().ok().filter(|&s| s > 0).map_or(0, |mbps| mbps as u64 * 1_000_000)
}

/// The thread: reads every watched carrier, and every second every speed, forever (with no
/// capability: reading sysfs needs none).
fn watch_all() {
    crate::runtime::privileges::thread_start();
    for round in 1u32.. {
        let live: Vec<Arc<Watched>> = {
            let mut watched = WATCHED.lock().unwrap_or_else(PoisonError::into_inner);
            watched.retain(|w| w.strong_count() > 0);
            watched.iter().filter_map(Weak::upgrade).collect()
        };
        for w in &live {
            w.up.store(read_carrier(&w.carrier), Relaxed);
            if round.is_multiple_of(SPEED_EVERY) {
                w.read_speed();
            }
        }
        drop(live);
        std::thread::sleep(PERIOD);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopbacks_state_is_read_at_once_and_kept_read() {
        let lo = WatchedLink::watch("/sys/class/net/lo").expect("lo has a carrier file");
        assert!(lo.up(), "lo is up");
        assert_eq!(lo.speed(), 0, "lo has no speed");
        std::thread::sleep(PERIOD * 3);
        assert!(lo.up());
        assert!(WatchedLink::watch("/sys/class/net/no-such-if-x").is_none());
        let weak = Arc::downgrade(&lo.0);
        drop(lo);
        // Forgotten on the thread's next round, however late a busy machine runs it.
        let watched = || WATCHED.lock().unwrap().iter().any(|w| w.ptr_eq(&weak));
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while watched() {
            assert!(std::time::Instant::now() < deadline, "a dropped link is still watched after 60 s");
            std::thread::sleep(PERIOD);
        }
    }
}
