//! `kubectl capi move` between two sandbox management clusters with controllers.

use crate::common::Writes;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use capi_sandbox::FaultRule;
use capi_sandbox::controllers::{Delays, Step};
use capi_sandbox::crds::Dialect;
use capi_sandbox::environment::{
    Environment, Managed, Options, Progress, SOURCE_CONTEXT, TARGET_CONTEXT,
};
use capi_sandbox::workload::Workload;
use serde_json::{Value, json};

use crate::common::{Output, run_plugin};

pub(crate) const SETTLE: Duration = Duration::from_secs(30);

/// A source and a target management cluster with controllers, workload clusters provisioned in
/// the source.
pub(crate) struct Pair {
    pub(crate) env: Environment,
    pub(crate) kubeconfig: PathBuf,
    pub(crate) dir: tempfile::TempDir,
}

impl Pair {
    pub(crate) async fn start(dialect: Dialect, workloads: &[Workload]) -> Pair {
        Pair::start_with(Options::new(dialect, Delays::millis(20)), workloads).await
    }

    pub(crate) async fn start_with(options: Options, workloads: &[Workload]) -> Pair {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let env = Environment::start(&options, &kubeconfig).await.unwrap();
        for w in workloads {
            env.create_workload(w).await.unwrap();
        }
        for w in workloads {
            env.wait_provisioned(&env.source, &w.namespace, &w.name, SETTLE)
                .await
                .unwrap();
        }
        env.source.controllers.settle(SETTLE).await.unwrap();
        Pair {
            env,
            kubeconfig,
            dir,
        }
    }

    pub(crate) async fn plugin(&self, args: &[&str]) -> Output {
        run_plugin(Some(&self.kubeconfig), args).await
    }

    /// A hint the plugin printed, pasted into a shell against this pair.
    pub(crate) async fn paste(&self, hint: &str) -> Output {
        crate::common::paste(Some(&self.kubeconfig), hint).await
    }

    pub(crate) async fn move_(&self, extra: &[&str]) -> Output {
        let mut args = vec!["move", "--to-context", TARGET_CONTEXT];
        args.extend_from_slice(extra);
        self.plugin(&args).await
    }

    /// Writes by the plugin that changed state (dry runs and access reviews do not count).
    fn plugin_writes(&self, managed: &Managed) -> Vec<capi_sandbox::RequestRecord> {
        managed
            .server
            .writes()
            .into_iter()
            .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
            .collect()
    }

    pub(crate) fn objects(&self, managed: &Managed, namespace: &str) -> Vec<Value> {
        managed
            .server
            .dump()
            .into_iter()
            .filter(|o| {
                o["metadata"]["namespace"] == namespace
                    && !matches!(o["kind"].as_str(), Some("Namespace") | Some("Provider"))
            })
            .collect()
    }
}

/// The content (all but type, metadata and status) of the objects whose content the move holds
/// as text — Secrets, bootstrap configs, infrastructure machines — by kind and name.
fn contents_held_as_text(objects: &[Value]) -> BTreeMap<(String, String), Value> {
    objects
        .iter()
        .filter(|o| {
            let (api_version, kind) = (
                o["apiVersion"].as_str().unwrap(),
                o["kind"].as_str().unwrap(),
            );
            kind == "Secret"
                || api_version.starts_with("bootstrap.cluster.x-k8s.io/")
                || (api_version.starts_with("infrastructure.cluster.x-k8s.io/")
                    && kind.ends_with("Machine"))
        })
        .map(|o| {
            let mut content = o.as_object().unwrap().clone();
            for key in ["apiVersion", "kind", "metadata", "status"] {
                content.remove(key);
            }
            let name = o["metadata"]["name"].as_str().unwrap().to_string();
            (
                (o["kind"].as_str().unwrap().to_string(), name),
                Value::Object(content),
            )
        })
        .collect()
}

pub(crate) fn workload(name: &str, cp: i64, workers: i64) -> Workload {
    let mut w = Workload::new("default", name);
    w.control_plane_replicas = cp;
    w.workers = workers;
    w
}

/// Every owner reference in `namespace` of the target points at an existing object with that UID.
pub(crate) fn assert_owner_uids_resolve(pair: &Pair, namespace: &str) {
    let objects = pair.objects(&pair.env.target, namespace);
    let uids: BTreeMap<String, (String, String)> = pair
        .env
        .target
        .server
        .dump()
        .iter()
        .map(|o| {
            (
                o["metadata"]["uid"].as_str().unwrap().to_string(),
                (
                    o["kind"].as_str().unwrap().to_string(),
                    o["metadata"]["name"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect();
    for object in &objects {
        for owner in object["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let found = uids.get(owner["uid"].as_str().unwrap());
            assert_eq!(
                found,
                Some(&(
                    owner["kind"].as_str().unwrap().to_string(),
                    owner["name"].as_str().unwrap().to_string()
                )),
                "{} {} has a dangling owner {owner}",
                object["kind"],
                object["metadata"]["name"]
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_story_end_to_end() {
    let pair = Pair::start(Dialect::V1beta2, &[workload("seed", 1, 1)]).await;
    let source = &pair.env.source;
    source.controllers.holds.hold(None, Step::Node);
    capi_sandbox::api::merge_patch(
        &source.server.client(),
        "controlplane.cluster.x-k8s.io/v1beta2",
        "KubeadmControlPlane",
        "default",
        "seed-control-plane",
        &json!({"spec": {"replicas": 3}}),
    )
    .await
    .unwrap();
    crate::common::wait_until("the new Machine's node to be held", || {
        !source.controllers.holds.waiting().is_empty()
    })
    .await;
    let cloud_before = pair.env.cloud.totals();
    let before = pair.objects(&pair.env.source, "default").len();

    let refused = pair.move_(&["seed"]).await;
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("move refused by its preflight, nothing was written")
    );
    assert!(
        refused.stderr.contains("is still provisioning the node")
            && refused.stderr.contains("is scaling up"),
        "{}",
        refused.stderr
    );
    assert!(
        pair.plugin_writes(&pair.env.source).is_empty()
            && pair.plugin_writes(&pair.env.target).is_empty(),
        "refused means nothing written"
    );

    assert_eq!(pair.plugin(&["pause", "seed"]).await.code, 0);
    source.controllers.holds.release_all();
    assert_eq!(
        pair.plugin(&["ready", "seed", "--wait", "--timeout", "30s"])
            .await
            .code,
        0
    );
    let sent_on = contents_held_as_text(&pair.objects(&pair.env.source, "default"));
    let moved = pair.move_(&["seed", "-o", "json"]).await;
    assert_eq!(moved.code, 0, "{}", moved.stderr);
    let summary: Value = serde_json::from_str(&moved.stdout).unwrap();
    assert_eq!(summary["kind"], "MoveSummary");
    assert_eq!(
        summary["frozenInTarget"].as_array().unwrap().len(),
        3,
        "KCP, MachineDeployment, MachineSet stay frozen"
    );
    // What the move holds as text (never parsed) arrives as the source had it.
    assert!(sent_on.len() >= 8, "{:?}", sent_on.keys());
    assert_eq!(
        contents_held_as_text(&pair.objects(&pair.env.target, "default")),
        sent_on
    );
    // The verification record names each infrastructure machine's providerID, though the move
    // never parsed those objects whole.
    let record = pair
        .env
        .target
        .server
        .object("", "configmaps", "default", "kubectl-capi-moved-seed")
        .unwrap();
    let record: Value =
        serde_json::from_str(record["data"]["moved.json"].as_str().unwrap()).unwrap();
    let infrastructure_machines: BTreeMap<String, Value> = pair
        .objects(&pair.env.target, "default")
        .into_iter()
        .filter(|o| {
            o["apiVersion"]
                .as_str()
                .unwrap()
                .starts_with("infrastructure.cluster.x-k8s.io/")
                && o["kind"].as_str().unwrap().ends_with("Machine")
        })
        .map(|o| {
            let key = format!(
                "{} {}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            );
            (key, o["spec"]["providerID"].clone())
        })
        .collect();
    assert!(
        infrastructure_machines.len() >= 2
            && infrastructure_machines
                .values()
                .all(|id| id.as_str().is_some_and(|id| !id.is_empty())),
        "{infrastructure_machines:?}"
    );
    assert_eq!(
        serde_json::from_value::<BTreeMap<String, Value>>(record["infrastructureMachines"].clone())
            .unwrap(),
        infrastructure_machines
    );

    assert!(
        pair.objects(&pair.env.source, "default")
            .iter()
            .all(|o| o["kind"] == "ConfigMap"),
        "nothing left in the source"
    );
    let moved_count: usize = summary["created"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap() as usize)
        .sum();
    assert!(moved_count >= before - 1, "{moved_count} of {before}");
    assert_owner_uids_resolve(&pair, "default");
    let cluster = pair
        .env
        .target
        .server
        .object("cluster.x-k8s.io", "clusters", "default", "seed")
        .unwrap();
    assert!(
        cluster["spec"].get("paused").is_none(),
        "unpaused in the target"
    );
    assert!(
        cluster["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .all(|m| m["manager"] != "kubectl-capi"),
        "source managedFields restored"
    );

    // The note names the command that releases the freeze in the target; pasted, it does.
    let release = moved
        .stderr
        .lines()
        .find(|l| l.contains("stay frozen in the target"))
        .and_then(|l| l.split('`').nth(1))
        .unwrap_or_else(|| panic!("a release hint: {}", moved.stderr));
    assert_eq!(
        release,
        format!("kubectl capi resume seed --context {TARGET_CONTEXT} -n default")
    );
    let released = pair.paste(release).await;
    assert_eq!(released.code, 0, "{}", released.stderr);
    pair.env
        .wait_provisioned(&pair.env.target, "default", "seed", SETTLE)
        .await
        .unwrap();
    assert_eq!(
        Progress::of(&pair.env.target.server, Dialect::V1beta2, "default", "seed").with_node,
        4,
        "the scale-up finished in the target"
    );
    let (created, deleted) = pair.env.cloud.totals();
    assert_eq!(
        (created - cloud_before.0, deleted - cloud_before.1),
        (1, 0),
        "only the third control-plane machine was created; nothing was re-provisioned or orphaned"
    );
    let ready = pair
        .plugin(&[
            "ready",
            "seed",
            "--context",
            TARGET_CONTEXT,
            "--wait",
            "--timeout",
            "30s",
        ])
        .await;
    assert_eq!(ready.code, 0, "{}", ready.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_preflight_failure_is_reported_and_nothing_is_written() {
    let pair = Pair::start(Dialect::V1beta2, &[workload("alpha", 1, 1)]).await;
    let target = &pair.env.target.server;
    // An older infrastructure provider in the target, a missing one, and no right to create Machines there.
    capi_sandbox::api::merge_patch(
        &target.client(),
        "clusterctl.cluster.x-k8s.io/v1alpha3",
        "Provider",
        "capd-system",
        "infrastructure-docker",
        &json!({"version": "v1.2.0"}),
    )
    .await
    .unwrap();
    capi_sandbox::api::delete(
        &target.client(),
        "clusterctl.cluster.x-k8s.io/v1alpha3",
        "Provider",
        "capi-kubeadm-bootstrap-system",
        "bootstrap-kubeadm",
    )
    .await
    .unwrap();
    target.deny("create", "machines");
    pair.env.source.server.deny("delete", "secrets");
    let out = pair.move_(&[]).await;
    assert_eq!(out.code, 1, "{}", out.stderr);
    for expected in [
        "failed to check providers in target cluster: provider infrastructure-docker in the target cluster is older than in the source cluster (source: v1.14.0, target: v1.2.0)",
        "failed to check providers in target cluster: provider bootstrap-kubeadm not found in the target cluster",
        "missing permission in the target cluster: create machines.cluster.x-k8s.io in namespace default",
        "missing permission in the source cluster: delete secrets in namespace default",
    ] {
        assert!(out.stderr.contains(expected), "{expected}\n{}", out.stderr);
    }
    assert!(
        pair.plugin_writes(&pair.env.source).is_empty()
            && pair.plugin_writes(&pair.env.target).is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_rejections_and_paused_clusters_are_caught_before_any_write() {
    let pair = Pair::start(Dialect::V1beta2, &[workload("alpha", 1, 0)]).await;
    pair.env.target.server.inject(
        FaultRule::fail(422)
            .verbs(&["create"])
            .resource("kubeadmcontrolplanes")
            .agent("kubectl-capi"),
    );
    let out = pair.move_(&["--dry-run=server"]).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("the target cluster rejects kubeadmcontrolplane.controlplane.cluster.x-k8s.io/alpha-control-plane"), "{}", out.stderr);
    assert!(
        pair.env
            .target
            .server
            .requests()
            .iter()
            .any(|r| r.verb == "create" && r.dry_run),
        "the check is a server-side dry run"
    );
    assert!(pair.plugin_writes(&pair.env.target).is_empty());
    pair.env.target.server.clear_faults();

    capi_sandbox::api::merge_patch(
        &pair.env.source.server.client(),
        "cluster.x-k8s.io/v1beta2",
        "Cluster",
        "default",
        "alpha",
        &json!({"spec": {"paused": true}}),
    )
    .await
    .unwrap();
    let paused = pair.move_(&[]).await;
    assert_eq!(paused.code, 1);
    assert!(
        paused.stderr.contains(
            "cannot start operation while the following Clusters are paused: default/alpha"
        ),
        "{}",
        paused.stderr
    );
    assert!(pair.plugin_writes(&pair.env.source).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_clusters_move_alone_and_a_shared_class_is_copied_but_kept() {
    let pair = Pair::start(
        Dialect::V1beta2,
        &[workload("alpha", 1, 1), workload("beta", 1, 0)],
    )
    .await;
    let client = pair.env.source.server.client();
    capi_sandbox::api::create(&client, &json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "ClusterClass", "metadata": {"name": "shared", "namespace": "default"},
        "spec": {"infrastructure": {"templateRef": {"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerClusterTemplate", "name": "shared"}}}})).await.unwrap();
    let class = pair
        .env
        .source
        .server
        .object("cluster.x-k8s.io", "clusterclasses", "default", "shared")
        .unwrap();
    capi_sandbox::api::create(&client, &json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerClusterTemplate",
        "metadata": {"name": "shared", "namespace": "default", "ownerReferences": [{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "ClusterClass", "name": "shared", "uid": class["metadata"]["uid"]}]},
        "spec": {"template": {"spec": {}}}})).await.unwrap();
    for cluster in ["alpha", "beta"] {
        capi_sandbox::api::merge_patch(
            &client,
            "cluster.x-k8s.io/v1beta2",
            "Cluster",
            "default",
            cluster,
            &json!({"spec": {"topology": {"classRef": {"name": "shared"}}}}),
        )
        .await
        .unwrap();
    }
    let plan = pair
        .plugin(&["move", "alpha", "--dry-run", "-o", "json"])
        .await;
    let plan: Value = serde_json::from_str(&plan.stdout).unwrap();
    let kept: BTreeSet<String> = plan["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["objects"].as_array().unwrap().clone())
        .filter(|o| o["keptInSource"] == true)
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        kept,
        BTreeSet::from([
            "ClusterClass/shared".to_string(),
            "DockerClusterTemplate/shared".to_string()
        ])
    );
    let wide = pair
        .plugin(&["move", "alpha", "--dry-run", "-o", "wide"])
        .await;
    assert_eq!(wide.code, 0, "{}", wide.stderr);

    // The tree: alpha at the root, its control plane under it and Machines under that; the
    // shared class is its own root, marked as copied.
    let lines: Vec<&str> = wide.stdout.lines().collect();
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("{needle} in\n{}", wide.stdout))
    };
    assert_eq!(
        lines[at("cluster.cluster.x-k8s.io/alpha")],
        "cluster.cluster.x-k8s.io/alpha  (namespace default)"
    );
    assert!(
        lines[at("kubeadmcontrolplane.")].starts_with("├─ ")
            || lines[at("kubeadmcontrolplane.")].starts_with("└─ ")
    );
    assert!(lines[at("machine.cluster.x-k8s.io/alpha-")].starts_with("│  "));
    assert_eq!(
        lines[at("clusterclass.cluster.x-k8s.io/shared")],
        "clusterclass.cluster.x-k8s.io/shared  (namespace default)  (copied, kept in source)"
    );
    assert!(!wide.stdout.contains("cluster.cluster.x-k8s.io/beta"));
    assert!(
        pair.plugin_writes(&pair.env.source).is_empty()
            && pair.plugin_writes(&pair.env.target).is_empty(),
        "a client dry run writes nothing"
    );

    let out = pair.move_(&["alpha"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("2 copied and kept in the source"),
        "{}",
        out.stdout
    );
    let names = |m: &Managed, kind: &str| -> BTreeSet<String> {
        pair.objects(m, "default")
            .iter()
            .filter(|o| o["kind"] == kind)
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        names(&pair.env.source, "Cluster"),
        BTreeSet::from(["beta".to_string()])
    );
    assert_eq!(
        names(&pair.env.target, "Cluster"),
        BTreeSet::from(["alpha".to_string()])
    );
    assert!(
        names(&pair.env.source, "ClusterClass").contains("shared")
            && names(&pair.env.target, "ClusterClass").contains("shared")
    );
    assert!(
        names(&pair.env.source, "Machine")
            .iter()
            .all(|m| m.starts_with("beta")),
        "beta's Machines stay"
    );
    assert_owner_uids_resolve(&pair, "default");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v1beta1_dialect_moves_too() {
    let pair = Pair::start(Dialect::V1beta1, &[workload("old", 1, 1)]).await;
    let cloud_before = pair.env.cloud.totals();
    let out = pair.move_(&["-v", "1"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    // -v prints kubectl's confirmation lines per object and phase, on stderr only.
    for line in [
        "cluster.cluster.x-k8s.io/old paused",
        "cluster.cluster.x-k8s.io/old created",
        "secret/old-kubeconfig created",
        "secret/old-kubeconfig deleted",
        "cluster.cluster.x-k8s.io/old deleted",
        "cluster.cluster.x-k8s.io/old unpaused",
    ] {
        assert!(
            out.stderr.lines().any(|l| l == line),
            "{line}: {}",
            out.stderr
        );
    }
    assert!(
        !out.stdout.lines().any(|l| l.ends_with(" created")),
        "{}",
        out.stdout
    );

    pair.env
        .wait_provisioned(&pair.env.target, "default", "old", SETTLE)
        .await
        .unwrap();
    assert_eq!(
        pair.env.cloud.totals(),
        cloud_before,
        "adopted, not re-provisioned"
    );
    assert_owner_uids_resolve(&pair, "default");
    assert!(
        pair.objects(&pair.env.source, "default")
            .iter()
            .all(|o| o["kind"] == "ConfigMap")
    );
    let ready = pair
        .plugin(&[
            "ready",
            "-A",
            "--context",
            TARGET_CONTEXT,
            "--wait",
            "--timeout",
            "30s",
        ])
        .await;
    assert_eq!(ready.code, 0, "{}", ready.stdout);
    let _ = SOURCE_CONTEXT;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_command_freezes_waits_moves_and_releases_the_freeze_in_the_target() {
    let pair = Pair::start(Dialect::V1beta2, &[workload("seed", 1, 1)]).await;
    let source = &pair.env.source;
    source.controllers.holds.hold(None, Step::Node);
    capi_sandbox::api::merge_patch(
        &source.server.client(),
        "controlplane.cluster.x-k8s.io/v1beta2",
        "KubeadmControlPlane",
        "default",
        "seed-control-plane",
        &json!({"spec": {"replicas": 3}}),
    )
    .await
    .unwrap();
    crate::common::wait_until("the new Machine's node to be held", || {
        !source.controllers.holds.waiting().is_empty()
    })
    .await;
    let cloud_before = pair.env.cloud.totals();
    // While the node is held, the wait times out: exit 1, nothing moved, the freeze stays and
    // the message says how to go on.
    let timed_out = pair
        .move_(&[
            "seed",
            "--context",
            SOURCE_CONTEXT,
            "--freeze",
            "--wait-ready",
            "--timeout",
            "1s",
        ])
        .await;
    assert_eq!(timed_out.code, 1, "{}", timed_out.stderr);
    assert!(
        timed_out
            .stderr
            .contains("did not become ready to move within 1s")
            && timed_out
                .stderr
                .contains("run this command again to continue"),
        "{}",
        timed_out.stderr
    );
    // The release hint repeats the user's --context; pasted, it releases the freeze.
    let release = timed_out
        .stderr
        .lines()
        .find(|l| l.contains("stays frozen"))
        .and_then(|l| l.split('`').nth(1))
        .unwrap_or_else(|| panic!("a hint: {}", timed_out.stderr));
    assert_eq!(
        release,
        format!("kubectl capi resume seed --context {SOURCE_CONTEXT}")
    );
    let released = pair.paste(release).await;
    assert_eq!(released.code, 0, "{}", released.stderr);
    assert!(
        released.stdout.contains("seed-control-plane resumed"),
        "{}",
        released.stdout
    );
    assert!(pair.plugin_writes(&pair.env.target).is_empty());
    let kcp = source
        .server
        .object(
            "controlplane.cluster.x-k8s.io",
            "kubeadmcontrolplanes",
            "default",
            "seed-control-plane",
        )
        .unwrap();
    assert!(kcp["metadata"]["annotations"]["kubectl-capi.dev/frozen"].is_null());

    // Run again; the in-flight Machine gets its node while the command waits.
    let holds = source.controllers.holds.clone();
    let server = source.server.clone();
    let before = server.watches(crate::common::PLUGIN_AGENT);
    let release = tokio::spawn(async move {
        // Once the command watches the Clusters become ready (after its freeze).
        crate::common::wait_until("the move to wait for readiness", || {
            server.watches(crate::common::PLUGIN_AGENT) > before
        })
        .await;
        holds.release_all();
    });

    let out = pair
        .move_(&[
            "seed",
            "--freeze",
            "--wait-ready",
            "--timeout",
            "60s",
            "-o",
            "json",
        ])
        .await;
    release.await.unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let summary: Value = serde_json::from_str(&out.stdout).expect("stdout is the summary alone");
    assert_eq!(summary["kind"], "MoveSummary");
    assert!(
        timed_out.stderr.contains("seed-control-plane frozen")
            && out.stderr.contains("seed-control-plane frozen")
            && out.stderr.contains("seed-control-plane resumed"),
        "the steps report on stderr: {}",
        out.stderr
    );
    assert!(
        pair.objects(&pair.env.source, "default")
            .iter()
            .all(|o| o["kind"] == "ConfigMap"),
        "nothing left in the source"
    );
    // Released in the target: the scale-up to 3 finishes there.
    pair.env
        .wait_provisioned(&pair.env.target, "default", "seed", SETTLE)
        .await
        .unwrap();
    let kcp = pair
        .env
        .target
        .server
        .object(
            "controlplane.cluster.x-k8s.io",
            "kubeadmcontrolplanes",
            "default",
            "seed-control-plane",
        )
        .unwrap();
    assert!(
        kcp["metadata"]["annotations"]
            .as_object()
            .is_none_or(|a| !a.contains_key("cluster.x-k8s.io/paused")
                && !a.contains_key("kubectl-capi.dev/frozen")),
        "{kcp}"
    );
    assert_eq!(
        Progress::of(&pair.env.target.server, Dialect::V1beta2, "default", "seed").with_node,
        4
    );
    let (created, deleted) = pair.env.cloud.totals();
    assert_eq!(
        (created - cloud_before.0, deleted - cloud_before.1),
        (1, 0),
        "the in-flight machine finished in the source, the third was created in the target"
    );
}

/// Each end is connected once per command: one `move --freeze --wait-ready --verify` reads each
/// cluster's `kube-system` once, discovers it once and lists its CRDs once, however many steps
/// (the checks before the freeze, the freeze, the wait, the move, the release, the verification)
/// use it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_story_connects_each_end_once() {
    let pair = Pair::start(Dialect::V1beta2, &[workload("once", 1, 1)]).await;
    let out = pair
        .move_(&["once", "--freeze", "--wait-ready", "--verify"])
        .await;
    out.assert_stderr(0, "once-control-plane resumed");
    for (end, managed) in [("source", &pair.env.source), ("target", &pair.env.target)] {
        let requests: Vec<_> = managed
            .server
            .requests()
            .into_iter()
            .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
            .collect();
        let count = |what: &dyn Fn(&capi_sandbox::RequestRecord) -> bool| {
            requests.iter().filter(|r| what(r)).count()
        };
        let kube_system =
            count(&|r| r.resource == "namespaces" && r.name.as_deref() == Some("kube-system"));
        let discovery = count(&|r| r.path == "/apis");
        let crd_lists = count(&|r| r.verb == "list" && r.resource == "customresourcedefinitions");
        assert_eq!(
            (kube_system, discovery, crd_lists),
            (1, 1, 1),
            "the {end}'s kube-system, discovery and CRD list, read once each"
        );
    }
}

/// clusterctl's block-move: a provider that annotates an object holds the move, after pausing,
/// until it removes the annotation. The move watches the objects that carry it — it does not
/// poll the source — and goes on when the annotation is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_waits_on_a_watch_for_block_move_to_go() {
    let pair = Pair::start(Dialect::V1beta2, &[workload("held", 1, 0)]).await;
    let source = pair.env.source.server.clone();
    let client = source.client();
    let annotate = |value: Value| {
        let client = client.clone();
        async move {
            capi_sandbox::api::merge_patch(
                &client,
                "infrastructure.cluster.x-k8s.io/v1beta2",
                "DockerCluster",
                "default",
                "held",
                &json!({"metadata": {"annotations": {"clusterctl.cluster.x-k8s.io/block-move": value}}}),
            )
            .await
            .unwrap();
        }
    };
    annotate(json!("")).await;
    let lists = || {
        source
            .requests()
            .iter()
            .filter(|r| {
                r.agent.starts_with(crate::common::PLUGIN_AGENT)
                    && r.verb == "list"
                    && r.resource == "dockerclusters"
            })
            .count()
    };
    let watched = || {
        source.requests().iter().any(|r| {
            r.agent.starts_with(crate::common::PLUGIN_AGENT)
                && r.verb == "watch"
                && r.resource == "dockerclusters"
        })
    };
    let mover = pair.move_(&["held"]);
    let unblock = async {
        crate::common::wait_until("the move to watch the blocked DockerCluster", watched).await;
        let while_blocked = lists();
        annotate(Value::Null).await;
        while_blocked
    };
    let (out, lists_while_blocked) = tokio::join!(mover, unblock);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        lists() - lists_while_blocked,
        1,
        "one read once the annotation is gone, no polling meanwhile"
    );
    assert!(
        pair.env
            .target
            .server
            .object(
                "infrastructure.cluster.x-k8s.io",
                "dockerclusters",
                "default",
                "held"
            )
            .is_some(),
        "moved once unblocked"
    );
}
