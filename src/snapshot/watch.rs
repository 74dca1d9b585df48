//! Watch every kind of a selection (kube-runtime reflectors) and re-evaluate on each change until
//! a condition holds — no sleep-polling. `ready --wait` and `pause/resume --wait` use it.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use kube::api::DynamicObject;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::mpsc;

use super::{Fetch, KindKey, Snapshot, list_api, with_types};
use crate::kube::{Catalog, Cluster};
use crate::output::Printer;

pub enum Waited<T> {
    Done(T),
    TimedOut(T),
}

/// Evaluates `evaluate` on a fresh snapshot after every change; returns when it says done.
pub async fn until<T>(
    verbose: bool,
    cluster: &Cluster,

    catalog: &Catalog,
    fetch: &Fetch,
    timeout: Duration,
    mut evaluate: impl FnMut(&Snapshot) -> (bool, T),
) -> Waited<T> {
    let (tick_tx, mut ticks) = mpsc::channel::<()>(1);
    let mut stores: Vec<(KindKey, Store<DynamicObject>)> = Vec::new();
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
        // Without a backoff a watcher retries errors at once, and a stream that never waits
        // starves the runtime (its timers included).
        let events = watcher(api, config)
            .default_backoff()
            .map_ok(move |e| e.modify(|o| *o = with_types(o.clone(), &resource)));
        let stream = reflector::reflector(writer, events);
        let tx = tick_tx.clone();
        let kind = key.1.clone();
        tasks.push(tokio::spawn(async move {
            let mut stream = stream.boxed();
            while let Some(event) = stream.next().await {
                match event {
                    Ok(_) => {
                        let _ = tx.try_send(());
                    }
                    Err(error) if verbose => Printer::log(&format!("watching {kind}: {error}")),
                    Err(_) => {}
                }
                // Never monopolise a worker, whatever the stream does.
                tokio::task::yield_now().await;
            }
        }));
        stores.push((key.clone(), reader));
    }
    let snapshot_of = |stores: &Vec<(KindKey, Store<DynamicObject>)>| {
        Snapshot::from_stores(stores.iter().map(|(k, s)| (k.clone(), s.state())))
    };
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = None;
    let result = tokio::time::timeout_at(deadline, async {
        for (_, store) in &stores {
            let _ = store.wait_until_ready().await;
        }
        loop {
            let (done, value) = evaluate(&snapshot_of(&stores));
            if done {
                return value;
            }
            last = Some(value);
            if ticks.recv().await.is_none() {
                return last.take().expect("set above");
            }
        }
    })
    .await;
    for task in tasks {
        task.abort();
    }
    match result {
        Ok(value) => Waited::Done(value),
        Err(_) => Waited::TimedOut(last.unwrap_or_else(|| evaluate(&snapshot_of(&stores)).1)),
    }
}
