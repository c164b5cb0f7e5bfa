//! Any bytes as an rtnetlink datagram → the messages linux-cp's listener parses
//! ([`dataplane::lcp::netlink::parse`]: links, addresses, neighbors, routes with their hops
//! and `RTA_MULTIPATH` read from their bytes, next-hop objects and groups) and the kernel view it keeps
//! ([`KernelView::apply`], with the routes the kernel removes silently). No panic, and the
//! view's `diff` is what a re-dump relies on: the changes from an empty view to it, made
//! one by one, give the same view (routes, links, addresses, neighbors, objects), and a view
//! has no difference from itself.
#![no_main]

use dataplane::lcp::listener::KernelView;
use libfuzzer_sys::fuzz_target;
use netlink_packet_core::NetlinkPayload;

fuzz_target!(|data: &[u8]| {
    let mut view = KernelView::default();
    for (_, payload) in dataplane::lcp::netlink::parse(data) {
        if let NetlinkPayload::InnerMessage(m) = payload {
            view.apply(m);
        }
    }
    assert!(view.diff(&view).is_empty());
    let mut rebuilt = KernelView::default();
    for change in KernelView::default().diff(&view) {
        rebuilt.change(change);
    }
    // Alternatives (IPv4 routes after the one used) are the listener's own bookkeeping,
    // not something a dump's difference carries.
    rebuilt.alternatives = view.alternatives.clone();
    assert_eq!(rebuilt, view);
});
