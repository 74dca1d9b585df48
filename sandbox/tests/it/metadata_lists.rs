//! Metadata-only LISTs (`PartialObjectMetadataList`), answered as the recorded kube-apiserver
//! v1.36 answered them: each item's metadata with managedFields, nothing else, paged the same way.

use capi_sandbox::crds::Dialect;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use serde_json::json;

use crate::common::{capi_server, post, raw_with};

const METADATA_ONLY: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

#[tokio::test]
async fn a_metadata_only_list_answers_metadata_and_pages_like_a_full_one() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    post(
        &client,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "pomtest"}}),
    )
    .await;
    for name in ["a", "b"] {
        let created = post(
            &client,
            "/api/v1/namespaces/pomtest/configmaps",
            &json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name}, "data": {"k": "v"}}),
        )
        .await;
        assert_eq!(created.code, 201, "{}", created.text);
    }
    let page = raw_with(
        &client,
        "GET",
        "/api/v1/namespaces/pomtest/configmaps?limit=1",
        &[("accept", METADATA_ONLY)],
        "",
    )
    .await;
    assert_eq!(page.code, 200, "{}", page.text);
    assert_eq!(
        page.headers["content-type"], "application/json",
        "no as= parameter echoed"
    );
    let list = &page.body;
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(list["metadata"]["remainingItemCount"], 1);
    assert!(list["metadata"]["continue"].is_string());
    let item = &list["items"][0];
    assert_eq!(item["kind"], "PartialObjectMetadata");
    assert_eq!(item["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(item["metadata"]["name"], "a");
    assert!(item["metadata"]["uid"].is_string());
    assert!(
        item["metadata"]["managedFields"].is_array(),
        "managedFields included"
    );
    assert!(item.get("data").is_none(), "no data: {item}");

    let rest = raw_with(
        &client,
        "GET",
        &format!(
            "/api/v1/namespaces/pomtest/configmaps?limit=1&continue={}",
            list["metadata"]["continue"].as_str().unwrap()
        ),
        &[("accept", METADATA_ONLY)],
        "",
    )
    .await;
    assert_eq!(rest.body["items"][0]["metadata"]["name"], "b");
    assert!(rest.body["metadata"].get("continue").is_none());

    let whole = raw_with(
        &client,
        "GET",
        "/api/v1/namespaces/pomtest/configmaps",
        &[("accept", "application/json")],
        "",
    )
    .await;
    assert_eq!(whole.body["kind"], "ConfigMapList", "a plain LIST is whole");
    assert_eq!(whole.body["items"][0]["data"]["k"], "v");
}

#[tokio::test]
async fn kube_rs_lists_metadata_of_custom_and_built_in_kinds() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let resource = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", "Cluster"),
        "clusters",
    );
    let clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    let cluster: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": "c1", "labels": {"team": "a"}}, "spec": {}}))
    .unwrap();
    clusters
        .create(&PostParams::default(), &cluster)
        .await
        .unwrap();
    let listed = clusters
        .list_metadata(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].metadata.name.as_deref(), Some("c1"));
    assert_eq!(
        listed.items[0]
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("team"))
            .map(String::as_str),
        Some("a")
    );
    let configmaps: Api<ConfigMap> = Api::namespaced(client, "default");
    let none = configmaps
        .list_metadata(&ListParams::default())
        .await
        .unwrap();
    assert!(none.items.is_empty());
}
