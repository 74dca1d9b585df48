//! Simulated Cluster API controllers with CAPI's exact pause semantics, driving an in-memory
//! API server only through its API. One level-based loop per management cluster: woken by watch
//! events, timers (provisioning delays) or hold releases, each pass lists every kind, lets each
//! controller decide its writes from that snapshot, then applies them.

pub mod cloud;
mod cluster;
pub mod config;
mod context;
mod control_plane;
mod health;
pub mod holds;
mod machine;
mod machine_status;
mod pause;
mod pools;
pub mod runner;
pub mod shape;
pub mod topology;
mod workers;
pub mod world;

pub use cloud::Cloud;
pub use config::{Config, Delays};
pub use holds::{Holds, Step};
pub use machine::NODE_HEALTH_ANNOTATION;

pub use runner::*;
