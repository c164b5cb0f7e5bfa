//! What the IPv4 and IPv6 nodes ask of the host beside the router (linux-cp's TAPs), as a
//! trait the composition of the features (`datapath`) implements: the nodes name no
//! linux-cp, and with linux-cp off a call costs the one `Option` test it costs today.

use crate::runtime::buffer::BufferPool;

/// The host's copy of the router's control traffic.
pub trait HostCopy {
    /// True when a host (linux-cp) is attached and takes copies.
    fn has_host(&self) -> bool;

    /// Copies frame `i` of `pool` up to the host as it arrived, within the host's rate; the
    /// buffer stays the caller's. Nothing happens without a host.
    fn copy_up(&mut self, pool: &BufferPool, i: u32);
}
