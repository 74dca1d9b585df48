//! What a verification found (`VerificationReport`, a `ClusterVerification` per Cluster) and the
//! pure evaluation that finds it from a snapshot of each end.

use serde::Serialize;

use crate::snapshot::Snapshot;
use crate::verify::checks::{ClusterVerification, verify_cluster};
use crate::verify::record::MovedCluster;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerificationReport {
    pub api_version: &'static str,
    pub kind: &'static str,
    /// Whether the source was checked for what the move should have deleted there.
    pub source_checked: bool,
    pub clusters: Vec<ClusterVerification>,
}

impl VerificationReport {
    pub fn verified(&self) -> bool {
        self.clusters.iter().all(|c| c.verified)
    }

    /// Every check a frozen target can answer passed; what is left waits for `resume`.
    pub fn verified_while_frozen(&self) -> bool {
        self.clusters
            .iter()
            .all(|c| c.failed.is_empty() && c.pending.is_empty())
    }

    /// A check failed: waiting longer cannot make it pass.
    pub fn failed(&self) -> bool {
        self.clusters.iter().any(|c| !c.failed.is_empty())
    }

    /// One line per verified Cluster; a Cluster that is not gets a line and one indented line
    /// per failed or pending check.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for cluster in &self.clusters {
            out.push_str(&cluster.summary);
            out.push('\n');
            for failed in &cluster.failed {
                out.push_str(&format!("  failed: {failed}\n"));
            }
            for pending in &cluster.pending {
                out.push_str(&format!("  pending: {pending}\n"));
            }
            for waiting in &cluster.after_resume {
                out.push_str(&format!("  after resume: {waiting}\n"));
            }
            if !cluster.kept_in_source.is_empty() {
                out.push_str(&format!(
                    "  copied and kept in the source (shared with what stays there): {}\n",
                    cluster.kept_in_source.join(", ")
                ));
            }
        }
        out
    }
}

/// Evaluates the moved Clusters in `target`, and in `source` when it is at hand. `flags` are the
/// user's connection flags for the target (`--context …`), repeated in the hints so they work
/// when pasted.
pub fn evaluate(
    moved: &[MovedCluster],
    target: &Snapshot,
    source: Option<&Snapshot>,
    flags: &str,
) -> VerificationReport {
    VerificationReport {
        api_version: crate::names::OUTPUT_API_VERSION,
        kind: "VerificationReport",
        source_checked: source.is_some(),
        clusters: moved
            .iter()
            .map(|m| verify_cluster(m, target, source, flags))
            .collect(),
    }
}

/// How a verification ended: its report, and the exit status it means.
pub struct Verified {
    pub report: VerificationReport,
    pub status: crate::output::ExitStatus,
}

impl crate::output::Render for VerificationReport {
    fn table(&self, _: &crate::output::Printer) -> String {
        self.text()
    }

    fn names(&self, _: &crate::output::Printer) -> String {
        self.clusters
            .iter()
            .map(|c| format!("{}\n", c.cluster.kubectl_name()))
            .collect()
    }
}
