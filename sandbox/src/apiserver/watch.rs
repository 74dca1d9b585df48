//! `?watch=true`: newline-delimited WatchEvents from a resourceVersion on, with bookmarks,
//! selector transitions (an object leaving a selector is DELETED for that watcher) and 410 Expired.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::ops::at_version;
use super::resources::ResourceDef;
use super::selector::{FieldSelector, LabelSelector};
use super::store::{Event, EventType};

pub struct WatchSpec {
    pub def: Arc<ResourceDef>,
    pub version: String,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub bookmarks: bool,
    pub timeout: Duration,
    pub bookmark_interval: Duration,
}

impl WatchSpec {
    fn selects(&self, event: &Event) -> bool {
        event.res == self.def.key()
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| *ns == event.namespace)
    }

    fn matches(&self, object: &Value) -> bool {
        self.labels.matches_object(object) && self.fields.matches_object(object)
    }

    /// The event this watcher sees for a change, if any.
    pub fn translate(&self, event: &Event) -> Option<(EventType, Value)> {
        if !self.selects(event) {
            return None;
        }
        let now = self.matches(&event.object);
        let before = event.previous.as_deref().is_some_and(|p| self.matches(p));
        let kind = match (event.kind, before, now) {
            (EventType::Added, _, true) => EventType::Added,
            (EventType::Modified, true, true) => EventType::Modified,
            (EventType::Modified, false, true) => EventType::Added,
            (EventType::Modified, true, false) => EventType::Deleted,
            (EventType::Deleted, true, _) => EventType::Deleted,
            _ => return None,
        };
        Some((kind, at_version(&event.object, &self.def, &self.version)))
    }

    pub fn line(kind: &str, object: &Value) -> Bytes {
        let mut line = serde_json::to_vec(&json!({"type": kind, "object": object})).expect("JSON");
        line.push(b'\n');
        Bytes::from(line)
    }

    /// An empty object of the kind carrying only the resourceVersion; a typed kind's empty
    /// object still has its structs (a Lease's `spec`, a Namespace's `spec` and `status`).
    fn bookmark(&self, rv: u64) -> Bytes {
        let mut object = json!({"kind": self.def.kind, "apiVersion": self.def.api_version(&self.version),
            "metadata": {"resourceVersion": rv.to_string()}});
        let structs: &[&str] = match (self.def.group.as_str(), self.def.kind.as_str()) {
            ("coordination.k8s.io", "Lease") => &["spec"],
            ("", "Namespace") => &["spec", "status"],
            _ => &[],
        };
        for field in structs {
            object[*field] = json!({});
        }
        Self::line("BOOKMARK", &object)
    }
}

/// Streams `initial` then live events into `tx` until the timeout, a lagging receiver, the client
/// going away, or server shutdown.
pub async fn run(
    spec: WatchSpec,
    initial: Vec<Bytes>,
    mut last_rv: u64,
    mut live: broadcast::Receiver<Arc<Event>>,
    tx: mpsc::Sender<Bytes>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    for line in initial {
        if tx.send(line).await.is_err() {
            return;
        }
    }
    let deadline = tokio::time::Instant::now() + spec.timeout;
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + spec.bookmark_interval,
        spec.bookmark_interval,
    );
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => {
                if spec.bookmarks {
                    let _ = tx.send(spec.bookmark(last_rv)).await;
                }
                return;
            }
            _ = ticker.tick(), if spec.bookmarks => {
                if tx.send(spec.bookmark(last_rv)).await.is_err() {
                    return;
                }
            }
            _ = shutdown.changed() => return,
            _ = tx.closed() => return,
            received = live.recv() => match received {
                Ok(event) => {
                    if event.rv <= last_rv {
                        continue;
                    }
                    last_rv = event.rv;
                    if let Some((kind, object)) = spec.translate(&event)
                        && tx.send(WatchSpec::line(kind.as_str(), &object)).await.is_err()
                    {
                        return;
                    }
                }
                // A watcher too slow to keep up is closed; the client re-watches from its last rv.
                Err(_) => return,
            }
        }
    }
}
