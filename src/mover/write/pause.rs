//! Pausing and unpausing what a move pauses (Clusters by `spec.paused`, ClusterClasses by
//! annotation), and waiting for providers' `block-move` to go once the source is paused.

use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use kube::api::{DynamicObject, Patch};
use kube::core::ApiResource;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::kube::Cluster;
use crate::model::ObjectRef;
use crate::names::{BLOCK_MOVE_ANNOTATION, PAUSED_ANNOTATION};
use crate::snapshot::{Keep, ListScope};

use crate::mover::addressing::{api, params, type_of};
use crate::mover::graph::discover::{MoveType, list_objects_keeping};
use crate::mover::graph::plan::MovePlan;
use crate::mover::journal::{Journal, entry_resource};
use crate::mover::progress::{Phase, Progress};
use crate::mover::write::create::Fresh;

/// Pauses (or unpauses) `objects`, Clusters and ClusterClasses of the move's `types`.
pub(in crate::mover) async fn set_paused(
    cluster: &Cluster,
    objects: &[ObjectRef],
    types: &[MoveType],
    paused: bool,
    concurrency: usize,
    progress: &dyn Progress,
) -> Result<()> {
    let pausable: Vec<(ApiResource, ObjectRef)> = objects
        .iter()
        .filter(|r| is_pausable(r))
        .filter_map(|r| Some((type_of(types, r)?.resource.clone(), r.clone())))
        .collect();
    patch_paused(cluster, &pausable, paused, concurrency, progress).await
}

/// Clusters and ClusterClasses: what a move pauses.
pub(in crate::mover) fn is_pausable(reference: &ObjectRef) -> bool {
    crate::model::kinds::paused_by_move(reference.group(), &reference.kind)
}

/// Pauses (or unpauses) Clusters (`spec.paused`) and ClusterClasses (annotation), up to
/// `concurrency` at once; every started patch finishes before the first error is returned.
pub(in crate::mover) async fn patch_paused(
    cluster: &Cluster,
    objects: &[(ApiResource, ObjectRef)],
    paused: bool,
    concurrency: usize,
    progress: &dyn Progress,
) -> Result<()> {
    let phase = if paused { Phase::Pause } else { Phase::Unpause };
    progress.begin(phase, objects.len());
    let answers: Vec<Result<()>> = stream::iter(objects.iter().map(|(resource, reference)| async move {
        let patch = if reference.is_core_cluster() && !paused {
            // A copy's mark goes with its pause: until then it says which move holds it.
            json!({"spec": {"paused": Value::Null},
                "metadata": {"annotations": {crate::names::MOVED_BY_ANNOTATION: Value::Null}}})
        } else if reference.is_core_cluster() {
            json!({"spec": {"paused": true}})
        } else {
            json!({"metadata": {"annotations": {PAUSED_ANNOTATION: if paused { json!("") } else { Value::Null }}}})
        };
        api(cluster, resource, &reference.namespace)
            .patch(&reference.name, &params(false), &Patch::Merge(&patch))
            .await
            .map_err(|e| {
                cluster.api_error(
                    e,
                    &format!(
                        "{} {}",
                        if paused { "pausing" } else { "unpausing" },
                        reference.kubectl_name()
                    ),
                )
            })?;
        progress.done(phase, reference);
        Ok(())
    }))
    .buffer_unordered(concurrency.max(1))
    .collect()
    .await;
    answers.into_iter().collect::<Result<Vec<()>>>()?;
    progress.end(phase);
    Ok(())
}

/// Re-reads the planned objects (after pausing, so they arrive paused) and waits until none
/// carries block-move, within one global timeout: the objects that still carry it are watched
/// until they drop it (or go), then everything is read again. Objects outside the plan are not
/// kept.
pub(in crate::mover) async fn read_when_unblocked(
    source: &Cluster,
    types: &[MoveType],
    scope: &ListScope,
    plan: &MovePlan,
    (timeout, keep): (Duration, impl Fn(&MoveType) -> Keep),
) -> Result<Fresh> {
    let deadline = Instant::now() + timeout;
    loop {
        let read = list_objects_keeping(source, types, scope, &keep).await?;
        let namespace = match scope {
            ListScope::Namespace(ns) => Some(ns.as_str()),
            ListScope::AllNamespaces => None,
        };
        let appeared = plan.appeared(&read.objects, namespace);
        if !appeared.is_empty() {
            return Err(Error::Refused(vec![format!(
                "{} appeared in the source after the move was planned (a controller's last write before it saw the pause), so the plan would leave {} behind; nothing was created — run the move again to plan it anew",
                appeared
                    .iter()
                    .map(ObjectRef::kubectl_name)
                    .collect::<Vec<_>>()
                    .join(", "),
                if appeared.len() == 1 { "it" } else { "them" }
            )]));
        }
        let fresh = Fresh::of(read, |uid| plan.scheduled.contains(uid));
        let blocked: Vec<&ObjectRef> = plan
            .groups
            .iter()
            .flatten()
            .filter(|uid| {
                fresh
                    .objects
                    .get(*uid)
                    .is_some_and(|o| crate::model::has_annotation(o, BLOCK_MOVE_ANNOTATION))
            })
            .map(|uid| &plan.node(uid).reference)
            .collect();
        if blocked.is_empty() {
            return Ok(fresh);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::Api {
                context: "waiting for block-move".into(),
                message: format!(
                    "resource is not ready to move: {} still carries {BLOCK_MOVE_ANNOTATION}; run the move again once its provider lets go",
                    blocked
                        .iter()
                        .map(|r| r.kubectl_name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        let unblocked = blocked.iter().filter_map(|reference| {
            let t = type_of(types, reference)?;
            let api = api(source, &t.resource, &reference.namespace);
            Some(kube::runtime::wait::await_condition(
                api,
                &reference.name,
                |o: Option<&DynamicObject>| {
                    o.is_none_or(|o| !crate::model::has_annotation(o, BLOCK_MOVE_ANNOTATION))
                },
            ))
        });
        // Out of time: the next read says which still carry it.
        if let Ok(watched) =
            tokio::time::timeout(left, futures::future::try_join_all(unblocked)).await
        {
            watched.map_err(|e| Error::Api {
                context: "waiting for block-move".into(),
                message: e.to_string(),
            })?;
        }
    }
}

/// Which of what the move paused (the journal's `paused`) a step unpauses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::mover) enum PausedWhere {
    /// Every one: their copies in the target, or the originals after a rollback.
    All,
    /// Those that stay in the source (a shared ClusterClass): they end there as they began.
    KeptInSource,
}

/// What the move paused, with its API resources: all, or those it keeps in the source.
pub(in crate::mover) fn paused_entries(
    journal: &Journal,
    which: PausedWhere,
) -> Vec<(ApiResource, ObjectRef)> {
    journal
        .entries
        .iter()
        .filter(|e| is_pausable(&e.object) && journal.paused.contains(&e.object))
        .filter(|e| which == PausedWhere::All || (e.kept_in_source && !e.deleted))
        .map(|e| (entry_resource(e), e.object.clone()))
        .collect()
}
