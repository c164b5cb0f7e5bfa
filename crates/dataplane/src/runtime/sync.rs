//! The synchronisation primitives of the lock-free modules (the sFlow sample ring,
//! [`crate::runtime::qsbr`]): the standard library's, or loom's when built with `--cfg loom`
//! so that the loom models in those modules explore every interleaving of the real code.

#[cfg(loom)]
pub(crate) use loom::sync::Arc;
#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicU64, fence};
#[cfg(not(loom))]
pub(crate) use std::sync::Arc;
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicU64, fence};

/// Interior mutability with loom's closure-scoped API, so that loom can check every access.
#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// Interior mutability with loom's closure-scoped API (a plain `std::cell::UnsafeCell`).
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// Wraps `value`.
    pub(crate) fn new(value: T) -> Self {
        Self(std::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a pointer for reading.
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a pointer for writing.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Lets another thread run while this one waits for it: a short sleep, or a loom yield
/// (loom explores the other threads' steps instead of real time passing).
pub(crate) fn wait_a_little() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::thread::sleep(std::time::Duration::from_micros(20));
}
