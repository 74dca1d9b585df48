//! Capacity figures of the in-memory API server (`capi-sandbox bench-apiserver`). Figures, not
//! assertions: tests never time anything.

use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use kube::api::{Api, ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;

use capi_sandbox::apiserver::server::ApiServer;
use capi_sandbox::crds::{self, Dialect};

pub struct Options {
    /// Objects stored in all.
    pub objects: usize,
    /// Objects in the namespace that is listed.
    pub listed: usize,
    /// Concurrent creators for the throughput figure.
    pub concurrency: usize,
}

pub struct Figure {
    pub what: String,
    pub value: String,
}

fn machine_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cluster.x-k8s.io", "v1beta2", "Machine"),
        "machines",
    )
}

fn machine(name: &str, namespace: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "cluster.x-k8s.io/v1beta2",
        "kind": "Machine",
        "metadata": {"name": name, "namespace": namespace, "labels": {"cluster.x-k8s.io/cluster-name": "bench"}},
        "spec": {"clusterName": "bench", "bootstrap": {"dataSecretName": format!("{name}-bootstrap")},
            "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachine", "name": name}},
    }))
    .expect("valid object")
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

async fn ensure_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": name}}))?,
        )
        .await?;
    Ok(())
}

pub async fn apiserver(options: &Options) -> anyhow::Result<Vec<Figure>> {
    let server = ApiServer::default();
    crds::install(&server, Dialect::V1beta2)?;
    let client = server.client();
    let resource = machine_resource();
    let mut figures = Vec::new();
    ensure_namespace(&client, "listed").await?;
    ensure_namespace(&client, "bulk").await?;

    let listed: Api<DynamicObject> = Api::namespaced_with(client.clone(), "listed", &resource);
    figures.extend(sequential_creates(&listed, options.listed).await?);

    // Concurrent creates up to the capacity target.
    let remaining = options.objects.saturating_sub(options.listed);
    let bulk: Api<DynamicObject> = Api::namespaced_with(client.clone(), "bulk", &resource);
    let started = Instant::now();
    let results: Vec<anyhow::Result<()>> = stream::iter(0..remaining)
        .map(|i| {
            let bulk = bulk.clone();
            async move {
                bulk.create(
                    &PostParams::default(),
                    &machine(&format!("b-{i:06}"), "bulk"),
                )
                .await?;
                Ok(())
            }
        })
        .buffer_unordered(options.concurrency)
        .collect()
        .await;
    results.into_iter().collect::<anyhow::Result<Vec<()>>>()?;
    let concurrent = started.elapsed();
    figures.push(Figure {
        what: format!(
            "create, in-process, {} concurrent ({remaining} objects)",
            options.concurrency
        ),
        value: format!(
            "{:.0} objects/s",
            remaining as f64 / concurrent.as_secs_f64()
        ),
    });
    figures.push(Figure {
        what: "objects stored".into(),
        value: server.object_count().to_string(),
    });

    figures.extend(list_timings(&server, &listed).await?);
    Ok(figures)
}

/// Sequential in-process creates of `count` Machines: the latency of one create.
async fn sequential_creates(
    listed: &Api<DynamicObject>,
    count: usize,
) -> anyhow::Result<Vec<Figure>> {
    let mut latencies = Vec::with_capacity(count);
    let started = Instant::now();
    for i in 0..count {
        let t = Instant::now();
        listed
            .create(
                &PostParams::default(),
                &machine(&format!("m-{i:06}"), "listed"),
            )
            .await?;
        latencies.push(t.elapsed());
    }
    let sequential = started.elapsed();
    latencies.sort();
    Ok(vec![
        Figure {
            what: format!("create, in-process, sequential ({count} objects)"),
            value: format!("{:.0} objects/s", count as f64 / sequential.as_secs_f64()),
        },
        Figure {
            what: "create latency p50 / p99".into(),
            value: format!(
                "{} / {}",
                ms(percentile(&latencies, 0.5)),
                ms(percentile(&latencies, 0.99))
            ),
        },
    ])
}

/// LIST of the listed namespace, in-process and over HTTP, whole and paginated (best of 5 each).
async fn list_timings(
    server: &ApiServer,
    listed: &Api<DynamicObject>,
) -> anyhow::Result<Vec<Figure>> {
    let resource = machine_resource();
    let mut figures = Vec::new();
    let time_list = |api: Api<DynamicObject>, limit: Option<u32>| async move {
        let mut best = Duration::MAX;
        let mut count = 0;
        for _ in 0..5 {
            let t = Instant::now();
            let mut params = ListParams::default();
            if let Some(limit) = limit {
                params = params.limit(limit);
            }
            count = 0;
            let mut page = api.list(&params).await?;
            count += page.items.len();
            while let Some(token) = page.metadata.continue_.clone().filter(|c| !c.is_empty()) {
                page = api.list(&params.clone().continue_token(&token)).await?;
                count += page.items.len();
            }
            best = best.min(t.elapsed());
        }
        anyhow::Ok((best, count))
    };
    let (whole, count) = time_list(listed.clone(), None).await?;
    figures.push(Figure {
        what: format!("LIST {count} objects, in-process (best of 5)"),
        value: ms(whole),
    });
    let (paged, _) = time_list(listed.clone(), Some(500)).await?;
    figures.push(Figure {
        what: format!("LIST {count} objects, in-process, pages of 500"),
        value: ms(paged),
    });
    let serving = server.serve(0).await?;
    let http_client = serving.client().await?;
    let over_http: Api<DynamicObject> = Api::namespaced_with(http_client, "listed", &resource);
    let (http_whole, _) = time_list(over_http.clone(), None).await?;
    figures.push(Figure {
        what: format!("LIST {count} objects, HTTP on loopback"),
        value: ms(http_whole),
    });
    let (http_paged, _) = time_list(over_http, Some(500)).await?;
    figures.push(Figure {
        what: format!("LIST {count} objects, HTTP, pages of 500"),
        value: ms(http_paged),
    });
    Ok(figures)
}
