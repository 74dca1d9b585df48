//! Which record of a move a rerun, `--resume` or `--rollback` trusts. A move keeps two: the local
//! journal and its copy in the source cluster (for a resume from another machine). Either can be
//! stale — the move may have been continued, finished or rolled back elsewhere — so before
//! anything acts on one, the two are reconciled with each other and with the source.

use std::path::Path;

use futures::{StreamExt, TryStreamExt, stream};

use super::journal::{self, Entry, Journal, Stage};
use crate::error::Result;
use crate::kube::Cluster;

/// What the records of a move say.
#[derive(Debug)]
pub enum Recorded {
    /// No record: a fresh move.
    Nothing,
    /// The move finished here; its short record.
    Finished(Journal),
    /// An interrupted move, from the record that is furthest along.
    Interrupted { journal: Journal, from_copy: bool },
    /// The local journal of an interrupted move, but its copy is gone and so are its objects
    /// from the source: it was finished from elsewhere.
    FinishedElsewhere(Journal),
    /// The records disagree in a way no command should act on; why, and what to do.
    Untrusted(String),
}

/// Where a move's records are.
pub struct Records<'a> {
    pub path: &'a Path,
    pub source: &'a Cluster,
    pub copy_namespace: &'a str,
    pub key: &'a str,
}

/// Reads both records and reconciles them. `rollback`: the caller will delete from the target on
/// the strength of the result, so a copy that is further along than the local journal (the move
/// went on elsewhere) is not followed but refused.
pub async fn recorded(records: &Records<'_>, rollback: bool) -> Result<Recorded> {
    let shown = records.path.display();
    let local = if records.path.exists() {
        Some(Journal::load(records.path)?)
    } else {
        None
    };
    let copy = journal::copy::load(records.source, records.copy_namespace, records.key)
        .await?
        .filter(|j| !j.stage.finished());
    Ok(match (local, copy) {
        (None, None) => Recorded::Nothing,
        (None, Some(copy)) => Recorded::Interrupted {
            journal: copy,
            from_copy: true,
        },
        (Some(local), None) if local.stage.finished() => Recorded::Finished(local),
        // Finished here, then started again from elsewhere and interrupted there.
        (Some(local), Some(copy))
            if local.stage.finished() || copy.progress() > local.progress() =>
        {
            if rollback {
                Recorded::Untrusted(format!(
                    "the move was continued elsewhere: its copy in the source cluster is further along (stage: {:?}) than {shown} (stage: {:?}); if that run has stopped, remove {shown} and run the rollback again to use the copy",
                    copy.stage, local.stage
                ))
            } else {
                Recorded::Interrupted {
                    journal: copy,
                    from_copy: true,
                }
            }
        }
        (Some(local), Some(_)) => Recorded::Interrupted {
            journal: local,
            from_copy: false,
        },
        // The copy goes only when a move finishes or is rolled back; only reality can tell
        // which, or whether the copy was never written (the first save stopped halfway, so
        // nothing was done).
        (Some(local), None) => {
            let moved: Vec<&Entry> = local.entries.iter().filter(|e| !e.kept_in_source).collect();
            let gone = originals_gone(records.source, &moved).await?;
            if !moved.is_empty() && gone == moved.len() {
                Recorded::FinishedElsewhere(local)
            } else if gone == 0 && local.stage == Stage::Pausing && !rollback {
                Recorded::Nothing
            } else {
                Recorded::Untrusted(format!(
                    "{shown} records an interrupted move (stage: {:?}), but the source cluster holds no copy of it and {gone} of its {} objects have left the source: the move was continued elsewhere and finished or rolled back there, or its copy was deleted; check both clusters, then remove {shown} to start afresh",
                    local.stage,
                    moved.len()
                ))
            }
        }
    })
}

/// How many of `entries` no longer exist in the source with their recorded UID.
pub async fn originals_gone(source: &Cluster, entries: &[&Entry]) -> Result<usize> {
    let present: Vec<bool> = stream::iter(entries.iter().map(|entry| async move {
        let found = super::execute::read_entry(source, entry, "source").await?;
        Ok::<_, crate::error::Error>(
            found.is_some_and(|(_, o)| o.metadata.uid.as_deref() == Some(entry.uid.as_str())),
        )
    }))
    .buffered(super::execute::DEFAULT_CONCURRENCY)
    .try_collect()
    .await?;
    Ok(present.iter().filter(|p| !**p).count())
}
