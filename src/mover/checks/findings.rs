//! What the preflight is given beyond the plan (`ThisMove`) and what it finds (`Preflight`, each
//! reason a `Refusal`), shared by every check.

use std::collections::BTreeSet;

use crate::kube::Cluster;
use crate::model::ObjectRef;
use crate::mover::addressing::DEFAULT_CONCURRENCY;
use crate::mover::journal::Journal;
use crate::mover::write::create::already_exists;
use crate::mover::write::namespaces::MadeNamespace;

/// Why a move cannot start: what each check finds, rendered once (in clusterctl's words where
/// clusterctl has them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// clusterctl's own preflight and what `ready` adds, in their words.
    Source(String),
    /// clusterctl's P6: ClusterClasses that move while paused (`ns/name`).
    PausedClasses(Vec<String>),
    NotServed {
        kind: String,
        group: String,
        version: String,
    },
    ProviderMissing {
        provider: String,
    },
    ProviderOlder {
        provider: String,
        source: String,
        target: String,
    },
    /// A provider version that is not a semantic version: it cannot be compared.
    ProviderVersion {
        provider: String,
        cluster: &'static str,
        version: String,
    },
    Permission {
        in_source: bool,
        verb: &'static str,
        group: String,
        resource: String,
        namespace: String,
    },
    AlreadyExists(ObjectRef),
    Rejected {
        object: ObjectRef,
        message: String,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Source(message) => f.write_str(message),
            Refusal::PausedClasses(classes) => f.write_str(
                &crate::names::clusterctl::paused_cluster_classes(&classes.join(", ")),
            ),
            Refusal::NotServed {
                kind,
                group,
                version,
            } => write!(
                f,
                "the target cluster does not serve {kind}.{group} at {version}; install its provider there (clusterctl init) first"
            ),
            Refusal::ProviderMissing { provider } => write!(
                f,
                "failed to check providers in target cluster: provider {provider} not found in the target cluster"
            ),
            Refusal::ProviderOlder {
                provider,
                source,
                target,
            } => write!(
                f,
                "failed to check providers in target cluster: provider {provider} in the target cluster is older than in the source cluster (source: {source}, target: {target})"
            ),
            Refusal::ProviderVersion {
                provider,
                cluster,
                version,
            } => write!(
                f,
                "failed to check providers in target cluster: provider {provider} in the {cluster} cluster has version {version:?}, which is not a semantic version; fix its Provider inventory entry (clusterctl writes versions like v1.10.0)"
            ),
            Refusal::Permission {
                in_source,
                verb,
                group,
                resource,
                namespace,
            } => {
                let which = if *in_source { "source" } else { "target" };
                let qualified = if group.is_empty() {
                    resource.clone()
                } else {
                    format!("{resource}.{group}")
                };
                let place = if namespace.is_empty() {
                    String::new()
                } else {
                    format!(" in namespace {namespace}")
                };
                write!(
                    f,
                    "missing permission in the {which} cluster: {verb} {qualified}{place}"
                )
            }
            Refusal::AlreadyExists(object) => f.write_str(&already_exists(object)),
            Refusal::Rejected { object, message } => write!(
                f,
                "the target cluster rejects {}: {message}",
                object.kubectl_name()
            ),
        }
    }
}

/// What the preflight found.
pub struct Preflight {
    /// Every reason the move cannot start (empty: go).
    pub failures: Vec<Refusal>,
    /// Objects (source UIDs) that already exist in the target, from the dry-run creates: a
    /// rollback must never remove them.
    pub in_target: BTreeSet<String>,
    /// Namespaces the dry runs needed and the preflight created in the target (when it
    /// passed): to remove again if the move writes nothing into them (a dry run, a stop before
    /// the first create).
    pub made_namespaces: Vec<MadeNamespace>,
    /// Objects (source UIDs) whose copy in the target an earlier move between these two
    /// clusters made: reused, not refused.
    pub reused: BTreeSet<String>,
    /// What a server-side dry run could not check yet, and why (one line each).
    pub unchecked: Vec<String>,
    /// Namespaces the dry runs needed, created and removed again because they refused: what a
    /// refusal wrote and undid.
    pub removed_namespaces: Vec<String>,
}

/// What the preflight knows of this move beyond its plan.
pub struct ThisMove<'a> {
    /// The journal of an earlier, interrupted attempt: its own pauses and copies do not block it.
    pub earlier: Option<&'a Journal>,
    /// `--overwrite-existing`.
    pub overwrite_existing: bool,
    /// Where the journal's copy is kept in the source (its ConfigMaps need permissions too).
    pub journal_namespace: Option<&'a str>,
    /// The user's source connection flags, repeated in the commands the refusals suggest.
    pub flags: &'a str,
    /// `--concurrency`: requests in flight at once (reviews, dry runs), as for the writes.
    pub concurrency: usize,
    /// Other kubectl-capi moves that paused Clusters here and did not finish: a Cluster they
    /// paused is refused with the commands that continue or undo them, never with an unpause.
    pub unfinished: &'a [crate::ready::evaluate::UnfinishedMove],
    /// The source and the two clusters' identities: where to look for the copies earlier
    /// moves between them made, which this one reuses instead of refusing.
    pub earlier_copies: Option<(&'a Cluster, &'a crate::verify::Between)>,
    /// The checks before `--freeze`/`--wait-ready`: read-only (no namespaces, no dry-run
    /// creates), and readiness only as far as freezing and waiting cannot clear it.
    pub before_freeze: bool,
    /// `--dry-run=server`: not even a namespace is created.
    pub server_dry_run: bool,
}

impl Default for ThisMove<'_> {
    fn default() -> Self {
        ThisMove {
            earlier: None,
            overwrite_existing: false,
            journal_namespace: None,
            flags: "",
            concurrency: DEFAULT_CONCURRENCY,
            unfinished: &[],
            earlier_copies: None,
            before_freeze: false,
            server_dry_run: false,
        }
    }
}

/// The preflight's refusals, each rendered once, in the order the checks found them.
pub fn rendered(refusals: &[Refusal]) -> Vec<String> {
    refusals.iter().map(ToString::to_string).collect()
}
