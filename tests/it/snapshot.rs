//! Snapshots: one paginated LIST per kind, indexed by kind, Cluster and uid.

use capi_sandbox::crds::Dialect;
use capi_sandbox::{ApiServer, ServerOptions};
use kubectl_capi::kube::{Catalog, Cluster};
use kubectl_capi::snapshot::{Fetch, ListScope, Snapshot, key};
use serde_json::json;

#[tokio::test]
async fn lists_are_paginated_and_indexed() {
    let server = ApiServer::new(ServerOptions::default());
    capi_sandbox::crds::install(&server, Dialect::V1beta2).unwrap();
    server
        .load(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}}))
        .unwrap();
    const PAGE: u32 = 50;
    let count = PAGE as usize * 2 + 10;
    for i in 0..count {
        let cluster = if i % 2 == 0 { "even" } else { "odd" };
        server
            .load(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                "metadata": {"name": format!("m-{i:05}"), "namespace": "default", "labels": {"cluster.x-k8s.io/cluster-name": cluster}},
                "spec": {"clusterName": cluster}}))
            .unwrap();
    }
    server
        .load(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "elsewhere", "namespace": "other"}, "spec": {"clusterName": "even"}}))
        .unwrap();
    let cluster = Cluster::from_client(server.client(), "in-process");
    let catalog = Catalog::discover(&cluster).await.unwrap();
    server.reset_requests();
    let kinds = [
        key("cluster.x-k8s.io", "Machine"),
        key("cluster.x-k8s.io", "Cluster"),
    ];
    let fetch = Fetch {
        scope: ListScope::Namespace("default".into()),
        kinds: kinds.to_vec(),
        also: Vec::new(),
        cluster_selector: None,
        page_size: PAGE,
    };
    let snapshot = Snapshot::fetch_with(&cluster, &catalog, &fetch)
        .await
        .unwrap();

    assert_eq!(snapshot.of_kind("cluster.x-k8s.io", "Machine").len(), count);
    assert_eq!(server.count("list", "machines"), 3, "pages of {PAGE}");
    assert_eq!(server.count("list", "clusters"), 1);
    assert_eq!(
        snapshot
            .of_cluster("cluster.x-k8s.io", "Machine", "default", "even")
            .count(),
        count.div_ceil(2)
    );
    let first = &snapshot.of_kind("cluster.x-k8s.io", "Machine")[0];
    let uid = first.metadata.uid.clone().unwrap();
    assert_eq!(
        snapshot.by_uid(&uid).unwrap().metadata.name,
        first.metadata.name
    );
    assert_eq!(
        first.types.as_ref().unwrap().api_version,
        "cluster.x-k8s.io/v1beta2"
    );

    let everywhere = Snapshot::fetch(&cluster, &catalog, &ListScope::AllNamespaces, &kinds)
        .await
        .unwrap();
    assert_eq!(
        everywhere.of_kind("cluster.x-k8s.io", "Machine").len(),
        count + 1
    );
}
