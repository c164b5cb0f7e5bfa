//! sFlow v5: data model, XDR encoder and decoder. Sans-I/O: bytes in, structs out, and back.
//!
//! - [`decode`] parses a datagram. It borrows header bytes and unknown records from the input
//!   (no copy), skips unknown sample and record types by their length (keeping them as
//!   `Unknown`), never panics on any input, and allocates at most in proportion to the input.
//! - [`DatagramBuilder`] writes a datagram into a caller's buffer without allocating, one sample
//!   at a time, and says when a sample would not fit ([`EncodeError::WouldNotFit`]).
//!   [`encode`] writes a whole [`Datagram`].
//!
//! Compact sample formats (0:1, 0:2) are written unless a value needs the expanded ones
//! (0:3, 0:4): a data source class above 255 or index above 2²⁴−1, or an interface value above
//! 2³⁰−2. See the sFlow v5 specification and `sflow_drops.txt` (discard samples, 0:5).

#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod decode;
mod encode;
mod model;
mod xdr;

pub use decode::{DecodeError, decode};
pub use encode::{DatagramBuilder, EncodeError, encode, sample_len};
pub use model::*;

/// The default sFlow collector UDP port.
pub const DEFAULT_PORT: u16 = 6343;
/// The usual maximum datagram size (no IP fragmentation, fits tunnels).
pub const DEFAULT_DATAGRAM_SIZE: usize = 1400;
