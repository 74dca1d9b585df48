//! The moved Clusters' verification records, left in the target as a move ends: one ConfigMap
//! per Cluster, owned by it there, so that `kubectl capi verify` works from any machine once the
//! source's objects (and the journal's copy) are gone.

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};

use super::journal::Journal;
use crate::kube::{Cluster, FIELD_MANAGER};
use crate::names::CORE_GROUP;
use crate::verify::{MovedCluster, RECORD_LABEL};

/// Writes the record of each Cluster `journal` moved into the target, at most `concurrency` at
/// once. A record is not part of the move: what could not be written is returned as a warning
/// (the local journal keeps the record), never an error that would stop a finished move.
pub async fn leave_in_target(
    target: &Cluster,
    journal: &Journal,
    concurrency: usize,
) -> Vec<String> {
    let moved_at = journal
        .finished_at
        .clone()
        .unwrap_or_else(super::journal::now);
    let writes = journal.moved.iter().map(|moved| {
        let uid = journal
            .entries
            .iter()
            .find(|e| {
                e.object.kind == "Cluster"
                    && e.object.group() == CORE_GROUP
                    && e.object.namespace == moved.cluster.namespace
                    && e.object.name == moved.cluster.name
            })
            .and_then(|e| e.target_uid.clone());
        let moved_at = moved_at.clone();
        async move {
            let Some(uid) = uid else {
                return Some(format!(
                    "{} has no target UID in the journal",
                    moved.cluster.kubectl_name()
                ));
            };
            write(target, moved, &uid, &moved_at).await.err()
        }
    });
    stream::iter(writes)
        .buffer_unordered(concurrency.max(1))
        .filter_map(|failed| async move { failed })
        .map(|reason| {
            format!(
                "the verification record was not left in the target: {reason}; `kubectl capi verify --journal` with this move's journal still verifies it"
            )
        })
        .collect()
        .await
}

/// Creates the record, or replaces an earlier record of the same Cluster (one an earlier move
/// left, labelled so); a ConfigMap of that name that is not a record is left alone.
async fn write(
    target: &Cluster,
    moved: &MovedCluster,
    cluster_uid: &str,
    moved_at: &str,
) -> Result<(), String> {
    let name = moved.record_name();
    let shown = format!("configmap/{name} in namespace {}", moved.cluster.namespace);
    let configmaps: Api<ConfigMap> =
        Api::namespaced(target.client.clone(), &moved.cluster.namespace);
    let body: ConfigMap = serde_json::from_value(moved.to_configmap(cluster_uid, moved_at))
        .map_err(|e| e.to_string())?;
    let post = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PostParams::default()
    };
    match configmaps.create(&post, &body).await {
        Ok(_) => return Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => {}
        Err(e) => {
            return Err(target
                .api_error(e, &format!("creating {shown}"))
                .to_string());
        }
    }
    let existing = configmaps
        .get(&name)
        .await
        .map_err(|e| target.api_error(e, &format!("reading {shown}")).to_string())?;
    let ours = existing
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(RECORD_LABEL));
    if !ours {
        return Err(format!(
            "{shown} exists and is not a kubectl-capi record; it was left as it is"
        ));
    }
    let patch = serde_json::json!({
        "metadata": {
            "annotations": body.metadata.annotations,
            "ownerReferences": body.metadata.owner_references,
            "resourceVersion": existing.metadata.resource_version,
        },
        "data": body.data,
    });
    configmaps
        .patch(
            &name,
            &PatchParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..PatchParams::default()
            },
            &Patch::Merge(&patch),
        )
        .await
        .map(|_| ())
        .map_err(|e| {
            target
                .api_error(e, &format!("updating {shown}"))
                .to_string()
        })
}
