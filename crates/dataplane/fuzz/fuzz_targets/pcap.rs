//! Any bytes as a capture file → `pcap-input`'s reader ([`dataplane::drivers::pcap::read_capture`])
//! reads it to its end or stops with an error, without a panic or a hang: every frame it
//! hands over fits the room it was given, and a frame that does not is dropped as
//! `frame-too-long`, not cut. The room is a small buffer (2 KiB) so that both happen.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::PathBuf;
use std::sync::OnceLock;

/// Room for one frame: a buffer of the default data size.
const ROOM: usize = 2048;

/// This process's scratch file in /dev/shm (the reader reads files, as `pcap.read` names).
fn scratch() -> &'static PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = if std::path::Path::new("/dev/shm").is_dir() { "/dev/shm" } else { "/tmp" };
        PathBuf::from(dir).join(format!("vecflow-fuzz-pcap-{}", std::process::id()))
    })
}

fuzz_target!(|data: &[u8]| {
    std::fs::write(scratch(), data).expect("the scratch file");
    let mut bytes = 0;
    let read = dataplane::drivers::pcap::read_capture(scratch(), ROOM, |verdict| match verdict {
        Ok(len) => {
            assert!(len <= ROOM, "a frame of {len} bytes handed over in {ROOM}");
            bytes += len;
        }
        Err(reason) => {
            assert!(matches!(reason, dataplane::drivers::drops::PCAP_FRAME_TOO_LONG | dataplane::drivers::drops::PCAP_NOT_ETHERNET), "{reason:?}")
        }
    });
    // The frames came out of the file: no more bytes than it has.
    assert!(bytes <= data.len());
    if let Err(e) = read {
        assert!(!e.is_empty());
    }
});
