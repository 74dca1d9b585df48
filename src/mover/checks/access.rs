//! What the user may do in both clusters, asked of each API server (SelfSubjectAccessReviews):
//! every verb the move and its journal need, before anything is written.

use std::collections::BTreeSet;

use futures::{StreamExt, stream};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

use crate::error::Result;
use crate::kube::Cluster;
use crate::mover::addressing::type_of;
use crate::mover::checks::findings::{Refusal, ThisMove};
use crate::mover::graph::discover::MoveType;
use crate::mover::graph::plan::MovePlan;
use crate::mover::write::pause::is_pausable;

pub(crate) async fn access_review(
    cluster: &Cluster,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: &str,
) -> Result<bool> {
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": verb, "group": group, "resource": resource, "namespace": namespace}}});
    let resource_def = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
        "selfsubjectaccessreviews",
    );
    let api: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &resource_def);
    let object: DynamicObject = serde_json::from_value(review).expect("valid review");
    let answer = api
        .create(&PostParams::default(), &object)
        .await
        .map_err(|e| cluster.api_error(e, "reviewing permissions"))?;
    Ok(answer.data["status"]["allowed"] == true)
}

pub(crate) async fn check_permissions(
    plan: &MovePlan,
    types: &[MoveType],
    source: &Cluster,
    target: &Cluster,
    this_move: &ThisMove<'_>,
) -> Result<Vec<Refusal>> {
    let mut failures = Vec::new();
    let needed = permissions_needed(plan, types, this_move);
    // --concurrency reviews at a time; answers in a stable order for the report.
    let answers: Vec<_> = stream::iter(needed.into_iter().map(
        |(in_source, verb, group, resource, ns)| async move {
            let cluster = if in_source { source } else { target };
            let allowed = access_review(cluster, verb, &group, &resource, &ns).await;
            (in_source, verb, group, resource, ns, allowed)
        },
    ))
    .buffered(this_move.concurrency.max(1))
    .collect()
    .await;
    for (in_source, verb, group, resource, ns, allowed) in answers {
        if !allowed? {
            failures.push(Refusal::Permission {
                in_source,
                verb,
                group,
                resource,
                namespace: ns,
            });
        }
    }
    Ok(failures)
}
/// One permission a move needs: in the source (else the target), the verb, the API group, the
/// resource and the namespace (empty: cluster-wide).
type Permission = (bool, &'static str, String, String, String);

/// Every permission the move of `plan` needs, in either cluster: its journal's copy and lease in
/// the source, then per kind and namespace moved, reading and removing it in the source and
/// creating it in the target.
fn permissions_needed(
    plan: &MovePlan,
    types: &[MoveType],
    this_move: &ThisMove<'_>,
) -> BTreeSet<Permission> {
    let mut needed: BTreeSet<Permission> = BTreeSet::new();
    // The journal's copy: written at every step, read to resume, removed at the end.
    if let Some(namespace) = this_move.journal_namespace {
        for verb in ["get", "list", "create", "patch", "delete"] {
            needed.insert((
                true,
                verb,
                String::new(),
                "configmaps".into(),
                namespace.into(),
            ));
        }
    }
    // The lease that keeps one command at a time writing for a move (see crate::kube::lease).
    if this_move.journal_namespace.is_some() {
        for verb in ["get", "create", "patch", "delete"] {
            needed.insert((
                true,
                verb,
                crate::names::LEASE_GROUP.into(),
                "leases".into(),
                crate::names::LEASE_NAMESPACE.into(),
            ));
        }
    }
    for uid in plan.groups.iter().flatten() {
        let node = plan.node(uid);
        let Some(t) = type_of(types, &node.reference) else {
            continue;
        };
        let ns = if t.info.namespaced {
            node.reference.namespace.clone()
        } else {
            String::new()
        };
        let (group, resource) = (t.info.group.clone(), t.resource.plural.clone());
        for verb in ["get", "list"] {
            needed.insert((true, verb, group.clone(), resource.clone(), ns.clone()));
        }
        if !plan.kept_in_source.contains(uid) {
            for verb in ["patch", "delete"] {
                needed.insert((true, verb, group.clone(), resource.clone(), ns.clone()));
            }
        }
        // A shared ClusterClass stays in the source, but is paused there while the move runs.
        if is_pausable(&node.reference) {
            needed.insert((true, "patch", group.clone(), resource.clone(), ns.clone()));
        }
        for verb in ["create", "get", "patch"] {
            needed.insert((false, verb, group.clone(), resource.clone(), ns.clone()));
        }
        if this_move.overwrite_existing {
            needed.insert((false, "update", group.clone(), resource.clone(), ns.clone()));
        }
        if !ns.is_empty() {
            needed.insert((
                false,
                "create",
                String::new(),
                "namespaces".into(),
                String::new(),
            ));
        }
    }
    needed
}
