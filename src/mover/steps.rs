//! The move's steps over its two ends: what earlier runs recorded (history), and undoing or
//! finishing an interrupted run from its journal.

use std::collections::BTreeSet;

use crate::cli::DryRun;
use crate::error::{Error, Result};
use crate::kube::{Cluster, Connected, OnCtrlC, Stop};
use crate::model::ObjectRef;
use crate::mover::ends::both::Ends;
use crate::mover::graph::plan::MovePlan;
use crate::mover::journal::{self, Journal, JournalCopy, JournalFile, MoveId, Stage};
use crate::mover::progress::Progress;
use crate::mover::recovery::{self, Recorded, Records};
use crate::mover::recovery::{Replay, finish_from_journal, rollback_from_journal};
use crate::mover::report::{finished_note, warn_skipped};
use crate::mover::request::MoveRequest;
use crate::mover::write::execute::Summary;
use crate::output::{ExitStatus, Printer};
use crate::snapshot::ListScope;

/// How one run of the move ended: the objects moved (its summary still to print), or another
/// way (a plan printed, a refusal, a rollback) with its status.
pub enum Finished {
    Moved(Box<Summary>),
    Ended(ExitStatus),
}

impl From<ExitStatus> for Finished {
    fn from(status: ExitStatus) -> Finished {
        Finished::Ended(status)
    }
}

/// A step either goes on with what it found, or ends the command with a status.
pub enum Step<T> {
    Go(T),
    Stop(ExitStatus),
}

/// Where a move's records live: the local journal and its copy in the source (with a target).
pub struct MoveRecords {
    pub path: std::path::PathBuf,
    pub key: String,
    /// The two clusters, by their `kube-system` UIDs.
    pub identities: crate::verify::Between,
    pub copy_namespace: String,
}

/// What earlier runs of this move recorded, once reconciled.
#[derive(Default)]
pub struct History {
    pub unfinished: Option<Journal>,
    pub finished: Option<Journal>,
}

/// The move planned from a fresh listing of the source.
pub struct Planned {
    pub types: Vec<crate::mover::graph::discover::MoveType>,
    pub objects: crate::mover::graph::object_graph::TypedObjects,
    pub plan: MovePlan,
    pub clusters: Vec<ObjectRef>,
}

/// What the preflight learnt that the move needs.
pub struct Checked {
    pub in_target: BTreeSet<String>,
    pub made_namespaces: Vec<crate::mover::write::namespaces::MadeNamespace>,
    /// Objects whose copy an earlier move between these clusters made: reused.
    pub reused: BTreeSet<String>,
    /// What a server-side dry run could not check yet (one line each).
    pub unchecked: Vec<String>,
    /// Namespaces the refused dry runs needed: created, then removed again.
    pub removed_namespaces: Vec<String>,
}

/// One run of `kubectl capi move` between two clusters (or to a directory): what was asked,
/// its ends and its records. Its methods are the steps [`crate::mover::story::run`] takes.
pub(super) struct Move<'a> {
    pub(super) request: &'a MoveRequest,
    pub(super) ends: &'a Ends,
    pub(super) printer: &'a Printer,
    pub(super) progress: &'a dyn Progress,
    pub(super) scope: ListScope,
    pub(super) namespace: Option<String>,
    pub(super) records: Option<MoveRecords>,
    /// Ctrl-C, or the loss of the lease: the writes stop at their next safe point.
    pub(super) stop: Stop,
}

impl<'a> Move<'a> {
    /// The move between `ends` that `request` asks for, and where its records live.
    pub(super) async fn new(
        request: &'a MoveRequest,
        ends: &'a Ends,
        (printer, progress): (&'a Printer, &'a dyn Progress),
        stop: Stop,
    ) -> Result<Move<'a>> {
        let source = &ends.source.cluster;
        let (scope, namespace) = if request.scope.all_namespaces {
            (ListScope::AllNamespaces, None)
        } else {
            let ns = source.namespace(request.scope.namespace.as_deref());
            (ListScope::Namespace(ns.clone()), Some(ns))
        };
        let records = match (&ends.target, &ends.identities) {
            (Some(target), Some(identities)) => {
                let id = MoveId {
                    source: &source.url,
                    source_uid: &identities.source,
                    target: &target.cluster.url,
                    target_uid: &identities.target,
                    namespace: namespace.as_deref(),
                    clusters: &request.clusters,
                    selector: request.scope.selector.as_deref(),
                };
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
        Ok(Move {
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

    pub(super) fn source(&self) -> &Cluster {
        &self.ends.source.cluster
    }

    /// The running move's journal: its local file and its copy in the source cluster.
    /// Finishing or rolling back the recorded move, its journal saved where it was read.
    pub(super) fn replay<'r>(
        &'r self,
        target: &'r Connected,
        records: &MoveRecords,
        journal: &Journal,
        progress: &'r dyn Progress,
    ) -> Replay<'r> {
        Replay {
            source: self.source(),
            target: &target.cluster,
            journal: self.journal_file(records, journal.clone()),
            concurrency: self.request.concurrency,
            progress,
            stop: self.stop.clone(),
        }
    }

    pub(super) fn journal_file(&self, records: &MoveRecords, journal: Journal) -> JournalFile {
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
    pub(super) fn kept_kubeconfig(&self) -> Option<crate::mover::journal::kept::Kept> {
        Some(crate::mover::journal::kept::Kept {
            namespace: self.namespace.clone()?,
            cluster: self.request.to_cluster.clone()?,
        })
    }

    pub(super) fn journal_shown(&self) -> String {
        self.records
            .as_ref()
            .map(|r| r.path.display().to_string())
            .unwrap_or_default()
    }

    /// What earlier runs of this move recorded, reconciled before anything acts on it.
    pub(super) async fn history(&self) -> Result<Step<History>> {
        let Some(records) = &self.records else {
            return Ok(Step::Go(History::default()));
        };
        if self.request.journal.is_none() {
            journal::prune_finished(&journal::default_dir()?);
        }
        let set_aside = recovery::set_aside_foreign(&recovery::Elsewhere {
            id: MoveId {
                source: &self.source().url,
                source_uid: &records.identities.source,
                target: &self
                    .ends
                    .target
                    .as_ref()
                    .expect("records have a target")
                    .cluster
                    .url,
                target_uid: &records.identities.target,
                namespace: self.namespace.as_deref(),
                clusters: &self.request.clusters,
                selector: self.request.scope.selector.as_deref(),
            },
            path: &records.path,
            chosen: self.request.journal.is_some(),
            source: self.source(),
            copy_namespace: &records.copy_namespace,
        })
        .await?;
        if !set_aside.is_empty() {
            if self.request.resume || self.request.rollback {
                let verb = if self.request.rollback {
                    "rollback"
                } else {
                    "resume"
                };
                return Err(Error::Refused(
                    set_aside
                        .iter()
                        .map(|note| format!("{verb} refused, nothing was written: {note}"))
                        .collect(),
                ));
            }
            self.printer.note(&format!(
                "note: {}; the move starts afresh",
                set_aside.join("; ")
            ));
        }
        let recorded = recovery::recorded(
            &Records {
                path: &records.path,
                source: self.source(),
                copy_namespace: &records.copy_namespace,
                key: &records.key,
            },
            self.request.rollback,
        )
        .await?;
        let shown = records.path.display();
        Ok(Step::Go(match recorded {
            Recorded::Nothing => History::default(),
            Recorded::Interrupted { journal, from_copy } => {
                if from_copy {
                    self.printer
                        .info("continuing from the journal's copy in the source cluster");
                }
                History {
                    unfinished: Some(journal),
                    finished: None,
                }
            }
            Recorded::Finished(record) => History {
                unfinished: None,
                finished: Some(record),
            },
            Recorded::Untrusted(reason) => {
                return Err(Error::Refused(vec![format!(
                    "{} refused: {reason}",
                    if self.request.rollback {
                        "rollback"
                    } else {
                        "move"
                    }
                )]));
            }
            Recorded::FinishedElsewhere(stale) => {
                if self.request.rollback {
                    return Err(Error::Refused(vec![format!(
                        "rollback refused: the move recorded in {shown} (stage: {:?}) was finished from elsewhere — its objects have left the source and its copy there is gone, so the target holds the only copy",
                        stale.stage
                    )]));
                }
                let mut record = stale;
                record.stage = Stage::Done;
                journal::save_text(&record.finished_record().to_json(), &records.path)?;
                self.printer.info(&format!(
                    "the move recorded in {shown} was finished from elsewhere: its objects have left the source and its copy there is gone; nothing to do"
                ));
                return Ok(Step::Stop(ExitStatus::Success));
            }
        }))
    }

    /// `--rollback`: undoes an interrupted move before its deletion phase.
    pub(super) async fn rollback(&self, history: &History) -> Result<ExitStatus> {
        let (Some(journal), Some(records), Some(target)) =
            (&history.unfinished, &self.records, &self.ends.target)
        else {
            return Err(Error::Usage(format!(
                "no interrupted move to roll back: {} holds none{}",
                self.journal_shown(),
                finished_note(history.finished.as_ref())
            )));
        };
        if journal.stage >= Stage::Deleting {
            return Err(Error::Refused(vec![format!(
                "rollback refused: the move already started deleting from the source (stage: {:?}), so the target holds the only copy of those objects; finish it with the same command and --resume",
                journal.stage
            )]));
        }
        // A rollback leaves the source as the only home: every original must be there.
        let all: Vec<&journal::Entry> = journal.entries.iter().collect();
        let gone = recovery::originals_gone(self.source(), &all).await?;
        if gone > 0 {
            return Err(Error::Refused(vec![format!(
                "rollback refused: {gone} of the {} objects {} records are no longer in the source with their recorded UIDs, so the move was continued elsewhere; the target may hold their only copy",
                all.len(),
                records.path.display()
            )]));
        }
        self.stop.on_ctrl_c(OnCtrlC::StopAfterWritesInFlight);
        let removed =
            rollback_from_journal(self.replay(target, records, journal, self.progress)).await?;
        self.printer.data(&format!(
            "rolled back: {} object(s) removed from the target, {} Cluster(s)/ClusterClass(es) unpaused in the source\n",
            removed.count,
            journal.paused.len()
        ))?;
        warn_skipped(self.printer, &removed.skipped);
        Ok(ExitStatus::Success)
    }

    /// An interrupted move that already deletes from the source is finished from its journal
    /// alone (the source may be half deleted, so it cannot be planned again).
    pub(super) async fn finish_interrupted(
        &self,
        history: &History,
    ) -> Result<Option<Box<Summary>>> {
        if self.request.resume && history.unfinished.is_none() {
            return Err(Error::Usage(format!(
                "no interrupted move to resume: {} holds none{}; run the move without --resume",
                self.journal_shown(),
                finished_note(history.finished.as_ref())
            )));
        }
        let (Some(journal), Some(records)) = (&history.unfinished, &self.records) else {
            return Ok(None);
        };
        self.printer.note(&format!(
            "continuing the interrupted move recorded in {} (stage: {:?})",
            records.path.display(),
            journal.stage
        ));
        let (Some(target), true) = (
            &self.ends.target,
            journal.stage >= Stage::Deleting && self.request.dry_run == DryRun::None,
        ) else {
            return Ok(None);
        };
        self.stop.on_ctrl_c(OnCtrlC::StopAfterWritesInFlight);
        let summary =
            finish_from_journal(self.replay(target, records, journal, self.progress)).await?;
        Ok(Some(Box::new(summary)))
    }
}
