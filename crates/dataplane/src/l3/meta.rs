//! What the layer 3 nodes leave in a buffer's metadata for the nodes after them: the route a
//! lookup chose, kept in the runtime's opaque per-packet scratch ([`BufferMeta::scratch`]).

use crate::runtime::buffer::BufferMeta;

/// The route a packet's lookup chose, as the metadata holds it.
pub trait RouteMeta {
    /// The adjacency (next hop) `ip4-lookup` or `ip6-lookup` chose; 0 when none.
    fn adj(&self) -> u32;
    /// Sets [`RouteMeta::adj`].
    fn set_adj(&mut self, adj: u32);
    /// The length of the prefix the destination matched.
    fn dst_prefix_len(&self) -> u8;
    /// Sets [`RouteMeta::dst_prefix_len`].
    fn set_dst_prefix_len(&mut self, len: u8);
    /// The local-label entry `mpls-lookup` chose (index into the label entries + 1); 0 when
    /// none.
    fn label_entry(&self) -> u16;
    /// Sets [`RouteMeta::label_entry`].
    fn set_label_entry(&mut self, entry: u16);
    /// The VRF to look the packet up in when it is not its input interface's: a packet this
    /// router originates (input interface 0) about one received in a VRF, or one an L3VPN
    /// label popped into its VRF; 0 when none.
    fn lookup_vrf(&self) -> u16;
    /// Sets [`RouteMeta::lookup_vrf`].
    fn set_lookup_vrf(&mut self, vrf: u16);
    /// The MPLS labels `mpls-rewrite` popped from the packet with more labels under them (each
    /// one sends it back to `mpls-input` for the next).
    fn labels_popped(&self) -> u8;
    /// Sets [`RouteMeta::labels_popped`].
    fn set_labels_popped(&mut self, n: u8);
}

impl RouteMeta for BufferMeta {
    #[inline(always)]
    fn adj(&self) -> u32 {
        self.scratch.word
    }

    #[inline(always)]
    fn set_adj(&mut self, adj: u32) {
        self.scratch.word = adj;
    }

    #[inline(always)]
    fn dst_prefix_len(&self) -> u8 {
        self.scratch.byte
    }

    #[inline(always)]
    fn set_dst_prefix_len(&mut self, len: u8) {
        self.scratch.byte = len;
    }

    #[inline(always)]
    fn label_entry(&self) -> u16 {
        self.scratch.half
    }

    #[inline(always)]
    fn set_label_entry(&mut self, entry: u16) {
        self.scratch.half = entry;
    }

    #[inline(always)]
    fn lookup_vrf(&self) -> u16 {
        self.scratch.half2
    }

    #[inline(always)]
    fn set_lookup_vrf(&mut self, vrf: u16) {
        self.scratch.half2 = vrf;
    }

    #[inline(always)]
    fn labels_popped(&self) -> u8 {
        self.scratch.byte2
    }

    #[inline(always)]
    fn set_labels_popped(&mut self, n: u8) {
        self.scratch.byte2 = n;
    }
}
