//! Large zeroed memory regions backed by anonymous mappings with transparent huge pages (or,
//! for many small tables, explicitly without).

use std::ptr::NonNull;

/// A zero-initialised, page-aligned byte region, advised to use transparent huge pages.
///
/// The region hands out either `&mut [u8]` (through `&mut self`) or a raw pointer derived
/// from the mapping itself ([`HugeRegion::as_ptr`]), never a `&[u8]` that callers could
/// turn into a pointer and write through. Users that share it between threads (the FIB's
/// atomic entries) access it only through atomics.
pub struct HugeRegion {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the region is plain memory owned by this value; moving it to another thread moves
// the ownership of the mapping.
unsafe impl Send for HugeRegion {}
// SAFETY: `&HugeRegion` gives no safe access to the bytes at all (only a raw pointer, whose
// dereference is the caller's `unsafe` responsibility), so sharing it cannot race by itself.
unsafe impl Sync for HugeRegion {}

impl HugeRegion {
    /// Maps `len` bytes (rounded up to 2 MiB) of zeroed memory, advised to use huge pages.
    pub fn new(len: usize) -> std::io::Result<Self> {
        Self::with_pages(len, true)
    }

    /// Maps `len` bytes of zeroed memory on huge pages when `huge` (rounded up to 2 MiB), else
    /// on small pages only (rounded up to 4 KiB): for the many small tables (a VRF's FIB),
    /// each of which a huge page would grow by 2 MiB at its first write (1 000 16-8-8 tables
    /// of 100 routes: 4 GiB resident on huge pages, 370 MiB on small ones).
    pub fn with_pages(len: usize, huge: bool) -> std::io::Result<Self> {
        let page: usize = if huge { 2 << 20 } else { 4096 };
        let len = len
            .max(1)
            .div_ceil(page)
            .checked_mul(page)
            .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{len} bytes")))?;
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
        // Huge pages are only advice: failure is harmless. (Miri has no `madvise`.) Small
        // pages are asked for too: with `transparent_hugepage=always` the kernel would use
        // huge ones unasked.
        #[cfg(not(miri))]
        // SAFETY: `p..p+len` is the mapping just created.
        unsafe {
            libc::madvise(p, len, if huge { libc::MADV_HUGEPAGE } else { libc::MADV_NOHUGEPAGE })
        };
        let ptr = NonNull::new(p.cast()).ok_or_else(|| std::io::Error::other("mmap returned a null mapping"))?;
        #[cfg(fuzzing)]
        // SAFETY: `p..p+len` is the mapping just created, registered until it is unmapped.
        unsafe {
            lsan::__lsan_register_root_region(p, len)
        };
        Ok(Self { ptr, len })
    }

    /// The start of the region: its readable and writable bytes, page-aligned, valid as
    /// long as `self`. The pointer carries the mapping's own provenance (it is not derived
    /// from a shared reference), so writing through it is allowed where the caller rules out
    /// data races — e.g. with atomics, or by holding `&mut self`.
    #[inline(always)]
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Its length in bytes (a multiple of 2 MiB, or of 4 KiB on small pages: [`HugeRegion::with_pages`]).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty region (never: regions are at least a page).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Makes every page of the region resident now, huge pages where the kernel has them, so
    /// that no later first write waits for the kernel to find and zero one: with huge pages
    /// advised, a first write can wait for the kernel to compact memory (the IPv4 FIB's first
    /// routes waited 180–270 ms for pages of its 64 MiB table). `MADV_POPULATE_WRITE`
    /// (Linux 5.14); on older kernels, a write to each 4 KiB page.
    pub fn populate(&mut self) {
        #[cfg(not(miri))]
        // SAFETY: `ptr..ptr+len` is the mapping made in `new`.
        if unsafe { libc::madvise(self.ptr.as_ptr().cast(), self.len, libc::MADV_POPULATE_WRITE) } == 0 {
            return;
        }
        for offset in (0..self.len).step_by(4096) {
            // SAFETY: a byte of the mapping (`offset < len`), which `&mut self` holds alone;
            // volatile, so that the store of the zero it already holds is made.
            unsafe { std::ptr::write_volatile(self.ptr.as_ptr().add(offset), 0) };
        }
    }

    /// The whole region, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is `len` initialised (zero-filled) bytes, alive as long as
        // `self`, and `&mut self` guarantees exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

/// Under the fuzzers (built with AddressSanitizer), LeakSanitizer is told to scan each region
/// for pointers: heap memory referenced only from one (the IPv6 FIB's subtrees, from its
/// first level) is in use, not leaked.
#[cfg(fuzzing)]
mod lsan {
    unsafe extern "C" {
        pub fn __lsan_register_root_region(p: *const libc::c_void, size: usize);
        pub fn __lsan_unregister_root_region(p: *const libc::c_void, size: usize);
    }
}

impl Drop for HugeRegion {
    fn drop(&mut self) {
        #[cfg(fuzzing)]
        // SAFETY: the region registered in `new`, still mapped.
        unsafe {
            lsan::__lsan_unregister_root_region(self.ptr.as_ptr().cast(), self.len)
        };
        // SAFETY: unmapping exactly the mapping created in `new`; nothing borrows it any more.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn populated_stays_zeroed() {
        let mut r = HugeRegion::new(10).unwrap();
        r.populate();
        assert_eq!(r.len(), 2 << 20);
        // SAFETY: in bounds, and no reference to the region is alive.
        assert!((0..r.len()).step_by(4093).all(|k| unsafe { *r.as_ptr().add(k) } == 0));
    }

    #[test]
    fn zeroed_aligned_and_rounded_to_huge_pages() {
        let mut r = HugeRegion::new(10).unwrap();
        let len = r.as_mut_slice().len();
        assert_eq!(len, 2 << 20);
        assert_eq!(r.as_ptr() as usize % 4096, 0);
        assert!(r.as_mut_slice().iter().step_by(4093).all(|&b| b == 0));
        r.as_mut_slice()[len - 1] = 7;
        // SAFETY: in bounds, and no reference to the region is alive.
        assert_eq!(unsafe { *r.as_ptr().add(len - 1) }, 7);
    }
}
