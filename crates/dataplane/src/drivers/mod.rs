//! Drivers: where frames enter (rx input nodes) and leave (tx nodes) the graph.

pub mod generator;
