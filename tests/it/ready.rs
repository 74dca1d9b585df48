//! `kubectl capi ready` through the real binary against the sandbox.

use crate::common::Writes;
use std::time::Duration;

use capi_sandbox::controllers::Delays;
use capi_sandbox::crds::Dialect;
use capi_sandbox::environment::{Environment, Options};
use capi_sandbox::workload::Workload;
use serde_json::{Value, json};

use crate::common::{Sandbox, run_plugin};

pub(crate) async fn scaling_environment(dir: &std::path::Path) -> Environment {
    let env = Environment::start(
        &Options::new(Dialect::V1beta2, Delays::millis(20)),
        &dir.join("kubeconfig"),
    )
    .await
    .unwrap();
    let workload = Workload::new("default", "seed");
    env.create_workload(&workload).await.unwrap();
    env.wait_provisioned(&env.source, "default", "seed", Duration::from_secs(30))
        .await
        .unwrap();
    crate::common::scale_up_holding_a_node(&env, "default", "seed").await;
    env
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_situation_names_the_scaling_owner_and_wait_returns_when_it_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let env = scaling_environment(dir.path()).await;
    let kubeconfig = dir.path().join("kubeconfig");
    let refused = run_plugin(Some(&kubeconfig), &["ready", "seed", "-o", "json"]).await;
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    let report: Value = serde_json::from_str(&refused.stdout).unwrap();
    let cluster = &report["clusters"][0];
    assert_eq!(cluster["ready"], false);
    assert_eq!(cluster["machines"], json!({"total": 3, "withNode": 2}));
    let failing: Vec<&Value> = cluster["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["status"] == "fail")
        .collect();
    let held = &env.source.controllers.holds.waiting()[0].0;
    assert!(failing.iter().any(|c| c["check"] == "machine-node"
        && c["message"] == format!("cannot start the move operation while \"cluster.x-k8s.io/v1beta2, Kind=Machine\" default/{held} is still provisioning the node; wait for it with `kubectl capi ready seed -n default --wait`")));
    // The first blocker's next step, pasted, waits until the Cluster can be moved.
    let hint = failing[0]["message"]
        .as_str()
        .unwrap()
        .split('`')
        .nth(1)
        .unwrap()
        .to_string();
    let pasted = tokio::spawn({
        let kubeconfig = kubeconfig.clone();
        async move {
            crate::common::pasted_command(Some(&kubeconfig), &hint)
                .output()
                .await
                .unwrap()
        }
    });
    assert!(failing.iter().any(|c| c["check"] == "scaling"
        && c["object"]["kind"] == "KubeadmControlPlane"
        && c["message"].as_str().unwrap().starts_with(
            "KubeadmControlPlane default/seed-control-plane is scaling up (2 of 3 Machines)"
        )));

    let waiter = tokio::spawn({
        let kubeconfig = kubeconfig.clone();
        async move { run_plugin(Some(&kubeconfig), &["ready", "--wait", "--timeout", "60s"]).await }
    });
    // Both commands (the pasted hint and this one) watch the Machines before the node comes.
    let machine_watches = || {
        env.source
            .server
            .requests()
            .iter()
            .filter(|r| {
                r.verb == "watch"
                    && r.resource == "machines"
                    && r.agent.starts_with(crate::common::PLUGIN_AGENT)
            })
            .count()
    };
    crate::common::wait_until("both waits to watch the Machines", || {
        machine_watches() >= 2
    })
    .await;
    env.source.controllers.holds.release_all();
    let waited = waiter.await.unwrap();
    assert_eq!(waited.code, 0, "{}", waited.stderr);
    let pasted = pasted.await.unwrap();
    assert_eq!(
        pasted.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&pasted.stderr)
    );
    assert!(
        String::from_utf8_lossy(&pasted.stdout).starts_with("Cluster default/seed: ready to move"),
        "{}",
        String::from_utf8_lossy(&pasted.stdout)
    );
    assert!(
        waited.stdout.contains("seed   True    4/4"),
        "{}",
        waited.stdout
    );
    assert!(
        waited
            .stderr
            .contains("default/seed: 2/3 Machines with a node, not ready"),
        "one plain line per state change off a TTY: {}",
        waited.stderr
    );
    assert!(
        !waited.stderr.contains("wait for it with"),
        "a wait does not tell its user to run the wait it is: {}",
        waited.stderr
    );
    assert!(
        env.source
            .server
            .writes()
            .iter()
            .any(|r| r.agent.starts_with("capi-sandbox-controllers")),
        "the controllers wrote"
    );
    let plugin_writes: Vec<_> = env
        .source
        .server
        .writes()
        .into_iter()
        .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
        .collect();
    assert!(
        plugin_writes.is_empty(),
        "ready wrote nothing: {plugin_writes:?}"
    );
    assert!(
        env.source
            .server
            .requests()
            .iter()
            .any(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT)),
        "the plugin's requests are recognisable"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_times_out_with_exit_code_1() {
    let dir = tempfile::tempdir().unwrap();
    let _env = scaling_environment(dir.path()).await;
    let output = run_plugin(
        Some(&dir.path().join("kubeconfig")),
        &["ready", "--wait", "--timeout", "1s", "-o", "json"],
    )
    .await;
    assert_eq!(output.code, 1);
    assert!(
        output.stderr.contains("timed out after 1s"),
        "{}",
        output.stderr
    );
    let report: Value =
        serde_json::from_str(&output.stdout).expect("only the final JSON on stdout");
    assert_eq!(report["ready"], false);
}

/// One Cluster of the golden namespace, its control plane initialized, with `replicas` desired.
fn golden_cluster(name: &str, env: &str, replicas: u32) -> String {
    format!(
        r#"---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {{name: {name}, namespace: golden, labels: {{env: {env}}}}}
spec:
  controlPlaneRef: {{apiGroup: controlplane.cluster.x-k8s.io, kind: KubeadmControlPlane, name: {name}-cp}}
status:
  initialization: {{infrastructureProvisioned: true, controlPlaneInitialized: true}}
  conditions: [{{type: ControlPlaneInitialized, status: 'True', reason: Initialized, lastTransitionTime: '2026-01-01T00:00:00Z'}}]
---
apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KubeadmControlPlane
metadata: {{name: {name}-cp, namespace: golden, labels: {{cluster.x-k8s.io/cluster-name: {name}}}}}
spec: {{replicas: {replicas}}}
"#
    )
}

/// Machines need their owner's uid, so they are added after the owners exist.
fn golden_machine(server: &capi_sandbox::ApiServer, cluster: &str, name: &str, node: bool) {
    let kcp = server
        .object(
            "controlplane.cluster.x-k8s.io",
            "kubeadmcontrolplanes",
            "golden",
            &format!("{cluster}-cp"),
        )
        .unwrap();
    let status = if node {
        json!({"nodeRef": {"name": name}, "conditions": [{"type": "NodeHealthy", "status": "True", "reason": "Healthy", "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
    } else {
        json!({})
    };
    server
        .load(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
            "metadata": {"name": name, "namespace": "golden", "labels": {"cluster.x-k8s.io/cluster-name": cluster, "cluster.x-k8s.io/control-plane": ""},
                "ownerReferences": [{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane", "name": kcp["metadata"]["name"], "uid": kcp["metadata"]["uid"], "controller": true}]},
            "spec": {"clusterName": cluster}, "status": status}))
        .unwrap();
}

pub async fn golden_sandbox() -> Sandbox {
    let sandbox = Sandbox::start(Dialect::V1beta2).await;
    let golden = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: golden}}\n{}{}",
        golden_cluster("alpha", "prod", 1),
        golden_cluster("beta", "dev", 2)
    );
    sandbox.server.load_yaml(&golden).unwrap();
    golden_machine(&sandbox.server, "alpha", "alpha-cp-1", true);
    golden_machine(&sandbox.server, "beta", "beta-cp-1", true);
    golden_machine(&sandbox.server, "beta", "beta-cp-2", false);
    sandbox
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn golden_table_wide_details_json_and_name() {
    let sandbox = golden_sandbox().await;
    let table = sandbox.plugin(&["ready", "-n", "golden"]).await;
    assert_eq!(table.code, 1);
    assert_eq!(
        table.stdout,
        "NAMESPACE   NAME    READY   MACHINES   FROZEN   REASON
golden      alpha   True    1/1        -        -
golden      beta    False   1/2        -        cannot start the move operation while \"cluster.x-k8s.io/v1beta2, Kind=Machine\" golden/beta-cp-2 is still provisioning the node; wait for it with `kubectl capi ready beta -n golden --wait`
"
    );

    let wide = sandbox
        .plugin(&["ready", "-n", "golden", "-o", "wide"])
        .await;
    assert_eq!(
        wide.stdout,
        "NAMESPACE   NAME    READY   MACHINES   FROZEN   CONTROL-PLANE   WORKERS   PAUSED   WARNINGS   REASON
golden      alpha   True    1/1        -        1/1             0/0       false    0          -
golden      beta    False   1/2        -        1/2             0/0       false    0          cannot start the move operation while \"cluster.x-k8s.io/v1beta2, Kind=Machine\" golden/beta-cp-2 is still provisioning the node; wait for it with `kubectl capi ready beta -n golden --wait`
"
    );

    let details = sandbox.plugin(&["ready", "beta", "-n", "golden"]).await;
    assert_eq!(details.code, 1);
    assert_eq!(
        details.stdout,
        "Cluster golden/beta: not ready to move (1/2 Machines with a node)
CHECK                        STATUS   OBJECT                               MESSAGE
machine-node                 fail     machine.cluster.x-k8s.io/beta-cp-2   cannot start the move operation while \"cluster.x-k8s.io/v1beta2, Kind=Machine\" golden/beta-cp-2 is still provisioning the node; wait for it with `kubectl capi ready beta -n golden --wait`
infrastructure-provisioned   pass     cluster.cluster.x-k8s.io/beta        infrastructure provisioned
control-plane-initialized    pass     cluster.cluster.x-k8s.io/beta        control plane initialized
"
    );

    let json = sandbox
        .plugin(&["ready", "alpha", "-n", "golden", "-o", "json"])
        .await;
    assert_eq!(json.code, 0);
    let cluster_ref = json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "namespace": "golden", "name": "alpha"});
    assert_eq!(
        serde_json::from_str::<Value>(&json.stdout).unwrap(),
        json!({"apiVersion": "kubectl-capi/v1", "kind": "ReadinessReport", "ready": true, "clusters": [{
        "namespace": "golden", "name": "alpha", "ready": true, "machines": {"total": 1, "withNode": 1}, "frozen": [],
        "checks": [
            {"check": "infrastructure-provisioned", "status": "pass", "object": cluster_ref, "message": "infrastructure provisioned"},
            {"check": "control-plane-initialized", "status": "pass", "object": cluster_ref, "message": "control plane initialized"},
            {"check": "machine-node", "status": "pass", "object": cluster_ref, "message": "all 1 Machines have a node"},
        ]}]})
    );
    assert!(json.stderr.is_empty(), "nothing but data: {}", json.stderr);

    let names = sandbox
        .plugin(&["ready", "-n", "golden", "-o", "name"])
        .await;
    assert_eq!(
        names.stdout, "cluster.cluster.x-k8s.io/alpha\n",
        "only ready clusters"
    );
    let yaml = sandbox
        .plugin(&["ready", "-n", "golden", "-o", "yaml"])
        .await;
    assert!(
        yaml.stdout
            .starts_with("apiVersion: kubectl-capi/v1\nkind: ReadinessReport\n"),
        "{}",
        yaml.stdout
    );

    let coloured = sandbox
        .plugin(&["ready", "-n", "golden", "--color", "always"])
        .await;
    assert!(
        coloured.stdout.contains("\u{1b}["),
        "--color always colours status words"
    );
    let no_color = sandbox
        .plugin(&["ready", "-n", "golden", "--color", "always", "-o", "json"])
        .await;
    assert!(!no_color.stdout.contains("\u{1b}["), "never inside JSON");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selection_errors_and_label_selector() {
    let sandbox = golden_sandbox().await;
    let selected = sandbox
        .plugin(&["ready", "-n", "golden", "-l", "env=prod", "-o", "name"])
        .await;
    assert_eq!(
        (selected.code, selected.stdout.as_str()),
        (0, "cluster.cluster.x-k8s.io/alpha\n")
    );
    let missing = sandbox.plugin(&["ready", "gamma", "-n", "golden"]).await;
    assert_eq!(missing.code, 2);
    assert_eq!(
        missing.stderr.trim(),
        "error: clusters.cluster.x-k8s.io \"gamma\" not found in namespace golden; list them with `kubectl get clusters.cluster.x-k8s.io -A`"
    );
    // With the kubeconfig given as a flag, the listing repeats it; pasted, kubectl lists them.
    let path = sandbox.kubeconfig.to_str().unwrap();
    let missing = run_plugin(
        None,
        &["ready", "gamma", "-n", "golden", "--kubeconfig", path],
    )
    .await;
    let listing = missing.stderr.split('`').nth(1).unwrap();
    assert!(
        listing.contains(&format!("--kubeconfig {path}")),
        "{listing}"
    );
    let listed = crate::common::pasted_command(None, listing)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.status.success(),
        "{listing}: {}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(
        stdout.contains("alpha") && stdout.contains("beta"),
        "{stdout}"
    );
    // The same for a selector that matches nothing in a move.
    let none = run_plugin(
        None,
        &[
            "move",
            "--dry-run",
            "-n",
            "golden",
            "-l",
            "env=nowhere",
            "--kubeconfig",
            path,
        ],
    )
    .await;
    assert_eq!(none.code, 1, "{}", none.stderr);
    let listing = none.stderr.split('`').nth(1).unwrap();
    let listed = crate::common::pasted_command(None, listing)
        .output()
        .await
        .unwrap();
    assert!(
        listed.status.success(),
        "{listing}: {}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("env=prod"),
        "{listing}"
    );
    // A scope without Clusters has nothing that blocks a move: said, and exit 0.
    let empty = sandbox.plugin(&["ready"]).await;
    assert_eq!(empty.code, 0, "{}", empty.stderr);
    assert_eq!(
        empty.stderr.trim(),
        "no Cluster API Clusters in namespace default: nothing blocks a move (pass -n NAMESPACE or -A to check others)"
    );
    assert_eq!(empty.stdout, "");
    let empty = sandbox.plugin(&["ready", "-o", "json"]).await;
    assert_eq!(empty.code, 0, "{}", empty.stderr);
    let report: serde_json::Value = serde_json::from_str(&empty.stdout).unwrap();
    assert_eq!(
        (&report["ready"], &report["clusters"]),
        (&serde_json::json!(true), &serde_json::json!([]))
    );
    let everywhere = sandbox.plugin(&["ready", "-A", "beta", "-o", "json"]).await;
    assert_eq!(everywhere.code, 1);
    assert!(sandbox.server.writes().is_empty(), "ready writes nothing");
}

/// `clusters` Clusters, each with a control plane of one Machine and a MachineDeployment/MachineSet
/// of `machines - 1` workers, all provisioned — loaded directly (no controllers).
fn load_fleet(server: &capi_sandbox::ApiServer, clusters: usize, machines: usize) {
    for c in 0..clusters {
        let name = format!("fleet-{c}");
        let owner = |kind: &str, group: &str, owner_name: &str| {
            let plural = format!("{}s", kind.to_lowercase());
            let o = server
                .object(group, &plural, "default", owner_name)
                .unwrap();
            json!([{"apiVersion": format!("{group}/v1beta2"), "kind": kind, "name": owner_name, "uid": o["metadata"]["uid"], "controller": true}])
        };
        server.load(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": name, "namespace": "default"},
            "spec": {"controlPlaneRef": {"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": format!("{name}-cp")}},
            "status": {"initialization": {"infrastructureProvisioned": true, "controlPlaneInitialized": true}, "conditions": [{"type": "ControlPlaneInitialized", "status": "True"}]}})).unwrap();
        server.load(json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
            "metadata": {"name": format!("{name}-cp"), "namespace": "default", "labels": {"cluster.x-k8s.io/cluster-name": name}}, "spec": {"replicas": 1}})).unwrap();
        server.load(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment",
            "metadata": {"name": format!("{name}-md"), "namespace": "default"}, "spec": {"clusterName": name, "replicas": machines - 1}})).unwrap();
        server.load(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet",
            "metadata": {"name": format!("{name}-ms"), "namespace": "default", "ownerReferences": owner("MachineDeployment", "cluster.x-k8s.io", &format!("{name}-md"))},
            "spec": {"clusterName": name, "replicas": machines - 1}})).unwrap();
        for m in 0..machines {
            let (owners, labels) = if m == 0 {
                (
                    owner(
                        "KubeadmControlPlane",
                        "controlplane.cluster.x-k8s.io",
                        &format!("{name}-cp"),
                    ),
                    json!({"cluster.x-k8s.io/control-plane": ""}),
                )
            } else {
                (
                    owner("MachineSet", "cluster.x-k8s.io", &format!("{name}-ms")),
                    json!({}),
                )
            };
            server.load(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine",
                "metadata": {"name": format!("{name}-m{m}"), "namespace": "default", "labels": labels, "ownerReferences": owners},
                "spec": {"clusterName": name}, "status": {"nodeRef": {"name": format!("{name}-m{m}")}}})).unwrap();
        }
    }
}

/// Requests for Cluster API kinds (discovery and the CRD list aside).
fn capi_requests(sandbox: &Sandbox) -> Vec<capi_sandbox::RequestRecord> {
    sandbox
        .server
        .requests()
        .into_iter()
        .filter(|r| r.group.ends_with("cluster.x-k8s.io"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_count_does_not_grow_with_clusters_or_machines() {
    let small = Sandbox::start(Dialect::V1beta2).await;
    load_fleet(&small.server, 2, 3);
    let large = Sandbox::start(Dialect::V1beta2).await;
    load_fleet(&large.server, 100, 20);
    let mut counts = Vec::new();
    for sandbox in [&small, &large] {
        sandbox.server.reset_requests();
        let output = sandbox.plugin(&["ready", "-o", "json"]).await;
        assert_eq!(output.code, 0, "{}", output.stderr);
        let report: Value = serde_json::from_str(&output.stdout).unwrap();
        assert!(report["ready"].as_bool().unwrap());
        let requests = capi_requests(sandbox);
        assert!(
            requests.iter().all(|r| r.verb == "list"),
            "only LISTs, never a GET per Machine"
        );
        let kinds: std::collections::BTreeSet<(String, String)> = requests
            .iter()
            .map(|r| (r.group.clone(), r.resource.clone()))
            .collect();
        assert_eq!(requests.len(), kinds.len(), "one LIST per kind");
        counts.push(requests.len());
    }
    assert_eq!(counts[0], counts[1], "2×3 and 100×20 cost the same");
    // One LIST per kind a move reads: each Cluster API kind served, Secrets and ConfigMaps.
    let served = small
        .server
        .dump()
        .iter()
        .filter(|o| o["kind"] == "CustomResourceDefinition")
        .count();
    assert!(
        counts[0] <= served + 2,
        "no more than the kinds read: {} of {served} + 2",
        counts[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_runs_ready_as_a_plugin_and_passes_the_exit_code() {
    let sandbox = golden_sandbox().await;
    let bin_dir = std::path::Path::new(crate::common::PLUGIN)
        .parent()
        .unwrap();
    let output = tokio::process::Command::new("kubectl")
        .args(["capi", "ready", "-n", "golden", "-o", "name"])
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin_dir.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .env("KUBECONFIG", &sandbox.kubeconfig)
        .output()
        .await
        .expect("kubectl on PATH");
    assert_eq!(
        output.status.code(),
        Some(1),
        "not ready passes through kubectl as 1"
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "cluster.cluster.x-k8s.io/alpha\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_interrupts_wait_with_exit_code_130() {
    let dir = tempfile::tempdir().unwrap();
    let env = scaling_environment(dir.path()).await;
    let child = tokio::process::Command::new(crate::common::PLUGIN)
        .args(["ready", "--wait", "--timeout", "60s"])
        .env("KUBECONFIG", dir.path().join("kubeconfig"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    crate::common::wait_until("ready --wait to watch", || {
        env.source.server.watches(crate::common::PLUGIN_AGENT) > 0
    })
    .await;
    let output = crate::common::interrupt(child).await;
    assert_eq!(output.code, 130, "{}", output.stderr);
    assert!(output.stderr.contains("interrupted"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_ends_with_exit_2_when_the_api_server_is_lost() {
    let Sandbox {
        server,
        serving,
        kubeconfig,
        dir: _dir,
    } = golden_sandbox().await;
    let child = crate::common::plugin_command(
        Some(&kubeconfig),
        &[
            "ready",
            "-n",
            "golden",
            "--wait",
            "--timeout",
            "10m",
            "--request-timeout",
            "1s",
        ],
    )
    .spawn()
    .unwrap();
    // Once the plugin watches, the server goes away.
    let watching = || server.requests().iter().any(|r| r.verb == "watch");
    for _ in 0..400 {
        if watching() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(watching(), "the plugin started its watches");
    let url = serving.url.clone();
    drop(serving);
    let output = tokio::time::timeout(Duration::from_secs(120), child.wait_with_output())
        .await
        .expect("the wait ends long before its own timeout")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.starts_with(&format!(
            "error: lost the API server at {url}: its watches could not be re-established for 1s"
        )),
        "{stderr}"
    );
}

/// The text with ANSI colour sequences removed.
fn plain(text: &str) -> String {
    console::strip_ansi_codes(text).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_line_up_with_colour_on() {
    let sandbox = golden_sandbox().await;
    for args in [
        &["ready", "-n", "golden"][..],
        &["ready", "-n", "golden", "--details"],
        &["ready", "-n", "golden", "-o", "wide"],
    ] {
        let plain_run = sandbox.plugin(args).await;
        let mut coloured_args = args.to_vec();
        coloured_args.extend(["--color", "always"]);
        let coloured = sandbox.plugin(&coloured_args).await;
        assert!(coloured.stdout.contains('\u{1b}'), "colour is on: {args:?}");
        assert_eq!(
            plain(&coloured.stdout),
            plain_run.stdout,
            "the same columns with and without colour: {args:?}"
        );
    }
}
