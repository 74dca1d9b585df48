//! kubectl-capi: Cluster API operator tooling — can these clusters be moved now (`ready`), freeze
//! their scaling while in-flight Machines finish (`pause`/`resume`), and a clusterctl-compatible,
//! resumable `move`.
//!
//! Data flows one way: flags → [`settings::Settings`] → connection and [`kube::Catalog`] →
//! [`snapshot::Snapshot`] → pure evaluation over the [`model`] → output through
//! [`output::Printer`]. The binary only parses arguments and maps the outcome to an exit code.

pub mod choices;
pub mod cli;
pub mod commands;
pub mod durations;
pub mod error;
pub mod freeze;
pub mod kube;
pub mod model;
pub mod mover;
pub mod names;
pub mod output;
pub mod platform;
pub mod ready;
pub mod settings;
pub mod snapshot;
pub mod validate;
pub mod verify;

pub use commands::dispatch::run;
pub use commands::version::VERSION;
