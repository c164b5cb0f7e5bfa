//! The carrier of host interfaces, read by a thread of its own (`vecflow-carrier`). The
//! sysfs `carrier` file is read under the kernel's RTNL lock, which a routing daemon (or `ip
//! -batch`) installing routes holds most of the time: one read waited 240 ms while a full
//! table loaded. The main thread answers the API, so it only reads what this thread last saw.
//! The thread reads every watched file every [`PERIOD`], and stays asleep while none is.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, Once, PoisonError, Weak};
use std::time::Duration;

/// How often the thread reads each carrier.
pub const PERIOD: Duration = Duration::from_millis(5);

/// One watched interface: its `carrier` file, kept open (each read at offset 0 asks the
/// kernel again, one system call), and what it last said.
#[derive(Debug)]
struct Watched {
    file: File,
    up: AtomicBool,
}

/// The interfaces watched; one whose [`Carrier`] is dropped is forgotten.
static WATCHED: Mutex<Vec<Weak<Watched>>> = Mutex::new(Vec::new());
static THREAD: Once = Once::new();

/// The carrier of one host interface, as the watching thread last read it.
#[derive(Debug, Clone)]
pub struct Carrier(Arc<Watched>);

impl Carrier {
    /// Watches the carrier file `path` (`/sys/class/net/NAME/carrier`), read once now; `None`
    /// when it cannot be opened.
    pub fn watch(path: &str) -> Option<Carrier> {
        let file = File::open(path).ok()?;
        let watched = Arc::new(Watched { up: AtomicBool::new(read(&file)), file });
        WATCHED.lock().unwrap_or_else(PoisonError::into_inner).push(Arc::downgrade(&watched));
        THREAD.call_once(|| {
            let spawned = std::thread::Builder::new().name("vecflow-carrier".into()).spawn(watch_all);
            if let Err(e) = spawned {
                tracing::error!("could not start the thread that reads links' carrier: {e}");
            }
        });
        Some(Carrier(watched))
    }

    /// Up (administratively, and with carrier) when last read.
    pub fn up(&self) -> bool {
        self.0.up.load(Relaxed)
    }
}

/// "1" with carrier; "0" without; EINVAL while the interface is administratively down, an
/// error once it is gone. Links that do not report a carrier (tun, some virtual ones) read
/// "1" while up.
fn read(file: &File) -> bool {
    let mut buf = [0u8; 4];
    file.read_at(&mut buf, 0).is_ok_and(|n| n > 0 && buf[0] == b'1')
}

/// The thread: reads every watched carrier, forever.
fn watch_all() {
    loop {
        let live: Vec<Arc<Watched>> = {
            let mut watched = WATCHED.lock().unwrap_or_else(PoisonError::into_inner);
            watched.retain(|w| w.strong_count() > 0);
            watched.iter().filter_map(Weak::upgrade).collect()
        };
        for w in &live {
            w.up.store(read(&w.file), Relaxed);
        }
        drop(live);
        std::thread::sleep(PERIOD);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopbacks_carrier_is_read_at_once_and_kept_read() {
        let lo = Carrier::watch("/sys/class/net/lo/carrier").expect("lo has a carrier file");
        assert!(lo.up(), "lo is up");
        std::thread::sleep(PERIOD * 3);
        assert!(lo.up());
        assert!(Carrier::watch("/sys/class/net/no-such-if-x/carrier").is_none());
        let weak = Arc::downgrade(&lo.0);
        drop(lo);
        std::thread::sleep(PERIOD * 3);
        let watched = WATCHED.lock().unwrap();
        assert!(!watched.iter().any(|w| w.ptr_eq(&weak)), "a dropped carrier is no longer watched");
    }
}
