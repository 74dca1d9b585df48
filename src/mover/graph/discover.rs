//! What clusterctl move reads: CRDs labelled `clusterctl.cluster.x-k8s.io` (at their storage
//! version) plus Secrets and ConfigMaps, in the moved namespace(s); Secrets in infrastructure
//! providers' namespaces; ClusterClasses (and their templates) that Clusters use across namespaces.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::value::RawValue;

use crate::error::{Denials, Error, Result};
use crate::kube::{Catalog, Cluster};
use crate::model::{ClusterClassView, ClusterView};
use crate::mover::graph::object_graph::{TypeInfo, TypedObjects};
use crate::names::{CLUSTERCTL_LABEL, CORE_GROUP};
use crate::snapshot::{
    Content, Contents, Keep, ListScope, Listed, PAGE_SIZE, Status, list_keeping, qualified,
    with_types,
};

/// A kind move reads and writes, with the resource to do it at its storage version.
#[derive(Debug, Clone)]
pub struct MoveType {
    pub info: TypeInfo,
    pub resource: ApiResource,
    /// Has a status subresource (for `--restore-status`).
    pub status: bool,
}

/// The kinds a move reads and writes, from the CRDs the catalog listed when the end was
/// connected: those labelled `clusterctl.cluster.x-k8s.io`, at their storage version, plus
/// Secrets and ConfigMaps.
pub async fn move_types(cluster: &Cluster, catalog: &Catalog) -> Result<Vec<MoveType>> {
    let listed = catalog.crds().map_err(|status| {
        cluster.api_error(
            kube::Error::Api(Box::new(status.clone())),
            &format!(
                "listing CustomResourceDefinitions labelled {}",
                crate::names::CLUSTERCTL_LABEL
            ),
        )
    });
    let crds = match listed {
        Err(Error::Forbidden { message }) => {
            return Err(every_forbidden_read(cluster, catalog, message).await);
        }
        other => other?,
    };
    let mut types = Vec::new();
    for crd in crds
        .iter()
        .filter(|crd| crd.labels.contains_key(CLUSTERCTL_LABEL))
    {
        let Some((storage, status)) = &crd.storage else {
            continue;
        };
        let resource = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(&crd.group, storage, &crd.kind),
            &crd.plural,
        );
        types.push(MoveType {
            info: TypeInfo::from_crd(&crd.group, &crd.kind, crd.namespaced, &crd.labels),
            resource,
            status: *status,
        });
    }
    for core in crate::kube::catalog::core_kinds() {
        types.push(MoveType {
            info: TypeInfo::core(&core.resource.kind),
            resource: core.resource,
            status: false,
        });
    }
    types.sort_by(|a, b| (&a.info.group, &a.info.kind).cmp(&(&b.info.group, &b.info.kind)));
    Ok(types)
}

/// The move cannot know its kinds without the CRDs; so that the user hears of every missing read
/// permission at once, each Cluster API kind the server serves (and Secrets, ConfigMaps) is tried
/// with a one-object LIST.
async fn every_forbidden_read(cluster: &Cluster, catalog: &Catalog, crds_denied: String) -> Error {
    let mut denials = Denials::default();
    let crds = "customresourcedefinitions.apiextensions.k8s.io";
    let _ = denials.note::<()>(
        crds,
        Err(Error::Forbidden {
            message: crds_denied,
        }),
    );
    let core = crate::kube::catalog::core_kinds()
        .into_iter()
        .map(|core| core.resource);
    let resources = catalog.kinds().map(|k| k.resource.clone()).chain(core);
    for resource in resources {
        let api: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &resource);
        let read = api
            .list_metadata(&ListParams::default().limit(1))
            .await
            .map(|_| ())
            .map_err(|e| cluster.api_error(e, &format!("listing {}", resource.plural)));
        if let Err(e) = denials.note(&qualified(&resource), read) {
            return e;
        }
    }
    denials.check().expect_err("the CRD list was denied")
}

/// Listed objects' managedFields as the server wrote them (JSON text), by source UID.
pub type ManagedFields = HashMap<String, Box<RawValue>>;

/// Every object move considers, with its type, as planning reads it: no managedFields, no
/// status where no evaluation reads it and a create would not write it (a status subresource),
/// and as text the content of kinds planning only sends on (bootstrap data, Secrets).
pub async fn list_objects(
    cluster: &Cluster,
    types: &[MoveType],
    scope: &ListScope,
) -> Result<Read> {
    let planning = |t: &MoveType| {
        let (group, kind) = (t.info.group.as_str(), t.info.kind.as_str());
        Keep {
            managed_fields: false,
            // Where there is no status subresource, status is part of what is created (and
            // dry-run).
            status: if !t.status {
                Status::Whole
            } else if crate::model::kinds::status_evaluated(group, kind) {
                Status::Evaluated
            } else {
                Status::Skip
            },
            content: if crate::model::kinds::content_read_by_planning(group, kind) {
                Content::Tree
            } else {
                Content::Text
            },
        }
    };
    list_objects_keeping(cluster, types, scope, planning).await
}

/// Every object move considers, with its type, keeping what `keep` says of each type:
/// managedFields apart (by UID), to be written back as they were.
pub async fn list_objects_keeping(
    cluster: &Cluster,
    types: &[MoveType],
    scope: &ListScope,
    keep: impl Fn(&MoveType) -> Keep,
) -> Result<Read> {
    let mut found = Read::default();
    let mut denials = Denials::default();
    for t in types {
        let api: Api<DynamicObject> = match (scope, t.info.namespaced) {
            (ListScope::Namespace(ns), true) => {
                Api::namespaced_with(cluster.client.clone(), ns, &t.resource)
            }
            _ => Api::all_with(cluster.client.clone(), &t.resource),
        };
        let listed = list_keeping(
            cluster,
            &api,
            &t.resource,
            ListParams::default().limit(PAGE_SIZE),
            keep(t),
        );
        for listed in denials.note(&qualified(&t.resource), listed.await)? {
            found.push(listed, &t.info);
        }
    }
    let provider_namespaces = infrastructure_namespaces(cluster, &mut denials).await?;
    if let ListScope::Namespace(moved) = scope {
        let secret = types
            .iter()
            .find(|t| t.info.group.is_empty() && t.info.kind == "Secret")
            .expect("always added");
        for namespace in provider_namespaces.iter().filter(|ns| *ns != moved) {
            let api: Api<DynamicObject> =
                Api::namespaced_with(cluster.client.clone(), namespace, &secret.resource);
            let listed = list_keeping(
                cluster,
                &api,
                &secret.resource,
                ListParams::default().limit(PAGE_SIZE),
                keep(secret),
            );
            for listed in denials.note(&qualified(&secret.resource), listed.await)? {
                found.push(listed, &secret.info);
            }
        }
        classes_across_namespaces(cluster, types, moved, &mut found).await?;
    }
    denials.check()?;
    Ok(found)
}

/// What a listing of the move's kinds read: each object once (by UID), with its managedFields
/// and (where read as text) its content kept apart.
#[derive(Default)]
pub struct Read {
    pub objects: TypedObjects,
    pub managed_fields: ManagedFields,
    pub contents: Contents,
    seen: BTreeSet<String>,
}

impl Read {
    fn push(&mut self, listed: Listed, info: &TypeInfo) {
        let Listed {
            object,
            managed_fields,
            content,
        } = listed;
        // The tool's own records — a move's journal copy, a moved Cluster's verification
        // record — are never part of a move.
        if is_journal_copy(&object) || crate::verify::MovedCluster::is_record(&object) {
            return;
        }
        let uid = object.metadata.uid.clone().unwrap_or_default();
        if self.seen.insert(uid.clone()) {
            if let Some(managed) = managed_fields {
                self.managed_fields.insert(uid.clone(), managed);
            }
            if let Some(content) = content {
                self.contents.insert(uid, content);
            }
            self.objects.push((Arc::new(object), info.clone()));
        }
    }

    /// An object read whole (its managedFields travel inline).
    fn push_fetched(&mut self, object: DynamicObject, info: &TypeInfo) {
        let listed = Listed {
            object,
            managed_fields: None,
            content: None,
        };
        self.push(listed, info);
    }
}

/// The namespaces of the infrastructure providers (from the Provider inventory): global
/// identities' credentials live there. A cluster that does not serve the inventory has none; a
/// read that fails is not "none".
async fn infrastructure_namespaces(
    cluster: &Cluster,
    denials: &mut Denials,
) -> Result<BTreeSet<String>> {
    let provider_resource = crate::kube::catalog::provider_resource();
    let providers: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &provider_resource);
    let inventory = match providers.list(&ListParams::default()).await {
        Ok(list) => Ok(list.items),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Vec::new()),
        Err(e) => Err(cluster.api_error(e, "listing the Provider inventory")),
    };
    Ok(denials
        .note(&qualified(&provider_resource), inventory)?
        .iter()
        .filter(|p| p.data["type"] == "InfrastructureProvider")
        .filter_map(|p| p.metadata.namespace.clone())
        .collect())
}

/// The ClusterClasses the moved namespace's Clusters use from other namespaces, and their
/// templates.
async fn classes_across_namespaces(
    cluster: &Cluster,
    types: &[MoveType],
    moved: &str,
    found: &mut Read,
) -> Result<()> {
    let classes: BTreeSet<(String, String)> = found
        .objects
        .iter()
        .filter(|(o, i)| {
            crate::names::is_core_cluster(&i.group, &i.kind)
                && o.metadata.namespace.as_deref() == Some(moved)
        })
        .filter_map(|(o, _)| ClusterView::read(o).topology_class)
        .filter_map(|(ns, name)| ns.filter(|ns| ns != moved).map(|ns| (ns, name)))
        .collect();
    let Some(cc_type) = types
        .iter()
        .find(|t| t.info.group == CORE_GROUP && t.info.kind == crate::names::CLUSTER_CLASS)
    else {
        return Ok(());
    };
    for (namespace, name) in classes {
        let api: Api<DynamicObject> =
            Api::namespaced_with(cluster.client.clone(), &namespace, &cc_type.resource);
        let Some(class) = api
            .get_opt(&name)
            .await
            .map_err(|e| cluster.api_error(e, "reading a ClusterClass"))?
        else {
            continue;
        };
        let class = with_types(class, &cc_type.resource);
        for reference in ClusterClassView::read(&class).template_refs {
            let Some(t) = types
                .iter()
                .find(|t| t.info.group == reference.api_group && t.info.kind == reference.kind)
            else {
                continue;
            };
            let api: Api<DynamicObject> =
                Api::namespaced_with(cluster.client.clone(), &namespace, &t.resource);
            if let Some(template) = api
                .get_opt(&reference.name)
                .await
                .map_err(|e| cluster.api_error(e, "reading a template"))?
            {
                found.push_fetched(with_types(template, &t.resource), &t.info);
            }
        }
        found.push_fetched(class, &cc_type.info);
    }
    Ok(())
}

/// Whether `object` is one of a move's own records in the source: a slice of its journal's copy,
/// or the kubeconfig a `--to-cluster` move keeps.
fn is_journal_copy(object: &DynamicObject) -> bool {
    let labels = object.metadata.labels.as_ref();
    let kind = object.types.as_ref().map(|t| t.kind.as_str());
    let slice = kind.is_none_or(|k| k == "ConfigMap")
        && labels.is_some_and(|l| l.contains_key(crate::names::JOURNAL_COPY_LABEL));
    // A `--to-cluster` move's kept kubeconfig of its target.
    let kept = kind.is_none_or(|k| k == "Secret")
        && labels.is_some_and(|l| l.contains_key(crate::names::MOVE_KUBECONFIG_LABEL));
    slice || kept
}
