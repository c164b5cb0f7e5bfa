//! Settings several features read: how a worker waits for an interface's rx queues, and what
//! a popped MPLS label carries.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a worker waits for an interface's rx queues when they are empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum PollMode {
    /// Poll without pause: lowest latency, a whole core.
    #[default]
    Polling,
    /// Sleep in poll(2) until a queue has frames: least CPU, a wake-up per burst.
    Interrupt,
    /// Poll while traffic flows; sleep in poll(2) once the queues stayed empty a while.
    Adaptive,
    /// AF_XDP only: poll without pause, and have the kernel run the device's receive
    /// processing (NAPI) in the worker's own `recvfrom` calls rather than after interrupts
    /// (preferred busy polling; see `af-xdp.busy-poll`). Needs a driver whose XDP queues
    /// report a NAPI instance (`napi=` in `show hardware`): veth reports none.
    BusyPoll,
}

/// The packet under a popped label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Payload {
    /// IPv4, routed by the IPv4 FIB.
    #[default]
    Ip4,
    /// IPv6, routed by the IPv6 FIB.
    Ip6,
}
