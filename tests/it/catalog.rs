//! The Cluster API catalog against both CRD flavours of the sandbox.

use crate::common::Writes;
use capi_sandbox::crds::Dialect;
use capi_sandbox::{ApiServer, ServerOptions};
use kubectl_capi::kube::{Catalog, Cluster};
use kubectl_capi::snapshot::{ListScope, Snapshot, key};
use serde_json::json;

fn sandbox(dialect: Dialect) -> (ApiServer, Cluster) {
    let server = ApiServer::new(ServerOptions::default());
    capi_sandbox::crds::install(&server, dialect).unwrap();
    let cluster = Cluster::from_client(server.client(), "in-process");
    (server, cluster)
}

/// A provider kind served only at v1beta1, sharing the infrastructure group with v1beta2 kinds.
fn legacy_provider_crd() -> serde_json::Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "foomachines.infrastructure.cluster.x-k8s.io",
            "labels": {"cluster.x-k8s.io/v1beta2": "v1beta1", "clusterctl.cluster.x-k8s.io": ""}},
        "spec": {"group": "infrastructure.cluster.x-k8s.io", "scope": "Namespaced",
            "names": {"plural": "foomachines", "kind": "FooMachine"},
            "versions": [{"name": "v1beta1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

#[tokio::test]
async fn versions_are_chosen_per_resource() {
    let (server, cluster) = sandbox(Dialect::V1beta2);
    server.load(legacy_provider_crd()).unwrap();
    let catalog = Catalog::discover(&cluster).await.unwrap();
    assert!(catalog.crds_read());
    assert_eq!(catalog.core_version(), Some("v1beta2"));
    assert_eq!(catalog.contract(), "v1beta2");
    assert_eq!(
        catalog
            .kind("infrastructure.cluster.x-k8s.io", "DockerMachine")
            .unwrap()
            .resource
            .version,
        "v1beta2"
    );
    assert_eq!(
        catalog
            .kind("infrastructure.cluster.x-k8s.io", "FooMachine")
            .unwrap()
            .resource
            .version,
        "v1beta1",
        "the group's preferred version does not fit every kind"
    );
    assert_eq!(
        catalog
            .kind("clusterctl.cluster.x-k8s.io", "Provider")
            .unwrap()
            .resource
            .version,
        "v1alpha3"
    );
    let resolved = catalog
        .resolve_ref("infrastructure.cluster.x-k8s.io", "FooMachine")
        .unwrap();
    assert_eq!(
        resolved.api_version,
        "infrastructure.cluster.x-k8s.io/v1beta1"
    );
    let docker = catalog
        .resolve_ref("infrastructure.cluster.x-k8s.io", "DockerMachine")
        .unwrap();
    assert_eq!(docker.version, "v1beta2");
    assert!(
        catalog
            .resolve_ref("infrastructure.cluster.x-k8s.io", "Nothing")
            .is_none()
    );
}

#[tokio::test]
async fn v1beta1_management_clusters_are_read_at_v1beta1() {
    let (_server, cluster) = sandbox(Dialect::V1beta1);
    let catalog = Catalog::discover(&cluster).await.unwrap();
    assert_eq!(catalog.core_version(), Some("v1beta1"));
    assert_eq!(catalog.contract(), "v1beta1");
    assert_eq!(
        catalog
            .kind("controlplane.cluster.x-k8s.io", "KubeadmControlPlane")
            .unwrap()
            .resource
            .version,
        "v1beta1"
    );
}

#[tokio::test]
async fn without_crd_access_v1beta2_is_still_preferred() {
    let (server, cluster) = sandbox(Dialect::V1beta2);
    server.deny("list", "customresourcedefinitions");
    let catalog = Catalog::discover(&cluster).await.unwrap();
    assert!(!catalog.crds_read());
    assert_eq!(catalog.core_version(), Some("v1beta2"));
}

#[tokio::test]
async fn cluster_api_kinds_are_read_at_v1beta2_wherever_served() {
    let (server, cluster) = sandbox(Dialect::V1beta2);
    let catalog = Catalog::discover(&cluster).await.unwrap();
    server.reset_requests();
    let kinds: Vec<_> = catalog
        .kinds()
        .map(|k| key(&k.resource.group, &k.resource.kind))
        .collect();
    Snapshot::fetch(&cluster, &catalog, &ListScope::AllNamespaces, &kinds)
        .await
        .unwrap();
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.verb == "list")
        .collect();
    assert_eq!(lists.len(), kinds.len(), "one LIST per kind");
    for request in lists {
        let expected = if request.group == "clusterctl.cluster.x-k8s.io" {
            "v1alpha3"
        } else {
            "v1beta2"
        };
        assert_eq!(
            request.version, expected,
            "{} read at {}",
            request.resource, request.version
        );
    }
}

#[tokio::test]
async fn discovery_falls_back_to_legacy_and_refuses_non_capi_clusters() {
    let (server, cluster) = sandbox(Dialect::None);
    let err = Catalog::discover(&cluster).await.unwrap_err();
    assert!(
        err.to_string().contains("serves no Cluster API kinds"),
        "{err}"
    );
    assert!(server.writes().is_empty());
}
