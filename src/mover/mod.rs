//! `kubectl capi move`: clusterctl's object graph, order and checks, with every check before the
//! first write. The graph and the plan are pure; the executor is the shell around them.

mod checks;
pub mod create;
pub mod delete;
pub mod directory;
pub mod discover;
pub mod ends;
pub mod execute;
pub mod graph;
pub mod journal;
pub mod mark;
pub mod namespaces;
pub mod pause;
pub mod plan;
mod planning;
pub mod preflight;
pub mod progress;
pub mod record;
pub mod recovery;
pub mod report;
pub mod request;
pub mod requests;
mod restore;
pub mod same_cluster;
#[cfg(test)]
mod scenarios;
pub mod schedule;
mod steps;
mod story;
pub mod workload;
mod writes;

use crate::error::Result;
use crate::kube::Stop;
use crate::output::{ExitStatus, Printer};
use ends::Ends;
use progress::Progress;
use request::MoveRequest;
pub use steps::Finished;
use steps::{Move, Step};
pub(crate) use story::{Around, run};

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
        return restore::restore(request, directory, &ends.source, (printer, progress))
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
