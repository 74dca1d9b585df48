//! The capi-sandbox binary: `up` in one process, `scale` and `node` from others, as a user runs them.

use std::process::Stdio;
use std::time::Duration;

use kube::api::{Api, DynamicObject, ListParams};
use kube::core::{ApiResource, GroupVersionKind};

const BIN: &str = env!("CARGO_BIN_EXE_capi-sandbox");

async fn machines(client: &kube::Client) -> Vec<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", "Machine"),
        "machines",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
    api.list(&ListParams::default())
        .await
        .map(|l| l.items)
        .unwrap_or_default()
}

async fn wait_for(client: &kube::Client, what: &str, check: impl Fn(&[DynamicObject]) -> bool) {
    for _ in 0..600 {
        if check(&machines(client).await) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

fn with_node(machines: &[DynamicObject]) -> usize {
    machines
        .iter()
        .filter(|m| m.data["status"]["nodeRef"]["name"].is_string())
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_scale_and_node_from_separate_processes() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut up = tokio::process::Command::new(BIN)
        .args(["up", "--delay-ms", "20", "--workers", "1", "--kubeconfig"])
        .arg(&kubeconfig)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    for _ in 0..200 {
        if kubeconfig.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(&kubeconfig).unwrap(),
        &kube::config::KubeConfigOptions {
            context: Some("sandbox-source".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    wait_for(&client, "2 Machines with nodes", |m| {
        m.len() == 2 && with_node(m) == 2
    })
    .await;

    let scale = tokio::process::Command::new(BIN)
        .args([
            "scale",
            "--cluster",
            "workload-1",
            "--workers",
            "2",
            "--kubeconfig",
        ])
        .arg(&kubeconfig)
        .output()
        .await
        .unwrap();
    assert!(
        scale.status.success(),
        "{}",
        String::from_utf8_lossy(&scale.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&scale.stdout).trim(),
        "machinedeployment.cluster.x-k8s.io/workload-1-md-0 scaled to 2"
    );
    wait_for(&client, "3 Machines with nodes", |m| {
        m.len() == 3 && with_node(m) == 3
    })
    .await;

    let worker = machines(&client)
        .await
        .into_iter()
        .find(|m| {
            m.metadata
                .labels
                .as_ref()
                .is_some_and(|l| !l.contains_key("cluster.x-k8s.io/control-plane"))
        })
        .unwrap();
    let name = worker.metadata.name.clone().unwrap();
    let node = tokio::process::Command::new(BIN)
        .args(["node", "--machine", &name, "--unhealthy", "--kubeconfig"])
        .arg(&kubeconfig)
        .output()
        .await
        .unwrap();
    assert!(
        node.status.success(),
        "{}",
        String::from_utf8_lossy(&node.stderr)
    );
    wait_for(&client, "the node to turn unhealthy", |m| {
        m.iter().any(|x| {
            x.metadata.name.as_deref() == Some(name.as_str())
                && x.data["status"]["conditions"].as_array().is_some_and(|c| {
                    c.iter()
                        .any(|c| c["type"] == "NodeHealthy" && c["status"] == "False")
                })
        })
    })
    .await;
    up.kill().await.unwrap();
    let target = kube::config::Kubeconfig::read_from(&kubeconfig).unwrap();
    assert_eq!(
        target
            .contexts
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        vec!["sandbox-source", "sandbox-target"]
    );
}
