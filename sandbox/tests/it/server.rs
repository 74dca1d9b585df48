//! Exact answers of the in-memory server for the requests the recorded real kube-apiserver
//! answered (status codes, reasons, messages, fields), sent raw through an in-process client.

use std::time::Duration;

use capi_sandbox::crds::Dialect;
use capi_sandbox::{FaultAction, FaultRule};
use serde_json::json;

use crate::common::{WIDGETS, capi_server, get, post, raw};

fn cluster(name: &str) -> serde_json::Value {
    json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": name}, "spec": {"paused": false}})
}

#[tokio::test]
async fn create_answers_like_the_apiserver() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let created = post(&client, WIDGETS, &cluster("c1")).await;
    assert_eq!(created.code, 201);
    let meta = &created.body["metadata"];
    assert_eq!(meta["generation"], 1);
    assert!(meta["uid"].as_str().is_some_and(|u| u.len() == 36));
    assert!(meta["resourceVersion"].as_str().is_some());
    assert_eq!(meta["managedFields"][0]["operation"], "Update");
    assert_eq!(created.body["apiVersion"], "cluster.x-k8s.io/v1beta2");

    let again = post(&client, WIDGETS, &cluster("c1")).await;
    assert_eq!(again.code, 409);
    assert_eq!(again.body["reason"], "AlreadyExists");
    assert_eq!(
        again.body["message"],
        "clusters.cluster.x-k8s.io \"c1\" already exists"
    );
    assert_eq!(
        again.body["details"],
        json!({"name": "c1", "group": "cluster.x-k8s.io", "kind": "clusters"})
    );

    let bad = post(&client, WIDGETS, &cluster("Bad_Name")).await;
    assert_eq!(bad.code, 422);
    assert_eq!(bad.body["reason"], "Invalid");
    assert!(bad.body["message"].as_str().unwrap().starts_with(
        "Cluster.cluster.x-k8s.io \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"
    ));
    assert_eq!(bad.body["details"]["causes"][0]["field"], "metadata.name");

    let missing_ns = post(
        &client,
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/nope/clusters",
        &cluster("c2"),
    )
    .await;
    assert_eq!(missing_ns.code, 404);
    assert_eq!(missing_ns.body["message"], "namespaces \"nope\" not found");
    assert_eq!(
        missing_ns.body["details"],
        json!({"name": "nope", "kind": "namespaces"})
    );
    let dry_missing_ns = post(
        &client,
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/nope/clusters?dryRun=All",
        &cluster("c2"),
    )
    .await;
    assert_eq!(dry_missing_ns.code, 404, "admission runs for dry runs too");

    let with_rv = post(&client, WIDGETS, &json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "c3", "resourceVersion": "5"}})).await;
    assert_eq!(with_rv.code, 500);
    assert_eq!(
        with_rv.body["message"],
        "resourceVersion should not be set on objects to be created"
    );

    let generated = post(&client, WIDGETS, &json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"generateName": "gen-"}})).await;
    assert_eq!(generated.code, 201);
    let name = generated.body["metadata"]["name"].as_str().unwrap();
    assert!(name.starts_with("gen-") && name.len() == 9, "{name}");
}

#[tokio::test]
async fn dry_run_create_stores_nothing() {
    let (server, client) = capi_server(Dialect::V1beta2);
    server.reset_requests();
    let dry = post(&client, &format!("{WIDGETS}?dryRun=All"), &cluster("dry")).await;
    assert_eq!(dry.code, 201);
    assert!(dry.body["metadata"]["uid"].is_string());
    assert!(dry.body["metadata"]["creationTimestamp"].is_string());
    assert_eq!(dry.body["metadata"]["generation"], 1);
    assert!(dry.body["metadata"].get("resourceVersion").is_none());
    let gone = get(&client, &format!("{WIDGETS}/dry")).await;
    assert_eq!(gone.code, 404);
    assert_eq!(
        gone.body["message"],
        "clusters.cluster.x-k8s.io \"dry\" not found"
    );
    let log = server.requests();
    assert!(log[0].dry_run && log[0].verb == "create");
    assert!(
        server.mutations().is_empty(),
        "a dry run is not a write: {:?}",
        server.mutations()
    );
}

#[tokio::test]
async fn updates_conflicts_and_generation() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let created = post(&client, WIDGETS, &cluster("c1")).await.body;
    let path = format!("{WIDGETS}/c1");

    let no_rv = raw(
        &client,
        "PUT",
        &path,
        "application/json",
        &cluster("c1").to_string(),
    )
    .await;
    assert_eq!(no_rv.code, 422);
    assert_eq!(
        no_rv.body["message"],
        "clusters.cluster.x-k8s.io \"c1\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update"
    );

    let spec = raw(
        &client,
        "PATCH",
        &path,
        "application/merge-patch+json",
        r#"{"spec":{"paused":true}}"#,
    )
    .await;
    assert_eq!(spec.code, 200);
    assert_eq!(spec.body["metadata"]["generation"], 2);
    let labels = raw(
        &client,
        "PATCH",
        &path,
        "application/merge-patch+json",
        r#"{"metadata":{"labels":{"tier":"a"}}}"#,
    )
    .await;
    assert_eq!(
        labels.body["metadata"]["generation"], 2,
        "metadata changes keep the generation"
    );

    let mut stale = created.clone();
    stale["spec"]["paused"] = json!(true);
    let conflict = raw(
        &client,
        "PUT",
        &path,
        "application/json",
        &stale.to_string(),
    )
    .await;
    assert_eq!(conflict.code, 409);
    assert_eq!(conflict.body["reason"], "Conflict");
    assert_eq!(
        conflict.body["message"],
        "Operation cannot be fulfilled on clusters.cluster.x-k8s.io \"c1\": the object has been modified; please apply your changes to the latest version and try again"
    );

    let json_patch = raw(
        &client,
        "PATCH",
        &path,
        "application/json-patch+json",
        r#"[{"op":"replace","path":"/spec/paused","value":false}]"#,
    )
    .await;
    assert_eq!(json_patch.body["metadata"]["generation"], 3);
    let failed_test = raw(
        &client,
        "PATCH",
        &path,
        "application/json-patch+json",
        r#"[{"op":"test","path":"/spec/paused","value":true}]"#,
    )
    .await;
    assert_eq!(failed_test.code, 422);
    assert_eq!(
        failed_test.body["message"],
        "the server rejected our request due to an error in our request"
    );

    let strategic = raw(
        &client,
        "PATCH",
        &path,
        "application/strategic-merge-patch+json",
        r#"{"spec":{"paused":true}}"#,
    )
    .await;
    assert_eq!(strategic.code, 415);
    assert_eq!(strategic.body["reason"], "UnsupportedMediaType");

    // A no-op patch writes nothing: same resourceVersion.
    let before = get(&client, &path).await.body["metadata"]["resourceVersion"].clone();
    let noop = raw(
        &client,
        "PATCH",
        &path,
        "application/merge-patch+json",
        r#"{"spec":{"paused":false}}"#,
    )
    .await;
    assert_eq!(noop.body["metadata"]["resourceVersion"], before);
}

#[tokio::test]
async fn status_subresource_separates_spec_and_status() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let mut with_status = cluster("c1");
    with_status["status"] = json!({"phase": "Provisioned"});
    let created = post(&client, WIDGETS, &with_status).await;
    assert!(
        created.body.get("status").is_none(),
        "create drops status when a status subresource exists"
    );

    let status_path = format!("{WIDGETS}/c1/status");
    let patched = raw(
        &client,
        "PATCH",
        &status_path,
        "application/merge-patch+json",
        r#"{"status":{"phase":"Provisioned"},"spec":{"paused":true}}"#,
    )
    .await;
    assert_eq!(patched.code, 200);
    assert_eq!(patched.body["status"]["phase"], "Provisioned");
    assert_eq!(
        patched.body["spec"]["paused"], false,
        "the status subresource ignores spec"
    );
    assert_eq!(patched.body["metadata"]["generation"], 1);
    let entry = patched.body["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["subresource"] == "status")
        .cloned();
    assert!(
        entry.is_some(),
        "status writes are recorded with subresource status"
    );

    let main = raw(
        &client,
        "PATCH",
        &format!("{WIDGETS}/c1"),
        "application/merge-patch+json",
        r#"{"status":{"phase":"Deleting"}}"#,
    )
    .await;
    assert_eq!(
        main.body["status"]["phase"], "Provisioned",
        "the main resource ignores status"
    );
}

#[tokio::test]
async fn finalizers_hold_deletion() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let mut held = cluster("held");
    held["metadata"]["finalizers"] = json!(["cluster.cluster.x-k8s.io"]);
    post(&client, WIDGETS, &held).await;
    let path = format!("{WIDGETS}/held");

    let deleting = raw(&client, "DELETE", &path, "application/json", "").await;
    assert_eq!(deleting.code, 200);
    assert_eq!(
        deleting.body["kind"], "Cluster",
        "a held delete answers the object"
    );
    assert!(deleting.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(deleting.body["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(deleting.body["metadata"]["generation"], 2);

    let again = raw(&client, "DELETE", &path, "application/json", "").await;
    assert_eq!(again.code, 200);
    assert_eq!(
        again.body["metadata"]["resourceVersion"],
        deleting.body["metadata"]["resourceVersion"]
    );

    let add = raw(
        &client,
        "PATCH",
        &path,
        "application/merge-patch+json",
        r#"{"metadata":{"finalizers":["cluster.cluster.x-k8s.io","another"]}}"#,
    )
    .await;
    assert_eq!(add.code, 422);
    assert!(add.body["message"].as_str().unwrap().contains(
        "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"another\"}"
    ), "{}", add.body["message"]);

    let release = raw(
        &client,
        "PATCH",
        &path,
        "application/json-patch+json",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    )
    .await;
    assert_eq!(release.code, 200);
    // The answer is the object as the patch left it — no finalizers, still marked for deletion,
    // at a newer resourceVersion — and then it is gone.
    assert!(
        release.body["metadata"].get("finalizers").is_none(),
        "{}",
        release.body
    );
    assert!(release.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(release.body["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(release.body["metadata"]["name"], "held");
    let rv = |v: &serde_json::Value| {
        v["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    assert!(rv(&release.body) > rv(&deleting.body));
    assert_eq!(get(&client, &path).await.code, 404);
    assert_eq!(
        raw(&client, "DELETE", &path, "application/json", "")
            .await
            .code,
        404
    );

    post(&client, WIDGETS, &cluster("plain")).await;
    let plain = raw(
        &client,
        "DELETE",
        &format!("{WIDGETS}/plain"),
        "application/json",
        "",
    )
    .await;
    assert_eq!(plain.body["kind"], "Status");
    assert_eq!(plain.body["status"], "Success");
    assert!(plain.body["details"]["uid"].is_string());
}

#[tokio::test]
async fn lists_paginate_and_select() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    for i in 0..5 {
        let mut c = cluster(&format!("c{i}"));
        c["metadata"]["labels"] = json!({"tier": if i % 2 == 0 { "even" } else { "odd" }});
        post(&client, WIDGETS, &c).await;
    }
    let first = get(&client, &format!("{WIDGETS}?limit=2")).await.body;
    assert_eq!(first["kind"], "ClusterList");
    assert_eq!(first["items"].as_array().unwrap().len(), 2);
    assert_eq!(first["metadata"]["remainingItemCount"], 3);
    let token = first["metadata"]["continue"].as_str().unwrap();
    let second = get(&client, &format!("{WIDGETS}?limit=2&continue={token}"))
        .await
        .body;
    assert_eq!(second["items"][0]["metadata"]["name"], "c2");
    assert_eq!(
        second["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"],
        "pages share the list's resourceVersion"
    );
    let third = get(
        &client,
        &format!(
            "{WIDGETS}?limit=2&continue={}",
            second["metadata"]["continue"].as_str().unwrap()
        ),
    )
    .await
    .body;
    assert_eq!(third["items"].as_array().unwrap().len(), 1);
    assert!(third["metadata"].get("continue").is_none());

    let odd = get(
        &client,
        &format!("{WIDGETS}?labelSelector=tier%20in%20%28odd%29"),
    )
    .await
    .body;
    assert_eq!(odd["items"].as_array().unwrap().len(), 2);
    let named = get(
        &client,
        &format!("{WIDGETS}?fieldSelector=metadata.name%3Dc3"),
    )
    .await
    .body;
    assert_eq!(named["items"][0]["metadata"]["name"], "c3");
    let bad = get(&client, &format!("{WIDGETS}?labelSelector=tier%20in%20b")).await;
    assert_eq!(bad.code, 400);
    assert_eq!(
        bad.body["message"],
        "unable to parse requirement: found 'b' expected: '('"
    );
    let unsupported = get(
        &client,
        &format!("{WIDGETS}?fieldSelector=spec.paused%3Dtrue"),
    )
    .await;
    assert_eq!(unsupported.code, 400);
    assert_eq!(
        unsupported.body["message"],
        "field label not supported: spec.paused"
    );

    let all_ns = get(&client, "/apis/cluster.x-k8s.io/v1beta2/clusters")
        .await
        .body;
    assert_eq!(all_ns["items"].as_array().unwrap().len(), 5);
    let unknown = get(
        &client,
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/default/nosuchthings",
    )
    .await;
    assert_eq!(unknown.code, 404);
    assert_eq!(unknown.text, "404 page not found\n");
}

#[tokio::test]
async fn versions_are_rewritten_without_conversion() {
    let (server, client) = capi_server(Dialect::V1beta2);
    post(&client, WIDGETS, &cluster("c1")).await;
    let old = get(
        &client,
        "/apis/cluster.x-k8s.io/v1beta1/namespaces/default/clusters/c1",
    )
    .await;
    assert_eq!(old.body["apiVersion"], "cluster.x-k8s.io/v1beta1");
    assert_eq!(old.body["spec"]["paused"], false, "no schema conversion");
    let warning = old
        .headers
        .get("warning")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    assert!(
        warning.contains("cluster.x-k8s.io/v1beta1 Cluster is deprecated"),
        "{warning}"
    );
    assert_eq!(
        server
            .object("cluster.x-k8s.io", "clusters", "default", "c1")
            .unwrap()["apiVersion"],
        "cluster.x-k8s.io/v1beta2"
    );
    let log = server.requests();
    assert_eq!(
        log.last().unwrap().version,
        "v1beta1",
        "the log records the version asked for"
    );
}

#[tokio::test]
async fn managed_fields_ignored_on_create_and_replaced_by_patch() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let foreign = json!([{"manager": "original-owner", "operation": "Update", "apiVersion": "cluster.x-k8s.io/v1beta2",
        "time": "2020-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:paused": {}}}}]);
    let mut c = cluster("mf");
    c["metadata"]["managedFields"] = foreign.clone();
    let created = raw(
        &client,
        "POST",
        &format!("{WIDGETS}?fieldManager=mover"),
        "application/json",
        &c.to_string(),
    )
    .await
    .body;
    let managers: Vec<&str> = created["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(
        managers,
        vec!["mover"],
        "managedFields sent with a create are ignored"
    );

    let patch = json!({"metadata": {"managedFields": foreign}});
    let patched = raw(
        &client,
        "PATCH",
        &format!("{WIDGETS}/mf?fieldManager=mover"),
        "application/merge-patch+json",
        &patch.to_string(),
    )
    .await
    .body;
    assert_eq!(
        patched["metadata"]["managedFields"], foreign,
        "a patch's managedFields replace the stored ones"
    );
}

#[tokio::test]
async fn server_side_apply_creates_and_detects_conflicts() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let body = "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Cluster\nmetadata:\n  name: applied\nspec:\n  paused: false\n";
    let created = raw(
        &client,
        "PATCH",
        &format!("{WIDGETS}/applied?fieldManager=one"),
        "application/apply-patch+yaml",
        body,
    )
    .await;
    assert_eq!(created.code, 201);
    assert_eq!(
        created.body["metadata"]["managedFields"][0]["operation"],
        "Apply"
    );
    let conflicting = body.replace("paused: false", "paused: true");
    let conflict = raw(
        &client,
        "PATCH",
        &format!("{WIDGETS}/applied?fieldManager=two"),
        "application/apply-patch+yaml",
        &conflicting,
    )
    .await;
    assert_eq!(conflict.code, 409);
    assert!(
        conflict.body["message"]
            .as_str()
            .unwrap()
            .contains("conflict with \"one\""),
        "{}",
        conflict.body["message"]
    );
    assert_eq!(
        conflict.body["details"]["causes"][0]["field"],
        ".spec.paused"
    );
    let forced = raw(
        &client,
        "PATCH",
        &format!("{WIDGETS}/applied?fieldManager=two&force=true"),
        "application/apply-patch+yaml",
        &conflicting,
    )
    .await;
    assert_eq!(forced.code, 200);
    assert_eq!(forced.body["spec"]["paused"], true);
    let no_manager = raw(
        &client,
        "PATCH",
        &format!("{WIDGETS}/applied"),
        "application/apply-patch+yaml",
        body,
    )
    .await;
    assert_eq!(no_manager.code, 422);
}

#[tokio::test]
async fn secrets_and_configmaps_follow_core_rules() {
    let (_server, client) = capi_server(Dialect::None);
    let secret = post(&client, "/api/v1/namespaces/default/secrets", &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}, "stringData": {"a": "b"}})).await;
    assert_eq!(secret.code, 201);
    assert_eq!(secret.body["data"], json!({"a": "Yg=="}));
    assert_eq!(secret.body["type"], "Opaque");
    assert!(secret.body.get("stringData").is_none());
    assert!(
        secret.body["metadata"].get("generation").is_none(),
        "Secrets carry no generation"
    );

    let big = "x".repeat(1024 * 1024 + 10);
    let too_big = post(&client, "/api/v1/namespaces/default/configmaps", &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": big}})).await;
    assert_eq!(too_big.code, 422);
    assert_eq!(
        too_big.body["message"],
        "ConfigMap \"big\" is invalid: []: Too long: may not be more than 1048576 bytes"
    );

    post(&client, "/api/v1/namespaces/default/configmaps", &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "labels": {"a": "1"}}, "data": {"k": "v"}})).await;
    let smp = raw(
        &client,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/cm",
        "application/strategic-merge-patch+json",
        r#"{"metadata":{"labels":{"a":null,"b":"2"}},"data":{"n":"m"}}"#,
    )
    .await;
    assert_eq!(smp.code, 200);
    assert_eq!(smp.body["metadata"]["labels"], json!({"b": "2"}));
    assert_eq!(smp.body["data"], json!({"k": "v", "n": "m"}));
}

#[tokio::test]
async fn size_limits_match_etcd_and_the_apiserver() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    let mut huge = cluster("huge");
    huge["spec"]["blob"] = json!("y".repeat(2 * 1024 * 1024));
    let stored = post(&client, WIDGETS, &huge).await;
    assert_eq!(stored.code, 500);
    assert!(stored.body["message"].as_str().unwrap().starts_with(
        "rpc error: code = ResourceExhausted desc = trying to send message larger than max"
    ));
    let mut very_huge = cluster("vhuge");
    very_huge["spec"]["blob"] = json!("z".repeat(4 * 1024 * 1024));
    let request = post(&client, WIDGETS, &very_huge).await;
    assert_eq!(request.code, 413);
    assert_eq!(
        request.body["message"],
        "Request entity too large: limit is 3145728"
    );
}

#[tokio::test]
async fn garbage_collector_deletes_orphans_unless_switched_off() {
    let (server, client) = capi_server(Dialect::V1beta2);
    let owner = post(&client, WIDGETS, &cluster("owner")).await.body;
    let owned = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "ownerReferences": [{
            "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": "owner", "uid": owner["metadata"]["uid"], "controller": true}]}})
    };
    assert_eq!(
        post(
            &client,
            "/api/v1/namespaces/default/secrets",
            &owned("dependent")
        )
        .await
        .code,
        201
    );
    raw(
        &client,
        "DELETE",
        &format!("{WIDGETS}/owner"),
        "application/json",
        "",
    )
    .await;
    server.collect_garbage();
    assert_eq!(
        get(&client, "/api/v1/namespaces/default/secrets/dependent")
            .await
            .code,
        404
    );

    server.set_garbage_collection(false);
    let dangling = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "dangling", "ownerReferences": [{
        "apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "name": "gone", "uid": "00000000-0000-0000-0000-000000000000"}]}});
    assert_eq!(
        post(&client, "/api/v1/namespaces/default/secrets", &dangling)
            .await
            .code,
        201,
        "dangling owners are accepted"
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        get(&client, "/api/v1/namespaces/default/secrets/dangling")
            .await
            .code,
        200,
        "kept while GC is off"
    );
    server.set_garbage_collection(true);
    server.collect_garbage();
    assert_eq!(
        get(&client, "/api/v1/namespaces/default/secrets/dangling")
            .await
            .code,
        404
    );
}

#[tokio::test]
async fn deleting_a_namespace_removes_its_contents() {
    let (_server, client) = capi_server(Dialect::V1beta2);
    post(
        &client,
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}),
    )
    .await;
    post(
        &client,
        "/apis/cluster.x-k8s.io/v1beta2/namespaces/team/clusters",
        &cluster("c1"),
    )
    .await;
    let deleting = raw(
        &client,
        "DELETE",
        "/api/v1/namespaces/team",
        "application/json",
        "",
    )
    .await;
    assert_eq!(deleting.code, 200);
    assert_eq!(deleting.body["status"]["phase"], "Terminating");
    assert_eq!(
        get(
            &client,
            "/apis/cluster.x-k8s.io/v1beta2/namespaces/team/clusters/c1"
        )
        .await
        .code,
        404
    );
    assert_eq!(get(&client, "/api/v1/namespaces/team").await.code, 404);
}

#[tokio::test]
async fn impersonated_users_need_grants_and_denials_apply_to_all() {
    let (server, client) = capi_server(Dialect::V1beta2);
    let nobody = kube::Client::new(
        tower::ServiceBuilder::new()
            .map_request(|mut r: http::Request<kube::client::Body>| {
                r.headers_mut()
                    .insert("impersonate-user", "nobody".parse().unwrap());
                r
            })
            .service(server.service()),
        "default",
    );
    let forbidden = get(&nobody, WIDGETS).await;
    assert_eq!(forbidden.code, 403);
    assert_eq!(
        forbidden.body["message"],
        "clusters.cluster.x-k8s.io is forbidden: User \"nobody\" cannot list resource \"clusters\" in API group \"cluster.x-k8s.io\" in the namespace \"default\""
    );
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"group": "cluster.x-k8s.io", "resource": "clusters", "verb": "delete", "namespace": "default"}}});
    let answer = post(
        &nobody,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &review,
    )
    .await;
    assert_eq!(answer.code, 201);
    // As a real server answers: the review as sent, one Update entry for the fields sent (the
    // manager from the User-Agent, `unknown` without one), and the decision alone.
    assert_eq!(answer.body["kind"], "SelfSubjectAccessReview");
    assert_eq!(answer.body["apiVersion"], "authorization.k8s.io/v1");
    assert_eq!(answer.body["spec"], review["spec"]);
    assert_eq!(answer.body["status"], json!({"allowed": false}));
    let meta = answer.body["metadata"].as_object().unwrap();
    assert_eq!(meta.keys().collect::<Vec<_>>(), ["managedFields"]);
    let entries = meta["managedFields"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    let entry = &entries[0];
    assert_eq!(entry["manager"], "unknown");
    assert_eq!(entry["operation"], "Update");
    assert_eq!(entry["apiVersion"], "authorization.k8s.io/v1");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert!(entry["time"].is_string());
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:spec": {"f:resourceAttributes": {".": {}, "f:group": {}, "f:namespace": {}, "f:resource": {}, "f:verb": {}}}})
    );
    server.grant("nobody", "list", "cluster.x-k8s.io", "clusters");
    assert_eq!(get(&nobody, WIDGETS).await.code, 200);

    server.deny("delete", "clusters");
    let admin_review = post(
        &client,
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        &review,
    )
    .await;
    assert_eq!(admin_review.body["status"]["allowed"], false);
    post(&client, WIDGETS, &cluster("c1")).await;
    assert_eq!(
        raw(
            &client,
            "DELETE",
            &format!("{WIDGETS}/c1"),
            "application/json",
            ""
        )
        .await
        .code,
        403
    );
}

#[tokio::test]
async fn injected_faults_fail_delay_and_drop() {
    let (server, client) = capi_server(Dialect::V1beta2);
    server.inject(
        FaultRule::fail(500)
            .verbs(&["create"])
            .resource("clusters")
            .times(1),
    );
    assert_eq!(post(&client, WIDGETS, &cluster("c1")).await.code, 500);
    assert_eq!(
        post(&client, WIDGETS, &cluster("c1")).await.code,
        201,
        "the fault was used up"
    );

    server.inject(
        FaultRule::new(FaultAction::Fail {
            code: 429,
            retry_after: Some(3),
        })
        .verbs(&["get"])
        .times(1),
    );
    let throttled = get(&client, &format!("{WIDGETS}/c1")).await;
    assert_eq!(throttled.code, 429);
    assert_eq!(throttled.headers.get("retry-after").unwrap(), "3");

    server.inject(
        FaultRule::new(FaultAction::ApplyThenDrop)
            .verbs(&["create"])
            .times(1),
    );
    let request = http::Request::post(WIDGETS)
        .header("content-type", "application/json")
        .body(cluster("c2").to_string().into_bytes())
        .unwrap();
    assert!(
        client
            .send(request.map(kube::client::Body::from))
            .await
            .is_err(),
        "the answer never arrives"
    );
    assert_eq!(
        get(&client, &format!("{WIDGETS}/c2")).await.code,
        200,
        "but the write happened"
    );

    server.inject(
        FaultRule::new(FaultAction::Drop)
            .verbs(&["create"])
            .times(1),
    );
    let request = http::Request::post(WIDGETS)
        .header("content-type", "application/json")
        .body(cluster("c3").to_string().into_bytes())
        .unwrap();
    assert!(
        client
            .send(request.map(kube::client::Body::from))
            .await
            .is_err()
    );
    assert_eq!(
        get(&client, &format!("{WIDGETS}/c3")).await.code,
        404,
        "a dropped request does nothing"
    );

    // The second real create from now on is applied and logged, and its answer held back;
    // dry runs do not count.
    server.inject(
        FaultRule::new(FaultAction::ApplyThenStall(Duration::from_secs(30)))
            .verbs(&["create"])
            .dry_run(false)
            .skip(1)
            .times(1),
    );
    assert_eq!(post(&client, WIDGETS, &cluster("c4")).await.code, 201);
    assert_eq!(
        post(
            &client,
            &format!("{WIDGETS}?dryRun=All"),
            &cluster("c4-dry")
        )
        .await
        .code,
        201
    );
    let request = http::Request::post(WIDGETS)
        .header("content-type", "application/json")
        .body(cluster("c5").to_string().into_bytes())
        .unwrap();
    let stalled = tokio::time::timeout(
        Duration::from_millis(300),
        client.send(request.map(kube::client::Body::from)),
    )
    .await;
    assert!(stalled.is_err(), "the answer is held back");
    assert_eq!(server.answers_held(), 1);
    assert_eq!(get(&client, &format!("{WIDGETS}/c5")).await.code, 200);
    let last_create = server
        .requests()
        .into_iter()
        .rfind(|r| r.verb == "create")
        .unwrap();
    assert_eq!(
        (last_create.name.as_deref(), last_create.code),
        (Some("c5"), 201),
        "logged, with the name the body gave, and its outcome, before the answer"
    );
    assert_eq!(post(&client, WIDGETS, &cluster("c6")).await.code, 201);

    server.set_write_latency(Duration::from_millis(30));
    let started = std::time::Instant::now();
    post(&client, WIDGETS, &cluster("slow")).await;
    assert!(
        started.elapsed() >= Duration::from_millis(30),
        "write latency applies"
    );
    server.set_write_latency(Duration::ZERO);

    let creates = server.count("create", "clusters");
    assert_eq!(creates, 9, "requests, the dry run included");
    assert_eq!(
        server
            .requests()
            .iter()
            .filter(|r| r.verb == "create" && r.code == 0)
            .count(),
        2,
        "dropped answers are logged without a code"
    );
}
