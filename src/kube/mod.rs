//! The thin API layer: connecting (with the one retry policy) and discovering the Cluster API kinds.

pub mod catalog;
pub mod connect;
pub mod retry;

pub use catalog::{Catalog, KindInfo};
pub use connect::{Cluster, connect};
