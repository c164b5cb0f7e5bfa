//! The destination-MAC check of `ethernet-input`: a promiscuous port (AF_PACKET, AF_XDP)
//! also receives frames for other hosts on its segment. An L3 interface takes unicast frames
//! to its own MAC and every multicast or broadcast frame; a unicast frame to another MAC is
//! dropped as `not-for-us`, neither forwarded nor punted. An L2 cross-connect takes every
//! frame.

use crate::interface::{IfRuntime, RxMode};
use wire::MacAddr;

/// Which destinations an interface takes: one compare of the frame's first 8 bytes, read as
/// they lie in memory (no byte swap), with the interface's MAC, under a mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DstCheck {
    /// The interface's MAC, then two zero bytes, read in native byte order.
    own: u64,
    /// The destination's six bytes (all ones) when unicast destinations are checked, else 0.
    bits: u64,
}

impl DstCheck {
    /// Takes every frame.
    pub const ANY: DstCheck = DstCheck { own: 0, bits: 0 };

    /// Takes unicast frames to `mac` and every group (multicast, broadcast) frame.
    pub fn unicast_to(mac: MacAddr) -> Self {
        let m = mac.0;
        DstCheck {
            own: u64::from_ne_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0]),
            bits: u64::from_ne_bytes([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0]),
        }
    }

    /// The check of interface `ifc`: its MAC on an L3 interface, none on a cross-connect.
    #[inline(always)]
    pub fn of(ifc: &IfRuntime) -> Self {
        match ifc.mode {
            RxMode::L3 => Self::unicast_to(ifc.mac),
            RxMode::L2Xconnect { .. } => Self::ANY,
        }
    }

    /// The bits in which the destination MAC of a frame whose first 8 bytes are `head`
    /// differs from the interface's: 0 when it is the interface's (or nothing is checked).
    /// Only meaningful for a unicast frame (its first byte's lowest bit clear). A load, an xor
    /// and an and; a loop ORs the results and looks once, at the end.
    #[inline(always)]
    pub fn difference(self, head: &[u8; 8]) -> u64 {
        (u64::from_ne_bytes(*head) ^ self.own) & self.bits
    }

    /// True for a frame to another host: a unicast frame whose first 8 bytes are `head` and
    /// whose destination is not the interface's MAC. Group frames skip the compare.
    #[inline(always)]
    pub fn stranger(self, head: &[u8; 8]) -> bool {
        head[0] & 1 == 0 && self.difference(head) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(dst: [u8; 6]) -> [u8; 8] {
        [dst[0], dst[1], dst[2], dst[3], dst[4], dst[5], 0xaa, 0xbb]
    }

    #[test]
    fn an_l3_check_takes_its_mac_and_groups_and_refuses_other_unicast() {
        let own = [2, 0xfe, 0, 0, 0, 1];
        let c = DstCheck::unicast_to(MacAddr(own));
        assert!(!c.stranger(&head(own)));
        assert!(!c.stranger(&head([0xff; 6])), "broadcast");
        assert!(!c.stranger(&head([1, 0, 0x5e, 0, 0, 5])), "IPv4 multicast");
        assert!(!c.stranger(&head([1, 0x80, 0xc2, 0, 0, 0x0e])), "LLDP's group");
        for k in 0..6 {
            let mut other = own;
            other[k] ^= 0x40;
            assert!(c.stranger(&head(other)), "byte {k} differs");
        }
        assert!(!DstCheck::ANY.stranger(&head([2, 0, 0, 0, 0, 9])), "a cross-connect takes all");
    }
}
