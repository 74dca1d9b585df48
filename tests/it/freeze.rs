//! `kubectl capi pause` / `resume` through the real binary against management clusters with
//! simulated controllers.

use crate::common::Writes;
use std::path::PathBuf;
use std::time::Duration;

use capi_sandbox::controllers::{Delays, Step};
use capi_sandbox::crds::Dialect;
use capi_sandbox::environment::{Environment, Managed, Options, Progress};
use capi_sandbox::workload::Workload;
use capi_sandbox::{FaultAction, FaultRule};
use serde_json::{Value, json};

use crate::common::{Output, run_plugin};

const SETTLE: Duration = Duration::from_secs(20);

struct Fixture {
    env: Environment,
    kubeconfig: PathBuf,
    _dir: tempfile::TempDir,
}

impl Fixture {
    async fn start(dialect: Dialect, workload: Workload) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        let env = Environment::start(&Options::new(dialect, Delays::millis(20)), &kubeconfig)
            .await
            .unwrap();
        env.create_workload(&workload).await.unwrap();
        env.wait_provisioned(&env.source, &workload.namespace, &workload.name, SETTLE)
            .await
            .unwrap();
        Fixture {
            env,
            kubeconfig,
            _dir: dir,
        }
    }

    async fn plugin(&self, args: &[&str]) -> Output {
        run_plugin(Some(&self.kubeconfig), args).await
    }

    fn version(&self) -> &'static str {
        if self.env.dialect == Dialect::V1beta1 {
            "v1beta1"
        } else {
            "v1beta2"
        }
    }

    async fn patch(&self, kind: &str, name: &str, patch: Value) {
        let group = if kind == "KubeadmControlPlane" {
            "controlplane.cluster.x-k8s.io"
        } else {
            "cluster.x-k8s.io"
        };
        capi_sandbox::api::merge_patch(
            &self.env.source.server.client(),
            &format!("{group}/{}", self.version()),
            kind,
            "default",
            name,
            &patch,
        )
        .await
        .unwrap();
    }

    /// Scales `kind/name` to `replicas` with the new Machines' nodes held back.
    async fn scale_holding_nodes(&self, kind: &str, name: &str, replicas: u32) {
        self.env.source.controllers.holds.hold(None, Step::Node);
        self.patch(kind, name, json!({"spec": {"replicas": replicas}}))
            .await;
    }

    async fn wait_held(&self) -> String {
        for _ in 0..500 {
            if let Some((name, _)) = self
                .env
                .source
                .controllers
                .holds
                .waiting()
                .into_iter()
                .next()
            {
                return name;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no Machine held");
    }

    fn objects(&self, managed: &Managed, kind: &str) -> Vec<Value> {
        managed
            .server
            .dump()
            .into_iter()
            .filter(|o| o["kind"] == kind && o["metadata"]["namespace"] == "default")
            .collect()
    }

    fn progress(&self, managed: &Managed, cluster: &str) -> Progress {
        Progress::of(&managed.server, self.env.dialect, "default", cluster)
    }
}

fn workload(cp: i64, workers: i64) -> Workload {
    let mut w = Workload::new("default", "seed");
    w.control_plane_replicas = cp;
    w.workers = workers;
    w.machine_deployment = workers > 0;
    w
}

fn paused(object: &Value) -> bool {
    object["metadata"]["annotations"]
        .get("cluster.x-k8s.io/paused")
        .is_some()
}

async fn seed_story(dialect: Dialect) {
    let f = Fixture::start(dialect, workload(1, 1)).await;
    f.scale_holding_nodes("KubeadmControlPlane", "seed-control-plane", 3)
        .await;
    let in_flight = f.wait_held().await;

    let refused = f.plugin(&["ready", "seed", "-o", "json"]).await;
    assert_eq!(refused.code, 1);
    let paused_out = f
        .plugin(&["pause", "seed", "--wait", "--timeout", "20s"])
        .await;
    assert_eq!(paused_out.code, 0, "{}", paused_out.stderr);
    assert_eq!(
        paused_out.stdout.lines().collect::<Vec<_>>(),
        vec![
            "kubeadmcontrolplane.controlplane.cluster.x-k8s.io/seed-control-plane frozen",
            "machinedeployment.cluster.x-k8s.io/seed-md-0 frozen",
            &*format!(
                "machineset.cluster.x-k8s.io/{} frozen",
                f.objects(&f.env.source, "MachineSet")[0]["metadata"]["name"]
                    .as_str()
                    .unwrap()
            ),
        ]
    );
    let kcp = f.objects(&f.env.source, "KubeadmControlPlane").remove(0);
    assert!(paused(&kcp));
    let marker: Value = serde_json::from_str(
        kcp["metadata"]["annotations"]["kubectl-capi.dev/frozen"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(marker["by"], "sandbox-source", "the kubeconfig user");
    let cluster = f.objects(&f.env.source, "Cluster").remove(0);
    assert!(
        cluster["spec"].get("paused").is_none() && !paused(&cluster),
        "the Cluster itself is never paused"
    );
    assert!(
        f.objects(&f.env.source, "Machine")
            .iter()
            .all(|m| !paused(m)),
        "nor its Machines"
    );

    f.env.source.controllers.holds.release_all();
    f.env.source.controllers.settle(SETTLE).await.unwrap();
    let machines = f.objects(&f.env.source, "Machine");
    assert_eq!(
        machines.len(),
        3,
        "1 worker + 2 control-plane Machines: Machine 3 is never created"
    );
    assert!(
        f.progress(&f.env.source, "seed").with_node == 3,
        "Machine 2 ({in_flight}) got its node"
    );
    let ready = f.plugin(&["ready", "seed"]).await;
    assert_eq!(
        ready.code, 0,
        "frozen with finished Machines passes: {}",
        ready.stdout
    );
    assert!(
        ready.stdout.contains("warn")
            && ready
                .stdout
                .contains("continues once resumed (kubectl capi resume)"),
        "{}",
        ready.stdout
    );

    let resumed = f
        .plugin(&["resume", "seed", "--wait", "--timeout", "20s"])
        .await;
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert!(
        resumed.stdout.lines().all(|l| l.ends_with(" resumed")),
        "{}",
        resumed.stdout
    );
    f.env.source.controllers.settle(SETTLE).await.unwrap();
    assert_eq!(
        f.objects(&f.env.source, "Machine").len(),
        4,
        "Machine 3 appears after resume"
    );
    assert!(
        f.objects(&f.env.source, "KubeadmControlPlane")
            .iter()
            .all(|k| !paused(k)
                && k["metadata"]["annotations"]
                    .get("kubectl-capi.dev/frozen")
                    .is_none())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_story_freeze_lets_in_flight_machines_finish() {
    seed_story(Dialect::V1beta2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_story_in_the_v1beta1_dialect() {
    seed_story(Dialect::V1beta1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machine_deployment_and_machine_pool_freezes() {
    let mut w = workload(1, 1);
    w.machine_pool = Some(1);
    let f = Fixture::start(Dialect::V1beta2, w).await;
    f.env.source.controllers.settle(SETTLE).await.unwrap();
    let instances = || {
        f.env
            .cloud
            .machines()
            .values()
            .filter(|m| m.name.starts_with("seed-mp-0-"))
            .count()
    };
    // Machines that are not the control plane's.
    let workers = || {
        f.objects(&f.env.source, "Machine")
            .iter()
            .filter(|m| {
                m["metadata"]["labels"]
                    .get("cluster.x-k8s.io/control-plane")
                    .is_none()
            })
            .count()
    };
    assert_eq!(instances(), 1);
    f.scale_holding_nodes("MachineDeployment", "seed-md-0", 3)
        .await;
    f.wait_held().await;
    let out = f.plugin(&["pause", "seed"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("machinepool.cluster.x-k8s.io/seed-mp-0 frozen")
    );
    assert!(
        out.stdout
            .contains("dockermachinepool.infrastructure.cluster.x-k8s.io/seed-mp-0 frozen")
    );
    f.patch(
        "MachineDeployment",
        "seed-md-0",
        json!({"spec": {"replicas": 5}}),
    )
    .await;
    f.patch("MachinePool", "seed-mp-0", json!({"spec": {"replicas": 3}}))
        .await;
    f.env.source.controllers.holds.release_all();
    f.env.source.controllers.settle(SETTLE).await.unwrap();
    assert_eq!(
        workers(),
        3,
        "the in-flight workers finished, none for replicas 5"
    );
    assert_eq!(instances(), 1, "the frozen pool did not scale");
    assert_eq!(f.plugin(&["resume", "seed"]).await.code, 0);
    f.env.source.controllers.settle(SETTLE).await.unwrap();
    assert_eq!(workers(), 5);
    assert_eq!(instances(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn someone_elses_pause_survives_a_cycle_and_pause_twice_is_a_no_op() {
    let f = Fixture::start(Dialect::V1beta2, workload(1, 1)).await;
    let set = f.objects(&f.env.source, "MachineSet").remove(0);
    let set_name = set["metadata"]["name"].as_str().unwrap().to_string();
    f.patch(
        "MachineSet",
        &set_name,
        json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": "ops-team"}}}),
    )
    .await;
    let first = f.plugin(&["pause", "--all"]).await;
    assert!(first.stdout.contains(&format!("machineset.cluster.x-k8s.io/{set_name} already paused (not by kubectl-capi), left as is")), "{}", first.stdout);
    let second = f.plugin(&["pause", "seed"]).await;
    assert_eq!(second.code, 0);
    assert!(second.stdout.contains("kubeadmcontrolplane.controlplane.cluster.x-k8s.io/seed-control-plane already frozen by kubectl-capi"));
    assert!(
        second.stderr.contains("nothing to pause"),
        "{}",
        second.stderr
    );
    let resumed = f.plugin(&["resume", "seed"]).await;
    assert!(resumed.stdout.contains(&format!(
        "machineset.cluster.x-k8s.io/{set_name} already paused (not by kubectl-capi), left as is"
    )));
    let set = f
        .objects(&f.env.source, "MachineSet")
        .into_iter()
        .find(|s| s["metadata"]["name"] == set_name.as_str())
        .unwrap();
    assert_eq!(
        set["metadata"]["annotations"]["cluster.x-k8s.io/paused"], "ops-team",
        "still paused, value untouched"
    );
    assert!(!paused(&f.objects(&f.env.source, "KubeadmControlPlane")[0]));
    let again = f.plugin(&["resume", "seed"]).await;
    assert_eq!(again.code, 0, "resume is idempotent");
    assert!(again.stdout.contains("seed-control-plane not frozen"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_during_pause_ends_frozen() {
    let f = Fixture::start(Dialect::V1beta2, workload(1, 1)).await;
    // Hold the MachineDeployment's patch long enough for a rollout to create a new MachineSet.
    f.env.source.server.inject(
        FaultRule::new(FaultAction::Latency(Duration::from_millis(1500)))
            .verbs(&["patch"])
            .resource("machinedeployments")
            .agent("kubectl-capi")
            .times(1),
    );
    let pause = tokio::spawn({
        let kubeconfig = f.kubeconfig.clone();
        async move { run_plugin(Some(&kubeconfig), &["pause", "seed"]).await }
    });
    for _ in 0..300 {
        if f.env
            .source
            .server
            .requests()
            .iter()
            .any(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT) && r.verb == "patch")
        {
            break;
        }
        if f.env.source.server.requests().iter().any(|r| {
            r.agent.starts_with(crate::common::PLUGIN_AGENT)
                && r.resource == "kubeadmcontrolplanes"
                && r.verb == "patch"
        }) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    f.patch(
        "MachineDeployment",
        "seed-md-0",
        json!({"spec": {"template": {"metadata": {"labels": {"rollout": "2"}}}}}),
    )
    .await;
    let out = pause.await.unwrap();
    assert_eq!(out.code, 0, "{}", out.stderr);
    f.env.source.controllers.settle(SETTLE).await.unwrap();
    let sets = f.objects(&f.env.source, "MachineSet");
    let log: Vec<String> = f
        .env
        .source
        .server
        .requests()
        .iter()
        .filter(|r| r.resource == "machinedeployments" || r.resource == "machinesets")
        .map(|r| {
            format!(
                "{} {} {} {}",
                r.agent.split('/').next().unwrap_or(""),
                r.verb,
                r.resource,
                r.code
            )
        })
        .collect();
    assert_eq!(
        sets.len(),
        2,
        "the rollout created a second MachineSet: {}\n{log:#?}",
        out.stdout
    );
    assert!(
        sets.iter().all(paused),
        "both MachineSets end frozen: {}",
        out.stdout
    );
    assert_eq!(
        out.stdout
            .lines()
            .filter(|l| l.starts_with("machineset.") && l.ends_with(" frozen"))
            .count(),
        2
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn freeze_travels_with_a_move_and_resumes_in_the_target() {
    let f = Fixture::start(Dialect::V1beta2, workload(1, 1)).await;
    assert_eq!(f.plugin(&["pause", "seed"]).await.code, 0);
    let source = &f.env.source;
    capi_sandbox::environment::hand_move(
        &source.server,
        &f.env.target.server,
        Dialect::V1beta2,
        "default",
        "seed",
    )
    .await
    .unwrap();
    f.env.target.controllers.settle(SETTLE).await.unwrap();
    assert!(
        f.objects(&f.env.target, "KubeadmControlPlane")
            .iter()
            .all(paused),
        "the freeze travelled"
    );
    let resumed = f
        .plugin(&[
            "resume",
            "seed",
            "--context",
            "sandbox-target",
            "--wait",
            "--timeout",
            "20s",
        ])
        .await;
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert!(
        resumed.stdout.contains(
            "kubeadmcontrolplane.controlplane.cluster.x-k8s.io/seed-control-plane resumed"
        )
    );
    capi_sandbox::api::merge_patch(
        &f.env.target.server.client(),
        "controlplane.cluster.x-k8s.io/v1beta2",
        "KubeadmControlPlane",
        "default",
        "seed-control-plane",
        &json!({"spec": {"replicas": 2}}),
    )
    .await
    .unwrap();
    f.env.target.controllers.settle(SETTLE).await.unwrap();
    assert_eq!(
        f.progress(&f.env.target, "seed").with_node,
        3,
        "the target's controllers scale after resume"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conflicts_are_retried_and_dry_runs_change_nothing() {
    let f = Fixture::start(Dialect::V1beta2, workload(1, 1)).await;
    let server = &f.env.source.server;
    server.reset_requests();
    let client = f.plugin(&["pause", "seed", "--dry-run"]).await;
    assert_eq!(client.code, 0);
    assert!(
        client
            .stdout
            .lines()
            .all(|l| l.ends_with(" frozen (dry run)")),
        "{}",
        client.stdout
    );
    let server_dry = f
        .plugin(&["pause", "seed", "--dry-run=server", "-o", "json"])
        .await;
    let result: Value = serde_json::from_str(&server_dry.stdout).unwrap();
    assert_eq!(result["kind"], "FreezeResult");
    assert!(
        result["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["action"] == "frozen")
    );
    let plugin_requests: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
        .collect();
    assert!(
        plugin_requests
            .iter()
            .any(|r| r.verb == "patch" && r.dry_run),
        "the server dry run sent dryRun=All patches"
    );
    assert!(
        plugin_requests.iter().all(|r| !r.is_mutation()),
        "nothing written: {plugin_requests:?}"
    );
    assert!(!paused(&f.objects(&f.env.source, "KubeadmControlPlane")[0]));

    server.inject(
        FaultRule::fail(409)
            .verbs(&["patch"])
            .resource("kubeadmcontrolplanes")
            .agent("kubectl-capi")
            .times(2),
    );
    let out = f.plugin(&["pause", "seed"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(paused(&f.objects(&f.env.source, "KubeadmControlPlane")[0]));
    let kcp_patches: Vec<u16> = server
        .requests()
        .into_iter()
        .filter(|r| {
            r.agent.starts_with(crate::common::PLUGIN_AGENT)
                && r.resource == "kubeadmcontrolplanes"
                && r.verb == "patch"
                && !r.dry_run
        })
        .map(|r| r.code)
        .collect();
    assert_eq!(
        kcp_patches,
        vec![409, 409, 200],
        "two conflicts, then the write"
    );
    let kcp = &f.objects(&f.env.source, "KubeadmControlPlane")[0];
    let annotations = kcp["metadata"]["annotations"].as_object().unwrap();
    assert_eq!(
        annotations.len(),
        2,
        "only the two keys were added: {annotations:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selection_is_required_and_unacknowledged_freezes_warn() {
    let sandbox = crate::common::Sandbox::start(Dialect::V1beta2).await;
    sandbox.server.load(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "quiet", "namespace": "default"}})).unwrap();
    sandbox.server.load(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment", "metadata": {"name": "quiet-md", "namespace": "default",
        "annotations": {"cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "5"}}, "spec": {"clusterName": "quiet", "replicas": 1}})).unwrap();
    let bare = sandbox.plugin(&["pause"]).await;
    assert_eq!(bare.code, 2);
    assert_eq!(
        bare.stderr.trim(),
        "error: name the Clusters to pause, or pass --all (every Cluster in the namespace), -A or -l; see 'kubectl capi pause --help'"
    );
    assert_eq!(
        sandbox
            .plugin(&["pause", "quiet", "--dry-run=maybe"])
            .await
            .code,
        2
    );
    assert!(sandbox.server.writes().is_empty());
    // No controller runs here: nothing reports Paused, as with older providers.
    let out = sandbox
        .plugin(&["pause", "quiet", "--wait", "--timeout", "5s"])
        .await;
    out.assert_stderr(0, "machinedeployment.cluster.x-k8s.io/quiet-md not acknowledged: controller does not report Paused");
    assert!(
        out.stderr.contains("is managed by an autoscaler"),
        "{}",
        out.stderr
    );
    let ready = sandbox.plugin(&["ready", "quiet", "-o", "json"]).await;
    let report: Value = serde_json::from_str(&ready.stdout).unwrap();
    assert_eq!(
        report["clusters"][0]["frozen"][0]["acknowledged"],
        Value::Null,
        "ready shows the freeze as unacknowledged"
    );
    assert_eq!(report["clusters"][0]["frozen"][0]["byKubectlCapi"], true);
}

/// A pause that waited for another command's lease acts on what is there once it holds it: what
/// that command took away meanwhile (a move's deletes) is read again under the lease, never
/// patched blind into a raw "patching …: not found".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_that_waited_for_the_lease_acts_on_what_is_there_then() {
    use crate::move_world::{Fixture, World};
    let w = World::start(&Fixture::workload(&["w1"])).await;
    crate::one_writer::held_from_another_host(&w.source, "kubectl capi move -n ns1 --to-context b")
        .await;
    let pause = w
        .command(&["pause", "--context", "source", "-n", "ns1", "--all"])
        .spawn()
        .unwrap();
    crate::common::wait_until("the pause to read the lease", || {
        w.source
            .requests()
            .iter()
            .any(|r| r.resource == "leases" && r.agent.starts_with(crate::common::PLUGIN_AGENT))
    })
    .await;
    // The other command moves the Cluster away while the pause waits.
    for object in w.source.dump() {
        let scaler = [
            "Cluster",
            "KubeadmControlPlane",
            "MachineDeployment",
            "MachineSet",
        ];
        if object["metadata"]["namespace"] == "ns1"
            && scaler.contains(&object["kind"].as_str().unwrap_or_default())
        {
            let (api_version, kind) = (
                object["apiVersion"].as_str().unwrap(),
                object["kind"].as_str().unwrap(),
            );
            let name = object["metadata"]["name"].as_str().unwrap();
            // (What it owns may be gone with it already.)
            let _ =
                capi_sandbox::api::delete(&w.source.client(), api_version, kind, "ns1", name).await;
        }
    }
    let out: crate::common::Output = pause.wait_with_output().await.unwrap().into();
    assert!(!out.stderr.contains("not found"), "{}", out.stderr);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.lines().last().is_some_and(|l| l.starts_with(
            "error: Cluster(s) ns1/foo were in namespace ns1 when this command started and are gone now"
        ) && l.contains("nothing was changed")),
        "after the wait's own lines, one refusal: {}",
        out.stderr
    );
    assert!(
        w.source.writes().iter().all(
            |r| !r.agent.starts_with(crate::common::PLUGIN_AGENT) || crate::common::is_lease(r)
        ),
        "nothing patched"
    );
}
