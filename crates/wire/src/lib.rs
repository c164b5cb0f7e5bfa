//! Zero-copy typed views over packet bytes.
//!
//! Every view wraps a byte slice (`&[u8]` or `&mut [u8]`) and is built with a checked
//! constructor (`new_checked`) that verifies the slice is long enough for the fixed header, so
//! the accessors never panic. Nothing here allocates or does I/O. Hot paths in the dataplane may
//! read fields directly; these views are the readable, tested definition of where each field is.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod arp;
pub mod checksum;
pub mod ethernet;
pub mod icmp;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv6;
pub mod mpls;
pub mod udp;

pub use ethernet::{EtherType, EthernetFrame, MacAddr, VlanTag};
pub use ipv4::Ipv4Packet;
pub use ipv6::Ipv6Packet;
pub use mpls::MplsLabel;
pub use udp::UdpDatagram;

/// The reason a view could not be built over a byte slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireError {
    /// The slice is shorter than the fixed header (`need` bytes, `have` bytes).
    Truncated {
        /// Bytes the header needs.
        need: usize,
        /// Bytes the slice has.
        have: usize,
    },
}

impl core::fmt::Display for WireError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WireError::Truncated { need, have } => {
                write!(f, "truncated: header needs {need} bytes, have {have}")
            }
        }
    }
}

impl std::error::Error for WireError {}

/// Checks that `buf` holds at least `need` bytes.
pub(crate) fn check_len(buf: &[u8], need: usize) -> Result<(), WireError> {
    if buf.len() < need { Err(WireError::Truncated { need, have: buf.len() }) } else { Ok(()) }
}

/// The big-endian `u16` of a two-byte header field (`ipv4::field::TOTAL_LEN`, …) of `header`.
#[inline(always)]
pub fn field_u16(header: &[u8], field: std::ops::Range<usize>) -> u16 {
    u16::from_be_bytes([header[field.start], header[field.start + 1]])
}

/// Reads a big-endian `u16` at `at`.
#[inline(always)]
pub(crate) fn be16(buf: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([buf[at], buf[at + 1]])
}

/// Reads a big-endian `u32` at `at`.
#[inline(always)]
pub(crate) fn be32(buf: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]])
}
