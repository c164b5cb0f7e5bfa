//! Fuzzes the sFlow decoder: any input must decode or fail cleanly, and whatever decodes must
//! re-encode to bytes that decode to the same datagram.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = sflow::decode(data) {
        let mut buf = vec![0u8; data.len() * 2 + 64];
        let n = sflow::encode(&d, &mut buf).expect("a decoded datagram re-encodes");
        let again = sflow::decode(&buf[..n]).expect("re-encoded datagram decodes");
        assert_eq!(again, d);
    }
});
