//! XDR (RFC 4506) primitives: a bounds-checked reader and a writer into a fixed buffer.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Rounds `n` up to a multiple of 4.
pub const fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

/// Why reading failed, with the offset from the start of the datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Short {
    /// Offset where the read started.
    pub at: usize,
    /// Bytes wanted.
    pub need: usize,
}

/// A cursor over a byte slice. `base` is the slice's offset within the datagram, for errors.
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    /// Reads `buf`, which starts at datagram offset `base`.
    pub fn new(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }

    /// Offset of the next byte within the datagram.
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Takes the next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Short> {
        if n > self.remaining() {
            return Err(Short { at: self.offset(), need: n });
        }
        let b = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(b)
    }

    /// Takes a fixed-size array.
    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], Short> {
        Ok(self.bytes(N)?.try_into().expect("N bytes"))
    }

    /// An unsigned int.
    pub fn u32(&mut self) -> Result<u32, Short> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    /// An unsigned hyper.
    pub fn u64(&mut self) -> Result<u64, Short> {
        Ok(u64::from_be_bytes(self.array()?))
    }

    /// Variable-length opaque: length, bytes, padding. Returns the bytes.
    pub fn opaque(&mut self) -> Result<&'a [u8], Short> {
        let at = self.offset();
        let n = self.u32()? as usize;
        let padded = pad4(n.min(usize::MAX - 3));
        let b = self.bytes(padded).map_err(|_| Short { at, need: padded.saturating_add(4) })?;
        Ok(&b[..n])
    }

    /// A reader over the next `n` bytes (a TLV body); this reader moves past them.
    pub fn sub(&mut self, n: usize) -> Result<Reader<'a>, Short> {
        let base = self.offset();
        Ok(Reader::new(self.bytes(n)?, base))
    }

    /// An `address` union: type 0 = none, 1 = IPv4, 2 = IPv6. `Ok(Err(t))` for another type.
    pub fn address(&mut self) -> Result<Result<Option<IpAddr>, u32>, Short> {
        Ok(match self.u32()? {
            0 => Ok(None),
            1 => Ok(Some(IpAddr::V4(Ipv4Addr::from(self.array::<4>()?)))),
            2 => Ok(Some(IpAddr::V6(Ipv6Addr::from(self.array::<16>()?)))),
            t => Err(t),
        })
    }
}

/// A writer into a caller's buffer. The caller checks the size beforehand; writing past the
/// end is a bug and panics.
pub struct Writer<'b> {
    buf: &'b mut [u8],
    pos: usize,
}

impl<'b> Writer<'b> {
    /// Writes into `buf` from offset `pos`.
    pub fn at(buf: &'b mut [u8], pos: usize) -> Self {
        Writer { buf, pos }
    }

    /// Offset of the next byte.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Raw bytes (no padding).
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf[self.pos..self.pos + b.len()].copy_from_slice(b);
        self.pos += b.len();
    }

    /// An unsigned int.
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_be_bytes());
    }

    /// An unsigned hyper.
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_be_bytes());
    }

    /// Zero bytes up to the next multiple of 4 of `n` written bytes.
    pub fn pad(&mut self, n: usize) {
        let p = pad4(n) - n;
        self.bytes(&[0u8; 3][..p]);
    }

    /// Variable-length opaque: length, bytes, padding.
    pub fn opaque(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.bytes(b);
        self.pad(b.len());
    }

    /// An `address` union.
    pub fn address(&mut self, a: Option<IpAddr>) {
        match a {
            None => self.u32(0),
            Some(IpAddr::V4(v4)) => {
                self.u32(1);
                self.bytes(&v4.octets());
            }
            Some(IpAddr::V6(v6)) => {
                self.u32(2);
                self.bytes(&v6.octets());
            }
        }
    }
}

/// Encoded size of an `address` union.
pub fn address_len(a: Option<IpAddr>) -> usize {
    match a {
        None => 4,
        Some(IpAddr::V4(_)) => 8,
        Some(IpAddr::V6(_)) => 20,
    }
}
