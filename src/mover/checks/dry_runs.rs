//! What the target says to the move's creates before any is sent: the objects already there
//! (and whether they are expected), and a server-side dry run of every other create.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures::{StreamExt, stream};
use kube::api::{DynamicObject, PostParams};

use crate::error::Result;
use crate::kube::Cluster;
use crate::model::ObjectRef;
use crate::mover::addressing::{api, type_of};
use crate::mover::checks::findings::{Preflight, Refusal, ThisMove};
use crate::mover::graph::discover::MoveType;
use crate::mover::graph::object_graph::Node;
use crate::mover::graph::plan::MovePlan;
use crate::mover::write::create::target_body;
use crate::mover::write::namespaces::{
    MadeNamespace, NamespaceState, ensure_namespace, namespace_checked_by_dry_run,
    remove_namespaces,
};

/// Planned objects found in the target: (source UID, node, the UID there) each.
type InTarget<'p> = Vec<(&'p String, &'p Node, String)>;

/// The planned objects that are in the target already (one lean LIST per kind and namespace,
/// read-only): each with the UID it has there. A kind the target does not serve has none.
pub(crate) async fn existing_in_target<'p>(
    plan: &'p MovePlan,
    types: &[MoveType],
    target: &Cluster,
) -> Result<InTarget<'p>> {
    let mut lists: BTreeMap<(String, String), Vec<(&String, &Node)>> = BTreeMap::new();
    for uid in plan.groups.iter().flatten() {
        let node = plan.node(uid);
        let Some(t) = type_of(types, &node.reference) else {
            continue;
        };
        let namespace = if t.info.namespaced {
            node.reference.namespace.clone()
        } else {
            String::new()
        };
        lists
            .entry((crate::snapshot::qualified(&t.resource), namespace))
            .or_default()
            .push((uid, node));
    }
    let mut found: InTarget = Vec::new();
    for ((_, namespace), nodes) in lists {
        let t = type_of(types, &nodes[0].1.reference).expect("grouped by type");
        // (A kind the target does not serve has none; served_kinds refuses the move.)
        let uids =
            crate::mover::addressing::uids_by_name(target, &t.resource, &namespace, "target")
                .await?;
        for (uid, node) in nodes {
            if let Some(target_uid) = uids.get(&node.reference.name) {
                found.push((uid, node, target_uid.clone()));
            }
        }
    }
    Ok(found)
}

/// What the objects already in the target come to.
pub(in crate::mover) struct Judged {
    /// Every one of them (source UIDs): a rollback never removes them.
    pub(in crate::mover) in_target: BTreeSet<String>,
    /// Those whose copy an earlier move between these two clusters made.
    pub(in crate::mover) reused: BTreeSet<String>,
    pub(in crate::mover) refusals: Vec<Refusal>,
}

/// Objects already in the target are expected when shared by design (global), this move's own
/// copies from an earlier attempt, or to be overwritten (`--overwrite-existing`); reused when an
/// earlier move between these clusters made them (its records pair the UIDs); else refused.
pub(in crate::mover) async fn judge_existing(
    existing: InTarget<'_>,
    target: &Cluster,
    this_move: &ThisMove<'_>,
) -> Result<Judged> {
    let mut judged = Judged {
        in_target: existing.iter().map(|(uid, ..)| (*uid).clone()).collect(),
        reused: BTreeSet::new(),
        refusals: Vec::new(),
    };
    let unexpected: Vec<_> = existing
        .into_iter()
        .filter(|(uid, node, _)| {
            !(node.is_global
                || node.global_hierarchy
                || this_move.overwrite_existing
                || this_move
                    .earlier
                    .is_some_and(|j| j.created_by_this_move(uid)))
        })
        .collect();
    if unexpected.is_empty() {
        return Ok(judged);
    }
    let copies = match this_move.earlier_copies {
        Some((source, between)) => {
            let namespaces = unexpected
                .iter()
                .map(|(_, node, _)| node.reference.namespace.clone())
                .collect();
            crate::mover::write::record::earlier_copies([source, target], &namespaces, between)
                .await?
        }
        None => BTreeSet::new(),
    };
    for (uid, node, target_uid) in unexpected {
        if copies.contains(&crate::mover::write::record::pair(uid, &target_uid)) {
            judged.reused.insert(uid.clone());
        } else {
            judged
                .refusals
                .push(Refusal::AlreadyExists(node.reference.clone()));
        }
    }
    Ok(judged)
}

/// A server-side dry run of every create in the target, so schema, size and webhook rejections
/// surface before any write; objects already there are refused unless expected (global, this
/// move's own, `--overwrite-existing`). The namespaces the dry runs need are created, and removed
/// again when anything fails.
pub async fn dry_run_creates(
    plan: &MovePlan,
    types: &[MoveType],
    target: &Cluster,
    this_move: &ThisMove<'_>,
    known: &BTreeSet<String>,
) -> Result<Preflight> {
    let mut failures = Vec::new();
    let (mut created_namespaces, not_there) =
        namespaces_for_dry_runs(plan, target, this_move, &mut failures).await?;
    let unchecked: Vec<&String> = plan
        .groups
        .iter()
        .flatten()
        .filter(|uid| not_there.contains(&plan.node(uid).reference.namespace))
        .collect();
    // What is in the target already was judged by the caller; its create would only conflict.
    let dry_runs = plan
        .groups
        .iter()
        .flatten()
        .filter(|uid| !known.contains(*uid))
        .filter(|uid| !not_there.contains(&plan.node(uid).reference.namespace))
        .filter_map(|uid| {
            let node = plan.node(uid);
            let t = type_of(types, &node.reference)?;
            let object = node.object.as_ref()?;
            Some((uid, node, t, object))
        });
    let answers = dry_run_each(target, plan, dry_runs, this_move.concurrency).await;
    let appeared = match sort_answers(answers, types, target, &mut failures).await {
        Ok(appeared) => appeared,
        Err(e) => {
            remove_namespaces(target, &created_namespaces).await;
            return Err(e);
        }
    };
    let judged = judge_existing(appeared, target, this_move).await?;
    failures.extend(judged.refusals);
    let (in_target, reused) = (judged.in_target, judged.reused);
    let mut removed_namespaces = Vec::new();
    if !failures.is_empty() {
        remove_namespaces(target, &created_namespaces).await;
        removed_namespaces = created_namespaces.drain(..).map(|m| m.name).collect();
    }
    Ok(Preflight {
        removed_namespaces,
        failures,
        in_target,
        made_namespaces: created_namespaces,
        reused,
        unchecked: not_there
            .iter()
            .map(|namespace| {
                let count = unchecked
                    .iter()
                    .filter(|uid| plan.node(uid).reference.namespace == *namespace)
                    .count();
                format!(
                    "namespace {namespace} is not in the target yet (the move creates it; its dry run passed): the {count} object(s) to move into it are checked when it exists"
                )
            })
            .collect(),
    })
}

/// The namespaces the dry runs need: made in the target (returned, to be removed again), or
/// with `--dry-run=server` dry-run created themselves — those it lacks are returned as not
/// there, and what goes into them is checked when they exist.
async fn namespaces_for_dry_runs(
    plan: &MovePlan,
    target: &Cluster,
    this_move: &ThisMove<'_>,
    failures: &mut Vec<Refusal>,
) -> Result<(Vec<MadeNamespace>, BTreeSet<String>)> {
    let mut created_namespaces = Vec::new();
    let mut seen_namespaces = BTreeSet::new();
    let mut not_there = BTreeSet::new();
    for uid in plan.groups.iter().flatten() {
        let namespace = &plan.node(uid).reference.namespace;
        if namespace.is_empty() || !seen_namespaces.insert(namespace.clone()) {
            continue;
        }
        if this_move.server_dry_run {
            match namespace_checked_by_dry_run(target, namespace).await? {
                NamespaceState::Exists => {}
                NamespaceState::Missing => {
                    not_there.insert(namespace.clone());
                }
                NamespaceState::Rejected(message) => failures.push(Refusal::Rejected {
                    object: ObjectRef {
                        api_version: "v1".into(),
                        kind: "Namespace".into(),
                        namespace: String::new(),
                        name: namespace.clone(),
                    },
                    message,
                }),
            }
            continue;
        }
        match ensure_namespace(target, namespace).await {
            Ok(made) => created_namespaces.extend(made),
            Err(e) => {
                remove_namespaces(target, &created_namespaces).await;
                return Err(e);
            }
        }
    }
    Ok((created_namespaces, not_there))
}

/// One object to dry-run create: its source UID, node and type.
type DryRun<'p> = (
    &'p String,
    &'p Node,
    &'p MoveType,
    &'p std::sync::Arc<DynamicObject>,
);

/// The server-side dry-run create of each object, `concurrency` at a time; the answers in plan
/// order, so the report reads the same every time. Only the verdict is kept: 10,000 answered
/// objects would double the move's memory.
async fn dry_run_each<'p>(
    target: &Cluster,
    plan: &'p MovePlan,
    dry_runs: impl Iterator<Item = DryRun<'p>>,
    concurrency: usize,
) -> Vec<(&'p String, &'p Node, kube::Result<()>)> {
    stream::iter(dry_runs.map(|(uid, node, t, object)| async move {
        let (body, _) = target_body(plan, (object, node.content.as_deref()), &HashMap::new());
        let object: DynamicObject = serde_json::from_value(body).expect("valid body");
        let result = api(target, &t.resource, &node.reference.namespace)
            .create(
                &PostParams {
                    dry_run: true,
                    field_manager: Some(crate::names::FIELD_MANAGER.into()),
                },
                &object,
            )
            .await
            .map(|_| ());
        (uid, node, result)
    }))
    .buffered(concurrency.max(1))
    .collect()
    .await
}

/// The dry runs' answers: a rejection is a refusal; an object there already (since the caller
/// looked, or for a restore never looked) is returned with its UID there, to be judged.
async fn sort_answers<'p>(
    answers: Vec<(&'p String, &'p Node, kube::Result<()>)>,
    types: &[MoveType],
    target: &Cluster,
    failures: &mut Vec<Refusal>,
) -> Result<InTarget<'p>> {
    let mut appeared = Vec::new();
    for (uid, node, result) in answers {
        match result {
            Ok(()) => {}
            Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
                let t = type_of(types, &node.reference).expect("dry-run objects have a type");
                let found = api(target, &t.resource, &node.reference.namespace)
                    .get_opt(&node.reference.name)
                    .await
                    .map_err(|e| {
                        target.api_error(
                            e,
                            &format!("reading {} in the target", node.reference.kind_and_place()),
                        )
                    })?
                    .and_then(|o| o.metadata.uid)
                    .unwrap_or_default();
                appeared.push((uid, node, found));
            }
            Err(kube::Error::Api(s)) => failures.push(Refusal::Rejected {
                object: node.reference.clone(),
                message: s.message,
            }),
            Err(e) => return Err(target.api_error(e, "dry-run creating objects in the target")),
        }
    }
    Ok(appeared)
}
