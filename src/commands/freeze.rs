//! `kubectl capi pause` and `kubectl capi resume`.

use std::time::Duration;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::freeze::apply::{self, DryRun, Mode, Outcome, Request};
use crate::freeze::plan::Action;
use crate::freeze::request::FreezeRequest;
use crate::kube::{Catalog, Cluster, Connected, Stop, lease};
use crate::model::{self, HealthCheckView, ScalerView, kinds};
use crate::output::{ExitStatus, Printer, Render};
use crate::settings::Settings;
use crate::snapshot::watch::{Waited, until};
use crate::snapshot::{Fetch, ListScope, PAGE_SIZE, Snapshot};

/// What a freeze or release did to each object.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FreezeReport {
    api_version: &'static str,
    kind: &'static str,
    items: Vec<Outcome>,
    #[serde(skip)]
    dry_run: DryRun,
}

impl Render for FreezeReport {
    /// `kind.group/name frozen` per object, as kubectl confirms.
    fn table(&self, _: &Printer) -> String {
        self.items
            .iter()
            .map(|o| {
                format!(
                    "{} {}{}\n",
                    o.object.kubectl_name(),
                    o.action.words(),
                    self.dry_run.suffix()
                )
            })
            .collect()
    }

    /// The objects it changed.
    fn names(&self, _: &Printer) -> String {
        self.items
            .iter()
            .filter(|o| o.action.writes())
            .map(|o| format!("{}\n", o.object.kubectl_name()))
            .collect()
    }
}

/// Waits until every touched object reports `Paused` as wanted (objects reporting no `Paused`
/// condition at all are not waited for).
async fn wait_acknowledged(
    log: Option<crate::output::Log>,
    cluster: &Cluster,
    catalog: &Catalog,
    fetch: &Fetch,
    outcomes: &mut [Outcome],
    mode: Mode,
    timeout: Duration,
) -> Result<bool> {
    let wanted = mode == Mode::Freeze;
    let waited = until(log, cluster, catalog, fetch, timeout, |snapshot| {
        let mut all = true;
        let mut states = Vec::new();
        for outcome in outcomes.iter() {
            let object = snapshot
                .named(
                    (outcome.object.group(), &outcome.object.kind),
                    &outcome.object.namespace,
                    &outcome.object.name,
                )
                .cloned();
            let condition = object.as_ref().and_then(|o| {
                match kinds::role(outcome.object.group(), &outcome.object.kind)
                    .and_then(kinds::Role::reads_as)
                {
                    Some(kind) => ScalerView::read(o, kind).paused_condition,
                    None => HealthCheckView::read(o).paused_condition,
                }
            });
            let relevant = matches!(
                outcome.action,
                Action::Frozen | Action::AlreadyFrozen | Action::Resumed
            );
            if relevant && condition.is_some() && condition != Some(wanted) {
                all = false;
            }
            states.push(condition);
        }
        (all, states)
    })
    .await?;
    let (done, states) = match waited {
        Waited::Done(s) => (true, s),
        Waited::TimedOut(s) => (false, s),
    };
    for (outcome, state) in outcomes.iter_mut().zip(states) {
        outcome.acknowledged = state.map(|s| s == wanted);
    }
    Ok(done)
}

/// Whether a freeze or release takes the cluster's lease before writing (see
/// [`crate::kube::lease`]): by itself it does; inside a move that holds it already, it does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locking {
    Take,
    HeldByCaller,
}

/// `kubectl capi pause` and `kubectl capi resume`: the selection checked before any request,
/// the cluster connected once, then [`run`] under the cluster's lease.
pub async fn command(
    request: &FreezeRequest,
    settings: &Settings,
    printer: &Printer,
) -> Result<ExitStatus> {
    check_selection(request, settings)?;
    let end = Connected::open(&settings.connection).await?;
    run(request, Locking::Take, (&end, settings), printer).await
}

/// A freeze or release names its Clusters, or says it means all of them.
fn check_selection(selection: &FreezeRequest, settings: &Settings) -> Result<()> {
    if selection.all && !selection.clusters.is_empty() {
        return Err(Error::Usage(format!(
            "--all means every Cluster in the namespace, so it takes no Cluster names (got {}); pass the names or --all",
            selection.clusters.join(", ")
        )));
    }
    if selection.clusters.is_empty()
        && !selection.all
        && !settings.scope.all_namespaces
        && settings.scope.selector.is_none()
    {
        let verb = selection.verb();
        return Err(Error::Usage(format!(
            "name the Clusters to {verb}, or pass --all (every Cluster in the namespace), -A or -l; see 'kubectl capi {verb} --help'"
        )));
    }
    Ok(())
}

/// A freeze or release of `selection` on `end` (connected by the caller); `settings` give the
/// scope, the output and the flags hints repeat.
pub async fn run(
    selection: &FreezeRequest,
    locking: Locking,
    (end, settings): (&Connected, &Settings),
    printer: &Printer,
) -> Result<ExitStatus> {
    let (status, _) = run_on(selection, (locking, None), (end, settings), printer).await?;
    Ok(status)
}

/// The refusal for Clusters that were there when the command started and are gone once it held
/// the lease: the command it waited for (a move) took them away.
fn gone_while_waiting(clusters: &[(String, String)], scope: &ListScope) -> Error {
    let names: Vec<String> = clusters
        .iter()
        .map(|(ns, name)| format!("{ns}/{name}"))
        .collect();
    Error::Refused(vec![format!(
        "Cluster(s) {} were in {scope} when this command started and are gone now: the command it waited for the lease of (a move, say) took them away; nothing was changed — run it against the management cluster they are in now",
        names.join(", ")
    )])
}

/// The Clusters `selection` names in `listed`, as `(namespace, name)`; a name not there is an
/// error, as is a selection that matches nothing.
async fn selected_clusters(
    (cluster, catalog): (&crate::kube::Cluster, &crate::kube::Catalog),
    listed: &Snapshot,
    selection: &FreezeRequest,
    scope: &ListScope,
    settings: &Settings,
) -> Result<Vec<(String, String)>> {
    let (found, missing) = model::select_by_name(listed.clusters(), &selection.clusters, |c| {
        c.metadata.name.as_deref().unwrap_or_default()
    });
    // With `-l`, the named Clusters that match; a name of no Cluster is an error.
    let missing = crate::snapshot::unknown_names(
        (cluster, catalog),
        scope,
        (missing, settings.scope.selector.as_deref()),
    )
    .await?;
    if !missing.is_empty() {
        return Err(Error::ClustersNotFound {
            names: missing,
            scope: scope.to_string(),
            flags: settings.connection.as_flags(),
        });
    }
    let clusters: Vec<(String, String)> = found.iter().map(|c| model::namespaced_name(c)).collect();
    if clusters.is_empty() {
        return Err(Error::Usage(
            "no Cluster API Clusters matched; pass -n NAMESPACE, -A or other names".into(),
        ));
    }
    Ok(clusters)
}

/// [`run`], on `only` those objects when given (a release of exactly what a freeze froze), and
/// returning what happened to each object.
pub async fn run_on(
    selection: &FreezeRequest,
    (locking, only): (
        Locking,
        Option<std::collections::BTreeSet<model::ObjectRef>>,
    ),
    (end, settings): (&Connected, &Settings),
    printer: &Printer,
) -> Result<(ExitStatus, Vec<Outcome>)> {
    check_selection(selection, settings)?;
    let (mode, dry_run) = (selection.mode, selection.dry_run);
    let (cluster, catalog) = (&end.cluster, &end.catalog);
    let scope = if settings.scope.all_namespaces {
        ListScope::AllNamespaces
    } else {
        ListScope::Namespace(cluster.namespace(settings.scope.namespace.as_deref()))
    };
    let fetch = Fetch {
        scope: scope.clone(),
        kinds: crate::model::kinds::read_by_freeze(catalog),
        also: Vec::new(),
        cluster_selector: settings.scope.selector.clone(),
        page_size: PAGE_SIZE,
    };
    // Every kind at once, so that a user missing read permissions hears of all of them.
    let listed = Snapshot::fetch_with(cluster, catalog, &fetch).await?;
    let clusters =
        selected_clusters((cluster, catalog), &listed, selection, &scope, settings).await?;
    let time = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let request = Request {
        mode,
        clusters,
        keep_remediation: selection.keep_remediation,
        dry_run,
        marker: apply::marker(&cluster.identity, selection.reason.as_deref(), &time),
        only,
    };
    // Only the writes hold the lease; waiting for the controllers does not.
    let lease = take_lease(selection, locking, (cluster, settings), printer).await?;
    // Taking the lease may have waited for another command (a move that took these Clusters
    // away, say): what is frozen is read again under it.
    let (listed, request) = match &lease {
        Some(_) => read_again(selection, (end, &fetch, &scope), request, settings).await?,
        None => (listed, request),
    };
    let mut outcomes = super::holding::holding(
        lease,
        printer,
        apply::run(cluster, catalog, &fetch, &request, listed),
    )
    .await?;
    let mut status = ExitStatus::Success;
    if selection.wait && dry_run == DryRun::None {
        let acknowledged =
            wait_for_controllers(selection, (end, &fetch), &mut outcomes, printer).await?;
        if !acknowledged {
            status = ExitStatus::Failure;
        }
    }
    print_outcomes(selection, &outcomes, printer)?;
    Ok((status, outcomes))
}

/// `--wait`: until the controllers report `Paused` as wanted; `false` when the time ran out.
async fn wait_for_controllers(
    selection: &FreezeRequest,
    (end, fetch): (&Connected, &Fetch),
    outcomes: &mut [Outcome],
    printer: &Printer,
) -> Result<bool> {
    for outcome in outcomes.iter().filter(|o| {
        o.acknowledged.is_none()
            && matches!(
                o.action,
                Action::Frozen | Action::AlreadyFrozen | Action::Resumed
            )
    }) {
        printer.warn(&format!(
            "{} not acknowledged: controller does not report Paused",
            outcome.object.kubectl_name()
        ));
    }
    let acknowledged = wait_acknowledged(
        printer.log_at(4),
        &end.cluster,
        &end.catalog,
        fetch,
        outcomes,
        selection.mode,
        selection.timeout,
    )
    .await?;
    if !acknowledged {
        printer.warn(&format!(
            "timed out after {} waiting for the controllers to acknowledge",
            crate::durations::show_duration(selection.timeout)
        ));
    }
    Ok(acknowledged)
}

/// What happened to each object: a document, names, or a line each with notes.
fn print_outcomes(request: &FreezeRequest, outcomes: &[Outcome], printer: &Printer) -> Result<()> {
    let (mode, dry_run) = (request.mode, request.dry_run);
    printer.report(&FreezeReport {
        api_version: crate::names::OUTPUT_API_VERSION,
        kind: if mode == Mode::Freeze {
            "FreezeResult"
        } else {
            "ResumeResult"
        },
        items: outcomes.to_vec(),
        dry_run,
    })?;
    if printer.format.is_structured() {
        return Ok(());
    }
    if mode == Mode::Freeze {
        for outcome in outcomes.iter().filter(|o| o.autoscaled) {
            printer.warn(&format!(
                "{} is managed by an autoscaler: replica changes it makes while frozen take effect after resume",
                outcome.object.kubectl_name()
            ));
        }
        if outcomes.iter().any(|o| o.action == Action::Frozen) {
            printer.info("note: a freeze stops Machine creation and deletion; spec.replicas changes (by users, the topology controller or cluster-autoscaler) take effect once resumed (kubectl capi resume)");
        }
    }
    if !outcomes.iter().any(|o| o.action.writes()) {
        printer.info(&format!(
            "nothing to {}: no object needed a change",
            request.verb()
        ));
    }
    Ok(())
}

/// The lease a pause or resume takes for its writes (`None` when its caller holds it, or for a
/// dry run).
async fn take_lease(
    selection: &FreezeRequest,
    locking: Locking,
    (cluster, settings): (&Cluster, &Settings),
    printer: &Printer,
) -> Result<Option<lease::Leases>> {
    Ok(match (locking, selection.dry_run) {
        (Locking::Take, DryRun::None) => {
            let command = format!(
                "kubectl capi {} {}{}{}",
                selection.verb(),
                if selection.clusters.is_empty() {
                    "--all".to_string()
                } else {
                    selection.clusters.join(" ")
                },
                settings.scope.as_flags(),
                settings.connection.as_flags()
            );
            Some(lease::Leases::one(
                lease::take(cluster, &command, &Stop::default(), &|line: &str| {
                    printer.warn(line)
                })
                .await?,
            ))
        }
        _ => None,
    })
}

/// What `request` freezes or releases, read again under the lease just taken: Clusters that were
/// selected and are gone now (a move took them while this waited) refuse the command.
async fn read_again(
    selection: &FreezeRequest,
    (end, fetch, scope): (&Connected, &Fetch, &ListScope),
    request: Request,
    settings: &Settings,
) -> Result<(Snapshot, Request)> {
    let (cluster, catalog) = (&end.cluster, &end.catalog);
    let fresh = Snapshot::fetch_with(cluster, catalog, fetch).await?;
    let selected = selected_clusters((cluster, catalog), &fresh, selection, scope, settings).await;
    let clusters = match selected {
        Ok(clusters) => clusters,
        Err(Error::Usage(_) | Error::ClustersNotFound { .. }) => {
            return Err(gone_while_waiting(&request.clusters, scope));
        }
        Err(e) => return Err(e),
    };
    Ok((
        fresh,
        Request {
            clusters,
            ..request
        },
    ))
}
