//! Where a thread may run: pinning a worker to its CPU, keeping another thread off the
//! workers' CPUs.

/// Pins the calling thread to CPU `core`.
pub fn pin_current_thread(core: u16) -> std::io::Result<()> {
    if usize::from(core) >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("CPU {core} is not a CPU number")));
    }
    // SAFETY: `cpu_set_t` is plain data, zero is a valid (empty) set, and `core` is below
    // CPU_SETSIZE (checked above), so CPU_SET writes inside it; sched_setaffinity(0, ...)
    // targets the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core as usize, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Takes CPUs `cpus` out of the calling thread's affinity, when that leaves it at least one;
/// returns whether it did.
pub fn avoid_cpus(cpus: &[u16]) -> std::io::Result<bool> {
    // SAFETY: `cpu_set_t` is plain data and zero is a valid (empty) set; sched_getaffinity and
    // sched_setaffinity(0, ...) read and write the calling thread's set through a pointer to
    // one of that size; CPU_CLR and CPU_COUNT stay inside it (CPU numbers below CPU_SETSIZE).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        for &c in cpus.iter().filter(|&&c| usize::from(c) < libc::CPU_SETSIZE as usize) {
            libc::CPU_CLR(usize::from(c), &mut set);
        }
        if libc::CPU_COUNT(&set) == 0 {
            return Ok(false);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(true)
}
