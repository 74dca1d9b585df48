//! What every step of one move reads, built once per command: what was asked, the two ends,
//! where it reports, what it lists and where its records live — and how a step says whether
//! the move goes on.

use crate::error::Result;
use crate::kube::{Cluster, Stop};
use crate::mover::ends::both::Ends;
use crate::mover::journal::{self, Journal, JournalCopy, JournalFile, MoveId};
use crate::mover::progress::Progress;
use crate::mover::request::MoveRequest;
use crate::output::{ExitStatus, Printer};
use crate::snapshot::ListScope;

/// A step either goes on with what it found, or ends the command with a status.
pub enum Step<T> {
    Go(T),
    Stop(ExitStatus),
}

/// Where a move's records live: the local journal and its copy in the source (with a target).
#[derive(Clone)]
pub struct MoveRecords {
    pub path: std::path::PathBuf,
    pub key: String,
    /// The two clusters, by their `kube-system` UIDs.
    pub identities: crate::verify::Between,
    pub copy_namespace: String,
}

/// What every step of one move reads: what was asked, its two ends, where it reports, what it
/// lists, where its records live, and what stops it.
#[derive(Clone)]
pub struct MoveContext<'a> {
    pub request: &'a MoveRequest,
    pub ends: &'a Ends,
    pub printer: &'a Printer,
    pub progress: &'a dyn Progress,
    pub scope: ListScope,
    pub namespace: Option<String>,
    pub records: Option<MoveRecords>,
    /// Ctrl-C, or the loss of the lease: the writes stop at their next safe point.
    pub stop: Stop,
}

/// What names this move among others between the same two clusters (`None` without a target).
fn move_id<'r>(
    request: &'r MoveRequest,
    ends: &'r Ends,
    namespace: Option<&'r str>,
) -> Option<MoveId<'r>> {
    let (target, identities) = (ends.target.as_ref()?, ends.identities.as_ref()?);
    Some(MoveId {
        source: &ends.source.cluster.url,
        source_uid: &identities.source,
        target: &target.cluster.url,
        target_uid: &identities.target,
        namespace,
        clusters: &request.clusters,
        selector: request.scope.selector.as_deref(),
    })
}

impl<'a> MoveContext<'a> {
    /// The move between `ends` that `request` asks for, and where its records live.
    pub async fn new(
        request: &'a MoveRequest,
        ends: &'a Ends,
        (printer, progress): (&'a Printer, &'a dyn Progress),
        stop: Stop,
    ) -> Result<MoveContext<'a>> {
        let source = &ends.source.cluster;
        let (scope, namespace) = if request.scope.all_namespaces {
            (ListScope::AllNamespaces, None)
        } else {
            let ns = source.namespace(request.scope.namespace.as_deref());
            (ListScope::Namespace(ns.clone()), Some(ns))
        };
        let records = match (
            move_id(request, ends, namespace.as_deref()),
            &ends.identities,
        ) {
            (Some(id), Some(identities)) => {
                let path = match request.journal.clone() {
                    Some(path) => path,
                    None => {
                        // An interrupted move an older version keyed by the URLs is still found.
                        let dir = journal::default_dir()?;
                        let (current, legacy) =
                            (dir.join(id.file_name()), dir.join(id.legacy_file_name()));
                        if !current.exists() && legacy.exists() {
                            legacy
                        } else {
                            current
                        }
                    }
                };
                let legacy = path.file_name().and_then(|n| n.to_str())
                    == Some(id.legacy_file_name().as_str());
                Some(MoveRecords {
                    path,
                    key: if legacy { id.legacy_key() } else { id.key() },
                    identities: identities.clone(),
                    copy_namespace: journal::copy::namespace(source, namespace.as_deref()).await?,
                })
            }
            _ => None,
        };
        Ok(MoveContext {
            request,
            ends,
            printer,
            progress,
            scope,
            namespace,
            records,
            stop,
        })
    }

    pub fn source(&self) -> &Cluster {
        &self.ends.source.cluster
    }

    /// The running move's journal: its local file and its copy in the source cluster.
    pub fn journal_file(&self, records: &MoveRecords, journal: Journal) -> JournalFile {
        JournalFile {
            path: records.path.clone(),
            journal,
            copy: Some(JournalCopy {
                cluster: self.source().clone(),
                namespace: records.copy_namespace.clone(),
                key: records.key.clone(),
                written: None,
                concurrency: self.request.concurrency,
                kept: self.kept_kubeconfig(),
            }),
        }
    }

    /// Where a `--to-cluster` move keeps its target's kubeconfig while it runs.
    pub fn kept_kubeconfig(&self) -> Option<crate::mover::journal::kept::Kept> {
        Some(crate::mover::journal::kept::Kept {
            namespace: self.namespace.clone()?,
            cluster: self.request.to_cluster.clone()?,
        })
    }

    /// What names this move among others between its two clusters (`None` without a target).
    pub fn move_id(&self) -> Option<MoveId<'_>> {
        move_id(self.request, self.ends, self.namespace.as_deref())
    }

    /// Where the journal is, as messages name it.
    pub fn journal_shown(&self) -> String {
        self.records
            .as_ref()
            .map(|r| r.path.display().to_string())
            .unwrap_or_default()
    }
}
