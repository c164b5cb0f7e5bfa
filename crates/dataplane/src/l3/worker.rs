//! What the IPv4, IPv6 and MPLS nodes need of a worker, as traits the composition of the
//! features (`datapath`) implements: the snapshot's layer 3 tables and the FIBs, beside the
//! interfaces, the punt line and the host's copies.

use super::{HostCopy, L3};
use crate::interface::{InterfaceTables, InterfaceWorker};
use crate::l3::fib::Fibs;
use crate::neighbor::punt::PuntWorker;
use crate::runtime::buffer::BufferPool;

/// The part of the workers' snapshot the layer 3 nodes read beside the interfaces.
pub trait L3Tables: InterfaceTables {
    /// Adjacencies, load-balance objects, neighbors and labels.
    fn l3(&self) -> &L3;
}

/// A worker's state as the layer 3 nodes see it.
pub trait L3Worker: InterfaceWorker<Snapshot: L3Tables> + PuntWorker + HostCopy {
    /// The IPv4 and IPv6 FIBs (updated in place by the main thread).
    fn fibs(&self) -> &Fibs;

    /// The current snapshot's layer 3 tables.
    #[inline(always)]
    fn l3(&self) -> &L3 {
        self.snapshot().l3()
    }
}

/// The IPv4 header of buffer `i` of `pool`, at its `l3_offset`; `None` when the frame is too
/// short to hold one. For the nodes' cold paths: hot loops read the fields in place.
pub fn ipv4(pool: &BufferPool, i: u32) -> Option<wire::Ipv4Packet<&[u8]>> {
    wire::Ipv4Packet::new_checked(pool.frame(i).get(usize::from(pool.meta(i).l3_offset)..)?).ok()
}

/// The IPv6 header of buffer `i` of `pool`, at its `l3_offset`; `None` when the frame is too
/// short to hold one. For the nodes' cold paths.
pub fn ipv6(pool: &BufferPool, i: u32) -> Option<wire::Ipv6Packet<&[u8]>> {
    wire::Ipv6Packet::new_checked(pool.frame(i).get(usize::from(pool.meta(i).l3_offset)..)?).ok()
}
