//! The server itself: a handle to its shared state, what tests steer and read through it, and
//! where it serves (`connection` serves each connection).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use anyhow::Context as _;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::{Notify, broadcast};

use super::control::{FaultRule, Faults, Policy, RequestRecord};
use super::shared::{ServerOptions, Shared};
use super::store::State;

use super::connection::serve_connection;
pub use super::connection::{ApiService, Serving};

/// A handle to one in-memory API server. Clones share the server.
#[derive(Clone)]
pub struct ApiServer {
    pub(in crate::apiserver) shared: Arc<Shared>,
}

impl Default for ApiServer {
    fn default() -> Self {
        Self::new(ServerOptions::default())
    }
}

impl ApiServer {
    /// A new, empty server. Inside a tokio runtime it also runs the garbage collector.
    pub fn new(options: ServerOptions) -> Self {
        let (events, _) = broadcast::channel(65_536);
        let (shutdown, _) = tokio::sync::watch::channel(false);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(events, options.history_limit)),
            faults: Mutex::new(Faults::new(options.seed)),
            options,
            log: Mutex::new(Vec::new()),
            policy: Mutex::new(Policy::default()),
            gc_enabled: AtomicBool::new(true),
            gc_notify: Arc::new(Notify::new()),
            write_latency_us: AtomicU64::new(0),
            clock: AtomicU64::new(0),
            answers_held: AtomicUsize::new(0),
            fences: parking_lot::Mutex::new(Vec::new()),
            address: Mutex::new("127.0.0.1:0".to_string()),
            shutdown,
        });
        // Built-in namespaces exist on every cluster.
        for ns in ["default", "kube-system", "kube-public"] {
            let ns_def = shared
                .state
                .lock()
                .lookup("", "v1", "namespaces")
                .expect("built-in");
            let ctx = super::ops::WriteCtx {
                manager: "kube-apiserver".into(),
                api_version: "v1".into(),
                dry_run: false,
                time: super::ops::now(),
            };
            super::ops::create(
                &mut shared.state.lock(),
                &ns_def,
                "v1",
                None,
                serde_json::json!({"metadata": {"name": ns}}),
                &ctx,
                false,
            )
            .expect("built-in namespace");
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(garbage_collector(
                Arc::downgrade(&shared),
                shared.gc_notify.clone(),
            ));
        }
        ApiServer { shared }
    }

    /// The server as a tower service, for `kube::Client::new` without sockets.
    pub fn service(&self) -> ApiService {
        ApiService {
            shared: self.shared.clone(),
        }
    }

    /// A kube client talking to this server in-process.
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.service(), "default")
    }

    /// Serves over TCP on 127.0.0.1 (port 0: any free port) until the returned handle is dropped.
    pub async fn serve(&self, port: u16) -> anyhow::Result<Serving> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .with_context(|| format!("binding 127.0.0.1:{port}"))?;
        let addr = listener.local_addr()?;
        *self.shared.address.lock() = addr.to_string();
        let options = &self.shared.options;
        let tls = if options.tls {
            let client_for = options
                .client_certificates
                .then_some(options.admin_user.as_str());
            Some(super::tls::generate(client_for)?)
        } else {
            None
        };
        let admin_certificate = tls.as_ref().and_then(|t| t.client.clone()).map(|c| c.der);
        let acceptor = tls
            .as_ref()
            .map(|t| tokio_rustls::TlsAcceptor::from(t.config.clone()));
        let shared = self.shared.clone();
        let task = tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let shared = shared.clone();
                let acceptor = acceptor.clone();
                let admin_certificate = admin_certificate.clone();
                connections.spawn(async move {
                    match acceptor {
                        Some(acceptor) => {
                            if let Ok(stream) = acceptor.accept(stream).await {
                                let presented = stream
                                    .get_ref()
                                    .1
                                    .peer_certificates()
                                    .and_then(|c| c.first())
                                    .map(|c| c.as_ref().to_vec());
                                let by_certificate =
                                    presented.is_some() && presented == admin_certificate;
                                serve_connection(shared, stream, by_certificate).await;
                            }
                        }
                        None => serve_connection(shared, stream, false).await,
                    }
                });
                while connections.try_join_next().is_some() {}
            }
        });
        let scheme = if tls.is_some() { "https" } else { "http" };
        Ok(Serving {
            url: format!("{scheme}://{addr}"),
            addr,
            client: tls.as_ref().and_then(|t| t.client.clone()),
            ca_pem: tls.map(|t| t.ca_pem),
            token: self.shared.options.token.clone(),
            task,
        })
    }

    // ---- what tests observe ----

    /// Every request served so far, in order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.shared.log.lock().clone()
    }

    /// Every write applied so far, with the lease holder it named and the one the server's
    /// Lease named when it was applied (the fencing check: see [`super::fencing`]).
    pub fn fenced_writes(&self) -> Vec<super::fencing::FencedWrite> {
        self.shared.fences.lock().clone()
    }

    pub fn reset_requests(&self) {
        self.shared.log.lock().clear();
    }

    /// How many watches clients whose User-Agent starts with `agent` have opened: the moment a
    /// test's client is waiting on this server.
    pub fn watches(&self, agent: &str) -> usize {
        self.shared
            .log
            .lock()
            .iter()
            .filter(|r| r.verb == "watch" && r.agent.starts_with(agent))
            .count()
    }

    /// How many requests had this verb on this resource (plural).
    pub fn count(&self, verb: &str, resource: &str) -> usize {
        self.shared
            .log
            .lock()
            .iter()
            .filter(|r| r.verb == verb && r.resource == resource)
            .count()
    }

    /// Requests that changed state (not reads, dry runs or access reviews).
    pub fn mutations(&self) -> Vec<RequestRecord> {
        self.shared
            .log
            .lock()
            .iter()
            .filter(|r| r.is_mutation())
            .cloned()
            .collect()
    }

    // ---- what tests steer ----

    pub fn inject(&self, rule: FaultRule) {
        self.shared.faults.lock().add(rule);
    }

    /// How many applied requests are waiting for their answer to be released
    /// ([`FaultAction::ApplyThenStall`]).
    pub fn answers_held(&self) -> usize {
        self.shared.answers_held.load(Ordering::SeqCst)
    }

    pub fn clear_faults(&self) {
        self.shared.faults.lock().clear();
    }

    /// Forbid `verb` on `resource` to everyone (403, and SelfSubjectAccessReviews say no).
    pub fn deny(&self, verb: &str, resource: &str) {
        self.shared.policy.lock().deny(verb, resource);
    }

    /// Allow an impersonated `user` (or `group:<name>` for everyone in an impersonated group) to
    /// `verb` `resource` in `group` (`*` matches anything).
    pub fn grant(&self, user: &str, verb: &str, group: &str, resource: &str) {
        self.shared.policy.lock().grant(user, verb, group, resource);
    }

    /// Added to every write before it is applied, outside the store lock: an etcd commit.
    pub fn set_write_latency(&self, latency: Duration) {
        self.shared
            .write_latency_us
            .store(latency.as_micros() as u64, Ordering::Relaxed);
    }

    /// Switches the garbage collector (and namespace cleanup after owners vanish) on or off.
    pub fn set_garbage_collection(&self, enabled: bool) {
        self.shared.gc_enabled.store(enabled, Ordering::Relaxed);
        if enabled {
            self.shared.gc_notify.notify_one();
        }
    }

    /// Runs the garbage collector now, to completion.
    pub fn collect_garbage(&self) {
        super::ops::collect_garbage(&mut self.shared.state.lock(), &super::ops::now());
    }

    /// Forgets the watch history, as an etcd compaction does (old resourceVersions become 410).
    pub fn compact(&self) {
        self.shared.state.lock().compact();
    }

    // ---- fixtures ----

    /// Creates every object of a multi-document YAML (or JSON) text as the admin, keeping `status`
    /// (fixtures describe observed state; a real create would drop it). CRDs become served at once.
    pub fn load_yaml(&self, text: &str) -> anyhow::Result<Vec<Value>> {
        let docs: Vec<Value> = serde_saphyr::from_multiple(text).context("parsing fixture YAML")?;
        let mut created = Vec::new();
        for doc in docs.into_iter().filter(|d| !d.is_null()) {
            created.push(self.load(doc)?);
        }
        Ok(created)
    }

    /// Creates one object (see [`ApiServer::load_yaml`]).
    pub fn load(&self, object: Value) -> anyhow::Result<Value> {
        let api_version = object["apiVersion"]
            .as_str()
            .context("object without apiVersion")?
            .to_string();
        let kind = object["kind"]
            .as_str()
            .context("object without kind")?
            .to_string();
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api_version.clone()),
        };
        let mut state = self.shared.state.lock();
        let def = state
            .resources()
            .find(|d| d.group == group && d.kind == kind && d.version(&version).is_some())
            .cloned()
            .with_context(|| format!("{api_version} {kind} is not served"))?;
        let namespace = object["metadata"]["namespace"]
            .as_str()
            .map(str::to_string)
            .or_else(|| def.namespaced.then(|| "default".to_string()));
        let ctx = super::ops::WriteCtx {
            manager: "capi-sandbox".into(),
            api_version: api_version.clone(),
            dry_run: false,
            time: super::ops::now(),
        };
        let created = super::ops::create(
            &mut state,
            &def,
            &version,
            namespace.as_deref(),
            object,
            &ctx,
            true,
        )
        .map_err(|e| anyhow::anyhow!("{}", e.message))?;
        Ok(super::ops::at_version(&created, &def, &version))
    }

    /// Every stored object, at its storage version.
    pub fn dump(&self) -> Vec<Value> {
        self.shared
            .state
            .lock()
            .all_objects()
            .into_iter()
            .map(|(_, v)| (*v).clone())
            .collect()
    }

    /// One stored object (storage version), bypassing the API: for assertions.
    pub fn object(&self, group: &str, plural: &str, namespace: &str, name: &str) -> Option<Value> {
        self.shared
            .state
            .lock()
            .get(
                &(group.to_string(), plural.to_string()),
                &(namespace.to_string(), name.to_string()),
            )
            .map(|v| (*v).clone())
    }

    pub fn object_count(&self) -> usize {
        self.shared.state.lock().count()
    }

    /// Back to a fresh server: no objects, no CRDs, no log, faults or policy.
    pub fn reset(&self) {
        {
            let mut state = self.shared.state.lock();
            let fresh = ApiServer::new(self.shared.options.clone());
            std::mem::swap(&mut *state, &mut *fresh.shared.state.lock());
            // Watchers of the old state must not see the new one's history as continuous.
            state.compact();
        }
        self.shared.log.lock().clear();
        self.shared.faults.lock().clear();
        self.shared.policy.lock().clear();
    }
}

async fn garbage_collector(shared: Weak<Shared>, wanted: Arc<Notify>) {
    loop {
        // Waiting holds no strong reference: a dropped server is freed, and its drop wakes this.
        wanted.notified().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        if shared.gc_enabled.load(Ordering::Relaxed) {
            super::ops::collect_garbage(&mut shared.state.lock(), &super::ops::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_dropped_server_is_freed_though_its_collector_runs() {
        let server = ApiServer::default();
        server
            .load(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "default"}}))
            .expect("loads");
        let state = Arc::downgrade(&server.shared);
        // The collector has started and waits.
        tokio::task::yield_now().await;
        drop(server);
        assert!(
            state.upgrade().is_none(),
            "something still holds the server"
        );
    }
}
