//! The move planned from a fresh listing of the source: the named Clusters (or `-l`'s), or
//! clusterctl's whole graph for the scope.

use std::collections::BTreeSet;

use crate::choices::DryRun;
use crate::error::{Error, Result};
use crate::model::ObjectRef;
use crate::mover::graph::discover::{list_objects, move_types};
use crate::mover::graph::object_graph::Graph;
use crate::mover::graph::plan::{MovePlan, plan};
use crate::mover::journal::{self, Stage};
use crate::mover::steps::context::{MoveContext, Step};
use crate::mover::steps::history::History;
use crate::output::ExitStatus;
use crate::snapshot::ListScope;

/// The move planned from a fresh listing of the source.
pub struct Planned {
    pub types: Vec<crate::mover::graph::discover::MoveType>,
    pub objects: crate::mover::graph::object_graph::TypedObjects,
    pub plan: MovePlan,
    pub clusters: Vec<ObjectRef>,
}

/// Lists the source and plans the move: the named Clusters, or without names clusterctl's
/// whole graph for the scope, with or without Clusters.
pub(in crate::mover) async fn list_and_plan(
    this: &MoveContext<'_>,
    history: &History,
) -> Result<Step<Planned>> {
    let types = move_types(this.source(), &this.ends.source.catalog).await?;
    let read = list_objects(this.source(), &types, &this.scope).await?;
    let objects = read.objects;
    let graph = Graph::build(&objects, this.namespace.as_deref()).with_contents(read.contents);
    let all_clusters: Vec<&crate::mover::graph::object_graph::Node> = graph
        .nodes
        .values()
        .filter(|n| !n.is_virtual() && n.reference.is_core_cluster())
        .filter(|n| {
            this.namespace
                .as_deref()
                .is_none_or(|ns| n.reference.namespace == ns)
        })
        .collect();
    let scope_shown = this.scope.to_string();
    // `-l`: the Clusters the server says match (its own selector syntax), as `pause` selects.
    let selector = this.request.scope.selector.as_deref();
    let matching = match selector {
        Some(selector) => Some(clusters_matching(this, &types, selector).await?),
        None => None,
    };
    let selected = match select(
        this,
        history,
        &types,
        &all_clusters,
        (selector, matching.as_ref()),
    )
    .await?
    {
        Step::Go(selected) => selected,
        Step::Stop(status) => return Ok(Step::Stop(status)),
    };
    let clusters: Vec<ObjectRef> = all_clusters
        .iter()
        .filter(|n| selected.is_empty() || selected.contains(&n.uid))
        .map(|n| n.reference.clone())
        .collect();
    let plan = plan(graph, &selected);
    // As clusterctl: a scope with nothing to move is not an error. Nor is one whose every
    // object stays in the source (shared or global) and is in the target already — after
    // a finished move, say. A finished record alone never decides it.
    let only_kept = plan
        .scheduled
        .iter()
        .all(|u| plan.kept_in_source.contains(u));
    let nothing_left =
        plan.groups.is_empty() || (only_kept && all_in_target(this, &plan, &types).await?);
    if nothing_left {
        this.printer.info(
            &finished_here(this, history)
                .unwrap_or_else(|| format!("nothing to move in {scope_shown}")),
        );
        // An interrupted move with nothing left to do: its journal does not outlive it.
        if let (Some(journal), Some(records), DryRun::None) =
            (&history.unfinished, &this.records, this.request.dry_run)
        {
            let mut closed = journal.clone();
            closed.finished_at = Some(journal::now());
            this.journal_file(records, closed)
                .stage(Stage::Done)
                .await?;
            this.printer.info(&format!(
                "the interrupted move recorded in {} had nothing left to do; its journal is closed and its copy in the source removed",
                records.path.display()
            ));
        }
        return Ok(Step::Stop(ExitStatus::Success));
    }
    Ok(Step::Go(Planned {
        types,
        objects,
        plan,
        clusters,
    }))
}

/// What a rerun says when the move it repeats finished (its record here).
fn finished_here(this: &MoveContext<'_>, history: &History) -> Option<String> {
    let (Some(record), Some(records)) = (&history.finished, &this.records) else {
        return None;
    };
    Some(format!(
        "the move recorded in {} finished at {} ({} objects); nothing left to move in {}",
        records.path.display(),
        record.finished_at.as_deref().unwrap_or("an unknown time"),
        record.objects.unwrap_or_default(),
        this.scope
    ))
}

/// The UIDs of the Clusters asked for (empty: every one in scope) — names, `-l`, or names
/// with `-l` (the named ones that match). A name of no Cluster is an error; a rerun after the
/// move finished says so and ends with success.
async fn select(
    this: &MoveContext<'_>,
    history: &History,
    types: &[crate::mover::graph::discover::MoveType],
    all_clusters: &[&crate::mover::graph::object_graph::Node],
    (selector, matching): (Option<&str>, Option<&BTreeSet<String>>),
) -> Result<Step<BTreeSet<String>>> {
    let scope_shown = this.scope.to_string();
    // Names with `-l`: the named Clusters that match.
    let (named, missing) =
        crate::model::select_by_name(all_clusters.iter().copied(), &this.request.clusters, |n| {
            n.reference.name.as_str()
        });
    let found: Vec<&crate::mover::graph::object_graph::Node> = named
        .into_iter()
        .filter(|n| matching.is_none_or(|m| m.contains(&n.uid)))
        .collect();
    // A rerun after the move finished is harmless: it says so and succeeds — for the
    // Clusters that move moved, and only while they are in the target.
    let moved_there = if missing.is_empty() && (!found.is_empty() || selector.is_none()) {
        Vec::new()
    } else {
        moved_and_there(this, history, types).await?
    };
    let (done, missing): (Vec<String>, Vec<String>) = missing
        .into_iter()
        .partition(|name| moved_there.iter().any(|c| &c.name == name));
    let moved_before =
        !done.is_empty() || (this.request.clusters.is_empty() && !moved_there.is_empty());
    // Whatever a finished record says: a Cluster asked for that is in neither place is an
    // error.
    if !missing.is_empty() {
        let in_target = in_target(this, types, &missing).await?;
        let neither: Vec<String> = missing
            .into_iter()
            .filter(|name| !in_target.iter().any(|(there, _)| there == name))
            .collect();
        // Names in neither cluster are the error; the rest are in the target already.
        if neither.is_empty() {
            return Err(Error::Refused(
                in_target.into_iter().map(|(_, why)| why).collect(),
            ));
        }
        return Err(Error::ClustersNotFound {
            names: neither,
            scope: scope_shown,
            flags: this.request.source.as_flags(),
        });
    }
    let asked = !this.request.clusters.is_empty() || selector.is_some();
    if asked && found.is_empty() {
        if let Some(done) = moved_before.then(|| finished_here(this, history)).flatten() {
            this.printer.info(&done);
            return Ok(Step::Stop(ExitStatus::Success));
        }
        let selector = selector.unwrap_or_default();
        let clusters = crate::names::qualified("clusters", crate::names::CORE_GROUP);
        return Err(Error::Refused(vec![format!(
            "no Clusters {}match -l {selector} in {scope_shown}; nothing was moved — list them with `kubectl get {clusters}{}{} --show-labels`",
            if this.request.clusters.is_empty() {
                String::new()
            } else {
                format!("named {} ", this.request.clusters.join(", "))
            },
            match &this.scope {
                ListScope::Namespace(ns) => format!(" -n {}", crate::settings::shell_word(ns)),
                ListScope::AllNamespaces => " -A".to_string(),
            },
            this.request.source.as_flags()
        )]));
    }
    Ok(Step::Go(if asked {
        found.iter().map(|n| n.uid.clone()).collect()
    } else {
        BTreeSet::new()
    }))
}

/// The UIDs of the Clusters in scope whose labels match `selector`, as the source answers a
/// LIST with it.
async fn clusters_matching(
    this: &MoveContext<'_>,
    types: &[crate::mover::graph::discover::MoveType],
    selector: &str,
) -> Result<BTreeSet<String>> {
    let Some(clusters) = types
        .iter()
        .find(|t| crate::names::is_core_cluster(&t.info.group, &t.info.kind))
    else {
        return Ok(BTreeSet::new());
    };
    let listed = crate::snapshot::clusters_matching(
        this.source(),
        &clusters.resource,
        &this.scope,
        selector,
    )
    .await?;
    Ok(listed.into_iter().filter_map(|c| c.metadata.uid).collect())
}

/// The Clusters the finished move recorded here moved that are in the target now (by name):
/// where the record and the clusters agree. Empty without a finished record.
/// For each of `names` (Clusters not in the source) that the target holds in this scope's
/// namespace, its name and why there is nothing to move: it is in the target already, moved
/// by a move whose record does not speak for it (another selection) or by someone else.
async fn in_target(
    this: &MoveContext<'_>,
    types: &[crate::mover::graph::discover::MoveType],
    names: &[String],
) -> Result<Vec<(String, String)>> {
    let (ListScope::Namespace(namespace), Some(target)) = (&this.scope, &this.ends.target) else {
        return Ok(Vec::new());
    };
    let mut there = Vec::new();
    for name in names {
        let reading = format!("reading Cluster {namespace}/{name}");
        if !target_holds(this, types, (namespace, name), &reading).await? {
            continue;
        }
        // A hint only with the user's own kubeconfig for the target (never a Secret's).
        let check = this.request.target.as_ref().map_or_else(String::new, |t| {
            format!(
                "; check it there with `kubectl capi verify {} -n {}{}`",
                crate::settings::shell_word(name),
                crate::settings::shell_word(namespace),
                t.as_flags()
            )
        });
        there.push((
            name.clone(),
            format!(
                "Cluster {namespace}/{name} is not in the source but in the target ({}) already, so there is nothing of it to move{check}",
                target.cluster.url,
            ),
        ));
    }
    Ok(there)
}

/// The Clusters the finished record moved that the target holds now.
async fn moved_and_there(
    this: &MoveContext<'_>,
    history: &History,
    types: &[crate::mover::graph::discover::MoveType],
) -> Result<Vec<ObjectRef>> {
    let Some(record) = &history.finished else {
        return Ok(Vec::new());
    };
    let mut there = Vec::new();
    for cluster in record.moved_clusters() {
        let reading = format!("reading Cluster {}", cluster.kubectl_name());
        let place = (cluster.namespace.as_str(), cluster.name.as_str());
        if target_holds(this, types, place, &reading).await? {
            there.push(cluster.clone());
        }
    }
    Ok(there)
}

/// Whether the target holds the Cluster `namespace/name` (false without a target, or where
/// Cluster API's Cluster is not among the kinds moved). A failed read is an error, named by
/// `reading`.
async fn target_holds(
    this: &MoveContext<'_>,
    types: &[crate::mover::graph::discover::MoveType],
    (namespace, name): (&str, &str),
    reading: &str,
) -> Result<bool> {
    let (Some(target), Some(clusters)) = (
        &this.ends.target,
        types
            .iter()
            .find(|t| crate::names::is_core_cluster(&t.info.group, &t.info.kind)),
    ) else {
        return Ok(false);
    };
    let found = kube::api::Api::<kube::api::DynamicObject>::namespaced_with(
        target.cluster.client.clone(),
        namespace,
        &clusters.resource,
    )
    .get_opt(name)
    .await
    .map_err(|e| target.cluster.api_error(e, reading))?;
    Ok(found.is_some())
}

/// Whether every object `plan` would copy is in the target already (by name; what is
/// there is then reused, or refused by the preflight): the preflight's own read of what is
/// there, one LIST per kind and namespace. `false` without a target.
async fn all_in_target(
    this: &MoveContext<'_>,
    plan: &MovePlan,
    types: &[crate::mover::graph::discover::MoveType],
) -> Result<bool> {
    let Some(target) = &this.ends.target else {
        return Ok(false);
    };
    let there = crate::mover::checks::dry_runs::existing_in_target(plan, types, &target.cluster)
        .await?
        .len();
    Ok(there == plan.scheduled.len())
}
