//! The same scenarios through kube-rs' typed and dynamic APIs, in-process and over HTTP(S).

use std::time::Duration;

use capi_sandbox::crds::Dialect;
use capi_sandbox::{ApiServer, ServerOptions};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::discovery::{Discovery, Scope};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

use crate::common::capi_server;

async fn cluster_api(
    client: &kube::Client,
    aggregated: bool,
) -> (
    kube::discovery::ApiResource,
    kube::discovery::ApiCapabilities,
) {
    let discovery = Discovery::new(client.clone()).filter(&["cluster.x-k8s.io"]);
    let discovery = if aggregated {
        discovery.run_aggregated().await
    } else {
        discovery.run().await
    }
    .expect("discovery");
    let group = discovery.get("cluster.x-k8s.io").expect("group served");
    group.recommended_kind("Cluster").expect("Cluster served")
}

#[tokio::test]
async fn discovery_prefers_v1beta2_when_served_both_ways() {
    for aggregated in [true, false] {
        let (_server, client) = capi_server(Dialect::V1beta2);
        let (resource, caps) = cluster_api(&client, aggregated).await;
        assert_eq!(resource.version, "v1beta2", "aggregated={aggregated}");
        assert_eq!(resource.plural, "clusters");
        assert_eq!(caps.scope, Scope::Namespaced);
        assert!(
            caps.subresources
                .iter()
                .any(|(r, _)| r.plural == "clusters/status" || r.plural == "status"),
            "{:?}",
            caps.subresources
        );

        let (_old, old_client) = capi_server(Dialect::V1beta1);
        let (resource, _) = cluster_api(&old_client, aggregated).await;
        assert_eq!(resource.version, "v1beta1");
    }
}

#[tokio::test]
async fn typed_namespaces_and_secrets() {
    let server = ApiServer::default();
    let client = server.client();
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let created = namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "team-a"}})).unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Active"));
    assert_eq!(
        created.metadata.labels.unwrap()["kubernetes.io/metadata.name"],
        "team-a"
    );

    let secrets: Api<Secret> = Api::namespaced(client.clone(), "team-a");
    let secret: Secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "stringData": {"k": "v"}}))
            .unwrap();
    let stored = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    assert_eq!(stored.data.unwrap()["k"].0, b"v");
    let err = secrets
        .create(&PostParams::default(), &secret)
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 409);
            assert_eq!(status.reason, "AlreadyExists");
            assert_eq!(status.message, "secrets \"s\" already exists");
        }
        other => panic!("unexpected {other:?}"),
    }
    let missing = Api::<Secret>::namespaced(client.clone(), "team-b")
        .get("s")
        .await
        .unwrap_err();
    assert!(
        matches!(missing, kube::Error::Api(ref s) if s.code == 404 && s.message == "secrets \"s\" not found"),
        "{missing:?}"
    );
}

#[tokio::test]
async fn dynamic_objects_round_trip() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let (resource, _) = cluster_api(&client, true).await;
    let clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
        "metadata": {"name": "c1", "labels": {"env": "prod"}}, "spec": {"paused": false}}))
    .unwrap();
    clusters
        .create(&PostParams::default(), &object)
        .await
        .unwrap();
    let patched = clusters
        .patch(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": ""}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.metadata.annotations.unwrap()["cluster.x-k8s.io/paused"],
        ""
    );
    let status = clusters
        .patch_status(
            "c1",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"status": {"initialization": {"infrastructureProvisioned": true}}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        status.data["status"]["initialization"]["infrastructureProvisioned"],
        true
    );
    let listed = clusters
        .list(&ListParams::default().labels("env=prod"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 1);
    let paged = clusters
        .list(&ListParams::default().limit(1))
        .await
        .unwrap();
    assert_eq!(paged.items.len(), 1);
    clusters
        .delete("c1", &DeleteParams::default())
        .await
        .unwrap();
    assert!(clusters.get_opt("c1").await.unwrap().is_none());
}

#[tokio::test]
async fn watcher_sees_changes_and_resumes() {
    let (server, client) = capi_server(Dialect::V1beta2);
    let (resource, _) = cluster_api(&client, true).await;
    let clusters: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    let mut events = watcher(clusters.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let writer = clusters.clone();
    let watching = server.clone();
    tokio::spawn(async move {
        // Once the watcher watches, so that the create arrives as a watch event.
        capi_sandbox::wait_until("the watcher to watch", || watching.watches("") > 0).await;
        let object: DynamicObject = serde_json::from_value(
            json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster",
            "metadata": {"name": "w1"}, "spec": {"paused": false}}),
        )
        .unwrap();
        writer
            .create(&PostParams::default(), &object)
            .await
            .unwrap();
        writer
            .patch(
                "w1",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"paused": true}})),
            )
            .await
            .unwrap();
    });
    let first = tokio::time::timeout(Duration::from_secs(5), events.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(first.metadata.name.as_deref(), Some("w1"));
    let second = tokio::time::timeout(Duration::from_secs(5), events.try_next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(second.data["spec"]["paused"], true);
}

#[tokio::test]
async fn watch_from_a_compacted_version_is_gone() {
    let (server, client) = capi_server(Dialect::V1beta2);
    server.compact();
    let answer = crate::common::get(&client, "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters?watch=true&resourceVersion=1&timeoutSeconds=1").await;
    assert_eq!(answer.code, 200);
    let event: serde_json::Value =
        serde_json::from_str(answer.text.lines().next().unwrap()).unwrap();
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 410);
    assert_eq!(event["object"]["reason"], "Expired");
    assert!(
        event["object"]["message"]
            .as_str()
            .unwrap()
            .starts_with("too old resource version: 1 (")
    );
}

#[tokio::test]
async fn watch_stream_has_events_and_a_closing_bookmark() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let start = crate::common::get(
        &client,
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters",
    )
    .await
    .body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, writer) = (0, client.clone());
    let path = format!(
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion={start}"
    );
    let body = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "w5"}, "spec": {"replicas": 1}});
    crate::common::post(
        &writer,
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters",
        &body,
    )
    .await;
    crate::common::raw(
        &writer,
        "PATCH",
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters/w5",
        "application/merge-patch+json",
        r#"{"spec":{"replicas":2}}"#,
    )
    .await;
    crate::common::raw(
        &writer,
        "DELETE",
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters/w5",
        "application/json",
        "",
    )
    .await;
    let answer = crate::common::get(&client, &path).await;
    let types = crate::common::event_types(&answer.text);
    assert_eq!(types, vec!["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]);
    let bookmark: serde_json::Value =
        serde_json::from_str(answer.text.lines().last().unwrap()).unwrap();
    assert_eq!(
        bookmark["object"]["metadata"].as_object().unwrap().len(),
        1,
        "a bookmark carries only the resourceVersion"
    );
}

#[tokio::test]
async fn http_with_tls_and_token() {
    let server = ApiServer::new(ServerOptions {
        tls: true,
        token: Some("s3cret".into()),
        ..ServerOptions::default()
    });
    let serving = server.serve(0).await.unwrap();
    assert!(serving.url.starts_with("https://127.0.0.1:"));
    let client = serving.client().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client);
    let names: Vec<String> = namespaces
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"default".to_string()));

    let mut wrong = serving.kubeconfig_entry("sandbox");
    wrong.token = Some("wrong".into());
    let text = capi_sandbox::apiserver::kubeconfig(&[wrong]);
    let config = kube::Config::from_custom_kubeconfig(
        serde_saphyr::from_str(&text).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let bad = kube::Client::try_from(config).unwrap();
    let err = Api::<Namespace>::all(bad)
        .list(&ListParams::default())
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 401 && s.reason == "Unauthorized"),
        "{err:?}"
    );
}
