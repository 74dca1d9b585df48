//! The benchmark's two sandbox servers, serving the same fixture over loopback as the plugin
//! meets them, with a kubeconfig naming both.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use capi_sandbox::apiserver::{KubeconfigEntry, write_kubeconfig};
use capi_sandbox::crds::{self, Dialect};
use capi_sandbox::fixture::Fixture;
use capi_sandbox::{
    apiserver::server::ApiServer, apiserver::server::Serving, apiserver::shared::ServerOptions,
};

pub struct MoveOptions {
    pub clusters: usize,
    pub workers: usize,
    pub write_latency: Duration,
    pub concurrency: usize,
    pub plugin: PathBuf,
    /// Also run with `--concurrency 1`.
    pub sequential: bool,
    /// Objects shaped like a real management cluster's (see `real_shape`), so that answers are
    /// as heavy as a real server's.
    pub real_shaped: bool,
    /// Serve plain HTTP instead of HTTPS with client certificates (what users run).
    pub plain_http: bool,
}

/// Watch events each benchmark server keeps.
const WATCH_HISTORY: usize = 10_000;

/// Loads `clusters` provisioned workload clusters into namespace `bench`; returns the objects.
pub fn load_fixture(
    server: &ApiServer,
    clusters: usize,
    workers: usize,
) -> anyhow::Result<Vec<Value>> {
    fixture(clusters, workers).load(&[server])
}

fn fixture(clusters: usize, workers: usize) -> Fixture {
    let mut fixture = Fixture::default();
    for index in 0..clusters {
        fixture.provisioned("bench", &format!("cluster-{index:03}"), workers);
    }
    fixture
}

pub(super) struct Pair {
    pub source: ApiServer,
    pub target: ApiServer,
    pub serving: (Serving, Serving),
    pub kubeconfig: PathBuf,
    pub objects: Vec<Value>,
}

pub(super) async fn pair(options: &MoveOptions, dir: &Path, tag: &str) -> anyhow::Result<Pair> {
    let served = ServerOptions {
        tls: !options.plain_http,
        client_certificates: !options.plain_http,
        // A watch cache's worth: nothing here resumes a watch, and etcd keeps its history on
        // disk, not in the API server's memory; the default (every event of the run) would
        // hold every version of every object of the larger sizes.
        history_limit: WATCH_HISTORY,
        ..ServerOptions::default()
    };
    let source = ApiServer::new(served.clone());
    let target = ApiServer::new(served);
    for server in [&source, &target] {
        crds::install_with_inventory(server, Dialect::V1beta2)?;
    }
    let mut fixture = fixture(options.clusters, options.workers);
    if options.real_shaped {
        fixture.real_shaped();
    }
    let mut objects = fixture.load(&[&source])?;
    if options.real_shaped {
        capi_sandbox::real_shape::weather(&source, &objects).await?;
        // What the servers hold now, managedFields of both writers included.
        objects = objects
            .iter()
            .filter_map(|o| {
                let group = o["apiVersion"]
                    .as_str()?
                    .rsplit_once('/')
                    .map_or("", |(g, _)| g);
                source.object(
                    group,
                    &capi_sandbox::api::plural(o["kind"].as_str()?),
                    o["metadata"]["namespace"].as_str().unwrap_or(""),
                    o["metadata"]["name"].as_str()?,
                )
            })
            .collect();
    }
    // Loading is not part of any measured run: forget its events.
    source.compact();
    for server in [&source, &target] {
        server.set_write_latency(options.write_latency);
    }
    let serving = (source.serve(0).await?, target.serve(0).await?);
    let kubeconfig = dir.join(format!("kubeconfig-{tag}"));
    let entries: Vec<KubeconfigEntry> = vec![
        serving.0.kubeconfig_entry("source"),
        serving.1.kubeconfig_entry("target"),
    ];
    write_kubeconfig(&kubeconfig, &entries)?;
    Ok(Pair {
        source,
        target,
        serving,
        kubeconfig,
        objects,
    })
}
