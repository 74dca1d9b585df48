//! `ready --wait`: watches on every kind the evaluation reads (kube-runtime reflectors), and a
//! fresh evaluation on every change — no sleep-polling.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use tokio::sync::mpsc;

use super::evaluate::{Options, Report, evaluate};
use crate::error::Result;
use crate::kube::{Catalog, Cluster};
use crate::snapshot::{Fetch, KindKey, Snapshot, list_api, with_types};

pub enum Outcome {
    Ready(Report),
    TimedOut(Report),
}

/// Watches until the evaluation says ready or `timeout` passes; `on_change` sees every new report.
pub async fn wait(
    cluster: &Cluster,
    catalog: &Catalog,
    fetch: &Fetch,
    options: &Options,
    timeout: Duration,
    mut on_change: impl FnMut(&Report),
) -> Result<Outcome> {
    let (tick_tx, mut ticks) = mpsc::channel::<()>(1);
    let mut stores: Vec<(KindKey, Store<kube::api::DynamicObject>)> = Vec::new();
    let mut tasks = Vec::new();
    for key in &fetch.kinds {
        let Some(info) = catalog.kind(&key.0, &key.1) else {
            continue;
        };
        let api = list_api(cluster, info, &fetch.scope);
        let mut config = watcher::Config::default();
        if key.0 == crate::names::CORE_GROUP
            && key.1 == "Cluster"
            && let Some(selector) = &fetch.cluster_selector
        {
            config = config.labels(selector);
        }
        let writer = reflector::store::Writer::new(info.resource.clone());
        let reader = writer.as_reader();
        let resource = info.resource.clone();
        let events = watcher(api, config)
            .map_ok(move |e| e.modify(|o| *o = with_types(o.clone(), &resource)));
        let stream = reflector::reflector(writer, events);
        let tx = tick_tx.clone();
        tasks.push(tokio::spawn(async move {
            let mut stream = stream.boxed();
            while let Some(event) = stream.next().await {
                if event.is_ok() {
                    let _ = tx.try_send(());
                }
            }
        }));
        stores.push((key.clone(), reader));
    }
    let deadline = tokio::time::Instant::now() + timeout;
    let evaluate_now = |stores: &Vec<(KindKey, Store<kube::api::DynamicObject>)>| {
        let snapshot = Snapshot::from_stores(stores.iter().map(|(k, s)| (k.clone(), s.state())));
        evaluate(&snapshot, options)
    };
    let outcome = async {
        for (_, store) in &stores {
            let _ = store.wait_until_ready().await;
        }
        let mut last: Option<String> = None;
        loop {
            let report = evaluate_now(&stores);
            let fingerprint = serde_json::to_string(&report).unwrap_or_default();
            if last.as_deref() != Some(&fingerprint) {
                on_change(&report);
                last = Some(fingerprint);
            }
            if report.ready {
                return Outcome::Ready(report);
            }
            if ticks.recv().await.is_none() {
                return Outcome::TimedOut(report);
            }
        }
    };
    let result = match tokio::time::timeout_at(deadline, outcome).await {
        Ok(outcome) => outcome,
        Err(_) => Outcome::TimedOut(evaluate_now(&stores)),
    };
    for task in tasks {
        task.abort();
    }
    Ok(result)
}
