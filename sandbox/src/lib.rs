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

pub mod workload;

pub use apiserver::{ApiServer, FaultAction, FaultRule, RequestRecord, ServerOptions, Serving};

/// Waits until `reached()` holds — something a test can observe, such as a request in a
/// server's log — checking every 10 ms; panics naming `what` if it has not within 30 s.
pub async fn wait_until(what: &str, reached: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(30);
    while !reached() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited 30 s for {what}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
