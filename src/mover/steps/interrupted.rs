//! An interrupted move, from its journal alone: rolled back before its deletion phase
//! (`--rollback`), or finished once it already deletes from the source.

use crate::choices::DryRun;
use crate::error::{Error, Result};
use crate::kube::{Connected, OnCtrlC};
use crate::mover::journal::{self, Journal, Stage};
use crate::mover::progress::Progress;
use crate::mover::recovery::{self, Replay, finish_from_journal, rollback_from_journal};
use crate::mover::report::{Summary, finished_note, warn_skipped};
use crate::mover::steps::context::{MoveContext, MoveRecords};
use crate::mover::steps::history::History;
use crate::output::ExitStatus;

/// `--rollback`: undoes an interrupted move before its deletion phase.
pub(in crate::mover) async fn rollback(
    this: &MoveContext<'_>,
    history: &History,
) -> Result<ExitStatus> {
    let (Some(journal), Some(records), Some(target)) =
        (&history.unfinished, &this.records, &this.ends.target)
    else {
        return Err(Error::Usage(format!(
            "no interrupted move to roll back: {} holds none{}",
            this.journal_shown(),
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
    let gone = recovery::originals_gone(this.source(), &all).await?;
    if gone > 0 {
        return Err(Error::Refused(vec![format!(
            "rollback refused: {gone} of the {} objects {} records are no longer in the source with their recorded UIDs, so the move was continued elsewhere; the target may hold their only copy",
            all.len(),
            records.path.display()
        )]));
    }
    this.stop.on_ctrl_c(OnCtrlC::StopAfterWritesInFlight);
    let removed =
        rollback_from_journal(replay(this, target, records, journal, this.progress)).await?;
    this.printer.data(&format!(
        "rolled back: {} object(s) removed from the target, {} Cluster(s)/ClusterClass(es) unpaused in the source\n",
        removed.count,
        journal.paused.len()
    ))?;
    warn_skipped(this.printer, &removed.skipped);
    Ok(ExitStatus::Success)
}

/// An interrupted move that already deletes from the source is finished from its journal
/// alone (the source may be half deleted, so it cannot be planned again).
pub(in crate::mover) async fn finish_interrupted(
    this: &MoveContext<'_>,
    history: &History,
) -> Result<Option<Box<Summary>>> {
    if this.request.resume && history.unfinished.is_none() {
        return Err(Error::Usage(format!(
            "no interrupted move to resume: {} holds none{}; run the move without --resume",
            this.journal_shown(),
            finished_note(history.finished.as_ref())
        )));
    }
    let (Some(journal), Some(records)) = (&history.unfinished, &this.records) else {
        return Ok(None);
    };
    this.printer.note(&format!(
        "continuing the interrupted move recorded in {} (stage: {:?})",
        records.path.display(),
        journal.stage
    ));
    let (Some(target), true) = (
        &this.ends.target,
        journal.stage >= Stage::Deleting && this.request.dry_run == DryRun::None,
    ) else {
        return Ok(None);
    };
    this.stop.on_ctrl_c(OnCtrlC::StopAfterWritesInFlight);
    let summary =
        finish_from_journal(replay(this, target, records, journal, this.progress)).await?;
    Ok(Some(Box::new(summary)))
}

/// Finishing or rolling back the recorded move, its journal saved where it was read.
fn replay<'r>(
    this: &'r MoveContext<'_>,
    target: &'r Connected,
    records: &MoveRecords,
    journal: &Journal,
    progress: &'r dyn Progress,
) -> Replay<'r> {
    Replay {
        source: this.source(),
        target: &target.cluster,
        journal: this.journal_file(records, journal.clone()),
        concurrency: this.request.concurrency,
        progress,
        stop: this.stop.clone(),
    }
}
