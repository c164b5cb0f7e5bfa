//! Ethernet: `ethernet-input` (frame checks, destination MAC, 802.1Q, dispatch by interface
//! mode and ethertype) and `l2-xconnect`.

pub mod dst;
pub mod input;
pub mod l2_xconnect;
