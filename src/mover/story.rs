//! The whole `kubectl capi move`, top to bottom: the checks a freeze does not change, the freeze
//! and the wait (`--freeze`, `--wait-ready`), the move itself, the release of the freeze in the
//! target, the verification (`--verify`). Freezing, waiting and verifying are commands of their
//! own, which the command layer runs for the story ([`Around`]); what happens when, and what is
//! said when the story ends early, is decided here.

use std::collections::BTreeSet;

use crate::error::{Error, Result};
use crate::kube::{OnCtrlC, Stop};
use crate::model::ObjectRef;
use crate::mover::ends::both::Ends;
use crate::mover::move_once::{Finished, Move};
use crate::mover::progress::Progress;
use crate::mover::report::Summary;
use crate::mover::request::MoveRequest;
use crate::mover::steps::context::Step;
use crate::output::{ExitStatus, Printer};
use crate::verify::{MovedCluster, VerificationReport, Verified};

/// What the story asks of the commands around the move, each run on the move's ends.
pub(crate) trait Around {
    /// `--freeze`: the Clusters' scaling frozen in the source; what it froze (newly), or the
    /// status that ends the story.
    async fn freeze(&self) -> Result<std::result::Result<BTreeSet<ObjectRef>, ExitStatus>>;
    /// `--wait-ready`: until the Clusters can be moved.
    async fn wait_ready(&self) -> Result<ExitStatus>;
    /// Releases exactly `froze` in the source again.
    async fn unfreeze(&self, froze: BTreeSet<ObjectRef>) -> Result<ExitStatus>;
    /// Releases the freeze in the target, where the Clusters are now, under its lease; hints
    /// repeat `request` as it reads after the move.
    async fn release_in_target(&self, request: &MoveRequest) -> Result<ExitStatus>;
    /// `--verify`: watches the target adopt `moved` (and the source for what should be gone).
    async fn verify(&self, request: &MoveRequest, moved: &[MovedCluster]) -> Result<Verified>;
    /// Shows the move's summary (its hints repeat `request` as it reads after the move).
    fn show_summary(&self, request: &MoveRequest, summary: &Summary) -> Result<()>;
    /// Shows what the verification found.
    fn show_verification(&self, report: &VerificationReport) -> Result<()>;
}

/// `kubectl capi move`, whole: freeze and wait → move (see [`Move`]) → release →
/// verify. A table is shown as soon as the move ends; a document once, whole, at the end.
pub(crate) async fn run(
    request: &MoveRequest,
    ends: &Ends,
    (printer, progress): (&Printer, &dyn Progress),
    stop: &Stop,
    around: &impl Around,
) -> Result<ExitStatus> {
    let this = match Move::new(request, ends, (printer, progress), stop.clone()).await? {
        Step::Go(this) => this,
        Step::Stop(status) => return Ok(status),
    };
    // What this command's freeze froze (not what was frozen before it).
    let froze = match before_moving(request, &this, printer, stop, around).await? {
        Ok(froze) => froze,
        Err(status) => return Ok(status),
    };
    let moved = this.run().await;
    let mut summary = match after_refusal(request, printer, around, moved, froze).await? {
        Ok(summary) => summary,
        Err(status) => return Ok(status),
    };
    // From here on, printed commands reach the target where it is after the move.
    let request = &*request.after_move(&summary.clusters);
    if !request.structured() {
        around.show_summary(request, &summary)?;
    }
    kept_kubeconfig_note(request, printer, &summary.clusters);
    if request.freeze
        && let Err(ended) = release_in_target(request, printer, around, &summary).await
    {
        return ended;
    }
    let mut status = ExitStatus::Success;
    if request.verify {
        status = verify(request, printer, stop, around, &mut summary).await?;
    }
    if request.structured() {
        around.show_summary(request, &summary)?;
    }
    Ok(status)
}

/// `--freeze` and `--wait-ready`: every check the freeze does not change, then freeze the
/// Clusters' scaling and wait until they can be moved. `Err(status)` ends the story there;
/// else what this freeze froze (newly).
async fn before_moving(
    request: &MoveRequest,
    this: &Move<'_>,
    printer: &Printer,
    stop: &Stop,
    around: &impl Around,
) -> Result<std::result::Result<BTreeSet<ObjectRef>, ExitStatus>> {
    let mut froze = BTreeSet::new();
    if !request.freeze && !request.wait_ready {
        return Ok(Ok(froze));
    }
    let step = printer.step();
    if let Some(status) = this.check_before_freezing(&step).await? {
        return Ok(Err(status));
    }
    if request.freeze {
        froze = match around.freeze().await? {
            Ok(froze) => froze,
            Err(status) => return Ok(Err(status)),
        };
    }
    if request.wait_ready {
        // The wait says itself that it was interrupted, and that the freeze stays.
        stop.on_ctrl_c(OnCtrlC::LeftToTheWork);
        let status = around.wait_ready().await?;
        stop.on_ctrl_c(OnCtrlC::EndAtOnce);
        if status != ExitStatus::Success {
            printer.error(&format!(
                "the Clusters did not become ready to move within {}{}",
                crate::durations::show_duration(request.timeout),
                request.still_frozen()
            ));
            return Ok(Err(status));
        }
    }
    Ok(Ok(froze))
}

/// How the move ended, for the rest of the story: its summary, or the status that ends the
/// story. A refusal undoes the freeze this command made (nothing of it stays behind); any other
/// early end says that the freeze stays and how to go on.
async fn after_refusal(
    request: &MoveRequest,
    printer: &Printer,
    around: &impl Around,
    moved: Result<Finished>,
    froze: BTreeSet<ObjectRef>,
) -> Result<std::result::Result<Box<Summary>, ExitStatus>> {
    let refused = matches!(
        moved,
        Ok(Finished::Ended(ExitStatus::Failure)) | Err(Error::Refused(_))
    );
    if refused && !froze.is_empty() {
        let count = froze.len();
        if around.unfreeze(froze).await? == ExitStatus::Success {
            printer.note(&format!(
                "note: the move was refused, so the freeze this command made ({count} object(s)) was released again"
            ));
        }
        return moved.map(|_| Err(ExitStatus::Failure));
    }
    match moved {
        Ok(Finished::Moved(summary)) => Ok(Ok(summary)),
        Ok(Finished::Ended(other)) => {
            if request.freeze {
                printer.note(&format!(
                    "note: nothing was moved{}",
                    request.still_frozen()
                ));
            }
            Ok(Err(other))
        }
        Err(e) => {
            if request.freeze {
                printer.note(&format!("note: the move failed{}", request.still_frozen()));
            }
            Err(e)
        }
    }
}

/// After a pivot of the `--to-cluster` Cluster into itself: where its kubeconfig is kept now, and
/// how to remove it once nothing needs it.
fn kept_kubeconfig_note(request: &MoveRequest, printer: &Printer, moved: &[ObjectRef]) {
    let Some(kept) = request.pivot_kept(moved) else {
        return;
    };
    let name = &kept.cluster;
    printer.note(&format!(
        "note: {name}'s kubeconfig Secret went into {name} itself; the source keeps a copy as Secret {}/{} for later moves into it (--to-cluster {}) and for the commands printed here — remove it once the source is retired: `kubectl delete secret {} -n {}{}`",
        kept.namespace,
        kept.name(),
        crate::settings::shell_word(name),
        crate::settings::shell_word(&kept.name()),
        crate::settings::shell_word(&kept.namespace),
        request.source.as_flags()
    ));
}

/// `--freeze`, after the move: the scaling frozen in the source is released in the target.
/// `Err` ends the story with that outcome, saying how to release it by hand.
async fn release_in_target(
    request: &MoveRequest,
    printer: &Printer,
    around: &impl Around,
    summary: &Summary,
) -> std::result::Result<(), Result<ExitStatus>> {
    let Some(connection) = &request.target else {
        return Ok(());
    };
    let released = around.release_in_target(request).await;
    if matches!(released, Ok(ExitStatus::Success)) {
        return Ok(());
    }
    if request.structured()
        && let Err(e) = around.show_summary(request, summary)
    {
        return Err(Err(e));
    }
    printer.note(&format!(
        "note: the move succeeded, but releasing the freeze in the target failed; run {}",
        request.release_command(connection)
    ));
    Err(released)
}

/// `--verify`: watch the target adopt the moved Clusters; the report joins the summary.
async fn verify(
    request: &MoveRequest,
    printer: &Printer,
    stop: &Stop,
    around: &impl Around,
    summary: &mut Summary,
) -> Result<ExitStatus> {
    // The verification only reads, and says itself how to finish it after Ctrl-C.
    stop.on_ctrl_c(OnCtrlC::LeftToTheWork);
    let verified = match around.verify(request, &summary.moved).await {
        Ok(verified) => verified,
        Err(e) => {
            if request.structured() {
                around.show_summary(request, summary)?;
            }
            printer.note(&format!(
                "note: the move finished, its verification did not; verify it with `{}`",
                request.verify_command(&summary.clusters)
            ));
            return Err(e);
        }
    };
    if !request.structured() {
        around.show_verification(&verified.report)?;
    }
    summary.verification = Some(verified.report);
    Ok(verified.status)
}
