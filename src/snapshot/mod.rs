//! A snapshot of a scope: one paginated LIST per kind, indexed by kind, Cluster and uid. Every
//! command evaluates snapshots; none reads objects one GET at a time.

pub mod index;
pub mod listed;
pub mod watch;

pub use listed::{Content, Contents, Keep, Listed, Status, for_evaluation, with_content};

pub use index::*;
