//! What one `kubectl capi verify` was asked, resolved once from its flags: the Clusters, the
//! target (this cluster) and the source when `--from-…` names it, the journal to read the
//! records from, and how long to wait.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::VerifyArgs;
use crate::settings::{Connection, End, Settings};

/// `verify`, resolved: the code below reads these fields, never the flags.
#[derive(Debug, Clone)]
pub struct VerifyRequest {
    /// Cluster names; none: every recorded one.
    pub clusters: Vec<String>,
    /// `--wait`: until the move took, for at most this long.
    pub wait: Option<Duration>,
    /// `--journal`: the records of this journal, not those of the cluster.
    pub journal: Option<PathBuf>,
    /// Where the Clusters are now.
    pub target: Connection,
    /// Where they came from (`--from-kubeconfig`, `--from-context`), checked for what the move
    /// left there.
    pub source: Option<Connection>,
}

impl VerifyRequest {
    pub fn resolve(args: &VerifyArgs, settings: &Settings) -> VerifyRequest {
        let source = (args.from_kubeconfig.is_some() || args.from_context.is_some()).then(|| {
            settings.connection.other_end(
                End::VERIFY_SOURCE,
                args.from_kubeconfig.as_ref(),
                args.from_context.as_ref(),
            )
        });
        let mut target = settings.connection.clone();
        if source.is_some() {
            // Two ends: messages about this one call it the target.
            target.end = target.end.as_role("target");
        }
        VerifyRequest {
            clusters: args.clusters.clone(),
            wait: args.wait.then_some(args.wait_limit.timeout),
            journal: args.journal.clone(),
            target,
            source,
        }
    }
}
