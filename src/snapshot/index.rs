//! The snapshot itself: what to list (`Fetch`, `ListScope`), one paginated LIST per kind, and
//! the objects indexed by kind, Cluster and uid (`Snapshot`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kube::api::{Api, ApiResource, DynamicObject, ListParams};

use crate::error::{Denials, Result};
use crate::kube::{Catalog, Cluster, KindInfo};
use crate::model::cluster_name_of;
use crate::snapshot::listed::{Keep, Listed, Status};

/// Page size of every LIST: large, so that the number of requests stays flat as installations
/// grow (a real API server serves pages of thousands of objects comfortably).
pub const PAGE_SIZE: u32 = 5000;

/// `(group, kind)`.
pub type KindKey = (String, String);

pub fn key(group: &str, kind: &str) -> KindKey {
    (group.to_string(), kind.to_string())
}

/// Where to list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListScope {
    Namespace(String),
    AllNamespaces,
}

impl std::fmt::Display for ListScope {
    /// `namespace ns`, or `any namespace` with -A.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListScope::Namespace(ns) => write!(f, "namespace {ns}"),
            ListScope::AllNamespaces => f.write_str("any namespace"),
        }
    }
}

/// What to list.
#[derive(Debug, Clone)]
pub struct Fetch {
    pub scope: ListScope,
    /// Kinds the catalog serves (others are skipped).
    pub kinds: Vec<KindKey>,
    /// Kinds outside Cluster API's groups, read for what they say of ownership only (Secrets,
    /// ConfigMaps): their contents are never kept.
    pub also: Vec<KindInfo>,
    /// Label selector on Clusters only (`-l`).
    pub cluster_selector: Option<String>,
    pub page_size: u32,
}

impl Fetch {
    /// Every kind to read, with how it is served: the catalog's, then [`Fetch::also`].
    pub fn resolved<'a>(&'a self, catalog: &'a Catalog) -> Vec<(KindKey, &'a KindInfo)> {
        self.kinds
            .iter()
            .filter_map(|key| Some((key.clone(), catalog.kind(&key.0, &key.1)?)))
            .chain(self.also.iter().map(|info| {
                (
                    (info.resource.group.clone(), info.resource.kind.clone()),
                    info,
                )
            }))
            .collect()
    }
}

/// `plural.group` (`plural` for the core group), as kubectl names a resource.
pub fn qualified(resource: &ApiResource) -> String {
    crate::names::qualified(&resource.plural, &resource.group)
}

/// Every object `api` lists, page by page, typed as `resource`, without managedFields.
pub async fn list_all(
    cluster: &Cluster,
    api: &Api<DynamicObject>,
    resource: &ApiResource,
    params: ListParams,
) -> Result<Vec<DynamicObject>> {
    let listed = list_keeping(cluster, api, resource, params, Keep::EVALUATE).await?;
    Ok(listed.into_iter().map(|l| l.object).collect())
}

/// Every object `api` lists, page by page, typed as `resource`, with what `keep` says.
pub async fn list_keeping(
    cluster: &Cluster,
    api: &Api<DynamicObject>,
    resource: &ApiResource,
    mut params: ListParams,
    keep: Keep,
) -> Result<Vec<Listed>> {
    let mut out = Vec::new();
    loop {
        let page = super::listed::page(api, &cluster.client, &params, keep)
            .await
            .map_err(|e| cluster.api_error(e, &format!("listing {}", resource.plural)))?;
        out.extend(page.items.into_iter().map(|mut listed| {
            listed.object = with_types(listed.object, resource);
            listed
        }));
        match page.next {
            Some(token) => params = params.continue_token(&token),
            None => return Ok(out),
        }
    }
}

/// The Clusters in `scope` whose labels match `selector`, as the server evaluates it (its own
/// selector syntax, as `pause` and `ready` select; an empty one matches every Cluster): lean,
/// metadata and spec only.
pub async fn clusters_matching(
    cluster: &Cluster,
    clusters: &ApiResource,
    scope: &ListScope,
    selector: &str,
) -> Result<Vec<DynamicObject>> {
    let api = match scope {
        ListScope::Namespace(ns) => Api::namespaced_with(cluster.client.clone(), ns, clusters),
        ListScope::AllNamespaces => Api::all_with(cluster.client.clone(), clusters),
    };
    let lean = Keep {
        managed_fields: false,
        status: Status::Skip,
        content: super::listed::Content::Tree,
    };
    let listed = list_keeping(
        cluster,
        &api,
        clusters,
        if selector.is_empty() {
            ListParams::default()
        } else {
            ListParams::default().labels(selector)
        },
        lean,
    )
    .await?;
    Ok(listed.into_iter().map(|l| l.object).collect())
}

/// Names with `-l` select the named Clusters that match: of the names `missing` among the
/// Clusters `selector` matched, those that are Clusters of `scope` all the same are left out;
/// the rest, returned, are names of no Cluster (an error). Without a selector, all are unknown.
pub async fn unknown_names(
    (cluster, catalog): (&Cluster, &Catalog),
    scope: &ListScope,
    (missing, selector): (Vec<String>, Option<&str>),
) -> Result<Vec<String>> {
    let clusters = catalog.kind(crate::names::CORE_GROUP, crate::names::CLUSTER);
    let (Some(clusters), false, Some(_)) = (clusters, missing.is_empty(), selector) else {
        return Ok(missing);
    };
    let all = clusters_matching(cluster, &clusters.resource, scope, "").await?;
    Ok(missing
        .into_iter()
        .filter(|name| !all.iter().any(|c| c.metadata.name.as_deref() == Some(name)))
        .collect())
}

/// The API handle listing a kind in a scope.
pub fn list_api(
    cluster: &Cluster,
    info: &crate::kube::KindInfo,
    scope: &ListScope,
) -> Api<DynamicObject> {
    match (scope, info.namespaced) {
        (ListScope::Namespace(ns), true) => {
            Api::namespaced_with(cluster.client.clone(), ns, &info.resource)
        }
        _ => Api::all_with(cluster.client.clone(), &info.resource),
    }
}

/// Items of a list may come without apiVersion/kind; the model needs them.
pub fn with_types(mut object: DynamicObject, resource: &kube::core::ApiResource) -> DynamicObject {
    set_types(&mut object, resource);
    object
}

/// [`with_types`] in place.
pub fn set_types(object: &mut DynamicObject, resource: &kube::core::ApiResource) {
    if object.types.is_none() {
        object.types = Some(kube::core::TypeMeta {
            api_version: resource.api_version.clone(),
            kind: resource.kind.clone(),
        });
    }
}

#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    objects: BTreeMap<KindKey, Vec<Arc<DynamicObject>>>,
    by_uid: HashMap<String, Arc<DynamicObject>>,
    /// Owner UID → what names it in its ownerReferences, each with where [`Self::all`] puts it.
    owned: HashMap<String, Vec<Owned>>,
    /// (kind, namespace, Cluster name) → the objects of that kind that belong to that Cluster.
    by_cluster: HashMap<(KindKey, String, String), Vec<Arc<DynamicObject>>>,
    inserted: usize,
}

/// An object some owner owns, with its place in [`Snapshot::all`]'s order.
#[derive(Debug, Clone)]
pub struct Owned {
    pub kind: KindKey,
    pub sequence: usize,
    pub object: Arc<DynamicObject>,
}

impl Snapshot {
    /// Builds a snapshot from objects already at hand (fixtures, tests).
    pub fn from_objects(objects: impl IntoIterator<Item = DynamicObject>) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for object in objects {
            let types = object.types.clone().unwrap_or_default();
            let group = crate::names::group_of(&types.api_version).to_string();
            snapshot.insert((group, types.kind), object);
        }
        snapshot
    }

    fn insert(&mut self, kind: KindKey, object: DynamicObject) {
        let object = Arc::new(object);
        self.index(&kind, &object);
        self.objects.entry(kind).or_default().push(object);
    }

    /// Indexes `object` by its UID and by each of its owners' UIDs.
    fn index(&mut self, kind: &KindKey, object: &Arc<DynamicObject>) {
        if let Some(uid) = &object.metadata.uid {
            self.by_uid.insert(uid.clone(), object.clone());
        }
        self.inserted += 1;
        if let (Some(namespace), Some(cluster)) =
            (object.metadata.namespace.clone(), cluster_name_of(object))
        {
            self.by_cluster
                .entry((kind.clone(), namespace, cluster))
                .or_default()
                .push(object.clone());
        }
        for owner in object.metadata.owner_references.iter().flatten() {
            self.owned
                .entry(owner.uid.clone())
                .or_default()
                .push(Owned {
                    kind: kind.clone(),
                    sequence: self.inserted,
                    object: object.clone(),
                });
        }
    }

    /// What names `uid` among its owners.
    pub fn owned_by(&self, uid: &str) -> &[Owned] {
        self.owned.get(uid).map(Vec::as_slice).unwrap_or(&[])
    }

    /// One paginated LIST for each kind in `kinds` the catalog serves (others are skipped).
    pub async fn fetch(
        cluster: &Cluster,
        catalog: &Catalog,
        scope: &ListScope,
        kinds: &[KindKey],
    ) -> Result<Snapshot> {
        Self::fetch_with(
            cluster,
            catalog,
            &Fetch {
                scope: scope.clone(),
                kinds: kinds.to_vec(),
                also: Vec::new(),
                cluster_selector: None,
                page_size: PAGE_SIZE,
            },
        )
        .await
    }

    pub async fn fetch_with(
        cluster: &Cluster,
        catalog: &Catalog,
        fetch: &Fetch,
    ) -> Result<Snapshot> {
        let mut snapshot = Snapshot::default();
        let mut denials = Denials::default();
        for ((group, kind), info) in fetch.resolved(catalog) {
            let api = list_api(cluster, info, &fetch.scope);
            let mut params = ListParams::default().limit(fetch.page_size);
            if crate::names::is_core_cluster(&group, &kind)
                && let Some(selector) = &fetch.cluster_selector
            {
                params = params.labels(selector);
            }
            let listed = list_all(cluster, &api, &info.resource, params).await;
            let objects = denials.note(&qualified(&info.resource), listed)?;
            for mut object in objects {
                super::listed::for_evaluation(&mut object);
                snapshot.insert((group.clone(), kind.clone()), object);
            }
        }
        denials.check()?;
        Ok(snapshot)
    }

    /// A snapshot of objects kept by watchers (one store per kind).
    pub fn from_stores(
        stores: impl IntoIterator<Item = (KindKey, Vec<Arc<DynamicObject>>)>,
    ) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for (kind, objects) in stores {
            for object in objects {
                snapshot.index(&kind, &object);
                snapshot
                    .objects
                    .entry(kind.clone())
                    .or_default()
                    .push(object);
            }
        }
        snapshot
    }

    pub fn of_kind(&self, group: &str, kind: &str) -> &[Arc<DynamicObject>] {
        self.objects
            .get(&key(group, kind))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// The object of `(group, kind)` named `namespace/name`, if the snapshot holds it.
    pub fn named(
        &self,
        (group, kind): (&str, &str),
        namespace: &str,
        name: &str,
    ) -> Option<&Arc<DynamicObject>> {
        named_in(self.of_kind(group, kind), namespace, name)
    }

    /// The Clusters (Cluster API's `Cluster` kind) the snapshot holds.
    pub fn clusters(&self) -> &[Arc<DynamicObject>] {
        self.of_kind(crate::names::CORE_GROUP, crate::names::CLUSTER)
    }

    /// Objects of a kind that belong to one Cluster (by `spec.clusterName` or the cluster-name label).
    pub fn of_cluster<'a>(
        &'a self,
        group: &str,
        kind: &str,
        namespace: &'a str,
        cluster: &'a str,
    ) -> impl Iterator<Item = &'a Arc<DynamicObject>> + 'a {
        // Looked up, not filtered: every Cluster asks for every kind.
        let key = (key(group, kind), namespace.to_string(), cluster.to_string());
        self.by_cluster.get(&key).into_iter().flatten()
    }

    /// Every object, whatever its kind.
    pub fn all(&self) -> impl Iterator<Item = &Arc<DynamicObject>> {
        self.objects.values().flatten()
    }

    pub fn by_uid(&self, uid: &str) -> Option<&Arc<DynamicObject>> {
        self.by_uid.get(uid)
    }

    pub fn kinds(&self) -> impl Iterator<Item = &KindKey> {
        self.objects.keys()
    }

    pub fn len(&self) -> usize {
        self.by_uid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.values().all(Vec::is_empty)
    }
}

/// The object of `objects` named `namespace/name`.
pub fn named_in<'a>(
    objects: &'a [Arc<DynamicObject>],
    namespace: &str,
    name: &str,
) -> Option<&'a Arc<DynamicObject>> {
    objects.iter().find(|o| {
        o.metadata.namespace.as_deref() == Some(namespace)
            && o.metadata.name.as_deref() == Some(name)
    })
}
