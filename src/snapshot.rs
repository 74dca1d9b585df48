//! A snapshot of a scope: one paginated LIST per kind, indexed by kind, Cluster and uid. Every
//! command evaluates snapshots; none reads objects one GET at a time.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kube::api::{Api, DynamicObject, ListParams};

use crate::error::Result;
use crate::kube::{Catalog, Cluster};
use crate::model::cluster_name_of;

/// Page size of every LIST.
pub const PAGE_SIZE: u32 = 500;

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

#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    objects: BTreeMap<KindKey, Vec<Arc<DynamicObject>>>,
    by_uid: HashMap<String, Arc<DynamicObject>>,
}

impl Snapshot {
    /// Builds a snapshot from objects already at hand (fixtures, tests).
    pub fn from_objects(objects: impl IntoIterator<Item = DynamicObject>) -> Snapshot {
        let mut snapshot = Snapshot::default();
        for object in objects {
            let types = object.types.clone().unwrap_or_default();
            let group = types
                .api_version
                .rsplit_once('/')
                .map(|(g, _)| g)
                .unwrap_or("")
                .to_string();
            snapshot.insert((group, types.kind), object);
        }
        snapshot
    }

    fn insert(&mut self, kind: KindKey, object: DynamicObject) {
        let object = Arc::new(object);
        if let Some(uid) = &object.metadata.uid {
            self.by_uid.insert(uid.clone(), object.clone());
        }
        self.objects.entry(kind).or_default().push(object);
    }

    /// One paginated LIST for each kind in `kinds` the catalog serves (others are skipped).
    pub async fn fetch(
        cluster: &Cluster,
        catalog: &Catalog,
        scope: &ListScope,
        kinds: &[KindKey],
    ) -> Result<Snapshot> {
        let mut snapshot = Snapshot::default();
        for (group, kind) in kinds {
            let Some(info) = catalog.kind(group, kind) else {
                continue;
            };
            let api: Api<DynamicObject> = match (scope, info.namespaced) {
                (ListScope::Namespace(ns), true) => {
                    Api::namespaced_with(cluster.client.clone(), ns, &info.resource)
                }
                _ => Api::all_with(cluster.client.clone(), &info.resource),
            };
            let mut params = ListParams::default().limit(PAGE_SIZE);
            loop {
                let page = api.list(&params).await.map_err(|e| {
                    cluster.api_error(e, &format!("listing {}", info.resource.plural))
                })?;
                let next = page.metadata.continue_.clone().filter(|c| !c.is_empty());
                for mut object in page.items {
                    // Items of a list carry no apiVersion/kind in some servers' answers; keep them.
                    if object.types.is_none() {
                        object.types = Some(kube::core::TypeMeta {
                            api_version: info.resource.api_version.clone(),
                            kind: info.resource.kind.clone(),
                        });
                    }
                    snapshot.insert((group.clone(), kind.clone()), object);
                }
                match next {
                    Some(token) => params = params.continue_token(&token),
                    None => break,
                }
            }
        }
        Ok(snapshot)
    }

    pub fn of_kind(&self, group: &str, kind: &str) -> &[Arc<DynamicObject>] {
        self.objects
            .get(&key(group, kind))
            .map(Vec::as_slice)
            .unwrap_or(&[])
    }

    /// Objects of a kind that belong to one Cluster (by `spec.clusterName` or the cluster-name label).
    pub fn of_cluster<'a>(
        &'a self,
        group: &str,
        kind: &str,
        namespace: &'a str,
        cluster: &'a str,
    ) -> impl Iterator<Item = &'a Arc<DynamicObject>> + 'a {
        self.of_kind(group, kind).iter().filter(move |o| {
            o.metadata.namespace.as_deref() == Some(namespace)
                && cluster_name_of(o).as_deref() == Some(cluster)
        })
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
