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
use crate::{ApiServer, ServerOptions};

pub const SOURCE_CONTEXT: &str = "sandbox-source";
pub const TARGET_CONTEXT: &str = "sandbox-target";

#[derive(Debug, Clone)]
pub struct Options {
    pub dialect: Dialect,
    pub delays: Delays,
    pub block_move: bool,
    pub seed: u64,
}

impl Options {
    pub fn new(dialect: Dialect, delays: Delays) -> Options {
        Options {
            dialect,
            delays,
            block_move: false,
            seed: 7,
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

async fn managed(options: &Options, cloud: &Cloud) -> anyhow::Result<Managed> {
    let server = ApiServer::new(ServerOptions {
        seed: options.seed,
        ..ServerOptions::default()
    });
    crds::install_with_inventory(&server, options.dialect)?;
    let serving = server.serve(0).await?;
    let mut config = Config::new(options.dialect, options.delays);
    config.block_move = options.block_move;
    config.seed = options.seed;
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
        let source = managed(options, &cloud).await?;
        let target = managed(options, &cloud).await?;
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
