//! `kubectl capi ready`.

use super::waiting::Waiting;
use crate::error::{Error, Result};
use crate::kube::{Catalog, Cluster, Connected};
use crate::model::{self};
use crate::output::{ExitStatus, Printer};
use crate::ready::evaluate::{Options, Report, evaluate};
use crate::ready::render::Readiness;
use crate::ready::request::ReadyRequest;
use crate::ready::wait::{Outcome, wait};
use crate::settings::{Settings, shell_word};
use crate::snapshot::{Fetch, ListScope, PAGE_SIZE, Snapshot};

/// The selection: scope, named clusters, and label selector.
pub struct Selection {
    pub fetch: Fetch,
    pub options: Options,
    pub names: Vec<String>,
    /// The user's connection flags, for hints that work when pasted.
    pub flags: String,
}

pub fn selection(
    cluster: &Cluster,
    catalog: &Catalog,
    settings: &Settings,
    names: &[String],
    strict: bool,
) -> Selection {
    let scope = if settings.scope.all_namespaces {
        ListScope::AllNamespaces
    } else {
        ListScope::Namespace(cluster.namespace(settings.scope.namespace.as_deref()))
    };
    Selection {
        fetch: Fetch {
            scope,
            kinds: crate::model::kinds::read_by_ready(catalog),
            // What the move reads besides: an owner reference to a Secret that is gone refuses
            // the move, so it fails `ready` too.
            also: crate::kube::catalog::core_kinds(),
            cluster_selector: settings.scope.selector.clone(),
            page_size: PAGE_SIZE,
        },
        options: Options {
            clusters: Vec::new(),
            strict,
            unfinished_moves: Vec::new(),
            flags: settings.connection.as_flags(),
            waiting: false,
        },
        names: names.to_vec(),
        flags: settings.connection.as_flags(),
    }
}

/// Resolves named Clusters against the snapshot (any namespace with -A; with `-l`, the named
/// ones that match); names of no Cluster are errors. `false`: names were given and none matched.
pub async fn resolve_names(
    (cluster, catalog): (&Cluster, &Catalog),
    snapshot: &Snapshot,
    selection: &mut Selection,
) -> Result<bool> {
    let clusters = snapshot.clusters();
    let (found, missing) = model::select_by_name(clusters, &selection.names, |c| {
        c.metadata.name.as_deref().unwrap_or_default()
    });
    let missing = crate::snapshot::unknown_names(
        (cluster, catalog),
        &selection.fetch.scope,
        (missing, selection.fetch.cluster_selector.as_deref()),
    )
    .await?;
    if !missing.is_empty() {
        return Err(Error::ClustersNotFound {
            names: missing,
            scope: selection.fetch.scope.to_string(),
            flags: selection.flags.clone(),
        });
    }
    if !selection.names.is_empty() {
        selection
            .options
            .clusters
            .extend(found.iter().map(|c| model::namespaced_name(c)));
    }
    Ok(selection.names.is_empty() || !found.is_empty())
}

/// What `ready` says when the scope holds no Cluster: nothing to check, so nothing blocks.
fn nothing_in_scope(selection: &Selection) -> String {
    let where_ = selection.fetch.scope.to_string();
    let selector = selection
        .fetch
        .cluster_selector
        .as_ref()
        .map(|s| format!(" matching \"{s}\""))
        .unwrap_or_default();
    format!(
        "no Cluster API Clusters{selector} in {where_}: nothing blocks a move (pass -n NAMESPACE or -A to check others)"
    )
}

/// `kubectl capi ready`.
pub async fn run(
    request: &ReadyRequest,
    settings: &Settings,
    printer: &Printer,
) -> Result<ExitStatus> {
    let end = Connected::open(&settings.connection).await?;
    // The target first: a move into it needs it, however ready the Clusters are.
    let target = match &request.to_cluster {
        Some(name) => {
            target_can_take_it((name, &request.clusters), &end, settings, printer).await?
        }
        None => ExitStatus::Success,
    };
    let status = run_on(request, (&end, settings), printer).await?;
    Ok(if target == ExitStatus::Success {
        status
    } else {
        target
    })
}

/// `--to-cluster NAME`: the workload cluster NAME is reached as `move --to-cluster` reaches it
/// (refused as the move would be), is another cluster than the source, and runs every provider
/// the source does, at its version or newer.
async fn target_can_take_it(
    (name, asked): (&str, &[String]),
    source: &Connected,
    settings: &Settings,
    printer: &Printer,
) -> Result<ExitStatus> {
    use crate::mover::ends::{same_cluster, workload};
    let from = (&settings.connection, &settings.scope);
    let connection =
        workload::target_of((&source.cluster, &source.catalog), from, name, asked).await?;
    let target = Connected::open(&connection).await.map_err(|e| match e {
        Error::CapiNotInstalled { server, .. } => Error::CapiNotInstalled {
            server,
            install: Some(crate::mover::request::clusterctl_init(&connection)),
        },
        other => other,
    })?;
    same_cluster::ensure_distinct(&source.cluster, &target.cluster).await?;
    let refusals =
        crate::mover::checks::providers::check_providers(&source.cluster, &target.cluster).await?;
    if refusals.is_empty() {
        printer.info(&format!(
            "the target, workload cluster {name} (through its kubeconfig Secret), runs every provider the source does"
        ));
        return Ok(ExitStatus::Success);
    }
    let reasons: Vec<String> = refusals.iter().map(ToString::to_string).collect();
    printer.refused(
        &format!("workload cluster {name} cannot take the move:"),
        &reasons,
    );
    Ok(ExitStatus::Failure)
}

/// [`run`] on a connected cluster; `settings` give the scope, the output and the flags hints
/// repeat.
pub async fn run_on(
    request: &ReadyRequest,
    (end, settings): (&Connected, &Settings),
    printer: &Printer,
) -> Result<ExitStatus> {
    let (cluster, catalog) = (&end.cluster, &end.catalog);
    let mut selection = selection(
        cluster,
        catalog,
        settings,
        &request.clusters,
        request.strict,
    );
    selection.options.waiting = request.wait;
    let snapshot = Snapshot::fetch_with(cluster, catalog, &selection.fetch).await?;
    let any_named = resolve_names((cluster, catalog), &snapshot, &mut selection).await?;
    selection.options.unfinished_moves = crate::mover::recovery::unfinished_moves(
        cluster,
        &snapshot,
        &settings.connection.as_flags(),
    )
    .await?;
    if !any_named || snapshot.clusters().is_empty() {
        printer.info(&nothing_in_scope(&selection));
        if settings.output.is_structured() {
            // Nothing selected: nothing reported (an empty selection would mean all).
            printer.report(&Readiness {
                report: &evaluate(&Snapshot::default(), &selection.options),
                details: false,
            })?;
        }
        return Ok(ExitStatus::Success);
    }
    let details = request.details || selection.options.clusters.len() == 1;
    let mut report = evaluate(&snapshot, &selection.options);
    let mut status = if report.ready {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    };

    if request.wait && !report.ready {
        (report, status) =
            match wait_until_ready(request, (end, settings), &selection, report, printer).await? {
                Some(waited) => waited,
                None => return Ok(ExitStatus::Interrupted),
            };
    }
    printer.report(&Readiness {
        report: &report,
        details,
    })?;
    Ok(status)
}

/// `--wait`: `report` waited on until the Clusters can be moved, are stuck or the time runs
/// out; the last report and the status it ends with, or `None` after Ctrl-C.
async fn wait_until_ready(
    request: &ReadyRequest,
    (end, settings): (&Connected, &Settings),
    selection: &Selection,
    report: Report,
    printer: &Printer,
) -> Result<Option<(Report, ExitStatus)>> {
    let (cluster, catalog) = (&end.cluster, &end.catalog);
    let timeout = request.timeout;
    let mut waiting = Waiting::new(printer, &report, !settings.output.is_structured());
    let on_change = |r: &Report| waiting.update(r);
    let waited = tokio::select! {
        outcome = wait(printer.log_at(4), cluster, catalog, &selection.fetch, &selection.options, timeout, on_change) => Some(outcome?),
        _ = tokio::signal::ctrl_c() => None,
    };
    waiting.finish();
    Ok(Some(match waited {
        Some(Outcome::Ready(r)) => (r, ExitStatus::Success),
        Some(Outcome::Stuck(r, reasons)) => {
            for (cluster, why) in &reasons {
                printer.warn(&format!(
                    "{}: {why}; stopped waiting — release the freeze with `kubectl capi resume {} -n {}{}` and wait without it",
                    cluster.kubectl_name(),
                    shell_word(&cluster.name),
                    shell_word(&cluster.namespace),
                    settings.connection.as_flags()
                ));
            }
            (r, ExitStatus::Failure)
        }
        Some(Outcome::TimedOut(r)) => {
            printer.warn(&format!(
                "timed out after {} waiting for the clusters to be ready to move",
                crate::durations::show_duration(request.timeout)
            ));
            (r, ExitStatus::Failure)
        }
        None => {
            printer.note("interrupted");
            return Ok(None);
        }
    }))
}
