//! Which Cluster API kinds the management cluster serves, and at which version each is read.
//!
//! The version is chosen per resource, not per group: providers share
//! `infrastructure.cluster.x-k8s.io` at different versions. Order of preference: the CRD's storage
//! version (when the CRDs can be read), else v1beta2, else v1beta1, else the highest served.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams};
use kube::discovery::{ApiCapabilities, ApiResource, Discovery, Scope};

use super::connect::Cluster;
use super::retry::transient;
use crate::error::{Error, Result};
use crate::names::CORE_GROUP;

pub use crate::names::CAPI_GROUPS;

/// clusterctl's Provider inventory, at the version clusterctl writes it.
pub fn provider_resource() -> kube::api::ApiResource {
    use crate::names::{CLUSTERCTL_GROUP, PROVIDER_KIND, PROVIDER_PLURAL, PROVIDER_VERSION};
    kube::api::ApiResource::from_gvk_with_plural(
        &kube::api::GroupVersionKind::gvk(CLUSTERCTL_GROUP, PROVIDER_VERSION, PROVIDER_KIND),
        PROVIDER_PLURAL,
    )
}

pub use crate::names::CONTRACT_LABEL_PREFIX;

/// The core kinds a move carries besides Cluster API's — Secrets and ConfigMaps — as served
/// everywhere (`v1`, namespaced).
pub fn core_kinds() -> Vec<KindInfo> {
    [("Secret", "secrets"), ("ConfigMap", "configmaps")]
        .into_iter()
        .map(|(kind, plural)| KindInfo {
            resource: ApiResource::from_gvk_with_plural(
                &kube::api::GroupVersionKind::gvk("", "v1", kind),
                plural,
            ),
            namespaced: true,
            status_subresource: false,
            served_versions: vec!["v1".into()],
            storage_version: Some("v1".into()),
            labels: BTreeMap::new(),
        })
        .collect()
}

/// One served kind.
#[derive(Debug, Clone)]
pub struct KindInfo {
    pub resource: ApiResource,
    pub namespaced: bool,
    pub status_subresource: bool,
    /// Every served version, highest priority first.
    pub served_versions: Vec<String>,
    /// The CRD's storage version, when the CRD could be read.
    pub storage_version: Option<String>,
    /// The CRD's labels, when it could be read.
    pub labels: BTreeMap<String, String>,
}

/// A CustomResourceDefinition as the commands need it: its names, versions and labels, without
/// the schema (Cluster API's CRDs are megabytes of it).
#[derive(Debug, Clone)]
pub struct CrdShape {
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// The storage version, and whether it has a status subresource.
    pub storage: Option<(String, bool)>,
    pub served_versions: Vec<String>,
    pub labels: BTreeMap<String, String>,
}

impl CrdShape {
    fn of(crd: CustomResourceDefinition) -> CrdShape {
        let spec = crd.spec;
        CrdShape {
            storage: spec.versions.iter().find(|v| v.storage).map(|v| {
                let status = v.subresources.as_ref().is_some_and(|s| s.status.is_some());
                (v.name.clone(), status)
            }),
            served_versions: spec
                .versions
                .iter()
                .filter(|v| v.served)
                .map(|v| v.name.clone())
                .collect(),
            group: spec.group,
            kind: spec.names.kind,
            plural: spec.names.plural,
            namespaced: spec.scope == "Namespaced",
            labels: crd.metadata.labels.unwrap_or_default(),
        }
    }
}

/// What one end serves: the Cluster API kinds (discovery, once) and every CRD (one LIST, once),
/// read when the command connects and handed to every step after.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    kinds: BTreeMap<(String, String), KindInfo>,
    crds: Vec<CrdShape>,
    /// Why the CRDs could not be listed (403 or 404), when they could not: versions are then
    /// chosen by preference.
    crds_unread: Option<kube::core::Status>,
}

/// Kubernetes version priority key: GA > beta > alpha, higher numbers first.
fn priority(version: &str) -> (u8, i64, i64) {
    let rest = version.strip_prefix('v').unwrap_or(version);
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    let major: i64 = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (level, minor) = if tail.is_empty() {
        (0, 0)
    } else if let Some(n) = tail.strip_prefix("beta") {
        (1, n.parse().unwrap_or(0))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (2, n.parse().unwrap_or(0))
    } else {
        (3, 0)
    };
    (level, -major, -minor)
}

/// The version to read a kind at.
pub fn choose_version(served: &[String], storage: Option<&str>) -> Option<String> {
    if let Some(storage) = storage.filter(|s| served.iter().any(|v| v == s)) {
        return Some(storage.to_string());
    }
    for preferred in crate::names::PREFERRED_VERSIONS {
        if served.iter().any(|v| v == preferred) {
            return Some(preferred.to_string());
        }
    }
    let mut sorted = served.to_vec();
    sorted.sort_by_key(|v| priority(v));
    sorted.into_iter().next()
}

impl Catalog {
    /// Aggregated discovery (falling back to legacy discovery) of the Cluster API groups, plus
    /// one LIST of CRDs for storage versions and contract labels when permitted.
    pub async fn discover(cluster: &Cluster) -> Result<Catalog> {
        let discovery = discover_groups(cluster).await?;
        let crds: Api<CustomResourceDefinition> = Api::all(cluster.client.clone());
        let (crd_list, crds_unread) = match crds.list(&ListParams::default()).await {
            Ok(list) => (
                list.items.into_iter().map(CrdShape::of).collect::<Vec<_>>(),
                None,
            ),
            Err(kube::Error::Api(status)) if status.code == 403 || status.code == 404 => {
                (Vec::new(), Some(*status))
            }
            Err(e) => return Err(cluster.api_error(e, "reading CustomResourceDefinitions")),
        };
        let kinds = kinds_served(&discovery, &crd_list);
        if !kinds.keys().any(|(g, _)| g == CORE_GROUP) {
            return Err(Error::CapiNotInstalled {
                server: cluster.server(),
                install: None,
            });
        }
        Ok(Catalog {
            kinds,
            crds: crd_list,
            crds_unread,
        })
    }

    /// Whether the CRDs could be read (else versions are chosen by preference).
    pub fn crds_read(&self) -> bool {
        self.crds_unread.is_none()
    }

    /// Every CRD of the cluster, or the server's answer to listing them (403, 404).
    pub fn crds(&self) -> std::result::Result<&[CrdShape], &kube::core::Status> {
        match &self.crds_unread {
            None => Ok(&self.crds),
            Some(status) => Err(status),
        }
    }

    pub fn kind(&self, group: &str, kind: &str) -> Option<&KindInfo> {
        self.kinds.get(&(group.to_string(), kind.to_string()))
    }

    pub fn kinds(&self) -> impl Iterator<Item = &KindInfo> {
        self.kinds.values()
    }

    /// The API dialect of the core group: the version Clusters are read at.
    pub fn core_version(&self) -> Option<&str> {
        self.kind(CORE_GROUP, crate::names::CLUSTER)
            .map(|k| k.resource.version.as_str())
    }

    /// The contract the management cluster implements (`v1beta2` for CAPI ≥ 1.11).
    pub fn contract(&self) -> &str {
        self.kind(CORE_GROUP, crate::names::CLUSTER)
            .and_then(|k| k.storage_version.as_deref())
            .or(self.core_version())
            .unwrap_or(crate::names::V1BETA2)
    }

    /// Resolves a version-less v1beta2 reference (`apiGroup` + `kind`) as Cluster API does: the
    /// highest version listed in the CRD's `cluster.x-k8s.io/<contract>` label, else the version
    /// the catalog reads the kind at.
    pub fn resolve_ref(&self, api_group: &str, kind: &str) -> Option<ApiResource> {
        let info = self.kind(api_group, kind)?;
        let label = format!("{CONTRACT_LABEL_PREFIX}{}", self.contract());
        if let Some(value) = info.labels.get(&label) {
            let mut versions: Vec<String> = value.split('_').map(str::to_string).collect();
            versions.sort_by_key(|v| priority(v));
            if let Some(version) = versions
                .into_iter()
                .find(|v| info.served_versions.contains(v))
            {
                let mut resource = info.resource.clone();
                resource.api_version = format!("{api_group}/{version}");
                resource.version = version;
                return Some(resource);
            }
        }
        Some(info.resource.clone())
    }
}

/// The Cluster API groups a server serves: aggregated discovery, or legacy discovery on an older
/// server; a server that answers neither as Kubernetes does is named as such.
async fn discover_groups(cluster: &Cluster) -> Result<Discovery> {
    let aggregated = Discovery::new(cluster.client.clone())
        .filter(CAPI_GROUPS)
        .run_aggregated()
        .await;
    match aggregated {
        Ok(discovery) => Ok(discovery),
        // No answer at all: asking again another way would only wait again.
        Err(e) if transient(&e) => Err(cluster.api_error(e, "discovering the Cluster API kinds")),
        // An older server without aggregated discovery, or not a Kubernetes server.
        Err(_) => Discovery::new(cluster.client.clone())
            .filter(CAPI_GROUPS)
            .run()
            .await
            .map_err(|e| match e {
                // kube-apiserver serves `/api` and `/apis` to anyone allowed to connect.
                kube::Error::Api(status)
                    if status.code == 404 && status.reason != crate::error::NOT_A_STATUS =>
                {
                    Error::NotKubernetes {
                        server: cluster.server(),
                        answer: "404 Not Found to discovery".into(),
                    }
                }
                other => cluster.api_error(other, "discovering the Cluster API kinds"),
            }),
    }
}

/// Each kind served, at the version a move reads and writes it in (the CRD's storage version
/// when served, else the preferred one), with what it is.
fn kinds_served(
    discovery: &Discovery,
    crd_list: &[CrdShape],
) -> BTreeMap<(String, String), KindInfo> {
    let mut served: BTreeMap<(String, String), Vec<(ApiResource, ApiCapabilities)>> =
        BTreeMap::new();
    for group in discovery.groups() {
        for version in group.versions() {
            for (resource, caps) in group.versioned_resources(version) {
                served
                    .entry((resource.group.clone(), resource.kind.clone()))
                    .or_default()
                    .push((resource, caps));
            }
        }
    }
    let mut kinds = BTreeMap::new();
    for ((group, kind), entries) in served {
        let crd = crd_list.iter().find(|c| c.group == group && c.kind == kind);
        let storage = crd.and_then(|c| c.storage.as_ref().map(|(name, _)| name.clone()));
        let mut versions: Vec<String> = entries.iter().map(|(r, _)| r.version.clone()).collect();
        versions.sort_by_key(|v| priority(v));
        let Some(chosen) = choose_version(&versions, storage.as_deref()) else {
            continue;
        };
        let Some((resource, caps)) = entries.into_iter().find(|(r, _)| r.version == chosen) else {
            continue;
        };
        kinds.insert(
            (group, kind),
            KindInfo {
                namespaced: caps.scope == Scope::Namespaced,
                status_subresource: caps
                    .subresources
                    .iter()
                    .any(|(r, _)| r.plural.ends_with("status")),
                resource,
                served_versions: versions,
                storage_version: storage,
                labels: crd.map(|c| c.labels.clone()).unwrap_or_default(),
            },
        );
    }
    kinds
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn version_choice_prefers_storage_then_v1beta2() {
        assert_eq!(
            choose_version(&v(&["v1beta2", "v1beta1"]), Some("v1beta1")).as_deref(),
            Some("v1beta1")
        );
        assert_eq!(
            choose_version(&v(&["v1beta1", "v1beta2"]), None).as_deref(),
            Some("v1beta2")
        );
        assert_eq!(
            choose_version(&v(&["v1beta1"]), None).as_deref(),
            Some("v1beta1")
        );
        assert_eq!(
            choose_version(&v(&["v1alpha3", "v1alpha4"]), None).as_deref(),
            Some("v1alpha4")
        );
        assert_eq!(
            choose_version(&v(&["v1beta2"]), Some("v9")).as_deref(),
            Some("v1beta2"),
            "storage must be served"
        );
    }
}
