//! The thin API layer: connecting, discovering the Cluster API kinds, and reading them.

pub mod catalog;
pub mod connect;
pub mod retry;
pub mod watch;

pub use catalog::{Catalog, KindInfo};
pub use connect::{Cluster, connect};
