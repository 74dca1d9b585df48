//! An in-memory Kubernetes API server: the same answers as a real kube-apiserver for what
//! kubectl-capi, kube-rs and kubectl send, served in-process (a tower service for
//! `kube::Client::new`) or over HTTP(S) on loopback.

mod body;
mod builtin_kinds;
mod connection;
pub mod control;
mod discovery;
pub mod fencing;
pub mod fields;
mod handler;
pub mod kubeconfig;
pub mod ops;
pub mod patch;
mod protobuf;
pub mod resources;
pub mod selector;
pub mod server;
pub mod shared;
pub mod status;
pub mod store;
pub mod tls;
pub mod validation;
mod watch;

pub use control::{FaultAction, FaultRule, RequestRecord};
pub use fencing::FencedWrite;

pub use kubeconfig::{KubeconfigEntry, kubeconfig, write_kubeconfig};
pub use server::*;
pub use shared::ServerOptions;
