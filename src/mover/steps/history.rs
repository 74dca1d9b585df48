//! What earlier runs of this move recorded, reconciled before anything acts on it: journals
//! of other moves set aside, the record read from the local journal or its copy in the source.

use crate::error::{Error, Result};
use crate::mover::journal::{self, Journal, MoveId, Stage};
use crate::mover::recovery::{self, Recorded, Records};
use crate::mover::steps::context::{MoveContext, MoveRecords, Step};
use crate::output::ExitStatus;

/// What earlier runs of this move recorded, once reconciled.
#[derive(Default)]
pub struct History {
    pub unfinished: Option<Journal>,
    pub finished: Option<Journal>,
}

/// What earlier runs of this move recorded, reconciled before anything acts on it.
pub(in crate::mover) async fn history(this: &MoveContext<'_>) -> Result<Step<History>> {
    let (Some(records), Some(id)) = (&this.records, this.move_id()) else {
        return Ok(Step::Go(History::default()));
    };
    if this.request.journal.is_none() {
        journal::prune_finished(&journal::default_dir()?);
    }
    set_aside_others(this, records, id).await?;
    let recorded = recovery::recorded(
        &Records {
            path: &records.path,
            source: this.source(),
            copy_namespace: &records.copy_namespace,
            key: &records.key,
        },
        this.request.rollback,
    )
    .await?;
    reconciled(this, records, recorded)
}

/// Journals of other moves where this one keeps its own are set aside, and said so; a resume or
/// rollback of this move refuses instead, as what it would continue is not its own.
async fn set_aside_others(
    this: &MoveContext<'_>,
    records: &MoveRecords,
    id: MoveId<'_>,
) -> Result<()> {
    let set_aside = recovery::set_aside_foreign(&recovery::Elsewhere {
        id,
        path: &records.path,
        chosen: this.request.journal.is_some(),
        source: this.source(),
        copy_namespace: &records.copy_namespace,
    })
    .await?;
    if set_aside.is_empty() {
        return Ok(());
    }
    if this.request.resume || this.request.rollback {
        let verb = if this.request.rollback {
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
    this.printer.note(&format!(
        "note: {}; the move starts afresh",
        set_aside.join("; ")
    ));
    Ok(())
}

/// What `recorded` means for this run: its history, or the end of the command.
fn reconciled(
    this: &MoveContext<'_>,
    records: &MoveRecords,
    recorded: Recorded,
) -> Result<Step<History>> {
    let shown = records.path.display();
    Ok(Step::Go(match recorded {
        Recorded::Nothing => History::default(),
        Recorded::Interrupted { journal, from_copy } => {
            if from_copy {
                this.printer
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
                if this.request.rollback {
                    "rollback"
                } else {
                    "move"
                }
            )]));
        }
        Recorded::FinishedElsewhere(stale) => {
            if this.request.rollback {
                return Err(Error::Refused(vec![format!(
                    "rollback refused: the move recorded in {shown} (stage: {:?}) was finished from elsewhere — its objects have left the source and its copy there is gone, so the target holds the only copy",
                    stale.stage
                )]));
            }
            let mut record = stale;
            record.stage = Stage::Done;
            journal::save_text(&record.finished_record().to_json(), &records.path)?;
            this.printer.info(&format!(
                "the move recorded in {shown} was finished from elsewhere: its objects have left the source and its copy there is gone; nothing to do"
            ));
            return Ok(Step::Stop(ExitStatus::Success));
        }
    }))
}
