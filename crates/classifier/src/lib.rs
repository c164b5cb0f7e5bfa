//! A megaflow classifier in two levels, as in Open vSwitch's userspace datapath, with the
//! Cuckoo Distributor of the seed's experiment in front of the second.
//!
//! - [`RuleTable`]: operators' rules (priority, a match on in-port, ethertype, VLAN, IPv4
//!   source and destination prefixes, IP protocol, fragment flag and L4 ports with masks, an
//!   action id). Tuple space search: one subtable per distinct mask, probed from the highest
//!   priority down and pruned once none left can beat the match in hand. A lookup also returns
//!   the *megaflow mask*: the bits the search needed, narrowed by prefix tracking on the IPv4
//!   address fields, so that every packet equal under that mask gets the same answer.
//! - [`MegaflowCache`] (one per worker): the answers of earlier lookups, wildcarded by their
//!   megaflow masks, behind an exact-match cache and a Cuckoo Distributor that predicts the
//!   subtable of a packet, with ranked tuple space search under them. A miss consults the rule
//!   table and installs a megaflow.
//!
//! Nothing here knows of packets' bytes or the dataplane: keys are [`FlowKey`]s.

#![warn(missing_docs)]

pub mod cache;
pub mod hash;
pub mod key;
pub mod rule;
pub mod table;
mod trie;

pub use cache::{CacheConfig, CacheStats, MegaflowCache};
pub use key::{Field, FlowKey, Mask};
pub use rule::{ParseError, Rule, RuleMatch};
pub use table::{Lookup, RuleTable};
