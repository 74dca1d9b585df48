//! One move, start to end, as clusterctl's `move()` reads: what a move holds, and its steps in
//! order, each a call into its room (`steps/`) — what earlier runs recorded, a rollback or the
//! finish of an interrupted run, the plan, every check before the first write, then the writes
//! under the journal. Built once per command: with `--freeze`, the checks before freezing and
//! the move that follows read the same record.

use crate::error::Result;
use crate::kube::Stop;
use crate::mover::ends::both::Ends;
use crate::mover::progress::Progress;
use crate::mover::report::Summary;
use crate::mover::request::MoveRequest;
use crate::mover::steps::context::{MoveContext, Step};
use crate::mover::steps::history::History;
use crate::mover::steps::{checking, history, interrupted, planning, to_directory, writing};
use crate::output::{ExitStatus, Printer};

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

/// One run of `kubectl capi move` between two clusters (or to or from a directory): what every
/// step reads, and what earlier runs of this move recorded.
pub struct Move<'a> {
    context: MoveContext<'a>,
    history: History,
}

impl<'a> Move<'a> {
    /// The move `request` asks for between `ends`, with what earlier runs of it recorded (read
    /// once, reconciled before anything acts on it); `Stop` where that record ends the command.
    pub async fn new(
        request: &'a MoveRequest,
        ends: &'a Ends,
        (printer, progress): (&'a Printer, &'a dyn Progress),
        stop: Stop,
    ) -> Result<Step<Move<'a>>> {
        let context = MoveContext::new(request, ends, (printer, progress), stop).await?;
        Ok(match history::history(&context).await? {
            Step::Go(history) => Step::Go(Move { context, history }),
            Step::Stop(status) => Step::Stop(status),
        })
    }

    /// `--freeze`/`--wait-ready`: the checks the freeze does not change, before it writes (they
    /// only read), said through `printer`. `Some(status)` ends the command there: refused, or
    /// nothing to move.
    pub async fn check_before_freezing(&self, printer: &Printer) -> Result<Option<ExitStatus>> {
        // A resumed move checks itself as it goes on.
        if self.history.unfinished.is_some() {
            return Ok(None);
        }
        let context = MoveContext {
            printer,
            ..self.context.clone()
        };
        checking::check_before_freezing(&context, &self.history).await
    }

    /// The move itself: what earlier runs recorded decides whether it rolls back or finishes
    /// one, else the plan, every check, then the writes (pause, create, delete, unpause; see
    /// [`crate::mover::write::execute`]), each journalled. Its `stop` is Ctrl-C or the loss of
    /// the lease; [`crate::mover::story::run`] is the whole command around it.
    pub async fn run(self) -> Result<Finished> {
        let Move {
            context: this,
            history,
        } = self;
        let request = this.request;
        if let Some(directory) = &request.from_directory {
            return crate::mover::backup::restore::restore(
                request,
                directory,
                &this.ends.source,
                (this.printer, this.progress),
            )
            .await
            .map(Finished::from);
        }
        if request.rollback {
            return interrupted::rollback(&this, &history)
                .await
                .map(Finished::from);
        }
        if let Some(summary) = interrupted::finish_interrupted(&this, &history).await? {
            return Ok(Finished::Moved(summary));
        }
        let planned = match planning::list_and_plan(&this, &history).await? {
            Step::Go(planned) => planned,
            Step::Stop(status) => return Ok(status.into()),
        };
        if let Some(directory) = &request.to_directory {
            return to_directory::backup(&this, &planned, directory)
                .await
                .map(Finished::from);
        }
        let checked = match checking::check(&this, &planned, &history).await? {
            Step::Go(checked) => checked,
            Step::Stop(status) => return Ok(status.into()),
        };
        writing::execute(&this, planned, checked, history)
            .await
            .map(Finished::Moved)
    }
}
