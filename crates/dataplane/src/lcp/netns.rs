//! Named network namespaces, made and found as `ip netns` makes and finds them: a file under
//! [`NETNS_DIR`] on which the namespace is bind-mounted.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

/// Where named namespaces live (`ip netns` uses the same directory).
pub const NETNS_DIR: &str = "/run/netns";

/// A named network namespace, held open.
#[derive(Debug)]
pub struct Netns {
    /// Its name.
    pub name: String,
    file: File,
}

/// An error with what was being done.
fn context(what: String) -> impl FnOnce(io::Error) -> io::Error {
    move |e| io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// The result of a libc call that returns -1 on failure.
fn check(rc: libc::c_int, what: impl FnOnce() -> String) -> io::Result<()> {
    if rc < 0 { Err(context(what())(io::Error::last_os_error())) } else { Ok(()) }
}

impl Netns {
    /// Opens namespace `name`, creating it as `ip netns add` does when it does not exist. A
    /// namespace made here stays after vecflow exits (`ip netns del` removes it).
    pub fn open_or_create(name: &str) -> io::Result<Netns> {
        let path = PathBuf::from(NETNS_DIR).join(name);
        if !path.exists() {
            create(&path)?;
        }
        let file = File::open(&path).map_err(context(format!("opening {}", path.display())))?;
        Ok(Netns { name: name.to_string(), file })
    }

    /// Runs `f` on a thread inside the namespace and returns what it returns: sockets and
    /// devices it makes belong to the namespace.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> io::Result<T> + Send) -> io::Result<T> {
        let fd = self.file.as_raw_fd();
        std::thread::scope(|s| {
            s.spawn(move || {
                // SAFETY: `fd` is an open namespace file; setns changes only this thread.
                check(unsafe { libc::setns(fd, libc::CLONE_NEWNET) }, || "entering the namespace".into())?;
                f()
            })
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    }
}

/// Makes namespace file `path`: a fresh namespace, bind-mounted on an empty file, from a
/// thread of its own (a namespace change is per thread).
fn create(path: &std::path::Path) -> io::Result<()> {
    std::fs::create_dir_all(NETNS_DIR).map_err(context(format!("creating {NETNS_DIR}")))?;
    share_netns_dir()?;
    File::create(path).map_err(context(format!("creating {}", path.display())))?;
    let target = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("a path without NUL");
    let made = std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: plain syscalls on this thread; the strings are NUL-terminated.
            unsafe {
                check(libc::unshare(libc::CLONE_NEWNET), || "making a network namespace".into())?;
                let source = c"/proc/thread-self/ns/net";
                check(
                    libc::mount(source.as_ptr(), target.as_ptr(), std::ptr::null(), libc::MS_BIND, std::ptr::null()),
                    || format!("bind-mounting the namespace on {}", path.display()),
                )
            }
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    });
    if made.is_err() {
        let _ = std::fs::remove_file(path);
    }
    made
}

/// Makes [`NETNS_DIR`] a shared mount point, as `ip netns add` does, so that the namespaces
/// mounted in it show in every mount namespace (a shell's `ip netns exec` as well as ours).
fn share_netns_dir() -> io::Result<()> {
    let dir = c"/run/netns";
    let none = c"none";
    let flags = libc::MS_SHARED | libc::MS_REC;
    // SAFETY: mount(2) with NUL-terminated strings and no data.
    let shared = unsafe { libc::mount(none.as_ptr(), dir.as_ptr(), none.as_ptr(), flags, std::ptr::null()) };
    if shared == 0 {
        return Ok(());
    }
    // Not a mount point yet: bind it on itself (with what is mounted under it), then share it.
    let rbind = libc::MS_BIND | libc::MS_REC;
    // SAFETY: as above.
    let bound = unsafe { libc::mount(dir.as_ptr(), dir.as_ptr(), none.as_ptr(), rbind, std::ptr::null()) };
    check(bound, || format!("bind-mounting {NETNS_DIR} on itself"))?;
    // SAFETY: as above.
    check(unsafe { libc::mount(none.as_ptr(), dir.as_ptr(), none.as_ptr(), flags, std::ptr::null()) }, || {
        format!("making {NETNS_DIR} a shared mount")
    })
}
