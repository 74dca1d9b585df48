//! Watch every kind of a selection (kube-runtime reflectors) and re-evaluate on each change until
//! a condition holds — no sleep-polling. `ready --wait` and `pause/resume --wait` use it.
//! A watch that cannot be re-established for longer than the request timeout means the API
//! server is gone: the wait ends with an error instead of spinning until its timeout.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use kube::api::DynamicObject;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::mpsc;

use super::{index::Fetch, index::KindKey, index::Snapshot, index::list_api, index::set_types};
use crate::error::{Error, Result};
use crate::kube::{Catalog, Cluster, KindInfo};
use crate::output::Log;

pub enum Waited<T> {
    Done(T),
    TimedOut(T),
}

/// Evaluates `evaluate` on a fresh snapshot after every change; returns when it says done, or
/// an error when the server is lost.
pub async fn until<T>(
    log: Option<Log>,
    cluster: &Cluster,
    catalog: &Catalog,
    fetch: &Fetch,
    timeout: Duration,
    mut evaluate: impl FnMut(&Snapshot) -> (bool, T),
) -> Result<Waited<T>> {
    let (tick_tx, mut ticks) = mpsc::channel::<()>(1);
    let (lost_tx, mut lost) = mpsc::channel::<String>(1);
    let patience = cluster.request_timeout;
    let mut stores: Vec<(KindKey, Store<DynamicObject>)> = Vec::new();
    let mut tasks = Vec::new();
    for (key, info) in fetch.resolved(catalog) {
        let (reader, task) = watch_kind(
            (cluster, info, fetch),
            &key,
            (tick_tx.clone(), lost_tx.clone()),
            (log.clone(), patience),
        );
        tasks.push(task);
        stores.push((key, reader));
    }
    let snapshot_of = |stores: &Vec<(KindKey, Store<DynamicObject>)>| {
        Snapshot::from_stores(stores.iter().map(|(k, s)| (k.clone(), s.state())))
    };
    let deadline = tokio::time::Instant::now() + timeout;
    let mut last = None;
    let evaluating = tokio::time::timeout_at(deadline, async {
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
    });
    let result = tokio::select! {
        result = evaluating => Ok(result),
        Some(reason) = lost.recv() => Err(reason),
    };
    for task in tasks {
        task.abort();
    }
    match result {
        Ok(Ok(value)) => Ok(Waited::Done(value)),
        Ok(Err(_)) => Ok(Waited::TimedOut(
            last.unwrap_or_else(|| evaluate(&snapshot_of(&stores)).1),
        )),
        Err(reason) => Err(Error::LostServer {
            server: Box::new(cluster.server()),
            after: crate::durations::show_duration(patience),
            reason,
        }),
    }
}

/// A reflector of one kind (`key`, served as `info`) of `fetch`: its store, and the task that
/// feeds it, sending on `tick` after every change and on `lost` once the watch has failed for
/// longer than `patience`.
fn watch_kind(
    (cluster, info, fetch): (&Cluster, &KindInfo, &Fetch),
    key: &KindKey,
    (tick, lost): (mpsc::Sender<()>, mpsc::Sender<String>),
    (log, patience): (Option<Log>, Duration),
) -> (Store<DynamicObject>, tokio::task::JoinHandle<()>) {
    let api = list_api(cluster, info, &fetch.scope);
    let mut config = watcher::Config::default();
    if crate::names::is_core_cluster(&key.0, &key.1)
        && let Some(selector) = &fetch.cluster_selector
    {
        config = config.labels(selector);
    }
    let writer = reflector::store::Writer::new(info.resource.clone());
    let reader = writer.as_reader();
    let resource = info.resource.clone();
    // Without a backoff a watcher retries errors at once, and a stream that never waits
    // starves the runtime (its timers included).
    let events = watcher(api, config).default_backoff().map_ok(move |e| {
        e.modify(|o| {
            // Stores hold what every evaluation reads, as a LIST for evaluation does:
            // a real server's managedFields would weigh more than the rest.
            set_types(o, &resource);
            super::listed::for_evaluation(o);
        })
    });
    let stream = reflector::reflector(writer, events);
    let kind = key.1.clone();
    let task = tokio::spawn(async move {
        let mut stream = stream.boxed();
        let mut failing_since: Option<Instant> = None;
        while let Some(event) = stream.next().await {
            match event {
                Ok(_) => {
                    failing_since = None;
                    let _ = tick.try_send(());
                }
                Err(error) => {
                    if let Some(log) = &log {
                        log.line(&format!("watching {kind}: {error}"));
                    }
                    let since = *failing_since.get_or_insert_with(Instant::now);
                    if since.elapsed() > patience {
                        let _ = lost.try_send(error.to_string());
                        return;
                    }
                }
            }
            // Never monopolise a worker, whatever the stream does.
            tokio::task::yield_now().await;
        }
    });
    (reader, task)
}
