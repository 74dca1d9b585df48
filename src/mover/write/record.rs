//! The moved Clusters' verification records, left in the target as a move ends: one ConfigMap
//! per Cluster, owned by it there, so that `kubectl capi verify` works from any machine once the
//! source's objects (and the journal's copy) are gone.

use futures::{StreamExt, stream};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};

use crate::kube::Cluster;
use crate::mover::journal::Journal;
use crate::names::FIELD_MANAGER;
use crate::verify::{Between, Copied, MovedCluster, RECORD_KEY, RECORD_LABEL};

/// Writes the record of each Cluster `journal` moved into the target, at most `concurrency` at
/// once. A record is not part of the move: what could not be written is returned as a warning
/// (the local journal keeps the record), never an error that would stop a finished move.
pub async fn leave_in_target(
    target: &Cluster,
    file: &crate::mover::journal::JournalFile,
    concurrency: usize,
) -> Vec<String> {
    let journal = &file.journal;
    let verify = verify_with_journal(&file.path, journal);
    let moved_at = journal
        .finished_at
        .clone()
        .unwrap_or_else(crate::mover::journal::now);
    let between = match (&journal.source.identity, &journal.target.identity) {
        (Some(source), Some(target)) => Some(Between {
            source: source.clone(),
            target: target.clone(),
        }),
        _ => None,
    };
    // The copies this move made, or reused, of what stays in the source.
    let copies: Vec<Copied> = journal
        .entries
        .iter()
        .filter(|e| e.kept_in_source && (e.created || e.reused))
        .filter_map(|e| {
            Some(Copied {
                source_uid: e.uid.clone(),
                target_uid: e.target_uid.clone()?,
            })
        })
        .collect();
    let (between, copies) = (&between, &copies);
    let writes = journal.moved.iter().map(|moved| {
        let uid = journal
            .entries
            .iter()
            .find(|e| {
                e.object.is_core_cluster()
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
            let moved = MovedCluster {
                between: between.clone(),
                copies: copies.clone(),
                ..moved.clone()
            };
            write(target, &moved, &uid, &moved_at).await.err()
        }
    });
    stream::iter(writes)
        .buffer_unordered(concurrency.max(1))
        .filter_map(|failed| async move { failed })
        .map(|reason| {
            format!(
                "the verification record was not left in the target: {reason}; this move's journal still verifies it: `{verify}`"
            )
        })
        .collect()
        .await
}

/// The `kubectl capi verify` that reads what `journal` (at `path`) moved, against its target as
/// the move reached it.
fn verify_with_journal(path: &std::path::Path, journal: &Journal) -> String {
    let word = crate::settings::shell_word;
    let mut command = format!(
        "kubectl capi verify --journal {}",
        word(&path.to_string_lossy())
    );
    if let Some(kubeconfig) = &journal.target.kubeconfig {
        command.push_str(&format!(" --kubeconfig {}", word(kubeconfig)));
    }
    if let Some(context) = &journal.target.context {
        command.push_str(&format!(" --context {}", word(context)));
    }
    command
}

/// Two UIDs of one object and its copy, whichever cluster holds which.
pub fn pair(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

/// Removes from the source the records an earlier move left next to the Clusters `journal`
/// moved (they moved in with them, and are never moved themselves): one LIST of records per
/// namespace, each deleted by its UID. What cannot be removed is returned as a warning; the
/// source's garbage collector removes it with its Cluster anyway.
pub async fn remove_from_source(source: &Cluster, journal: &Journal) -> Vec<String> {
    let mut warnings = Vec::new();
    let namespaces: std::collections::BTreeSet<&str> = journal
        .moved
        .iter()
        .map(|m| m.cluster.namespace.as_str())
        .collect();
    for namespace in namespaces {
        let configmaps: Api<ConfigMap> = Api::namespaced(source.client.clone(), namespace);
        let listed = match configmaps
            .list(&kube::api::ListParams::default().labels(RECORD_LABEL))
            .await
        {
            Ok(listed) => listed.items,
            Err(e) => {
                warnings.push(format!(
                    "earlier verification records in namespace {namespace} of the source were not checked: {}",
                    source.api_error(e, "listing them")
                ));
                continue;
            }
        };
        let moved_here: std::collections::BTreeSet<String> = journal
            .moved
            .iter()
            .filter(|m| m.cluster.namespace == namespace)
            .map(MovedCluster::record_name)
            .collect();
        for record in listed {
            let (Some(name), Some(uid)) = (record.metadata.name, record.metadata.uid) else {
                continue;
            };
            if !moved_here.contains(&name) {
                continue;
            }
            match configmaps
                .delete(&name, &crate::mover::addressing::only_uid(&uid))
                .await
            {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 || status.code == 409 => {}
                Err(e) => warnings.push(format!(
                    "the earlier verification record configmap/{name} in namespace {namespace} was left in the source: {}",
                    source.api_error(e, "deleting it")
                )),
            }
        }
    }
    warnings
}

/// The copies earlier moves between the two clusters of `between` made of objects kept in the
/// source, as their records in `namespaces` of either cluster say: unordered UID pairs (see
/// [`pair`]). A record that cannot be read is an error, not an empty answer.
pub async fn earlier_copies(
    clusters: [&Cluster; 2],
    namespaces: &std::collections::BTreeSet<String>,
    between: &Between,
) -> crate::error::Result<std::collections::BTreeSet<(String, String)>> {
    let mut copies = std::collections::BTreeSet::new();
    for cluster in clusters {
        for namespace in namespaces.iter().filter(|n| !n.is_empty()) {
            let configmaps: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), namespace);
            let listed = configmaps
                .list(&kube::api::ListParams::default().labels(RECORD_LABEL))
                .await
                .map_err(|e| {
                    cluster.api_error(
                        e,
                        &format!("reading the move records in namespace {namespace}"),
                    )
                })?;
            for record in listed.items {
                let Some(text) = record.data.as_ref().and_then(|d| d.get(RECORD_KEY)) else {
                    continue;
                };
                let Ok(moved) = serde_json::from_str::<MovedCluster>(text) else {
                    continue;
                };
                if moved.between.as_ref().is_some_and(|b| b.same_pair(between)) {
                    copies.extend(
                        moved
                            .copies
                            .iter()
                            .map(|c| pair(&c.source_uid, &c.target_uid)),
                    );
                }
            }
        }
    }
    Ok(copies)
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
