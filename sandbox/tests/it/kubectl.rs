//! Real kubectl (v1.32 on PATH) against the sandbox over HTTP. Each scenario asserts what a real
//! kube-apiserver answers, not merely that kubectl exited 0. Missing kubectl fails, never skips.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use capi_sandbox::apiserver::write_kubeconfig;
use capi_sandbox::crds::{self, Dialect};
use capi_sandbox::{ApiServer, ServerOptions, Serving};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;

struct Kubectl {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    server: ApiServer,
    _serving: Serving,
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Output {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", self.stdout))
    }
    fn ok(self) -> Self {
        assert_eq!(self.code, 0, "kubectl failed: {}", self.stderr);
        self
    }
}

impl Kubectl {
    async fn start(options: ServerOptions) -> Self {
        let server = ApiServer::new(options);
        crds::install(&server, Dialect::V1beta2).unwrap();
        let serving = server.serve(0).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = dir.path().join("kubeconfig");
        write_kubeconfig(&kubeconfig, &[serving.kubeconfig_entry("sandbox")]).unwrap();
        Kubectl {
            dir,
            kubeconfig,
            server,
            _serving: serving,
        }
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new("kubectl");
        command
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("KUBECACHEDIR", self.dir.path().join("cache"))
            .env("HOME", self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    async fn run_with_input(&self, args: &[&str], input: &str) -> Output {
        use tokio::io::AsyncWriteExt;
        let mut child = self
            .command(args)
            .spawn()
            .expect("kubectl must be on PATH for these tests (they never skip)");
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).await.unwrap();
        drop(stdin);
        let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("kubectl hung")
            .unwrap();
        Output {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    async fn run(&self, args: &[&str]) -> Output {
        self.run_with_input(args, "").await
    }
}

const CLUSTER: &str = "apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata:
  name: c1
  labels:
    env: prod
spec:
  paused: false
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: a
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
stringData:
  password: hunter2
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_creates_then_updates_with_default_validation() {
    let k = Kubectl::start(ServerOptions::default()).await;
    let created = k.run_with_input(&["apply", "-f", "-"], CLUSTER).await.ok();
    assert_eq!(
        created.stdout.lines().collect::<Vec<_>>(),
        vec![
            "cluster.cluster.x-k8s.io/c1 created",
            "configmap/settings created",
            "secret/creds created"
        ]
    );
    let creates: Vec<_> = k
        .server
        .requests()
        .into_iter()
        .filter(|r| r.verb == "create" && r.code == 201)
        .collect();
    assert_eq!(creates.len(), 3);
    assert!(
        k.server
            .requests()
            .iter()
            .any(|r| r.path.starts_with("/openapi/v3")),
        "kubectl read the OpenAPI v3 documents"
    );

    let updated = CLUSTER
        .replace("paused: false", "paused: true")
        .replace("mode: a", "mode: b");
    k.server.reset_requests();
    let applied = k.run_with_input(&["apply", "-f", "-"], &updated).await.ok();
    assert!(
        applied
            .stdout
            .contains("cluster.cluster.x-k8s.io/c1 configured"),
        "{}",
        applied.stdout
    );
    assert!(applied.stdout.contains("configmap/settings configured"));
    // kubectl re-sends stringData (the server folded it into data), so a real server reports a
    // Secret as configured on every apply, while storing nothing new.
    assert!(applied.stdout.contains("secret/creds configured"));
    let patches: Vec<String> = k
        .server
        .requests()
        .into_iter()
        .filter(|r| r.verb == "patch")
        .map(|r| r.resource)
        .collect();
    assert_eq!(patches, vec!["clusters", "configmaps", "secrets"]);

    let cluster = k
        .server
        .object("cluster.x-k8s.io", "clusters", "default", "c1")
        .unwrap();
    assert_eq!(cluster["spec"]["paused"], true);
    assert_eq!(cluster["metadata"]["generation"], 2);
    assert!(
        cluster["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );
    let settings = k
        .server
        .object("", "configmaps", "default", "settings")
        .unwrap();
    assert_eq!(settings["data"]["mode"], "b");
    let creds = k.server.object("", "secrets", "default", "creds").unwrap();
    assert_eq!(creds["data"]["password"], "aHVudGVyMg==");
    assert!(creds.get("stringData").is_none());
    let secret_writes = k
        .server
        .requests()
        .into_iter()
        .filter(|r| r.resource == "secrets" && r.verb == "patch")
        .count();
    assert_eq!(secret_writes, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_side_apply_records_an_apply_manager() {
    let k = Kubectl::start(ServerOptions::default()).await;
    let out = k
        .run_with_input(&["apply", "--server-side", "-f", "-"], CLUSTER)
        .await
        .ok();
    assert!(
        out.stdout
            .contains("cluster.cluster.x-k8s.io/c1 serverside-applied"),
        "{}",
        out.stdout
    );
    let cluster = k
        .server
        .object("cluster.x-k8s.io", "clusters", "default", "c1")
        .unwrap();
    let entry = &cluster["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "kubectl");
    assert_eq!(entry["operation"], "Apply");
    let again = k
        .run_with_input(
            &["apply", "--server-side", "-f", "-"],
            &CLUSTER.replace("paused: false", "paused: true"),
        )
        .await
        .ok();
    assert!(again.stdout.contains("serverside-applied"));
    assert_eq!(
        k.server
            .object("cluster.x-k8s.io", "clusters", "default", "c1")
            .unwrap()["spec"]["paused"],
        true
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_with_output_formats_and_selectors() {
    let k = Kubectl::start(ServerOptions::default()).await;
    k.run_with_input(&["apply", "-f", "-"], CLUSTER).await.ok();
    let json = k
        .run(&["get", "clusters", "c1", "-o", "json"])
        .await
        .ok()
        .json();
    assert_eq!(json["apiVersion"], "cluster.x-k8s.io/v1beta2");
    assert_eq!(json["metadata"]["labels"]["env"], "prod");
    let jsonpath = k
        .run(&[
            "get",
            "cl",
            "c1",
            "-o",
            "jsonpath={.metadata.generation}/{.spec.paused}",
        ])
        .await
        .ok();
    assert_eq!(jsonpath.stdout, "1/false");
    let selected = k
        .run(&["get", "clusters", "-l", "env=prod", "-o", "name"])
        .await
        .ok();
    assert_eq!(selected.stdout.trim(), "cluster.cluster.x-k8s.io/c1");
    let none = k
        .run(&["get", "clusters", "-l", "env=dev", "-o", "name"])
        .await
        .ok();
    assert_eq!(none.stdout.trim(), "");
    let missing = k.run(&["get", "clusters", "nope"]).await;
    assert_eq!(missing.code, 1);
    assert_eq!(
        missing.stderr.trim(),
        "Error from server (NotFound): clusters.cluster.x-k8s.io \"nope\" not found"
    );
    let bad = k.run(&["get", "clusters", "-l", "env in prod"]).await;
    assert_eq!(bad.code, 1);
    assert!(
        bad.stderr
            .contains("unable to parse requirement: found 'prod' expected: '('"),
        "{}",
        bad.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_resources_come_from_discovery() {
    let k = Kubectl::start(ServerOptions::default()).await;
    let out = k
        .run(&[
            "api-resources",
            "--api-group=cluster.x-k8s.io",
            "-o",
            "wide",
        ])
        .await
        .ok();
    let cluster_row = out
        .stdout
        .lines()
        .find(|l| l.starts_with("clusters "))
        .expect("clusters listed");
    assert!(cluster_row.contains(" cl "), "{cluster_row}");
    assert!(
        cluster_row.contains("cluster.x-k8s.io/v1beta2"),
        "{cluster_row}"
    );
    assert!(
        cluster_row.contains("true") && cluster_row.contains("Cluster"),
        "{cluster_row}"
    );
    let versions = k.run(&["api-versions"]).await.ok();
    assert!(
        versions
            .stdout
            .lines()
            .any(|l| l == "cluster.x-k8s.io/v1beta1")
    );
    assert!(
        versions
            .stdout
            .lines()
            .any(|l| l == "cluster.x-k8s.io/v1beta2")
    );
    let names = k
        .run(&["api-resources", "--namespaced=false", "-o", "name"])
        .await
        .ok();
    assert!(names.stdout.lines().any(|l| l == "namespaces"));
    assert!(
        names
            .stdout
            .lines()
            .any(|l| l == "customresourcedefinitions.apiextensions.k8s.io")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_label_annotate_and_status() {
    let k = Kubectl::start(ServerOptions::default()).await;
    k.run_with_input(&["apply", "-f", "-"], CLUSTER).await.ok();
    assert_eq!(
        k.run(&[
            "patch",
            "cluster",
            "c1",
            "--type=merge",
            "-p",
            r#"{"spec":{"paused":true}}"#
        ])
        .await
        .ok()
        .stdout
        .trim(),
        "cluster.cluster.x-k8s.io/c1 patched"
    );
    k.run(&[
        "patch",
        "cluster",
        "c1",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/spec/topology","value":{"class":"x"}}]"#,
    ])
    .await
    .ok();
    k.run(&[
        "patch",
        "cluster",
        "c1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Provisioned"},"spec":{"paused":false}}"#,
    ])
    .await
    .ok();
    assert_eq!(
        k.run(&["label", "cluster", "c1", "tier=gold"])
            .await
            .ok()
            .stdout
            .trim(),
        "cluster.cluster.x-k8s.io/c1 labeled"
    );
    assert_eq!(
        k.run(&["annotate", "cluster", "c1", "note=kept"])
            .await
            .ok()
            .stdout
            .trim(),
        "cluster.cluster.x-k8s.io/c1 annotated"
    );
    let cluster = k
        .server
        .object("cluster.x-k8s.io", "clusters", "default", "c1")
        .unwrap();
    assert_eq!(
        cluster["spec"]["paused"], true,
        "status subresource ignored spec"
    );
    assert_eq!(cluster["spec"]["topology"]["class"], "x");
    assert_eq!(cluster["status"]["phase"], "Provisioned");
    assert_eq!(cluster["metadata"]["labels"]["tier"], "gold");
    assert_eq!(cluster["metadata"]["annotations"]["note"], "kept");
    assert_eq!(cluster["metadata"]["generation"], 3);
    let managers: Vec<String> = cluster["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap().to_string())
        .collect();
    for expected in ["kubectl-patch", "kubectl-label", "kubectl-annotate"] {
        assert!(
            managers.iter().any(|m| m == expected),
            "{expected} in {managers:?}"
        );
    }
    let strategic = k
        .run(&[
            "patch",
            "cluster",
            "c1",
            "--type=strategic",
            "-p",
            r#"{"spec":{"paused":false}}"#,
        ])
        .await;
    assert_eq!(strategic.code, 1);
    assert!(
        strategic.stderr.contains("UnsupportedMediaType")
            || strategic.stderr.contains("unknown format"),
        "{}",
        strategic.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_with_and_without_finalizers() {
    let k = Kubectl::start(ServerOptions::default()).await;
    let held = CLUSTER.replace(
        "  labels:\n",
        "  finalizers: [cluster.cluster.x-k8s.io]\n  labels:\n",
    );
    k.run_with_input(&["apply", "-f", "-"], &held).await.ok();
    let out = k
        .run(&["delete", "cluster", "c1", "--wait=false"])
        .await
        .ok();
    assert_eq!(out.stdout.trim(), "cluster.cluster.x-k8s.io \"c1\" deleted");
    let cluster = k
        .server
        .object("cluster.x-k8s.io", "clusters", "default", "c1")
        .expect("held by its finalizer");
    assert!(cluster["metadata"]["deletionTimestamp"].is_string());
    k.run(&[
        "patch",
        "cluster",
        "c1",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])
    .await
    .ok();
    assert!(
        k.server
            .object("cluster.x-k8s.io", "clusters", "default", "c1")
            .is_none()
    );

    let gone = k.run(&["delete", "configmap", "settings"]).await.ok();
    assert_eq!(gone.stdout.trim(), "configmap \"settings\" deleted");
    assert!(
        k.server
            .object("", "configmaps", "default", "settings")
            .is_none()
    );
    let again = k.run(&["delete", "configmap", "settings"]).await;
    assert_eq!(again.code, 1);
    assert_eq!(
        again.stderr.trim(),
        "Error from server (NotFound): configmaps \"settings\" not found"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_condition_and_for_delete() {
    let k = Kubectl::start(ServerOptions::default()).await;
    k.run_with_input(&["apply", "-f", "-"], CLUSTER).await.ok();
    let before = k.server.watches("kubectl/");
    let waiter = {
        let mut command = k.command(&[
            "wait",
            "--for=condition=Ready",
            "cluster/c1",
            "--timeout=20s",
        ]);
        command.spawn().unwrap()
    };
    crate::common::wait_until("kubectl wait to watch", || {
        k.server.watches("kubectl/") > before
    })
    .await;
    k.run(&["patch", "cluster", "c1", "--subresource=status", "--type=merge", "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"True","reason":"Ready","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#]).await.ok();
    let done = tokio::time::timeout(Duration::from_secs(30), waiter.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&done.stdout).trim(),
        "cluster.cluster.x-k8s.io/c1 condition met"
    );

    let timeout = k
        .run(&[
            "wait",
            "--for=condition=Available",
            "cluster/c1",
            "--timeout=1s",
        ])
        .await;
    assert_eq!(timeout.code, 1);
    assert!(
        timeout
            .stderr
            .contains("timed out waiting for the condition"),
        "{}",
        timeout.stderr
    );

    let before = k.server.watches("kubectl/");
    let deleter = k
        .command(&["wait", "--for=delete", "cluster/c1", "--timeout=20s"])
        .spawn()
        .unwrap();
    crate::common::wait_until("kubectl wait --for=delete to watch", || {
        k.server.watches("kubectl/") > before
    })
    .await;
    k.run(&["delete", "cluster", "c1", "--wait=false"])
        .await
        .ok();
    let deleted = tokio::time::timeout(Duration::from_secs(30), deleter.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(
        deleted.status.success(),
        "{}",
        String::from_utf8_lossy(&deleted.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&deleted.stdout).trim(),
        "cluster.cluster.x-k8s.io/c1 condition met"
    );

    let crd = k
        .run(&[
            "wait",
            "--for",
            "condition=established",
            "crd/clusters.cluster.x-k8s.io",
            "--timeout=5s",
        ])
        .await
        .ok();
    assert!(crd.stdout.contains("condition met"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_watch_sees_added_modified_deleted() {
    let k = Kubectl::start(ServerOptions::default()).await;
    let mut watcher = k
        .command(&[
            "get",
            "clusters",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
        ])
        .spawn()
        .unwrap();
    let stdout = watcher.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    crate::common::wait_until("kubectl get -w to watch", || {
        k.server.watches("kubectl/") > 0
    })
    .await;
    k.run_with_input(&["apply", "-f", "-"], CLUSTER).await.ok();
    k.run(&["label", "cluster", "c1", "x=y"]).await.ok();
    k.run(&["delete", "cluster", "c1"]).await.ok();
    // One event per line; collect until DELETED arrives.
    let mut text = String::new();
    let collect = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            text.push_str(&line);
            text.push('\n');
            if line.contains("\"DELETED\"") {
                break;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), collect)
        .await
        .expect("watch events arrive");
    watcher.kill().await.unwrap();
    let types: Vec<String> = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .map(|e| e.unwrap()["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(types, vec!["ADDED", "MODIFIED", "DELETED"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_dry_run_server_stores_nothing() {
    let k = Kubectl::start(ServerOptions::default()).await;
    let out = k
        .run(&[
            "create",
            "configmap",
            "dry",
            "--from-literal=a=b",
            "--dry-run=server",
            "-o",
            "json",
        ])
        .await
        .ok();
    let answer = out.json();
    assert!(answer["metadata"]["uid"].is_string());
    assert!(answer["metadata"].get("resourceVersion").is_none());
    let cluster_dry = k
        .run_with_input(&["create", "--dry-run=server", "-f", "-"], CLUSTER)
        .await
        .ok();
    assert!(
        cluster_dry
            .stdout
            .contains("cluster.cluster.x-k8s.io/c1 created (server dry run)"),
        "{}",
        cluster_dry.stdout
    );
    assert!(
        k.server
            .object("", "configmaps", "default", "dry")
            .is_none()
    );
    assert!(
        k.server
            .object("cluster.x-k8s.io", "clusters", "default", "c1")
            .is_none()
    );
    assert!(
        k.server.mutations().is_empty(),
        "{:?}",
        k.server.mutations()
    );
    assert!(
        k.server
            .requests()
            .iter()
            .any(|r| r.verb == "create" && r.dry_run)
    );
    let exists = k.run(&["create", "namespace", "default"]).await;
    assert_eq!(exists.code, 1);
    assert_eq!(
        exists.stderr.trim(),
        "Error from server (AlreadyExists): namespaces \"default\" already exists"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_and_tls_are_enforced() {
    let k = Kubectl::start(ServerOptions {
        tls: true,
        token: Some("s3cret".into()),
        ..ServerOptions::default()
    })
    .await;
    let ok = k.run(&["get", "ns", "default", "-o", "name"]).await.ok();
    assert_eq!(ok.stdout.trim(), "namespace/default");
    let wrong = k.run(&["get", "ns", "--token", "wrong"]).await;
    assert_eq!(wrong.code, 1);
    assert!(
        wrong.stderr.contains("You must be logged in to the server")
            && wrong.stderr.contains("Unauthorized"),
        "{}",
        wrong.stderr
    );
    let forbidden = k.run(&["get", "clusters", "--as", "nobody"]).await;
    assert_eq!(forbidden.code, 1);
    assert!(forbidden.stderr.contains("User \"nobody\" cannot list resource \"clusters\" in API group \"cluster.x-k8s.io\" in the namespace \"default\""), "{}", forbidden.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_can_i_answers_yes_and_no_for_users_tokens_and_impersonation() {
    let k = Kubectl::start(ServerOptions {
        tls: true,
        token: Some("s3cret".into()),
        user_tokens: [("viewer-token".to_string(), "viewer".to_string())].into(),
        ..ServerOptions::default()
    })
    .await;
    let can_i = |args: &'static [&'static str]| async { k.run(args).await };
    // The admin token: yes (kubectl sends the review as protobuf).
    let yes = can_i(&[
        "auth",
        "can-i",
        "create",
        "clusters.cluster.x-k8s.io",
        "-n",
        "ns1",
    ])
    .await;
    assert_eq!((yes.code, yes.stdout.trim()), (0, "yes"), "{}", yes.stderr);
    // Impersonated, without permissions: no (exit 1, as kubectl reports a denial).
    let no = can_i(&["auth", "can-i", "delete", "secrets", "--as", "nobody"]).await;
    assert_eq!((no.code, no.stdout.trim()), (1, "no"), "{}", no.stderr);
    k.server.grant("nobody", "get", "", "secrets");
    let granted = can_i(&["auth", "can-i", "get", "secrets", "--as", "nobody"]).await;
    assert_eq!(granted.stdout.trim(), "yes");
    // Denied to everyone, the token's user included.
    k.server.deny("delete", "configmaps");
    let denied = can_i(&["auth", "can-i", "delete", "configmaps"]).await;
    assert_eq!((denied.code, denied.stdout.trim()), (1, "no"));
    // A token of a user without permissions: no, until granted; it may not impersonate.
    let mut entry = k._serving.kubeconfig_entry("viewer");
    entry.token = Some("viewer-token".into());
    let viewer = k.dir.path().join("viewer.kubeconfig");
    write_kubeconfig(&viewer, &[entry]).unwrap();
    let as_viewer = |args: &'static [&'static str]| {
        let mut all = vec!["--kubeconfig", viewer.to_str().unwrap()];
        all.extend_from_slice(args);
        all
    };
    let viewer_no = k.run(&as_viewer(&["auth", "can-i", "list", "pods"])).await;
    assert_eq!(
        (viewer_no.code, viewer_no.stdout.trim()),
        (1, "no"),
        "{}",
        viewer_no.stderr
    );
    k.server.grant("viewer", "list", "", "pods");
    let viewer_yes = k.run(&as_viewer(&["auth", "can-i", "list", "pods"])).await;
    assert_eq!(viewer_yes.stdout.trim(), "yes", "{}", viewer_yes.stderr);
    let who = k
        .run(&as_viewer(&["auth", "whoami", "-o", "json"]))
        .await
        .ok();
    assert_eq!(who.json()["status"]["userInfo"]["username"], "viewer");
    let impersonating = k.run(&as_viewer(&["get", "pods", "--as", "admin"])).await;
    assert!(
        impersonating
            .stderr
            .contains("cannot impersonate resource \"users\""),
        "{}",
        impersonating.stderr
    );
    // The rules review behind --list, and who-am-i.
    let list = can_i(&["auth", "can-i", "--list", "--as", "nobody"])
        .await
        .ok();
    assert!(
        list.stdout
            .lines()
            .any(|l| l.starts_with("secrets ") && l.contains("[get]")),
        "{}",
        list.stdout
    );
    let whoami = can_i(&["auth", "whoami", "--as", "nobody", "-o", "json"])
        .await
        .ok();
    assert_eq!(whoami.json()["status"]["userInfo"]["username"], "nobody");
    assert!(k.server.mutations().is_empty(), "reviews store nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_bodies_read_as_kubectl_means_them() {
    let k = Kubectl::start(ServerOptions::default()).await;
    // Each imperative create sends protobuf; what the server stores is what kubectl itself renders
    // as JSON for the same command, but for the fields a server sets.
    for args in [
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=3",
            "--port=80",
        ][..],
        &[
            "create",
            "role",
            "r1",
            "--verb=get,list",
            "--resource=pods,deployments.apps",
            "--resource-name=a",
        ],
        &[
            "create",
            "clusterrole",
            "cr1",
            "--verb=get",
            "--non-resource-url=/logs",
        ],
        &[
            "create",
            "rolebinding",
            "rb1",
            "--role=r1",
            "--user=alice",
            "--serviceaccount=default:sa1",
        ],
        &[
            "create",
            "clusterrolebinding",
            "crb1",
            "--clusterrole=cr1",
            "--group=devs",
        ],
        &["create", "serviceaccount", "sa1"],
        &[
            "create",
            "secret",
            "generic",
            "s1",
            "--from-literal=a=b",
            "--type=Opaque",
        ],
        &[
            "create",
            "configmap",
            "c1",
            "--from-literal=x=y",
            "--from-literal=z=w",
        ],
    ] {
        let strip = |mut object: Value| {
            let meta = object["metadata"].as_object_mut().unwrap();
            for server_set in [
                "creationTimestamp",
                "uid",
                "resourceVersion",
                "managedFields",
                "generation",
                "namespace",
            ] {
                meta.remove(server_set);
            }
            object.as_object_mut().unwrap().remove("status");
            object
        };
        let mut client = args.to_vec();
        client.extend(["--dry-run=client", "-o", "json"]);
        let want = strip(k.run(&client).await.ok().json());
        let mut sent = args.to_vec();
        sent.extend(["-o", "json"]);
        let got = strip(k.run(&sent).await.ok().json());
        assert_eq!(got, want, "{args:?}");
    }
    let deleted = k
        .run(&["delete", "deployment", "web", "--cascade=foreground"])
        .await
        .ok();
    assert!(deleted.stdout.contains("deleted"), "{}", deleted.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_built_in_groups_are_served_and_store_objects() {
    let k = Kubectl::start(ServerOptions::default()).await;
    let resources = k.run(&["api-resources", "-o", "name"]).await.ok();
    for resource in [
        "pods",
        "services",
        "deployments.apps",
        "jobs.batch",
        "cronjobs.batch",
        "roles.rbac.authorization.k8s.io",
        "leases.coordination.k8s.io",
        "horizontalpodautoscalers.autoscaling",
        "poddisruptionbudgets.policy",
        "ingresses.networking.k8s.io",
        "storageclasses.storage.k8s.io",
        "endpointslices.discovery.k8s.io",
        "priorityclasses.scheduling.k8s.io",
        "flowschemas.flowcontrol.apiserver.k8s.io",
        "deviceclasses.resource.k8s.io",
        "clusters.cluster.x-k8s.io",
    ] {
        assert!(
            resources.stdout.lines().any(|l| l == resource),
            "{resource} in api-resources: {}",
            resources.stdout
        );
    }
    assert_eq!(
        k.run(&["get", "deployments,jobs,roles", "-A"])
            .await
            .ok()
            .stderr
            .trim(),
        "No resources found"
    );
    let manifests = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: reader}
rules: [{apiGroups: [''], resources: [pods], verbs: [get, list]}]
---
apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: leader}
spec: {holderIdentity: me, leaseDurationSeconds: 15}
";
    k.run_with_input(&["create", "-f", "-"], manifests)
        .await
        .ok();
    let got = k
        .run(&[
            "get",
            "deployment/web",
            "role/reader",
            "lease/leader",
            "-o",
            "json",
        ])
        .await
        .ok()
        .json();
    let items = got["items"].as_array().unwrap();
    assert_eq!(items[0]["spec"]["replicas"], 2);
    assert_eq!(
        items[1]["rules"][0]["verbs"],
        serde_json::json!(["get", "list"])
    );
    assert_eq!(items[2]["spec"]["holderIdentity"], "me");
    let listed = k
        .run(&["get", "deployments,roles,leases", "-o", "name"])
        .await
        .ok();
    assert_eq!(
        listed.stdout,
        "deployment.apps/web\nrole.rbac.authorization.k8s.io/reader\nlease.coordination.k8s.io/leader\n"
    );
    k.run(&["delete", "-f", "-"]).await;
    k.run_with_input(&["delete", "-f", "-"], manifests)
        .await
        .ok();
    assert_eq!(
        k.run(&["get", "deployments,roles,leases"])
            .await
            .ok()
            .stderr
            .trim(),
        "No resources found in default namespace."
    );
}
