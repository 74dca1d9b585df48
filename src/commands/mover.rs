//! `kubectl capi move`: its flags resolved once into a request, both ends connected once, the
//! lease taken, then the story — `--freeze` and `--wait-ready` before the move, the release of
//! the freeze and `--verify` after it — around [`crate::mover::run`].

use std::collections::BTreeSet;

use super::reporter::Reporter;
use crate::cli::{MoveArgs, ReadyArgs};
use crate::error::{Error, Result};
use crate::freeze::apply::Mode;
use crate::freeze::plan::Action;
use crate::kube::{Connected, OnCtrlC, Stop};
use crate::model::ObjectRef;
use crate::mover::Finished;
use crate::mover::ends::Ends;
use crate::mover::report::print_summary;
use crate::mover::request::MoveRequest;
use crate::output::{ExitStatus, Printer};
use crate::settings::{OutputFormat, Settings};

use super::freeze::Locking;

/// `move`, optionally wrapped in the whole story: `--freeze` (pause scaling first, release it
/// in the target after), `--wait-ready` (wait until the Clusters can be moved), `--verify` (watch
/// the target adopt them). The steps print to stderr; stdout carries only the move's result.
/// A command that will write holds the lease of the cluster it writes to first from before its
/// first write to its end (see [`crate::kube::lease`]).
pub async fn run(args: &MoveArgs, settings: &Settings, printer: &Printer) -> Result<ExitStatus> {
    let request = MoveRequest::resolve(args, settings)?;
    let ends = Ends::open(&request).await?;
    let lease = ends.take_lease(&request).await?;
    let stop = lease
        .as_ref()
        .map(|held| held.stop().clone())
        .unwrap_or_default();
    let story = Story {
        request: &request,
        ends: &ends,
        printer,
        step: printer.step(),
        step_settings: Settings {
            output: OutputFormat::Table,
            ..settings.clone()
        },
        stop: &stop,
        reporter: Reporter::new(printer),
    };
    super::holding(lease, printer, story.tell()).await
}

/// One `kubectl capi move` under its lease; `stop` is the lease's (Ctrl-C or its loss).
struct Story<'a> {
    request: &'a MoveRequest,
    ends: &'a Ends,
    printer: &'a Printer,
    /// The printer of the composed steps (freeze, wait, release): human output on stderr.
    step: Printer,
    /// The settings of the composed steps: the user's, with human output.
    step_settings: Settings,
    stop: &'a Stop,
    reporter: Reporter,
}

impl Story<'_> {
    /// Freeze and wait, move, release the freeze, verify: each step ends the story when it
    /// must, and says what stays behind.
    async fn tell(&self) -> Result<ExitStatus> {
        let request = self.request;
        // What this command's freeze froze (not what was frozen before it).
        let froze = match self.before_moving().await? {
            Ok(froze) => froze,
            Err(status) => return Ok(status),
        };
        let moved = crate::mover::run(
            request,
            self.ends,
            (self.printer, &self.reporter),
            self.stop,
        )
        .await;
        let mut summary = match moved {
            Ok(Finished::Moved(summary)) => summary,
            Ok(Finished::Ended(ExitStatus::Failure)) if !froze.is_empty() => {
                self.undo_freeze(froze).await?;
                return Ok(ExitStatus::Failure);
            }
            Err(Error::Refused(reasons)) if !froze.is_empty() => {
                self.undo_freeze(froze).await?;
                return Err(Error::Refused(reasons));
            }
            Ok(Finished::Ended(other)) => {
                if request.freeze {
                    self.printer.note(&format!(
                        "note: nothing was moved{}",
                        self.request.still_frozen()
                    ));
                }
                return Ok(other);
            }
            Err(e) => {
                if request.freeze {
                    self.printer.note(&format!(
                        "note: the move failed{}",
                        self.request.still_frozen()
                    ));
                }
                return Err(e);
            }
        };
        // A table is printed as soon as the move ends; a document once, whole, at the end.
        if !request.structured() {
            print_summary(request, self.printer, &summary)?;
        }
        if request.freeze
            && let Err(ended) = self.release_in_target(&summary).await
        {
            return ended;
        }
        let mut status = ExitStatus::Success;
        if request.verify {
            status = self.verify(&mut summary).await?;
        }
        if request.structured() {
            print_summary(request, self.printer, &summary)?;
        }
        Ok(status)
    }

    /// The settings of a composed step at `end`: the user's scope, human output.
    fn step_settings(&self, end: &crate::settings::Connection) -> Settings {
        Settings {
            connection: end.clone(),
            ..self.step_settings.clone()
        }
    }

    /// `--freeze` and `--wait-ready`: every check the freeze does not change, then freeze the
    /// Clusters' scaling and wait until they can be moved. `Err(status)` ends the story there;
    /// else what this freeze froze (newly).
    async fn before_moving(&self) -> Result<std::result::Result<BTreeSet<ObjectRef>, ExitStatus>> {
        let request = self.request;
        let mut froze = BTreeSet::new();
        if !request.freeze && !request.wait_ready {
            return Ok(Ok(froze));
        }
        let checked = crate::mover::check_before_freezing(
            request,
            self.ends,
            (&self.step, &self.reporter),
            self.stop,
        )
        .await?;
        if let Some(status) = checked {
            return Ok(Err(status));
        }
        let settings = self.step_settings(&request.source);
        if request.freeze {
            let (frozen, outcomes) = super::freeze::run_on(
                Mode::Freeze,
                &self.request.freeze_selection(),
                (Some("kubectl capi move --freeze"), false),
                (Locking::HeldByCaller, None),
                (&self.ends.source, &settings),
                &self.step,
            )
            .await?;
            froze = outcomes
                .into_iter()
                .filter(|o| o.action == Action::Frozen)
                .map(|o| o.object)
                .collect();
            if frozen != ExitStatus::Success {
                return Ok(Err(frozen));
            }
        }
        if request.wait_ready {
            let ready = ReadyArgs {
                clusters: request.clusters.clone(),
                wait: true,
                timeout: request.timeout,
                details: false,
                strict: false,
            };
            // The wait says itself that it was interrupted, and that the freeze stays.
            self.stop.on_ctrl_c(OnCtrlC::LeftToTheWork);
            let status =
                super::ready::run_on(&ready, (&self.ends.source, &settings), &self.step).await?;
            self.stop.on_ctrl_c(OnCtrlC::EndAtOnce);
            if status != ExitStatus::Success {
                self.printer.error(&format!(
                    "the Clusters did not become ready to move within {}{}",
                    crate::cli::show_duration(request.timeout),
                    self.request.still_frozen()
                ));
                return Ok(Err(status));
            }
        }
        Ok(Ok(froze))
    }

    /// A refusal undoes the freeze this command made: nothing of it stays behind.
    async fn undo_freeze(&self, froze: BTreeSet<ObjectRef>) -> Result<()> {
        let count = froze.len();
        let (status, _) = super::freeze::run_on(
            Mode::Resume,
            &self.request.freeze_selection(),
            (None, false),
            (Locking::HeldByCaller, Some(froze)),
            (&self.ends.source, &self.step_settings(&self.request.source)),
            &self.step,
        )
        .await?;
        if status == ExitStatus::Success {
            self.printer.note(&format!(
                "note: the move was refused, so the freeze this command made ({count} object(s)) was released again"
            ));
        }
        Ok(())
    }

    /// `--freeze`, after the move: the scaling frozen in the source is released in the target,
    /// under the target's lease. `Err` ends the story with that outcome.
    async fn release_in_target(
        &self,
        summary: &crate::mover::execute::Summary,
    ) -> std::result::Result<(), Result<ExitStatus>> {
        let (Some(target), Some(connection)) = (&self.ends.target, &self.request.target) else {
            return Ok(());
        };
        let released = super::freeze::run(
            Mode::Resume,
            &self.request.freeze_selection(),
            (None, false),
            Locking::Take,
            (target, &self.step_settings(connection)),
            &self.step,
        )
        .await;
        if matches!(released, Ok(ExitStatus::Success)) {
            return Ok(());
        }
        if self.request.structured()
            && let Err(e) = print_summary(self.request, self.printer, summary)
        {
            return Err(Err(e));
        }
        self.printer.note(&format!(
            "note: the move succeeded, but releasing the freeze in the target failed; run {}",
            self.request.release_command(connection)
        ));
        Err(released)
    }

    /// `--verify`: watch the target adopt the moved Clusters; the report joins the summary.
    async fn verify(&self, summary: &mut crate::mover::execute::Summary) -> Result<ExitStatus> {
        let request = self.request;
        // The verification only reads, and says itself how to finish it after Ctrl-C.
        self.stop.on_ctrl_c(OnCtrlC::LeftToTheWork);
        let target: &Connected = self.ends.target.as_ref().expect("a move has a target");
        let ends = super::verify::Ends {
            target,
            source: Some(&self.ends.source),
            flags: request
                .target
                .as_ref()
                .map(|t| t.as_flags())
                .unwrap_or_default(),
        };
        let verified = super::verify::verify(
            &ends,
            &summary.moved,
            Some(request.verify_timeout),
            self.printer,
        )
        .await;
        let verified = match verified {
            Ok(verified) => verified,
            Err(e) => {
                if request.structured() {
                    print_summary(request, self.printer, summary)?;
                }
                self.printer.note(&format!(
                    "note: the move finished, its verification did not; verify it with `{}`",
                    request.verify_command(&summary.clusters)
                ));
                return Err(e);
            }
        };
        if !request.structured() {
            self.printer.report(&verified.report)?;
        }
        summary.verification = Some(verified.report);
        Ok(verified.status)
    }
}
