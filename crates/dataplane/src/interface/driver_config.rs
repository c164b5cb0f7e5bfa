//! Each driver's settings (`af-packet`, `af-xdp`, `pcap`): sub-sections of an interface's,
//! kept here below the drivers that read them. Their checks need the interface
//! and the buffers they serve, so they run with the interface's (`config/interfaces.rs`).

use crate::net::is_zero;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where the XDP program of an `af-xdp` interface runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum XdpModeConfig {
    /// Native where the driver has it, else skb.
    #[default]
    Auto,
    /// In the driver (fails where the driver has no XDP).
    Native,
    /// Generic XDP, after the kernel built an skb (every driver; slower).
    Skb,
}

/// Whether an `af-xdp` interface's frames move without a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ZeroCopyConfig {
    /// Zero-copy where the driver supports it, copy otherwise (veth: copy).
    #[default]
    Auto,
    /// Zero-copy, or fail at start.
    On,
    /// Copy.
    Off,
}

/// AF_XDP settings of one interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AfXdpConfig {
    /// Where the XDP program runs: auto, native or skb.
    #[serde(default)]
    pub mode: XdpModeConfig,
    /// auto, on or off. A worker's sockets share one UMEM, which the first of them (in
    /// interface name order) binds in copy or zero-copy mode for all.
    #[serde(default)]
    pub zero_copy: ZeroCopyConfig,
    /// Device rx queues received from (queues 0 to N−1), 1 to 64; each polled by one worker
    /// (see `rx-placement`). Every worker also needs a queue of its own to transmit on: the
    /// device must have at least `queues` plus the number of workers polling none of them.
    #[serde(default = "default_rx_queues")]
    pub queues: u16,
    /// Entries of each of a socket's four rings (rx, tx, fill, completion), a power of two
    /// from 64 to 16384. Each rx queue lends the kernel up to twice this many of its worker's
    /// buffers (fill and rx rings), and so does each interface a worker sends on (tx and
    /// completion rings).
    #[serde(default = "default_xdp_ring")]
    pub ring_size: u32,
    /// How `rx-mode: busy-poll` runs the device's NAPI instances.
    #[serde(default)]
    pub busy_poll: BusyPollConfig,
}

/// Busy-polling settings of an `af-xdp` interface, used while its `rx-mode` is `busy-poll`.
/// The two NAPI settings are set through netdev netlink (`napi-set`, Linux 6.13 and later)
/// on each NAPI instance that delivers to the interface's sockets, and put back as they
/// were when the mode changes or vecflow stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct BusyPollConfig {
    /// Frames the kernel may process per busy poll (`SO_BUSY_POLL_BUDGET`), 1 to 1024; the
    /// kernel's own default is 8.
    #[serde(default = "default_busy_poll_budget")]
    pub budget: u16,
    /// Polls the device's interrupt stays masked for after one found work
    /// (`napi-defer-hard-irqs`), 1 to 1000: while the worker keeps polling, no interrupt.
    #[serde(default = "default_defer_hard_irqs")]
    pub defer_hard_irqs: u32,
    /// How long the kernel waits for the worker's next poll before it polls by itself and
    /// turns interrupts back on (`gro-flush-timeout`), in microseconds, 1 to 1000000.
    #[serde(default = "default_gro_flush_timeout_us")]
    pub gro_flush_timeout_us: u32,
}

impl Default for BusyPollConfig {
    fn default() -> Self {
        BusyPollConfig {
            budget: default_busy_poll_budget(),
            defer_hard_irqs: default_defer_hard_irqs(),
            gro_flush_timeout_us: default_gro_flush_timeout_us(),
        }
    }
}

fn default_busy_poll_budget() -> u16 {
    64
}

fn default_defer_hard_irqs() -> u32 {
    2
}

fn default_gro_flush_timeout_us() -> u32 {
    200
}

fn default_xdp_ring() -> u32 {
    1024
}

impl Default for AfXdpConfig {
    fn default() -> Self {
        AfXdpConfig {
            mode: XdpModeConfig::Auto,
            zero_copy: ZeroCopyConfig::Auto,
            queues: default_rx_queues(),
            ring_size: default_xdp_ring(),
            busy_poll: BusyPollConfig::default(),
        }
    }
}

/// Capture-file settings of one interface (driver `pcap`): what it receives and where what it
/// transmits goes. At least one of `read` and `write`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct PcapConfig {
    /// Capture whose frames the interface receives, in file order: pcap or pcapng (told apart
    /// by content), Ethernet link type. Without it the interface receives nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<PathBuf>,
    /// Start `read` again from its first frame when it ends (else the interface receives each
    /// frame once, and `vecflow run` ends once every such read is done and forwarded).
    #[serde(default, rename = "loop", skip_serializing_if = "std::ops::Not::not")]
    pub looping: bool,
    /// Frames per second `read` is replayed at, 0 to 100000000; 0 (default) = as fast as the
    /// worker goes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rate_pps: u64,
    /// File every frame the interface transmits is written to, created or truncated at start:
    /// pcapng when the name ends in `.pcapng`, else pcap (Ethernet, microsecond timestamps).
    /// Without it, transmitted frames are counted and discarded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<PathBuf>,
}

/// Highest `pcap.rate-pps`.
pub const MAX_PCAP_RATE: u64 = 100_000_000;

/// AF_PACKET settings of one interface.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct AfPacketConfig {
    /// Bytes per rx ring block, a power of two from 4096 to 4194304 (whole frames never
    /// span blocks).
    #[serde(default = "default_block_size")]
    pub block_size: u32,
    /// Rx ring blocks per queue, 2 to 1024 (default 64: a 16 MiB ring).
    #[serde(default = "default_blocks")]
    pub blocks: u32,
    /// Milliseconds after which the kernel hands over a block that is not full, 1 to 1000:
    /// the longest a packet waits in the ring at low rates.
    #[serde(default = "default_block_timeout")]
    pub block_timeout_ms: u32,
    /// Rx queues: sockets joined in one PACKET_FANOUT group (flows hashed over them), each
    /// polled by its own worker, starting at the interface's rx-placement worker. 1 to
    /// `workers.count`.
    #[serde(default = "default_rx_queues")]
    pub rx_queues: u16,
}

/// Bytes of TPACKET_V3 headers in front of a frame in a ring block, rounded up: the block's
/// descriptor, the frame's `tpacket3_hdr` and `sockaddr_ll`, and alignment.
pub(crate) const RING_FRAME_OVERHEAD: u32 = 256;

fn default_block_size() -> u32 {
    1 << 18
}
fn default_blocks() -> u32 {
    64
}
fn default_block_timeout() -> u32 {
    1
}
fn default_rx_queues() -> u16 {
    1
}

impl Default for AfPacketConfig {
    fn default() -> Self {
        AfPacketConfig {
            block_size: default_block_size(),
            blocks: default_blocks(),
            block_timeout_ms: default_block_timeout(),
            rx_queues: default_rx_queues(),
        }
    }
}
