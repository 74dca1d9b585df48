//! The thin API layer: connecting (with the one retry policy) and discovering the Cluster API kinds.

pub mod catalog;
pub mod connect;
pub mod connected;
pub mod gate;
pub mod holder;
pub mod inline_only;
pub mod kubeconfig;
pub mod lease;
pub mod lease_timing;
pub mod retry;
pub mod stop;
pub mod url;

pub use catalog::{Catalog, KindInfo};
pub use connect::{Cluster, connect};
pub use connected::Connected;
pub use kubeconfig::read_kubeconfig;
pub use stop::{OnCtrlC, Stop};
