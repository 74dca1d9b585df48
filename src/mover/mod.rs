//! `kubectl capi move`: clusterctl's object graph, order and checks, with every check before the
//! first write. The graph and the plan are pure; the executor is the shell around them.

pub mod create;
pub mod delete;
pub mod directory;
pub mod discover;
pub mod graph;
pub mod journal;
pub mod namespaces;
pub mod pause;
pub mod plan;
pub mod preflight;
pub mod progress;
pub mod record;
pub mod recovery;
pub mod requests;
pub mod run;
pub mod same_cluster;
#[cfg(test)]
mod scenarios;
pub mod schedule;
