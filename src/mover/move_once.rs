//! The move itself, once both ends are connected: clusterctl's `move()` as a short list of named
//! steps, and the checks a `--freeze` runs before it writes.

use crate::error::Result;
use crate::kube::Stop;
use crate::mover::ends::both::Ends;
use crate::mover::progress::Progress;
use crate::mover::request::MoveRequest;
use crate::mover::steps::{Finished, Move, Step};
use crate::output::{ExitStatus, Printer};

/// The move itself, as clusterctl's `move()` reads: a short list of named steps — what earlier
/// runs recorded, the plan, every check, then the writes (pause, create, delete, unpause; see
/// [`execute`]), each journalled. `stop` is Ctrl-C or the loss of the lease. [`run`] is the
/// whole command around it.
pub async fn move_once(
    request: &MoveRequest,
    ends: &Ends,
    (printer, progress): (&Printer, &dyn Progress),
    stop: &Stop,
) -> Result<Finished> {
    if let Some(directory) = &request.from_directory {
        return crate::mover::backup::restore::restore(
            request,
            directory,
            &ends.source,
            (printer, progress),
        )
        .await
        .map(Finished::from);
    }
    let this = Move::new(request, ends, (printer, progress), stop.clone()).await?;
    let history = match this.history().await? {
        Step::Go(history) => history,
        Step::Stop(status) => return Ok(status.into()),
    };
    if request.rollback {
        return this.rollback(&history).await.map(Finished::from);
    }
    if let Some(summary) = this.finish_interrupted(&history).await? {
        return Ok(Finished::Moved(summary));
    }
    let planned = match this.plan(&history).await? {
        Step::Go(planned) => planned,
        Step::Stop(status) => return Ok(status.into()),
    };
    if let Some(directory) = &request.to_directory {
        return this.backup(&planned, directory).await.map(Finished::from);
    }
    let checked = match this.check(&planned, &history).await? {
        Step::Go(checked) => checked,
        Step::Stop(status) => return Ok(status.into()),
    };
    this.execute(planned, checked, history).await
}

/// `--freeze`/`--wait-ready`: the checks the freeze does not change, before it writes (they
/// only read). `Some(status)` ends the command there: refused, or nothing to move.
pub async fn check_before_freezing(
    request: &MoveRequest,
    ends: &Ends,
    (printer, progress): (&Printer, &dyn Progress),
    stop: &Stop,
) -> Result<Option<ExitStatus>> {
    Move::new(request, ends, (printer, progress), stop.clone())
        .await?
        .check_before_freezing()
        .await
}
