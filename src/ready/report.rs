//! What `ready` reports, per Cluster and in all: each check with its status and reason, the
//! Machines counted, what is frozen, and the options the evaluation was asked with.

use serde::Serialize;

use crate::model::ObjectRef;

/// The checks `ready` runs, by the stable identifiers docs/ready.md documents (`machine-node`, …);
/// documents carry them as those strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckId {
    InfrastructureProvisioned,
    ControlPlaneInitialized,
    MachineNode,
    MachineDeleting,
    NodeHealth,
    Scaling,
    Autoscaler,
    Remediation,
    ClusterPaused,
    ClusterclassPaused,
    BlockMove,
    DanglingOwner,
}

impl CheckId {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckId::InfrastructureProvisioned => "infrastructure-provisioned",
            CheckId::ControlPlaneInitialized => "control-plane-initialized",
            CheckId::MachineNode => "machine-node",
            CheckId::MachineDeleting => "machine-deleting",
            CheckId::NodeHealth => "node-health",
            CheckId::Scaling => "scaling",
            CheckId::Autoscaler => "autoscaler",
            CheckId::Remediation => "remediation",
            CheckId::ClusterPaused => "cluster-paused",
            CheckId::ClusterclassPaused => "clusterclass-paused",
            CheckId::BlockMove => "block-move",
            CheckId::DanglingOwner => "dangling-owner",
        }
    }
}

impl std::fmt::Display for CheckId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for CheckId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    Fail,
    Warn,
    Info,
    Pass,
}

impl CheckStatus {
    /// A failure when `fail`, else a warning: for findings whose weight depends on an option or
    /// on a deliberate freeze.
    pub fn fail_or_warn(fail: bool) -> CheckStatus {
        if fail {
            CheckStatus::Fail
        } else {
            CheckStatus::Warn
        }
    }

    pub fn word(self) -> &'static str {
        match self {
            CheckStatus::Pass => "pass",
            CheckStatus::Fail => "fail",
            CheckStatus::Warn => "warn",
            CheckStatus::Info => "info",
        }
    }
}

/// One finding about one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// A stable identifier of the check (e.g. `machine-node`), documented in docs/ready.md.
    pub check: CheckId,
    pub status: CheckStatus,
    pub object: ObjectRef,
    pub message: String,
}

/// A scaler (or health check) carrying `cluster.x-k8s.io/paused`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Frozen {
    #[serde(flatten)]
    pub object: ObjectRef,
    /// `Paused=True` reported (`None`: the controller reports no Paused condition at all).
    pub acknowledged: Option<bool>,
    /// Frozen by `kubectl capi pause` (its marker annotation is present).
    pub by_kubectl_capi: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineCount {
    pub total: usize,
    pub with_node: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterReport {
    pub namespace: String,
    pub name: String,
    pub ready: bool,
    pub machines: MachineCount,
    pub frozen: Vec<Frozen>,
    pub checks: Vec<Check>,
    #[serde(skip)]
    pub control_plane: Option<(usize, i64)>,
    #[serde(skip)]
    pub workers: (usize, i64),
    #[serde(skip)]
    pub paused: bool,
}

impl ClusterReport {
    /// The first blocking reason, as the table's REASON column shows it.
    pub fn reason(&self) -> Option<&str> {
        self.checks
            .iter()
            .find(|c| c.status == CheckStatus::Fail)
            .map(|c| c.message.as_str())
    }

    pub fn warnings(&self) -> usize {
        self.checks
            .iter()
            .filter(|c| c.status == CheckStatus::Warn)
            .count()
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub ready: bool,
    pub clusters: Vec<ClusterReport>,
}

/// What to evaluate and how strictly.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Only these Clusters (namespace, name); all in the snapshot when empty.
    pub clusters: Vec<(String, String)>,
    /// Node health problems block instead of warning.
    pub strict: bool,
    /// Moves that paused Clusters here and did not finish, read from their journals.
    pub unfinished_moves: Vec<UnfinishedMove>,
    /// The user's connection flags (` --context c`), repeated in every suggested command.
    pub flags: String,
    /// The command already waits (`ready --wait`): no blocker suggests waiting for it.
    pub waiting: bool,
}

/// A kubectl-capi move that paused Clusters and stopped before it finished: the paused
/// Cluster's next step is to finish or undo the move, not to unpause it.
#[derive(Debug, Clone, Default)]
pub struct UnfinishedMove {
    /// The Clusters it paused (namespace, name).
    pub clusters: Vec<(String, String)>,
    /// The commands that finish and undo it, as the user would type them.
    pub resume: String,
    pub rollback: String,
}

impl UnfinishedMove {
    /// The one of `moves` that paused the Cluster `namespace/name`, if one did.
    pub fn of<'a>(
        moves: &'a [UnfinishedMove],
        (namespace, name): (&str, &str),
    ) -> Option<&'a UnfinishedMove> {
        moves
            .iter()
            .find(|m| m.clusters.iter().any(|(n, c)| n == namespace && c == name))
    }
}

/// Whether `cluster` is mid-move: paused by a kubectl-capi move that did not finish, as its copy
/// (it carries that move's mark) or as its original (one of `moves` paused it).
pub fn mid_move(cluster: &crate::model::ClusterView, moves: &[UnfinishedMove]) -> bool {
    let place = (
        cluster.reference.namespace.as_str(),
        cluster.reference.name.as_str(),
    );
    cluster.is_paused()
        && (cluster.moved_by.is_some() || UnfinishedMove::of(moves, place).is_some())
}
