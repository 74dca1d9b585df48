//! capi-sandbox: the test substrate of kubectl-capi. An in-memory Kubernetes API server that
//! real kubectl and kube-rs both talk to, plus its own Cluster API CRD set.

pub mod api;
pub mod apiserver;
pub mod bench;
pub mod bench_move;
pub mod controllers;
pub mod crds;
pub mod demo;
pub mod environment;
pub mod fixture;
pub mod real_shape;
pub mod wait;
pub mod workload;

pub use apiserver::{ApiServer, FaultAction, FaultRule, RequestRecord, ServerOptions, Serving};
pub use wait::wait_until;
