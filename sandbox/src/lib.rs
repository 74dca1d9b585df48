//! capi-sandbox: the test substrate of kubectl-capi. An in-memory Kubernetes API server that
//! real kubectl and kube-rs both talk to, its own Cluster API CRD set, and simulated Cluster API
//! controllers. The demo, the benchmarks and the binary are `capi-sandbox-tools`.

pub mod api;
pub mod apiserver;
pub mod controllers;
pub mod crds;
pub mod environment;
pub mod fixture;
pub mod real_shape;
pub mod wait;
pub mod workload;

pub use apiserver::{
    ApiServer, FaultAction, FaultRule, FencedWrite, RequestRecord, ServerOptions, Serving,
};
pub use wait::wait_until;
