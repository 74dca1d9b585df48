//! `move --from-directory`: a backup restored into a cluster after a preflight like a move's.

use std::collections::BTreeSet;

use crate::choices::DryRun;
use crate::error::{Error, Result};
use crate::kube::Connected;
use crate::model::ObjectRef;
use crate::mover::checks::dry_runs::dry_run_creates;
use crate::mover::checks::findings::ThisMove;
use crate::mover::checks::findings::rendered;
use crate::mover::graph::discover::move_types;
use crate::mover::progress::Progress;
use crate::mover::report::plan_report;
use crate::mover::request::MoveRequest;
use crate::mover::write::namespaces::remove_namespaces;
use crate::output::{ExitStatus, Printer};

/// `--from-directory`: restore a backup into the cluster of the connection flags, after a
/// preflight like a move's: every file parses and is served (reading it), every object passes a
/// server-side dry-run create, and none is already there unless expected.
pub async fn restore(
    request: &MoveRequest,
    directory: &std::path::Path,
    into: &Connected,
    (printer, progress): (&Printer, &dyn Progress),
) -> Result<ExitStatus> {
    let (cluster, dry_run) = (&into.cluster, request.dry_run);
    let types = move_types(cluster, &into.catalog).await?;
    let (objects, plan) = crate::mover::backup::directory::read(directory, &types)?;
    if !objects
        .iter()
        .any(|(_, info)| crate::names::is_cluster_api_group(&info.group))
    {
        return Err(Error::Usage(format!(
            "{} holds no Cluster API objects ({} file(s) read); pass a directory that kubectl capi move --to-directory (or clusterctl move --to-directory) wrote",
            directory.display(),
            objects.len()
        )));
    }
    let clusters: Vec<ObjectRef> = plan
        .graph
        .nodes
        .values()
        .filter(|n| n.reference.is_core_cluster())
        .map(|n| n.reference.clone())
        .collect();
    if dry_run == DryRun::Client {
        printer.report(&plan_report(&plan, &clusters, Vec::new()))?;
        return Ok(ExitStatus::Success);
    }
    let checked = dry_run_creates(
        &plan,
        &types,
        cluster,
        &ThisMove {
            overwrite_existing: request.overwrite_existing,
            concurrency: request.concurrency,
            server_dry_run: dry_run == DryRun::Server,
            ..ThisMove::default()
        },
        &BTreeSet::new(),
    )
    .await?;
    if let [only] = checked.failures.as_slice() {
        return Err(Error::Refused(vec![format!(
            "restore refused by its preflight, nothing was written: {only}"
        )]));
    }
    if !checked.failures.is_empty() {
        return Err(Error::Refused(rendered(&checked.failures)));
    }
    if dry_run == DryRun::Server {
        remove_namespaces(cluster, &checked.made_namespaces).await;
        printer.report(&plan_report(&plan, &clusters, Vec::new()))?;
        printer.info("preflight passed: the restore can start now");
        return Ok(ExitStatus::Success);
    }
    let created = crate::mover::backup::directory::restore(
        &plan,
        &types,
        into,
        checked,
        request.overwrite_existing,
        progress,
    )
    .await?;
    printer.data(&format!(
        "restored {} objects of {} Cluster(s) from {}\n",
        created.uids.len(),
        clusters.len(),
        directory.display()
    ))?;
    Ok(ExitStatus::Success)
}
