//! ICMP for IPv4 (RFC 792): the types vecflow answers or sends, and which ones are errors.

/// Echo reply.
pub const ECHO_REPLY: u8 = 0;
/// Destination unreachable (codes: 0 net, 1 host, 4 fragmentation needed and DF set).
pub const DEST_UNREACHABLE: u8 = 3;
/// Echo request.
pub const ECHO_REQUEST: u8 = 8;
/// Time exceeded (code 0: TTL exceeded in transit).
pub const TIME_EXCEEDED: u8 = 11;

/// Destination unreachable code: network unreachable.
pub const NET_UNREACHABLE: u8 = 0;
/// Destination unreachable code: host unreachable.
pub const HOST_UNREACHABLE: u8 = 1;
/// Destination unreachable code: fragmentation needed and DF set.
pub const FRAG_NEEDED: u8 = 4;
/// Destination unreachable code: communication administratively prohibited (RFC 1812).
pub const ADMIN_PROHIBITED: u8 = 13;

/// Length of the ICMP header (type, code, checksum, 4 bytes of rest-of-header).
pub const HEADER_LEN: usize = 8;

/// True for the ICMP error messages (and redirect) no ICMP error may be sent about
/// (RFC 1812 §4.3.2.7): destination unreachable, source quench, redirect, time exceeded,
/// parameter problem. Unknown types count as errors, the safe side.
pub fn is_error(icmp_type: u8) -> bool {
    !matches!(icmp_type, 0 | 8 | 9 | 10 | 13..=18)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_and_queries() {
        for t in [3, 4, 5, 11, 12, 40] {
            assert!(is_error(t), "type {t}");
        }
        for t in [0, 8, 13, 14] {
            assert!(!is_error(t), "type {t}");
        }
    }
}
