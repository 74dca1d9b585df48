//! `kubectl capi move`: clusterctl's object graph, order and checks, with every check before the
//! first write. The graph and the plan are pure; the executor is the shell around them.

pub mod directory;
pub mod discover;
pub mod execute;
pub mod graph;
pub mod journal;
pub mod plan;
pub mod progress;
pub mod recovery;
pub mod same_cluster;
#[cfg(test)]
mod scenarios;
