//! A source and a target management cluster on loopback, with controllers and one shared cloud:
//! what `capi-sandbox up` and the demo run, and what end-to-end tests stand on.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::bail;
use serde_json::Value;

use crate::apiserver::{KubeconfigEntry, Serving, write_kubeconfig};
use crate::controllers::{Cloud, Config, Controllers, Delays};
use crate::crds::{self, Dialect};
use crate::workload::Workload;
use crate::{apiserver::server::ApiServer, apiserver::shared::ServerOptions};

pub const SOURCE_CONTEXT: &str = "sandbox-source";
pub const TARGET_CONTEXT: &str = "sandbox-target";

#[derive(Debug, Clone)]
pub struct Options {
    pub dialect: Dialect,
    pub delays: Delays,
    pub block_move: bool,
    pub seed: u64,
    /// The target's provider cannot find the machines a move brings (see `Cloud::unable_to_adopt`).
    pub target_cannot_adopt: bool,
    /// The workload cluster the target server plays: its `NAME-kubeconfig` Secret in the source
    /// reaches the target (a self-hosted pivot moves NAME into itself).
    pub self_hosted: Option<String>,
    /// Serve HTTPS and authenticate by client certificate, as a real management cluster does
    /// (the kubeconfig carries the CA, the certificate and its key).
    pub tls: bool,
}

impl Options {
    pub fn new(dialect: Dialect, delays: Delays) -> Options {
        Options {
            dialect,
            delays,
            block_move: false,
            seed: 7,
            target_cannot_adopt: false,
            self_hosted: None,
            tls: false,
        }
    }
}

/// One management cluster: its server, where it listens, its controllers.
pub struct Managed {
    pub server: ApiServer,
    pub serving: Serving,
    pub controllers: Controllers,
}

pub struct Environment {
    pub source: Managed,
    pub target: Managed,
    pub cloud: Cloud,
    pub kubeconfig: PathBuf,
    pub dialect: Dialect,
}

async fn managed(
    options: &Options,
    cloud: &Cloud,
    kubeconfigs: std::collections::BTreeMap<String, String>,
) -> anyhow::Result<Managed> {
    // A workload cluster's API server serves HTTPS: a kubeconfig Secret naming an http://
    // server is refused (its token would cross the network in clear text).
    let tls = options.tls || options.self_hosted.is_some();
    let server = ApiServer::new(ServerOptions {
        seed: options.seed,
        tls,
        client_certificates: tls,
        ..ServerOptions::default()
    });
    crds::install_with_inventory(&server, options.dialect)?;
    let serving = server.serve(0).await?;
    let mut config = Config::new(options.dialect, options.delays);
    config.block_move = options.block_move;
    config.seed = options.seed;
    config.kubeconfigs = kubeconfigs;
    let controllers = Controllers::start(&server, config, cloud.clone());
    Ok(Managed {
        server,
        serving,
        controllers,
    })
}

impl Environment {
    /// Starts both management clusters and writes a kubeconfig with both contexts (source current).
    pub async fn start(options: &Options, kubeconfig: &Path) -> anyhow::Result<Environment> {
        let cloud = Cloud::new();
        let target_cloud = if options.target_cannot_adopt {
            cloud.unable_to_adopt()
        } else {
            cloud.clone()
        };
        // The target first: a self-hosted workload cluster's kubeconfig names it.
        let target = managed(options, &target_cloud, Default::default()).await?;
        let kubeconfigs = options
            .self_hosted
            .iter()
            .map(|name| {
                let entry = target
                    .serving
                    .kubeconfig_entry(&format!("{name}-admin@{name}"));
                (name.clone(), crate::apiserver::kubeconfig(&[entry]))
            })
            .collect();
        let source = managed(options, &cloud, kubeconfigs).await?;
        let entries: Vec<KubeconfigEntry> = vec![
            source.serving.kubeconfig_entry(SOURCE_CONTEXT),
            target.serving.kubeconfig_entry(TARGET_CONTEXT),
        ];
        write_kubeconfig(kubeconfig, &entries)?;
        Ok(Environment {
            source,
            target,
            cloud,
            kubeconfig: kubeconfig.to_path_buf(),
            dialect: options.dialect,
        })
    }

    /// Creates a workload cluster in the source, through the API as `kubectl apply` would.
    pub async fn create_workload(&self, workload: &Workload) -> anyhow::Result<()> {
        if let Some(class) = workload.cluster_class(self.dialect) {
            let client = self.source.server.client();
            let name = class["metadata"]["name"].as_str().unwrap_or_default();
            let namespace = &workload.namespace;
            if self
                .source
                .server
                .object("cluster.x-k8s.io", "clusterclasses", namespace, name)
                .is_none()
            {
                crate::api::create(&client, &class).await?;
            }
        }
        for object in workload.objects(self.dialect) {
            crate::api::create(&self.source.server.client(), &object).await?;
        }
        Ok(())
    }

    /// Waits until the named cluster's Machines all have nodes and match the desired counts.
    pub async fn wait_provisioned(
        &self,
        managed: &Managed,
        namespace: &str,
        name: &str,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let progress = Progress::of(&managed.server, self.dialect, namespace, name);
            if progress.complete() {
                return Ok(());
            }
            if tokio::time::Instant::now() > deadline {
                bail!("cluster {namespace}/{name} did not provision in {timeout:?}: {progress}");
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

/// How far a cluster's provisioning got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    pub desired: i64,
    pub machines: i64,
    pub with_node: i64,
}

impl Progress {
    pub fn of(server: &ApiServer, dialect: Dialect, namespace: &str, name: &str) -> Progress {
        let objects = server.dump();
        let in_cluster = |o: &&Value| o["metadata"]["namespace"] == namespace;
        let desired: i64 = objects
            .iter()
            .filter(in_cluster)
            .filter(|o| {
                (o["kind"] == "KubeadmControlPlane"
                    && o["metadata"]["name"] == format!("{name}-control-plane").as_str())
                    || (o["kind"] == "MachineDeployment" && o["spec"]["clusterName"] == name)
            })
            .map(|o| o["spec"]["replicas"].as_i64().unwrap_or(1))
            .sum();
        let machines: Vec<&Value> = objects
            .iter()
            .filter(in_cluster)
            .filter(|o| o["kind"] == "Machine" && o["spec"]["clusterName"] == name)
            .collect();
        let with_node = machines
            .iter()
            .filter(|m| {
                if dialect == Dialect::V1beta1 {
                    m["status"]["nodeRef"].is_object()
                } else {
                    m["status"]["nodeRef"]["name"]
                        .as_str()
                        .is_some_and(|n| !n.is_empty())
                }
            })
            .count() as i64;
        Progress {
            desired,
            machines: machines.len() as i64,
            with_node,
        }
    }

    pub fn complete(&self) -> bool {
        self.desired > 0 && self.machines == self.desired && self.with_node == self.desired
    }
}

impl std::fmt::Display for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{} machines with a node ({} desired)",
            self.with_node, self.machines, self.desired
        )
    }
}

/// The kubeconfig path `up` writes by default.
pub fn default_kubeconfig() -> PathBuf {
    PathBuf::from("sandbox.kubeconfig")
}

/// `object` as the target gets it: without what the server sets, its owners' UIDs those of
/// their copies.
fn copy_for_target(object: &Value, new_uids: &std::collections::HashMap<String, String>) -> Value {
    let mut copy = object.clone();
    if let Some(meta) = copy["metadata"].as_object_mut() {
        for key in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
            "generation",
        ] {
            meta.remove(key);
        }
        if let Some(refs) = meta
            .get_mut("ownerReferences")
            .and_then(|r| r.as_array_mut())
        {
            for r in refs {
                let old = r["uid"].as_str().unwrap_or_default().to_string();
                r["uid"] = serde_json::json!(new_uids[&old]);
            }
        }
    }
    copy
}

/// The moved objects deleted from the source as clusterctl deletes them: leaves first (owners,
/// the Cluster last, outlive their dependents), each marked delete-for-move, its finalizers
/// dropped.
async fn delete_moved(source_client: &kube::Client, namespace: &str, order: Vec<Value>) {
    for object in order.into_iter().rev() {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let kind = object["kind"].as_str().unwrap_or_default();
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        let patch = |body: Value| {
            let client = source_client.clone();
            async move {
                crate::api::merge_patch(&client, api_version, kind, namespace, name, &body)
                    .await
                    .ok()
            }
        };
        patch(serde_json::json!({"metadata": {"annotations": {"clusterctl.cluster.x-k8s.io/delete-for-move": ""}}})).await;
        crate::api::delete(source_client, api_version, kind, namespace, name)
            .await
            .ok();
        patch(serde_json::json!({"metadata": {"finalizers": null}})).await;
    }
}

/// A bare-hands move of one namespace for tests, until `kubectl capi move` exists: pause the
/// Cluster, copy every object in owner order with owner UIDs rebuilt (status is dropped, as a real
/// create does), delete from the source leaves first with `delete-for-move` and finalizers
/// stripped, then unpause the Cluster in the target.
pub async fn hand_move(
    source: &ApiServer,
    target: &ApiServer,
    dialect: Dialect,
    namespace: &str,
    cluster: &str,
) -> anyhow::Result<()> {
    use std::collections::HashMap;
    let version = if dialect == Dialect::V1beta1 {
        "v1beta1"
    } else {
        "v1beta2"
    };
    let core = format!("cluster.x-k8s.io/{version}");
    let source_client = source.client();
    let target_client = target.client();
    let pause = |client: &kube::Client, paused: Value| {
        let patch = serde_json::json!({"spec": {"paused": paused}});
        let (client, core) = (client.clone(), core.clone());
        async move {
            crate::api::merge_patch(&client, &core, "Cluster", namespace, cluster, &patch).await
        }
    };
    pause(&source_client, Value::Bool(true)).await?;
    let mut pending: Vec<Value> = source
        .dump()
        .into_iter()
        .filter(|o| {
            o["metadata"]["namespace"] == namespace
                && o["kind"] != "Namespace"
                && o["kind"] != "Provider"
        })
        .collect();
    if target.object("", "namespaces", "", namespace).is_none() {
        crate::api::create(&target_client, &serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})).await?;
    }
    let mut new_uids: HashMap<String, String> = HashMap::new();
    let mut order: Vec<Value> = Vec::new();
    while !pending.is_empty() {
        let (ready, rest): (Vec<Value>, Vec<Value>) = pending.into_iter().partition(|o| {
            o["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .all(|r| r["uid"].as_str().is_some_and(|u| new_uids.contains_key(u)))
        });
        if ready.is_empty() {
            bail!(
                "objects whose owners are not in the namespace: {}",
                rest.len()
            );
        }
        for object in ready {
            let copy = copy_for_target(&object, &new_uids);
            let created = crate::api::create(&target_client, &copy).await?;
            new_uids.insert(
                object["metadata"]["uid"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                created["metadata"]["uid"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            );
            order.push(object);
        }
        pending = rest;
    }
    delete_moved(&source_client, namespace, order).await;
    source.collect_garbage();
    pause(&target_client, Value::Null).await?;
    Ok(())
}
