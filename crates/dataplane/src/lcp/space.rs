//! One namespace of linux-cp's: the default table's, or a VRF's (`NETNS-VRF`). Each holds the
//! TAPs of its VRF's interfaces, its own netlink listener and its own kernel view, whose
//! routes go into that VRF's tables: a routing daemon that runs a VRF as a namespace (FRR's
//! `zebra -n`, a BIRD per namespace) drives the VRF unchanged.

use super::{Netns, listener, netlink, pending};
use std::io;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// A namespace, its listener and its kernel view.
#[derive(Debug)]
pub(super) struct Space {
    /// The VRF whose interfaces' TAPs are here and whose tables take its routes.
    pub(super) vrf: u16,
    pub(super) netns: Netns,
    /// Address changes on its TAPs, made in the namespace.
    pub(super) requests: netlink::Netlink,
    pub(super) listener: Option<listener::Listener>,
    /// Its kernel view: the listener writes it, the main thread takes what changed.
    pub(super) kernel: pending::SharedKernel,
}

impl Space {
    /// Opens (or makes) namespace `name` for VRF `vrf` and starts its netlink listener (`stop`
    /// ends it), which mirrors `table` with a receive buffer of `buffer` bytes.
    pub(super) fn open(name: &str, vrf: u16, table: u32, buffer: usize, stop: Arc<AtomicBool>) -> io::Result<Space> {
        let netns = Netns::open_or_create(name)?;
        let requests = netns.run(netlink::Netlink::requests)?;
        let kernel = pending::SharedKernel::new(table);
        let sockets = netns.run(|| listener::Listener::sockets(buffer))?;
        let listener = Some(listener::Listener::spawn(sockets, kernel.clone(), stop)?);
        Ok(Space { vrf, netns, requests, listener, kernel })
    }
}
