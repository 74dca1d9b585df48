//! The rest of the server's semantics: propagation policies, collections, dry runs of every
//! write, the scale subresource, CRD lifecycle, namespace termination, fixtures.

use capi_sandbox::crds::Dialect;
use capi_sandbox::{ApiServer, ServerOptions};
use serde_json::json;

use crate::common::{WIDGETS, capi_server, get, post, raw};

fn cluster(name: &str) -> serde_json::Value {
    json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": name}, "spec": {"paused": false}})
}

fn owned_secret(name: &str, owner: &serde_json::Value) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "ownerReferences": [{
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"], "blockOwnerDeletion": true}]}})
}

#[tokio::test]
async fn orphan_and_foreground_propagation() {
    let (server, client) = capi_server(Dialect::V1beta2);
    let owner = post(&client, WIDGETS, &cluster("orphaner")).await.body;
    post(
        &client,
        "/api/v1/namespaces/default/secrets",
        &owned_secret("kept", &owner),
    )
    .await;
    let orphaning = raw(
        &client,
        "DELETE",
        &format!("{WIDGETS}/orphaner"),
        "application/json",
        r#"{"propagationPolicy":"Orphan"}"#,
    )
    .await;
    assert_eq!(orphaning.body["metadata"]["finalizers"], json!(["orphan"]));
    server.collect_garbage();
    assert_eq!(get(&client, &format!("{WIDGETS}/orphaner")).await.code, 404);
    let kept = get(&client, "/api/v1/namespaces/default/secrets/kept")
        .await
        .body;
    assert!(
        kept["metadata"]
            .get("ownerReferences")
            .is_none_or(|r| r.as_array().unwrap().is_empty()),
        "{kept}"
    );

    let owner = post(&client, WIDGETS, &cluster("foreground")).await.body;
    post(
        &client,
        "/api/v1/namespaces/default/secrets",
        &owned_secret("child", &owner),
    )
    .await;
    let foreground = raw(
        &client,
        "DELETE",
        &format!("{WIDGETS}/foreground"),
        "application/json",
        r#"{"propagationPolicy":"Foreground"}"#,
    )
    .await;
    assert_eq!(
        foreground.body["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    server.collect_garbage();
    assert_eq!(
        get(&client, "/api/v1/namespaces/default/secrets/child")
            .await
            .code,
        404
    );
    assert_eq!(
        get(&client, &format!("{WIDGETS}/foreground")).await.code,
        404,
        "the owner goes after its dependents"
    );
}

#[tokio::test]
async fn every_write_can_be_a_dry_run() {
    let (server, client) = capi_server(Dialect::V1beta2);
    let created = post(&client, WIDGETS, &cluster("c1")).await.body;
    server.reset_requests();
    let path = format!("{WIDGETS}/c1?dryRun=All");
    let patched = raw(
        &client,
        "PATCH",
        &path,
        "application/merge-patch+json",
        r#"{"spec":{"paused":true}}"#,
    )
    .await;
    assert_eq!(patched.code, 200);
    assert_eq!(patched.body["spec"]["paused"], true);
    assert_eq!(patched.body["metadata"]["generation"], 2);
    let mut replaced = created.clone();
    replaced["spec"]["paused"] = json!(true);
    assert_eq!(
        raw(
            &client,
            "PUT",
            &path,
            "application/json",
            &replaced.to_string()
        )
        .await
        .code,
        200
    );
    let deleted = raw(&client, "DELETE", &path, "application/json", "").await;
    assert_eq!(deleted.body["status"], "Success");
    let stale = raw(
        &client,
        "PATCH",
        &path,
        "application/json-patch+json",
        r#"[{"op":"test","path":"/spec/paused","value":true}]"#,
    )
    .await;
    assert_eq!(stale.code, 422, "dry runs are validated like real writes");

    let stored = get(&client, &format!("{WIDGETS}/c1")).await.body;
    assert_eq!(stored["spec"]["paused"], false);
    assert_eq!(
        stored["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert!(server.mutations().is_empty(), "{:?}", server.mutations());
    assert!(
        server
            .requests()
            .iter()
            .filter(|r| r.verb != "get")
            .all(|r| r.dry_run)
    );
}

#[tokio::test]
async fn deletecollection_deletes_what_the_selector_matches() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    for (name, tier) in [("a", "x"), ("b", "x"), ("c", "y")] {
        let mut c = cluster(name);
        c["metadata"]["labels"] = json!({"tier": tier});
        post(&client, WIDGETS, &c).await;
    }
    let answer = raw(
        &client,
        "DELETE",
        &format!("{WIDGETS}?labelSelector=tier%3Dx"),
        "application/json",
        "",
    )
    .await;
    assert_eq!(answer.code, 200);
    assert_eq!(answer.body["kind"], "ClusterList");
    assert_eq!(answer.body["items"].as_array().unwrap().len(), 2);
    let left = get(&client, WIDGETS).await.body;
    let names: Vec<&str> = left["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["c"]);
}

#[tokio::test]
async fn scale_subresource_reads_and_writes_replicas() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let md = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment", "metadata": {"name": "md"}, "spec": {"replicas": 2}});
    post(
        &client,
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/machinedeployments",
        &md,
    )
    .await;
    let path = "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/machinedeployments/md/scale";
    let scale = get(&client, path).await.body;
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["apiVersion"], "autoscaling/v1");
    assert_eq!(scale["spec"]["replicas"], 2);
    let scaled = raw(
        &client,
        "PATCH",
        path,
        "application/merge-patch+json",
        r#"{"spec":{"replicas":5}}"#,
    )
    .await;
    assert_eq!(scaled.body["spec"]["replicas"], 5);
    let stored = get(
        &client,
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/machinedeployments/md",
    )
    .await
    .body;
    assert_eq!(stored["spec"]["replicas"], 5);
    assert_eq!(stored["metadata"]["generation"], 2);
    assert_eq!(
        get(&client, &format!("{WIDGETS}/x/scale")).await.code,
        404,
        "Clusters have no scale subresource"
    );
}

#[tokio::test]
async fn a_terminating_namespace_refuses_new_content() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    post(
        &client,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "going"}}),
    )
    .await;
    let mut held = cluster("held");
    held["metadata"]["finalizers"] = json!(["cluster.cluster.x-k8s.io"]);
    post(
        &client,
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/going/clusters",
        &held,
    )
    .await;
    raw(
        &client,
        "DELETE",
        "/api/v1/namespaces/going",
        "application/json",
        "",
    )
    .await;
    assert_eq!(
        get(&client, "/api/v1/namespaces/going").await.body["status"]["phase"],
        "Terminating",
        "held by an object with a finalizer"
    );
    let refused = post(
        &client,
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/going/clusters",
        &cluster("late"),
    )
    .await;
    assert_eq!(refused.code, 403);
    assert!(refused.body["message"].as_str().unwrap().contains(
        "unable to create new content in namespace going because it is being terminated"
    ));
    raw(
        &client,
        "PATCH",
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/going/clusters/held",
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":null}}"#,
    )
    .await;
    assert_eq!(
        get(&client, "/api/v1/namespaces/going").await.code,
        404,
        "the namespace goes with its last object"
    );
}

#[tokio::test]
async fn crds_created_through_the_api_become_served_and_deleting_them_removes_objects() {
    let server = ApiServer::new(ServerOptions::default());
    let client = server.client();
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.answers.example.com"},
        "spec": {"group": "answers.example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wdg"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}});
    let created = post(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &crd,
    )
    .await;
    assert_eq!(created.code, 201);
    assert_eq!(created.body["spec"]["names"]["listKind"], "WidgetList");
    assert_eq!(created.body["spec"]["conversion"]["strategy"], "None");
    let established = get(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.answers.example.com",
    )
    .await
    .body;
    let conditions: Vec<(&str, &str)> = established["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["type"].as_str().unwrap(), c["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        conditions,
        vec![
            ("NamesAccepted", "NoConflicts"),
            ("Established", "InitialNamesAccepted")
        ]
    );
    assert_eq!(established["status"]["storedVersions"], json!(["v1"]));
    let resources = get(&client, "/apis/answers.example.com/v1").await.body;
    assert_eq!(resources["resources"][0]["name"], "widgets");
    assert_eq!(resources["resources"][1]["name"], "widgets/status");

    let widget = json!({"apiVersion": "answers.example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}});
    assert_eq!(
        post(
            &client,
            "/apis/answers.example.com/v1/namespaces/default/widgets",
            &widget
        )
        .await
        .code,
        201
    );
    let wrong_name = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"}, "spec": crd["spec"]});
    assert_eq!(
        post(
            &client,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            &wrong_name
        )
        .await
        .code,
        422
    );

    raw(
        &client,
        "DELETE",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.answers.example.com",
        "application/json",
        "",
    )
    .await;
    assert_eq!(
        get(
            &client,
            "/apis/answers.example.com/v1/namespaces/default/widgets"
        )
        .await
        .code,
        404
    );
    assert!(
        server
            .object("answers.example.com", "widgets", "default", "w1")
            .is_none()
    );
}

#[tokio::test]
async fn the_v1beta1_flavour_serves_v1beta1_only() {
    let (_server, client) = capi_server(Dialect::V1beta1);
    assert_eq!(
        get(&client, "/apis/cluster.x-k8s.io").await.body["preferredVersion"]["version"],
        "v1beta1"
    );
    assert_eq!(
        get(&client, "/apis/cluster.x-k8s.io/v1beta2").await.code,
        404
    );
    let crd = get(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusters.cluster.x-k8s.io",
    )
    .await
    .body;
    assert_eq!(
        crd["metadata"]["labels"]["cluster.x-k8s.io/v1beta1"],
        "v1beta1"
    );
    assert_eq!(crd["metadata"]["labels"]["clusterctl.cluster.x-k8s.io"], "");
    let providers = get(&client, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/providers.clusterctl.cluster.x-k8s.io").await.body;
    assert_eq!(
        providers["metadata"]["labels"],
        json!({"clusterctl.cluster.x-k8s.io/core": "inventory"})
    );
}

#[tokio::test]
async fn fixtures_load_dump_and_reset() {
    let (server, client) = capi_server(Dialect::V1beta2);
    let created = server
        .load_yaml(
            "apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: loaded, namespace: default}
spec: {paused: false}
status:
  initialization: {infrastructureProvisioned: true}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {a: b}
",
        )
        .unwrap();
    assert_eq!(created.len(), 2);
    let cluster = get(&client, &format!("{WIDGETS}/loaded")).await.body;
    assert_eq!(
        cluster["status"]["initialization"]["infrastructureProvisioned"], true,
        "fixtures keep status"
    );
    assert!(server.dump().iter().any(|o| o["metadata"]["name"] == "cfg"));
    assert!(
        server
            .load_yaml("apiVersion: v9\nkind: Nope\nmetadata: {name: x}\n")
            .is_err()
    );
    server.reset();
    assert!(
        server
            .object("cluster.x-k8s.io", "clusters", "default", "loaded")
            .is_none()
    );
    assert_eq!(
        get(&client, "/apis/cluster.x-k8s.io/v1beta2").await.code,
        404,
        "a reset server has no CRDs"
    );
    assert_eq!(get(&client, "/api/v1/namespaces/default").await.code, 200);
}

#[tokio::test]
async fn watches_follow_label_selector_transitions() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let start = get(&client, WIDGETS).await.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut c = cluster("moving");
    c["metadata"]["labels"] = json!({"tier": "a"});
    post(&client, WIDGETS, &c).await;
    raw(
        &client,
        "PATCH",
        &format!("{WIDGETS}/moving"),
        "application/merge-patch+json",
        r#"{"metadata":{"labels":{"tier":"b"}}}"#,
    )
    .await;
    raw(
        &client,
        "PATCH",
        &format!("{WIDGETS}/moving"),
        "application/merge-patch+json",
        r#"{"metadata":{"labels":{"tier":"a"}}}"#,
    )
    .await;
    let answer = get(
        &client,
        &format!(
            "{WIDGETS}?watch=true&labelSelector=tier%3Da&timeoutSeconds=1&resourceVersion={start}"
        ),
    )
    .await;
    let types = crate::common::event_types(&answer.text);
    assert_eq!(
        types,
        vec!["ADDED", "DELETED", "ADDED"],
        "leaving the selector is a deletion for this watcher"
    );
}

#[tokio::test]
async fn impersonated_groups_carry_their_grants() {
    let (server, _client) = capi_server(Dialect::V1beta2);
    let as_ops = kube::Client::new(
        tower::ServiceBuilder::new()
            .map_request(|mut r: http::Request<kube::client::Body>| {
                r.headers_mut()
                    .insert("impersonate-user", "alice".parse().unwrap());
                r.headers_mut()
                    .append("impersonate-group", "ops".parse().unwrap());
                r
            })
            .service(server.service()),
        "default",
    );
    assert_eq!(get(&as_ops, WIDGETS).await.code, 403);
    server.grant("group:ops", "list", "cluster.x-k8s.io", "clusters");
    assert_eq!(get(&as_ops, WIDGETS).await.code, 200);
    assert_eq!(server.requests().last().unwrap().user, "alice");
}

#[tokio::test]
async fn field_validation_strict_warn_and_ignore() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "bogus": 1}, "data": {}, "extra": true});
    let strict = post(
        &client,
        "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
        &cm,
    )
    .await;
    assert_eq!(strict.code, 400);
    assert_eq!(
        strict.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"metadata.bogus\", unknown field \"extra\""
    );
    let warned = post(&client, "/api/v1/namespaces/default/configmaps", &cm).await;
    assert_eq!(warned.code, 201);
    let warnings: Vec<&str> = warned
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(
        warnings,
        vec![
            "299 - \"unknown field \\\"metadata.bogus\\\"\"",
            "299 - \"unknown field \\\"extra\\\"\""
        ]
    );
    assert!(
        warned.body.get("extra").is_none() && warned.body["metadata"].get("bogus").is_none(),
        "unknown fields are dropped"
    );
    let mut custom = cluster("c1");
    custom["spec"]["anything"] = json!("kept");
    custom["metadata"]["bogus"] = json!(1);
    let refused = post(
        &client,
        &format!("{WIDGETS}?fieldValidation=Strict"),
        &custom,
    )
    .await;
    assert_eq!(
        refused.body["message"],
        "strict decoding error: unknown field \"metadata.bogus\""
    );
    custom["metadata"].as_object_mut().unwrap().remove("bogus");
    let kept = post(
        &client,
        &format!("{WIDGETS}?fieldValidation=Strict"),
        &custom,
    )
    .await;
    assert_eq!(
        kept.code, 201,
        "custom resources keep unknown fields under x-kubernetes-preserve-unknown-fields"
    );
    assert_eq!(kept.body["spec"]["anything"], "kept");
}
