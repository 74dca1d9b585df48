//! What the move checks and selects is exactly what the user asked: `-l` selects Clusters, every
//! check runs before the first write. Real binaries against sandbox servers.

use crate::common::Writes;
use crate::move_world::{Fixture, MOVE_NS1, World};

/// The Cluster API of the world's source, namespace ns1.
fn clusters_in_source(w: &World) -> kube::Api<kube::api::DynamicObject> {
    kube::Api::namespaced_with(
        w.source.client(),
        "ns1",
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", "Cluster"),
            "clusters",
        ),
    )
}

/// Cluster ns1/foo reports a control plane that has not initialized.
async fn control_plane_not_initialized(w: &World) {
    clusters_in_source(w)
        .patch_status(
            "foo",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"status": {
                "initialization": {"controlPlaneInitialized": false},
                "conditions": [{"type": "ControlPlaneInitialized", "status": "False",
                    "reason": "WaitingForControlPlane", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})),
        )
        .await
        .unwrap();
}

/// Neither server saw a state-changing write from the plugin (its lease aside).
fn assert_plugin_wrote_nothing(w: &World, what: &str) {
    for server in [&w.source, &w.target] {
        assert!(
            server
                .writes()
                .iter()
                .all(|r| !r.agent.starts_with(crate::common::PLUGIN_AGENT)),
            "{what}: nothing written"
        );
    }
}

/// Two provisioned Clusters in ns1: foo labelled env=prod, bar env=dev.
async fn labelled() -> World {
    let mut f = Fixture::default();
    f.provisioned("ns1", "foo", 1).provisioned("ns1", "bar", 1);
    let w = World::start(&f).await;
    let clusters = clusters_in_source(&w);
    for (name, env) in [("foo", "prod"), ("bar", "dev")] {
        clusters
            .patch(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {"env": env}}})),
            )
            .await
            .unwrap();
    }
    w
}

/// The Clusters a dry run of `args` would move.
async fn planned_clusters(w: &World, args: &[&str]) -> Vec<String> {
    let out = w
        .plugin(&[&MOVE_NS1[..], args, &["--dry-run", "-o", "json"]].concat())
        .await;
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    let plan: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    plan["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selector_selects_clusters_for_move_exactly() {
    let w = labelled().await;
    assert_eq!(planned_clusters(&w, &["-l", "env=prod"]).await, ["foo"]);
    assert_eq!(
        planned_clusters(&w, &["-l", "env in (prod,dev)"])
            .await
            .len(),
        2
    );
    assert_eq!(
        planned_clusters(&w, &["foo", "-l", "env=prod"]).await,
        ["foo"]
    );

    // Matching nothing: said so, exit 1, for a dry run and a move alike; nothing written.
    for extra in [&["--dry-run"][..], &[]] {
        let out = w
            .plugin(&[&MOVE_NS1[..], &["-l", "env=nomatch"], extra].concat())
            .await;
        assert_eq!(out.code, 1, "{extra:?}: {}", out.stderr);
        assert!(
            out.stderr
                .contains("no Clusters match -l env=nomatch in namespace ns1; nothing was moved"),
            "{}",
            out.stderr
        );
    }
    // Names with -l select the named Clusters that match: a named one that does not is left
    // out, and none left is refused as a selector that matches nothing is.
    let out = w
        .plugin(&[&MOVE_NS1[..], &["bar", "-l", "env=prod", "--dry-run"]].concat())
        .await;
    out.assert_stderr(
        1,
        "no Clusters named bar match -l env=prod in namespace ns1; nothing was moved",
    );
    assert_plugin_wrote_nothing(&w, "");

    let out = w
        .plugin(&[&MOVE_NS1[..], &["-l", "env=prod"]].concat())
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with("moved 1 Cluster(s)"),
        "{}",
        out.stdout
    );
    assert!(crate::common::has_cluster(&w.target, "ns1", "foo"));
    assert!(
        crate::common::has_cluster(&w.source, "ns1", "bar"),
        "bar stays"
    );
    // foo by name, after -l took it: the record of that move does not speak for this one, but
    // the refusal says where foo is, and its hint runs.
    let out = w.plugin(&[&MOVE_NS1[..], &["foo"]].concat()).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("Cluster ns1/foo is not in the source but in the target (http://127.0.0.1:")
            && out
                .stderr
                .contains("already, so there is nothing of it to move"),
        "{}",
        out.stderr
    );
    let hint = out.stderr.split('`').nth(1).unwrap();
    assert!(
        hint.starts_with("kubectl capi verify foo -n ns1 --context target"),
        "{hint}"
    );
    let pasted = w.paste(hint).await;
    assert_ne!(pasted.code, 2, "the hint runs: {}", pasted.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_provider_inventory_refuses_instead_of_reading_as_none() {
    for end in ["source", "target"] {
        let mut f = Fixture::workload(&["w1"]);
        f.global_identity(serde_json::json!({}));
        let w = World::start(&f).await;
        let server = if end == "source" {
            &w.source
        } else {
            &w.target
        };
        server.deny("list", "providers");
        let out = w
            .plugin(&[&MOVE_NS1[..], &["--dry-run=server"]].concat())
            .await;
        assert_ne!(out.code, 0, "{end}: {}", out.stderr);
        assert!(
            out.stderr.contains("providers")
                && (out.stderr.contains("forbidden") || out.stderr.contains("missing permission")),
            "{end}: {}",
            out.stderr
        );
        assert!(
            !out.stderr.contains("preflight passed"),
            "{end}: {}",
            out.stderr
        );
        let out = w.plugin(&MOVE_NS1).await;
        assert_ne!(out.code, 0, "{end}: {}", out.stderr);
        assert!(
            !out.stderr.contains("not found in the target cluster"),
            "a forbidden read is not an absent provider: {}",
            out.stderr
        );
        for server in [&w.source, &w.target] {
            assert!(
                server
                    .writes()
                    .iter()
                    .all(|r| !r.agent.starts_with(crate::common::PLUGIN_AGENT) || r.dry_run),
                "{end}: nothing written"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_refusal_comes_at_once() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    let clusters = clusters_in_source(&w);
    clusters
        .patch(
            "foo",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"paused": true}})),
        )
        .await
        .unwrap();
    let secret = w
        .source
        .dump()
        .into_iter()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["namespace"] == "ns1")
        .unwrap();
    w.target
        .load(serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "ns1"}}))
        .unwrap();
    w.target
        .load(serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": secret["metadata"]["name"], "namespace": "ns1"}}))
        .unwrap();
    let target_before = crate::move_world::end_state(&w.target);
    let out = w.plugin(&MOVE_NS1).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("cannot start operation while the following Clusters are paused: ns1/foo")
            && out.stderr.contains("already exists in the target"),
        "both at once: {}",
        out.stderr
    );
    assert_eq!(crate::move_world::end_state(&w.target), target_before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_with_freeze_that_will_be_refused_freezes_nothing() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    let secret = w
        .source
        .dump()
        .into_iter()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["namespace"] == "ns1")
        .unwrap();
    for object in [
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}}),
        serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": secret["metadata"]["name"], "namespace": "ns1"}}),
    ] {
        w.target.load(object).unwrap();
    }
    let out = w
        .plugin(&[&MOVE_NS1[..], &["foo", "--freeze"]].concat())
        .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("move refused by its preflight before freezing, nothing was written:")
            && out.stderr.contains("already exists in the target"),
        "{}",
        out.stderr
    );
    for server in [&w.source, &w.target] {
        let written: Vec<String> = server
            .writes()
            .iter()
            .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
            .map(|r| format!("{} {} {:?}", r.verb, r.resource, r.name))
            .collect();
        assert_eq!(
            written,
            Vec::<String>::new(),
            "nothing frozen, nothing written"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_side_dry_run_sends_no_write_at_all() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    assert!(w.target.object("", "namespaces", "", "ns1").is_none());
    let out = w
        .plugin(&[&MOVE_NS1[..], &["--dry-run=server"]].concat())
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("namespace ns1 is not in the target yet")
            && out.stderr.contains("checked when it exists")
            && out.stderr.contains("preflight passed"),
        "{}",
        out.stderr
    );
    for server in [&w.source, &w.target] {
        let sent: Vec<String> = server
            .requests()
            .iter()
            .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT) && r.is_write_attempt())
            .filter(|r| !r.dry_run && r.resource != "selfsubjectaccessreviews")
            .map(|r| format!("{} {} {:?}", r.verb, r.resource, r.name))
            .collect();
        assert_eq!(
            sent,
            Vec::<String>::new(),
            "no write sent, not even a namespace"
        );
    }
    // With the namespace there, every object is dry-run created.
    w.target
        .load(serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}}))
        .unwrap();
    let out = w
        .plugin(&[&MOVE_NS1[..], &["--dry-run=server"]].concat())
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !out.stderr.contains("checked when it exists"),
        "{}",
        out.stderr
    );
    assert!(
        w.target
            .requests()
            .iter()
            .any(|r| r.dry_run && r.resource == "clusters"),
        "the Cluster was dry-run created"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_freeze_that_would_keep_a_control_plane_from_starting_is_refused_before_it_freezes() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", true);
    let w = World::start(&f).await;
    control_plane_not_initialized(&w).await;
    // (Refused before freezing, so it never waits for the 5 minutes.)
    let out = w
        .plugin(
            &[
                &MOVE_NS1[..],
                &["foo", "--freeze", "--wait-ready", "--timeout", "5m"],
            ]
            .concat(),
        )
        .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("cluster.cluster.x-k8s.io/foo not frozen: its control plane has not initialized and has no control-plane Machine yet")
            && out.stderr.contains("`kubectl capi ready foo -n ns1 --wait --context source`"),
        "{}",
        out.stderr
    );
    assert!(
        w.source
            .writes()
            .iter()
            .all(|r| !r.agent.starts_with(crate::common::PLUGIN_AGENT)),
        "nothing frozen"
    );
    // Pasted (with a short limit: this world has no controllers to finish the control plane),
    // the hint waits on what blocks, and says so when it gives up.
    let waited = w
        .paste("kubectl capi ready foo -n ns1 --wait --context source --timeout 1s")
        .await;
    assert_eq!(waited.code, 1, "{}", waited.stderr);
    assert!(
        waited.stderr.contains("control plane") && waited.stderr.contains("1s"),
        "{}",
        waited.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn journals_that_cannot_be_read_are_an_error_not_none() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    let clusters = clusters_in_source(&w);
    clusters
        .patch(
            "foo",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"paused": true}})),
        )
        .await
        .unwrap();
    w.source.deny("list", "configmaps");
    // Whether a move paused foo is in the journals it may not read: it says so, not "none".
    let out = w
        .plugin(&["ready", "foo", "-n", "ns1", "--context", "source"])
        .await;
    assert_eq!(out.code, 1, "a missing permission refuses: {}", out.stderr);
    assert!(
        out.stderr.contains("configmaps") && out.stderr.contains("403 Forbidden"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("kubectl patch"), "{}", out.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_lost_during_the_dry_runs_leaves_no_namespace_behind() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    w.target.inject(
        capi_sandbox::FaultRule::new(capi_sandbox::FaultAction::Drop)
            .verbs(&["create"])
            .dry_run(true)
            .agent(crate::common::PLUGIN_AGENT),
    );
    let out = w
        .plugin(&[&MOVE_NS1[..], &["--request-timeout", "1s"]].concat())
        .await;
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        w.target
            .requests()
            .iter()
            .any(|r| r.resource == "namespaces" && r.verb == "create" && !r.dry_run),
        "the preflight made the namespace its dry runs needed"
    );
    assert!(
        w.target.object("", "namespaces", "", "ns1").is_none(),
        "and removed it when they failed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollback_removes_the_namespaces_the_move_made_unless_someone_uses_them() {
    for someone_uses_it in [false, true] {
        let w = World::start(&Fixture::workload(&["w1"])).await;
        assert!(
            crate::move_world::kill_at(&w, &MOVE_NS1, crate::move_world::KillPoint::Writes(6))
                .await
        );
        assert!(w.target.object("", "namespaces", "", "ns1").is_some());
        if someone_uses_it {
            w.target
                .load(serde_json::json!({"apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": "theirs", "namespace": "ns1"}}))
                .unwrap();
        }
        let out = w.plugin(&[&MOVE_NS1[..], &["--rollback"]].concat()).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert_eq!(
            w.target.object("", "namespaces", "", "ns1").is_some(),
            someone_uses_it,
            "someone uses it: {someone_uses_it}"
        );
        if someone_uses_it {
            assert!(w.target.object("", "secrets", "ns1", "theirs").is_some());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_during_the_dry_runs_removes_the_namespaces_they_needed() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    w.target.inject(
        capi_sandbox::FaultRule::new(capi_sandbox::FaultAction::Latency(
            std::time::Duration::from_millis(300),
        ))
        .verbs(&["create"])
        .dry_run(true)
        .agent(crate::common::PLUGIN_AGENT),
    );
    let mut child = w
        .command(&[&MOVE_NS1[..], &["--concurrency", "1"]].concat())
        .spawn()
        .unwrap();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while !w
        .target
        .requests()
        .iter()
        .any(|r| r.dry_run && r.resource != "namespaces")
    {
        assert!(child.try_wait().unwrap().is_none(), "still checking");
        assert!(
            tokio::time::Instant::now() < deadline,
            "no dry run within 60 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert!(w.target.object("", "namespaces", "", "ns1").is_some());
    let out = crate::common::interrupt(child).await;
    out.assert_stderr(130, "interrupted before the move's first write");
    assert!(w.target.object("", "namespaces", "", "ns1").is_none());
    assert!(
        w.source
            .writes()
            .iter()
            .all(|r| !r.agent.starts_with(crate::common::PLUGIN_AGENT)),
        "nothing paused in the source"
    );
    assert!(w.source.lease().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_selects_moved_clusters_by_label_too() {
    let w = labelled().await;
    let out = w
        .plugin(&[&MOVE_NS1[..], &["--restore-status"]].concat())
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let w = &w;
    let verify = |selector: &'static str| async move {
        w.plugin(&[
            "verify",
            "--context",
            "target",
            "-n",
            "ns1",
            "-l",
            selector,
            "-o",
            "json",
        ])
        .await
    };
    let out = verify("env=prod").await;
    let report: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} {}", out.stdout, out.stderr));
    let names: Vec<&str> = report["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cluster"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["foo"], "{}", out.stdout);
    let out = verify("env=nomatch").await;
    out.assert_stderr(1, "no moved Clusters match -l env=nomatch in namespace ns1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_deployment_frozen_at_zero_machines_does_not_stall_the_wait() {
    // Frozen scaling is a warning to readiness, so no wait of this tool depends on a frozen
    // MachineDeployment creating its first Machine: it moves, and scales up in the target once
    // the freeze is released there.
    let w = World::start(&Fixture::workload(&[])).await;
    for (kind, plural, name) in [
        ("MachineDeployment", "machinedeployments", "md1"),
        ("MachineSet", "machinesets", "md1-a"),
    ] {
        let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
            w.source.client(),
            "ns1",
            &kube::api::ApiResource::from_gvk_with_plural(
                &kube::api::GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", kind),
                plural,
            ),
        );
        api.patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({
                "metadata": {"labels": {"cluster.x-k8s.io/cluster-name": "foo"}},
                "spec": {"clusterName": "foo", "replicas": 2}})),
        )
        .await
        .unwrap();
    }
    let ready = w
        .plugin(&["ready", "foo", "-n", "ns1", "--context", "source"])
        .await;
    assert_eq!(ready.code, 1, "a scale-up in flight: {}", ready.stdout);
    let out = w
        .plugin(
            &[
                &MOVE_NS1[..],
                &["foo", "--freeze", "--wait-ready", "--timeout", "5m"],
            ]
            .concat(),
        )
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        w.target
            .object("cluster.x-k8s.io", "machinedeployments", "ns1", "md1")
            .is_some_and(|md| md["metadata"]["annotations"]
                .get("cluster.x-k8s.io/paused")
                .is_none()),
        "moved, and released in the target"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_ends_at_once_when_a_frozen_control_plane_can_never_start() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", true);
    let w = World::start(&f).await;
    control_plane_not_initialized(&w).await;
    // Frozen by hand (pause does not know what a move will wait for).
    let paused = w
        .plugin(&["pause", "foo", "-n", "ns1", "--context", "source"])
        .await;
    assert_eq!(paused.code, 0, "{}", paused.stderr);
    // (Ends long before its 5 minutes: it sees the control plane can never start.)
    let out = w
        .plugin(&[
            "ready",
            "foo",
            "-n",
            "ns1",
            "--context",
            "source",
            "--wait",
            "--timeout",
            "5m",
        ])
        .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("frozen, it can never create the first one")
            && out.stderr.contains("stopped waiting"),
        "{}",
        out.stderr
    );
    let hint = out
        .stderr
        .split("release the freeze with `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .unwrap()
        .to_string();
    let pasted = w.paste(&hint).await;
    assert_eq!(pasted.code, 0, "{hint}: {}", pasted.stderr);
    assert!(pasted.stdout.contains("resumed"), "{}", pasted.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_namespace_reads_refuse_naming_the_permission() {
    for end in ["source", "target"] {
        let w = World::start(&Fixture::workload(&["w1"])).await;
        let server = if end == "source" {
            &w.source
        } else {
            &w.target
        };
        server.deny("get", "namespaces");
        let out = w.plugin(&MOVE_NS1).await;
        assert_eq!(out.code, 1, "{end}: {}", out.stderr);
        assert!(
            out.stderr.contains("namespaces") && out.stderr.contains("forbidden"),
            "{end}: {}",
            out.stderr
        );
        assert_plugin_wrote_nothing(&w, end);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_refused_after_its_freeze_releases_exactly_what_it_froze() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    // Frozen before by someone with `kubectl capi pause`: that freeze is theirs, and stays.
    let md: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
        w.source.client(),
        "ns1",
        &kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", "MachineSet"),
            "machinesets",
        ),
    );
    md.patch(
        "md1-a",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"metadata": {"annotations": {
            "cluster.x-k8s.io/paused": "", "kubectl-capi.dev/frozen": "{\"by\":\"them\"}"}}})),
    )
    .await
    .unwrap();
    // The target's webhook rejects the Cluster: only the dry runs after the freeze see it.
    w.target.inject(
        capi_sandbox::FaultRule::new(capi_sandbox::FaultAction::Fail {
            code: 422,
            retry_after: None,
        })
        .verbs(&["create"])
        .resource("clusters")
        .dry_run(true),
    );
    let out = w
        .plugin(&[&MOVE_NS1[..], &["foo", "--freeze"]].concat())
        .await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("the target cluster rejects cluster.cluster.x-k8s.io/foo")
            && out
                .stderr
                .contains("the freeze this command made (1 object(s)) was released again")
            && out
                .stderr
                .contains("move refused by its preflight, nothing was moved:"),
        "{}",
        out.stderr
    );
    let paused = |plural: &str, name: &str| {
        w.source
            .object("cluster.x-k8s.io", plural, "ns1", name)
            .or_else(|| {
                w.source
                    .object("controlplane.cluster.x-k8s.io", plural, "ns1", name)
            })
            .unwrap()["metadata"]["annotations"]
            .get("cluster.x-k8s.io/paused")
            .is_some()
    };
    assert!(!paused("kubeadmcontrolplanes", "foo"), "released");
    assert!(paused("machinesets", "md1-a"), "their freeze stays");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_by_the_dry_runs_says_what_it_wrote_and_undid() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    w.target.inject(
        capi_sandbox::FaultRule::new(capi_sandbox::FaultAction::Fail {
            code: 422,
            retry_after: None,
        })
        .verbs(&["create"])
        .resource("clusters")
        .dry_run(true),
    );
    let out = w.plugin(&MOVE_NS1).await;
    out.assert_stderr(1, "the namespace(s) ns1 its dry runs needed were created in the target and removed again, nothing else was written");
    assert!(w.target.object("", "namespaces", "", "ns1").is_none());
}

/// A real server refuses annotations over 256 KiB (keys and values together), also when a patch
/// grows them: an object with no room for the move's mark is refused before any write, with a
/// command that lists its annotations when pasted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_without_room_for_the_moves_mark_is_refused_before_any_write() {
    let w = World::start(&Fixture::workload(&["w1"])).await;
    let mut secret = w
        .source
        .dump()
        .into_iter()
        .find(|o| o["kind"] == "Secret" && o["metadata"]["namespace"] == "ns1")
        .unwrap();
    let name = secret["metadata"]["name"].as_str().unwrap().to_string();
    // 3 + 262,130 bytes: within the limit, but not with the mark's 41.
    secret["metadata"]["annotations"] = serde_json::json!({"big": "v".repeat(262_130)});
    let secrets: kube::Api<k8s_openapi::api::core::v1::Secret> =
        kube::Api::namespaced(w.source.client(), "ns1");
    secrets
        .patch(
            &name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                serde_json::json!({"metadata": {"annotations": secret["metadata"]["annotations"]}}),
            ),
        )
        .await
        .unwrap();
    let before = w.writes_per_server();
    let out = w.plugin(&MOVE_NS1).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    let reason = out
        .stderr
        .lines()
        .find(|l| l.contains("bytes of annotations"))
        .unwrap_or_else(|| panic!("named: {}", out.stderr));
    assert!(
        reason.contains(&format!(
            "Secret ns1/{name} carries 262133 bytes of annotations (keys and values), and with the 41 the move adds (kubectl-capi.dev/moved-by) it would pass the 262144 bytes"
        )),
        "{reason}"
    );
    assert!(w.writes_since(before).is_empty(), "nothing was written");
    let hint = reason.split('`').nth(1).unwrap();
    let listed = w.paste(hint).await;
    assert_eq!(listed.code, 0, "{hint}: {}", listed.stderr);
    assert!(listed.stdout.contains("\"big\""), "{hint} lists them");
}
