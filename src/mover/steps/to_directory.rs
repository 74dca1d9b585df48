//! `--to-directory`: the planned move written as a clusterctl-compatible backup, after the
//! source-side checks.

use crate::choices::DryRun;
use crate::error::Result;
use crate::mover::checks::findings::{ThisMove, rendered};
use crate::mover::checks::preflight::preflight;
use crate::mover::report::plan_report;
use crate::mover::steps::context::MoveContext;
use crate::mover::steps::planning::Planned;
use crate::mover::write::execute::Source;
use crate::output::ExitStatus;

/// `--to-directory`: a backup after the source-side checks.
pub(in crate::mover) async fn backup(
    this: &MoveContext<'_>,
    planned: &Planned,
    directory: &std::path::Path,
) -> Result<ExitStatus> {
    let (plan, clusters) = (&planned.plan, &planned.clusters);
    let failures = preflight(
        plan,
        &planned.types,
        &planned.objects,
        this.source(),
        None,
        clusters,
        &ThisMove::default(),
    )
    .await?
    .failures;
    let failures = rendered(&failures);
    if !failures.is_empty() {
        this.printer.refused(
            "backup refused by its preflight, nothing was written:",
            &failures,
        );
        return Ok(ExitStatus::Failure);
    }
    if this.request.dry_run != DryRun::None {
        this.printer
            .report(&plan_report(plan, clusters, Vec::new()))?;
        return Ok(ExitStatus::Success);
    }
    let from = Source {
        cluster: this.source(),
        types: &planned.types,
        scope: &this.scope,
    };
    let written = crate::mover::backup::directory::backup(plan, &from, directory).await?;
    this.printer.data(&format!(
        "wrote {written} objects of {} Cluster(s) to {}\n",
        clusters.len(),
        directory.display()
    ))?;
    Ok(ExitStatus::Success)
}
