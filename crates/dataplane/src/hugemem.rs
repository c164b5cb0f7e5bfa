//! Large zeroed memory regions backed by anonymous mappings with transparent huge pages.

use std::ptr::NonNull;

/// A zero-initialised, page-aligned byte region, advised to use transparent huge pages.
pub struct HugeRegion {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the region is plain memory owned by this value; access goes through `&`/`&mut self`.
unsafe impl Send for HugeRegion {}
// SAFETY: shared access only hands out `&[u8]`.
unsafe impl Sync for HugeRegion {}

impl HugeRegion {
    /// Maps `len` bytes (rounded up to 2 MiB) of zeroed memory.
    pub fn new(len: usize) -> std::io::Result<Self> {
        const HUGE: usize = 2 << 20;
        let len = len.max(1).div_ceil(HUGE) * HUGE;
        // SAFETY: an anonymous private mapping with no address hint; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `p..p+len` is the mapping just created. Huge pages are only advice: failure is harmless.
        unsafe { libc::madvise(p, len, libc::MADV_HUGEPAGE) };
        Ok(Self { ptr: NonNull::new(p.cast()).expect("mmap returned null"), len })
    }

    /// The whole region.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: the mapping is `len` readable bytes, alive as long as `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The whole region, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for HugeRegion {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping created in `new`.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}
