//! What one `kubectl capi ready` was asked, resolved once from its flags: which Clusters,
//! whether to wait and how long, how much to show, and a `--to-cluster` target to check.

use std::time::Duration;

use crate::cli::ReadyArgs;

/// `ready`, resolved: the code below reads these fields, never the flags.
#[derive(Debug, Clone)]
pub struct ReadyRequest {
    /// Cluster names; none: every Cluster in scope.
    pub clusters: Vec<String>,
    /// `--wait`: until the Clusters can be moved, for at most `timeout`.
    pub wait: bool,
    pub timeout: Duration,
    pub details: bool,
    pub strict: bool,
    /// `--to-cluster`: the workload cluster a pivot would move them into.
    pub to_cluster: Option<String>,
}

impl ReadyRequest {
    pub fn resolve(args: &ReadyArgs) -> ReadyRequest {
        ReadyRequest {
            clusters: args.clusters.clone(),
            wait: args.wait,
            timeout: args.wait_limit.timeout,
            details: args.details,
            strict: args.strict,
            to_cluster: args.to_cluster.clone(),
        }
    }
}
