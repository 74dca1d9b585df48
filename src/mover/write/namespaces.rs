//! Namespaces in the target: made when a move needs them, removed again (by UID) when it wrote
//! nothing into them.

use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

use crate::error::Result;
use crate::kube::Cluster;

use crate::mover::addressing::only_uid;

/// A namespace a move created in the target, by name and UID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeNamespace {
    pub name: String,
    pub uid: String,
}

fn namespaces_api(cluster: &Cluster) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("", "v1", "Namespace"),
        "namespaces",
    );
    Api::all_with(cluster.client.clone(), &resource)
}

/// Removes namespaces this move created and wrote nothing into (each by its UID, so one made
/// anew by someone else since stays). Best effort: a leftover empty namespace is harmless.
pub async fn remove_namespaces(target: &Cluster, made: &[MadeNamespace]) {
    let api = namespaces_api(target);
    for namespace in made {
        let _ = api.delete(&namespace.name, &only_uid(&namespace.uid)).await;
    }
}

/// Whether `namespace` exists in the target.
async fn exists(target: &Cluster, namespace: &str) -> Result<bool> {
    Ok(namespaces_api(target)
        .get_opt(namespace)
        .await
        .map_err(|e| target.api_error(e, "reading namespaces"))?
        .is_some())
}

/// Ensures a namespace exists in the target; returns it if this call created it.
pub(in crate::mover) async fn ensure_namespace(
    target: &Cluster,
    namespace: &str,
) -> Result<Option<MadeNamespace>> {
    let api = namespaces_api(target);
    if exists(target, namespace).await? {
        return Ok(None);
    }
    let object: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
    )
    .expect("valid");
    match api
        .create(
            &PostParams {
                field_manager: Some(crate::names::FIELD_MANAGER.into()),
                ..Default::default()
            },
            &object,
        )
        .await
    {
        Ok(made) => Ok(Some(MadeNamespace {
            name: namespace.to_string(),
            uid: made.metadata.uid.unwrap_or_default(),
        })),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
        Err(e) => Err(target.api_error(e, &format!("creating namespace {namespace}"))),
    }
}

/// Whether `namespace` exists in the target; when it does not, a server-side dry-run create of it
/// checks that the move could create it (`Err` carries the server's refusal). Writes nothing.
pub(in crate::mover) async fn namespace_checked_by_dry_run(
    target: &Cluster,
    namespace: &str,
) -> Result<NamespaceState> {
    let api = namespaces_api(target);
    if exists(target, namespace).await? {
        return Ok(NamespaceState::Exists);
    }
    let object: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
    )
    .expect("valid");
    let dry_run = PostParams {
        dry_run: true,
        field_manager: Some(crate::names::FIELD_MANAGER.into()),
    };
    match api.create(&dry_run, &object).await {
        Ok(_) => Ok(NamespaceState::Missing),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(NamespaceState::Exists),
        Err(kube::Error::Api(s)) => Ok(NamespaceState::Rejected(s.message)),
        Err(e) => Err(target.api_error(e, &format!("dry-run creating namespace {namespace}"))),
    }
}

/// What a server-side dry run found of a namespace the move needs in the target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::mover) enum NamespaceState {
    Exists,
    /// Not there; the move would create it (its dry run passed).
    Missing,
    /// Not there, and the server would not create it: why.
    Rejected(String),
}

/// A rollback's last step in the target: removes the namespaces the move created there (each by
/// its UID) in which nothing of the kinds the move brought is left — what the rollback removed
/// was all that the move put there; anything else someone put there since keeps its namespace.
pub(in crate::mover) async fn remove_if_empty(
    target: &Cluster,
    journal: &crate::mover::journal::Journal,
) -> Result<()> {
    let mut resources: Vec<ApiResource> = Vec::new();
    for entry in journal.entries.iter().filter(|e| e.namespaced) {
        let resource = crate::mover::journal::entry_resource(entry);
        if !resources
            .iter()
            .any(|r| r.plural == resource.plural && r.group == resource.group)
        {
            resources.push(resource);
        }
    }
    'namespaces: for made in &journal.made_namespaces {
        for resource in &resources {
            let api: Api<DynamicObject> =
                Api::namespaced_with(target.client.clone(), &made.name, resource);
            let left = api
                .list_metadata(&kube::api::ListParams::default().limit(2))
                .await
                .map_err(|e| {
                    target.api_error(
                        e,
                        &format!("listing {} in namespace {}", resource.plural, made.name),
                    )
                })?;
            // Every namespace gets its root CA ConfigMap from the cluster itself.
            if left
                .items
                .iter()
                .any(|o| o.metadata.name.as_deref() != Some("kube-root-ca.crt"))
            {
                continue 'namespaces;
            }
        }
        remove_namespaces(
            target,
            &[MadeNamespace {
                name: made.name.clone(),
                uid: made.uid.clone(),
            }],
        )
        .await;
    }
    Ok(())
}
