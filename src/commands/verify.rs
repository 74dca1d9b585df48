//! `kubectl capi verify` and `move --verify`: read what was moved, then evaluate (or watch) the
//! target adopting it, and the source for what the move should have deleted there.

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};

use crate::error::{Error, Result};
use crate::kube::{Catalog, Cluster, Connected, connect};
use crate::mover::journal::Journal;
use crate::names::CORE_GROUP;
use crate::output::{ExitStatus, Printer};
use crate::settings::Settings;
use crate::snapshot::watch::{Waited, until};
use crate::snapshot::{Fetch, ListScope, PAGE_SIZE, Snapshot, key, list_all};
use crate::verify::request::VerifyRequest;
use crate::verify::{MovedCluster, RECORD_LABEL, VerificationReport, evaluate};

/// The two ends of a verification: the target, where the Clusters are now, and the source
/// when it is to be checked too.
pub struct Ends<'a> {
    pub target: &'a Connected,
    pub source: Option<&'a Connected>,
    /// The connection flags of the target, repeated in hints.
    pub flags: String,
}

pub use crate::verify::Verified;

/// The one namespace of `namespaces`, or every namespace.
fn scope_over<'a>(namespaces: impl IntoIterator<Item = &'a str>) -> ListScope {
    let namespaces: BTreeSet<&str> = namespaces.into_iter().collect();
    match namespaces.into_iter().collect::<Vec<_>>().as_slice() {
        [namespace] => ListScope::Namespace(namespace.to_string()),
        _ => ListScope::AllNamespaces,
    }
}

/// Where the moved Clusters are.
fn scope_of(moved: &[MovedCluster]) -> ListScope {
    scope_over(moved.iter().map(|m| m.cluster.namespace.as_str()))
}

/// What the move should have deleted from the source, of every kind it deleted there (the
/// Clusters and Machines for records without UIDs): read once, since nothing should bring it
/// back.
async fn source_snapshot(source: &Connected, moved: &[MovedCluster]) -> Result<Snapshot> {
    let mut kinds: BTreeSet<_> = [
        key(CORE_GROUP, crate::names::CLUSTER),
        key(CORE_GROUP, crate::names::MACHINE),
    ]
    .into();
    kinds.extend(
        moved
            .iter()
            .flat_map(MovedCluster::deleted_kinds)
            .map(|(group, kind)| key(group, kind)),
    );
    let fetch = Fetch {
        scope: scope_over(moved.iter().flat_map(MovedCluster::namespaces)),
        kinds: kinds.into_iter().collect(),
        also: Vec::new(),
        cluster_selector: None,
        page_size: PAGE_SIZE,
    };
    Snapshot::fetch_with(&source.cluster, &source.catalog, &fetch).await
}

/// Verifies `moved`: once, or with `wait` watching the target until every Cluster is verified,
/// a check fails, or the time is up.
pub async fn verify(
    ends: &Ends<'_>,
    moved: &[MovedCluster],
    wait: Option<Duration>,
    printer: &Printer,
) -> Result<Verified> {
    let scope = scope_of(moved);
    let source = match &ends.source {
        Some(source) => Some(source_snapshot(source, moved).await?),
        None => None,
    };
    let (target, catalog) = (&ends.target.cluster, &ends.target.catalog);
    let fetch = Fetch {
        scope,
        kinds: crate::model::kinds::read_by_ready(catalog),
        also: Vec::new(),
        cluster_selector: None,
        page_size: PAGE_SIZE,
    };
    let evaluate_now =
        |target: &Snapshot| evaluate(moved, target, source.as_ref(), ends.flags.as_str());
    // A frozen target shows adoption, not health: that is checked, and what is left is listed
    // with the commands that release the freeze and verify again.
    let status_of = |report: &VerificationReport| {
        if report.verified() || report.verified_while_frozen() {
            ExitStatus::Success
        } else {
            ExitStatus::Failure
        }
    };
    let Some(timeout) = wait else {
        let target = Snapshot::fetch_with(target, catalog, &fetch).await?;
        let report = evaluate_now(&target);
        let status = status_of(&report);
        return Ok(Verified { report, status });
    };
    if printer.progress() {
        printer.info(&format!(
            "watching the target adopt {} Cluster(s), up to {}…",
            moved.len(),
            crate::durations::show_duration(timeout)
        ));
    }
    let waited = tokio::select! {
        waited = until(printer.log_at(4), target, catalog, &fetch, timeout, |target| {
            let report = evaluate_now(target);
            let settled =
                report.verified() || report.failed() || report.verified_while_frozen();
            (settled, report)
        }) => waited?,
        _ = tokio::signal::ctrl_c() => return Err(Error::Interrupted),
    };
    let report = match waited {
        Waited::Done(report) => report,
        Waited::TimedOut(report) => {
            printer.warn(&format!(
                "timed out after {} waiting for the target to adopt the moved Clusters",
                crate::durations::show_duration(timeout)
            ));
            report
        }
    };
    let status = status_of(&report);
    Ok(Verified { report, status })
}

/// The records the moves left in `cluster` (ConfigMaps labelled as records) in `scope`.
async fn records_in(cluster: &Cluster, scope: &ListScope) -> Result<Vec<MovedCluster>> {
    let resource = ApiResource::erase::<ConfigMap>(&());
    let api: Api<DynamicObject> = match scope {
        ListScope::Namespace(ns) => Api::namespaced_with(cluster.client.clone(), ns, &resource),
        ListScope::AllNamespaces => Api::all_with(cluster.client.clone(), &resource),
    };
    let params = ListParams::default().labels(RECORD_LABEL).limit(PAGE_SIZE);
    let configmaps = list_all(cluster, &api, &resource, params).await?;
    Ok(configmaps
        .iter()
        .filter_map(MovedCluster::from_configmap)
        .collect())
}

/// `kubectl capi verify`.
pub async fn run(
    request: &VerifyRequest,
    settings: &Settings,
    printer: &Printer,
) -> Result<ExitStatus> {
    let journal = match &request.journal {
        Some(path) => Some(Journal::load(path)?),
        None => None,
    };
    let target = connect(&request.target).await?;
    // Both ends first: a wrong --from-context is named before anything is read.
    let source = match &request.source {
        Some(connection) => Some(connect(connection).await?),
        None => None,
    };
    let scope = if settings.scope.all_namespaces {
        ListScope::AllNamespaces
    } else {
        ListScope::Namespace(target.namespace(settings.scope.namespace.as_deref()))
    };
    let (recorded, whence) =
        recorded(journal.as_ref(), request, (&target, &scope), settings).await?;
    let moved = select(recorded, &request.clusters, &whence)?;
    let source = match source {
        Some(cluster) => Some(Connected {
            catalog: Catalog::discover(&cluster).await?,
            cluster,
        }),
        None => None,
    };
    let target = Connected {
        catalog: Catalog::discover(&target).await?,
        cluster: target,
    };
    let ends = Ends {
        target: &target,
        source: source.as_ref(),
        flags: settings.connection.as_flags(),
    };
    let verified = verify(&ends, &moved, request.wait, printer).await?;
    printer.report(&verified.report)?;
    if ends.source.is_none() {
        printer.info(
            "note: the source was not checked for what the move left there; pass --from-context (and --from-kubeconfig) to check it",
        );
    }
    Ok(verified.status)
}

/// The records of the named Clusters (all of them without names); a name without a record is
/// an error, as is having nothing to verify.
fn select(
    recorded: Vec<MovedCluster>,
    names: &[String],
    whence: &str,
) -> Result<Vec<MovedCluster>> {
    let missing: Vec<&str> = names
        .iter()
        .filter(|n| !recorded.iter().any(|m| m.cluster.name == **n))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(Error::Usage(format!(
            "no record of a move of Cluster {} in {whence}: run verify against the management cluster they were moved to (--context), or pass --journal with the move's journal",
            missing.join(", ")
        )));
    }
    let selected: Vec<MovedCluster> = recorded
        .into_iter()
        .filter(|m| names.is_empty() || names.contains(&m.cluster.name))
        .collect();
    if selected.is_empty() {
        return Err(Error::Usage(format!(
            "no record of a moved Cluster in {whence}: run verify against the management cluster they were moved to (--context, -n or -A), or pass --journal with the move's journal"
        )));
    }
    Ok(selected)
}

/// `(namespace, name)` of the Clusters in `scope` whose labels match `selector`.
async fn clusters_matching(
    cluster: &crate::kube::Cluster,
    scope: &ListScope,
    selector: &str,
) -> Result<std::collections::BTreeSet<(String, String)>> {
    let catalog = crate::kube::Catalog::discover(cluster).await?;
    let Some(info) = catalog.kind(crate::names::CORE_GROUP, crate::names::CLUSTER) else {
        return Ok(Default::default());
    };
    let listed =
        crate::snapshot::clusters_matching(cluster, &info.resource, scope, selector).await?;
    Ok(listed
        .into_iter()
        .filter_map(|c| Some((c.metadata.namespace?, c.metadata.name?)))
        .collect())
}

/// The moved Clusters recorded — in the journal when one is given, else in the target's
/// records in `scope` — narrowed by `-n` and `-l`, and where they were read, for messages.
async fn recorded(
    journal: Option<&Journal>,
    request: &VerifyRequest,
    (target, scope): (&crate::kube::Cluster, &ListScope),
    settings: &Settings,
) -> Result<(Vec<MovedCluster>, String)> {
    let (recorded, whence) = match (journal, &request.journal) {
        (Some(journal), Some(path)) => (
            journal
                .moved
                .iter()
                // The journal says where its Clusters are; -n narrows them.
                .filter(|m| {
                    settings
                        .scope
                        .namespace
                        .as_ref()
                        .is_none_or(|ns| m.cluster.namespace == *ns)
                })
                .cloned()
                .collect(),
            format!("the journal {}", path.display()),
        ),
        _ => (
            records_in(target, scope).await?,
            format!(
                "{} of this cluster (no ConfigMap labelled {RECORD_LABEL})",
                scope
            ),
        ),
    };
    // `-l`: the records of the Clusters here whose labels match, as the server evaluates them.
    let recorded = match settings.scope.selector.as_deref() {
        Some(selector) => {
            let matching = clusters_matching(target, scope, selector).await?;
            let kept: Vec<MovedCluster> = recorded
                .into_iter()
                .filter(|m| {
                    matching.contains(&(m.cluster.namespace.clone(), m.cluster.name.clone()))
                })
                .collect();
            if kept.is_empty() {
                return Err(Error::Refused(vec![format!(
                    "no moved Clusters match -l {selector} in {}",
                    scope
                )]));
            }
            kept
        }
        None => recorded,
    };
    Ok((recorded, whence))
}
