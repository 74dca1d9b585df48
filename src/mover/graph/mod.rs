//! What a move moves, decided without writing: the kinds it reads (`discover`), clusterctl's
//! object graph over them (`object_graph`), the plan (`plan`) and the order of its writes
//! (`schedule`). Pure functions over what was listed.

pub mod discover;
pub mod object_graph;
pub mod plan;
#[cfg(test)]
mod scenarios;
pub mod schedule;
