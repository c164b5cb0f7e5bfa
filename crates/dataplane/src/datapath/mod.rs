//! The worker threads: the loop that polls the drivers and runs vectors through the graph.

pub mod worker;
