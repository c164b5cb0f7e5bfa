//! How much state `collect --summary` keeps. Each table stops taking new keys when full and
//! counts what it left out (shown as `overflow` in the report), so spoofed agents, data sources
//! or flows cannot grow memory without bound: at these limits the summary stays under about
//! 50 MB (flows ≈ 150 B each, data sources ≈ 1 KB with their discard reasons).

/// (agent, sub-agent) datagram streams; a datagram of a stream beyond this is left out whole.
pub const MAX_AGENTS: usize = 1024;
/// Data sources over all agents; a sample of a data source beyond this is left out.
pub const MAX_SOURCES: usize = 16_384;
/// Interfaces over all agents, per table: polled interfaces (counter records left out beyond
/// this) and learned sub-interfaces.
pub const MAX_INTERFACES: usize = 16_384;
/// Flows in the top-N table; a sample of a flow beyond this counts for its data source only.
pub const MAX_FLOWS: usize = 100_000;
/// Discard reason codes per data source; a discard with a further code is left out.
pub const MAX_REASONS: usize = 32;
