//! Every check before the first write: the preflight (and for a dry run, the plan it passed);
//! with `--freeze`, the checks the freeze does not change, before it writes.

use std::collections::BTreeSet;

use crate::choices::DryRun;
use crate::error::{Error, Result};
use crate::kube::OnCtrlC;
use crate::mover::checks::findings::ThisMove;
use crate::mover::checks::findings::{Refusal, rendered};
use crate::mover::checks::preflight::preflight;
use crate::mover::report::plan_report;
use crate::mover::steps::context::{MoveContext, Step};
use crate::mover::steps::history::History;
use crate::mover::steps::planning::{Planned, list_and_plan};
use crate::mover::write::namespaces::remove_namespaces;
use crate::output::ExitStatus;

/// What the preflight learnt that the move needs.
#[derive(Default)]
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

/// The unfinished moves that paused Clusters of `snapshot`: from the journal copies in the
/// source, and in the target — where a move the other way finds the one whose paused copies
/// it would move back, with the commands that continue and undo it in this user's flags.
async fn unfinished_moves(
    this: &MoveContext<'_>,
    snapshot: &crate::snapshot::Snapshot,
    flags: &str,
) -> Result<Vec<crate::ready::evaluate::UnfinishedMove>> {
    let mut found =
        crate::mover::recovery::unfinished_moves(this.source(), snapshot, flags).await?;
    if let (Some(target), Some(connection)) = (&this.ends.target, &this.request.target) {
        found.extend(
            crate::mover::recovery::unfinished_moves(
                &target.cluster,
                snapshot,
                &connection.as_flags(),
            )
            .await?,
        );
    }
    Ok(found)
}

/// `--freeze`/`--wait-ready`: the checks that need no freeze, before freezing (read-only).
/// `Some(status)` ends the command there: refused, or nothing to move.
pub(in crate::mover) async fn check_before_freezing(
    this: &MoveContext<'_>,
    history: &History,
) -> Result<Option<ExitStatus>> {
    let planned = match list_and_plan(this, history).await? {
        Step::Go(planned) => planned,
        Step::Stop(status) => return Ok(Some(status)),
    };
    let snapshot = crate::mover::graph::object_graph::snapshot_of(&planned.objects);
    if this.request.freeze {
        let forever = crate::freeze::plan::frozen_forever(&snapshot, &planned.clusters);
        if !forever.is_empty() {
            let reasons: Vec<String> = forever
                .iter()
                .map(|(cluster, why)| {
                    format!(
                        "{} not frozen: {why}; wait for it without the freeze (`kubectl capi ready {} -n {} --wait{}`), then move",
                        cluster.kubectl_name(),
                        crate::settings::shell_word(&cluster.name),
                        crate::settings::shell_word(&cluster.namespace),
                        this.request.source.as_flags()
                    )
                })
                .collect();
            this.printer.refused(
                "move refused before freezing, nothing was written:",
                &reasons,
            );
            return Ok(Some(ExitStatus::Failure));
        }
    }
    let (failures, _) = run_preflight(this, &planned, history, (&snapshot, true)).await?;
    let failures = rendered(&failures);
    if failures.is_empty() {
        return Ok(None);
    }
    this.printer.refused(
        "move refused by its preflight before freezing, nothing was written:",
        &failures,
    );
    Ok(Some(ExitStatus::Failure))
}

/// The preflight, then for a dry run the plan: every check before the first write.
pub(in crate::mover) async fn check(
    this: &MoveContext<'_>,
    planned: &Planned,
    history: &History,
) -> Result<Step<Checked>> {
    let dry_run = this.request.dry_run;
    // The preflight may make namespaces for its dry runs: from here Ctrl-C lets it finish
    // and then removes them, rather than ending with them left behind.
    if dry_run == DryRun::None {
        this.stop.on_ctrl_c(OnCtrlC::StopAfterWritesInFlight);
    }
    let (failures, checked) = if dry_run == DryRun::Client {
        (Vec::new(), Checked::default())
    } else {
        let snapshot = crate::mover::graph::object_graph::snapshot_of(&planned.objects);
        run_preflight(this, planned, history, (&snapshot, false)).await?
    };
    let failures = rendered(&failures);
    if !failures.is_empty() {
        refuse(this, planned, &checked, failures)?;
        return Ok(Step::Stop(ExitStatus::Failure));
    }
    if dry_run == DryRun::None {
        if this.stop.requested() {
            if let Some(target) = &this.ends.target {
                remove_namespaces(&target.cluster, &checked.made_namespaces).await;
            }
            this.printer.note(
                "interrupted before the move's first write: the namespaces its checks made are removed again, nothing else was written",
            );
            return Err(this.stop.check().err().unwrap_or(Error::Interrupted));
        }
        return Ok(Step::Go(checked));
    }
    // A dry run leaves nothing behind, not even the namespaces its checks needed.
    if let Some(target) = &this.ends.target {
        remove_namespaces(&target.cluster, &checked.made_namespaces).await;
    }
    this.printer
        .report(&plan_report(&planned.plan, &planned.clusters, Vec::new()))?;
    if !this.request.structured() && dry_run == DryRun::Server {
        for note in &checked.unchecked {
            this.printer.info(note);
        }
        this.printer
            .info("preflight passed: the move can start now");
    }
    Ok(Step::Stop(ExitStatus::Success))
}

/// The whole preflight of `planned` (`snapshot`: its objects), or with `before_freeze` the
/// checks a freeze does not change: what refuses the move, and what the move needs to know.
async fn run_preflight(
    this: &MoveContext<'_>,
    planned: &Planned,
    history: &History,
    (snapshot, before_freeze): (&crate::snapshot::Snapshot, bool),
) -> Result<(Vec<Refusal>, Checked)> {
    let flags = this.request.source.as_flags();
    let unfinished = unfinished_moves(this, snapshot, &flags).await?;
    let found = preflight(
        &planned.plan,
        &planned.types,
        &planned.objects,
        this.source(),
        this.ends.target.as_ref(),
        &planned.clusters,
        &ThisMove {
            overwrite_existing: this.request.overwrite_existing,
            journal_namespace: this.records.as_ref().map(|r| r.copy_namespace.as_str()),
            flags: &flags,
            concurrency: this.request.concurrency,
            unfinished: &unfinished,
            earlier_copies: this
                .records
                .as_ref()
                .map(|r| (this.source(), &r.identities)),
            earlier: history.unfinished.as_ref(),
            server_dry_run: this.request.dry_run == DryRun::Server,
            before_freeze,
        },
    )
    .await?;
    let checked = Checked {
        in_target: found.in_target,
        made_namespaces: found.made_namespaces,
        reused: found.reused,
        unchecked: found.unchecked,
        removed_namespaces: found.removed_namespaces,
    };
    Ok((found.failures, checked))
}

/// Says why the preflight refused the move, and exactly what it wrote and undid: "nothing was
/// written" only when nothing was.
fn refuse(
    this: &MoveContext<'_>,
    planned: &Planned,
    checked: &Checked,
    failures: Vec<String>,
) -> Result<()> {
    if this.request.structured() {
        this.printer.report(&plan_report(
            &planned.plan,
            &planned.clusters,
            failures.clone(),
        ))?;
    }
    let heading = match (this.request.freeze, checked.removed_namespaces.as_slice()) {
        // Its freeze ran before these checks; the story releases what it froze.
        (true, _) => "move refused by its preflight, nothing was moved:".to_string(),
        (false, []) => "move refused by its preflight, nothing was written:".to_string(),
        (false, made) => format!(
            "move refused by its preflight; the namespace(s) {} its dry runs needed were created in the target and removed again, nothing else was written:",
            made.join(", ")
        ),
    };
    this.printer.refused(&heading, &failures);
    Ok(())
}
