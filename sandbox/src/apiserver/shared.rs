//! What one server's handlers share: its options, the store, the request log, the faults it
//! injects, its clocks and address.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;

use crate::apiserver::control::{Faults, Policy, RequestRecord};
use crate::apiserver::store::State;

/// How one server behaves.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Require this bearer token (401 without it).
    pub token: Option<String>,
    /// Serve HTTPS with a self-signed CA (over TCP only).
    pub tls: bool,
    /// With `tls`: authenticate a client by the certificate the CA issued for the admin (a
    /// kubeconfig's `client-certificate-data`), as a management cluster does; a request with
    /// neither that certificate nor `token` is 401.
    pub client_certificates: bool,
    /// The user every request with `token` runs as, unless impersonating.
    pub admin_user: String,
    /// Other bearer tokens, each of a user without permissions of its own (`token → user`), as
    /// a ServiceAccount's token is; grants give it some.
    pub user_tokens: std::collections::BTreeMap<String, String>,
    /// Watch events kept for watches that resume from a resourceVersion.
    pub history_limit: usize,
    pub bookmark_interval: Duration,
    /// Seed of the fault injector's randomness.
    pub seed: u64,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            token: None,
            tls: false,
            client_certificates: false,
            admin_user: "sandbox-admin".to_string(),
            user_tokens: std::collections::BTreeMap::new(),
            history_limit: 200_000,
            bookmark_interval: Duration::from_secs(60),
            seed: 1,
        }
    }
}

pub(crate) struct Shared {
    pub(in crate::apiserver) state: Mutex<State>,
    pub(in crate::apiserver) options: ServerOptions,
    pub(in crate::apiserver) log: Mutex<Vec<RequestRecord>>,
    /// Every applied write with the lease holder it named and the one the Lease named then.
    pub(in crate::apiserver) fences: Mutex<Vec<crate::apiserver::fencing::FencedWrite>>,
    pub(in crate::apiserver) faults: Mutex<Faults>,
    pub(in crate::apiserver) policy: Mutex<Policy>,
    pub(in crate::apiserver) gc_enabled: AtomicBool,
    /// Shared with the collector's task, which must not keep the server alive while it waits.
    pub(in crate::apiserver) gc_notify: Arc<Notify>,
    pub(in crate::apiserver) write_latency_us: AtomicU64,
    /// The logical clock of the request log (see `RequestRecord::started`).
    pub(in crate::apiserver) clock: AtomicU64,
    /// Answers currently held back by an `ApplyThenStall` fault.
    pub(in crate::apiserver) answers_held: AtomicUsize,
    pub(in crate::apiserver) address: Mutex<String>,
    pub(in crate::apiserver) shutdown: tokio::sync::watch::Sender<bool>,
}

impl Shared {
    /// The next tick of the request log's clock.
    pub(in crate::apiserver) fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::SeqCst)
    }
    pub(in crate::apiserver) fn write_latency(&self) -> Duration {
        Duration::from_micros(self.write_latency_us.load(Ordering::Relaxed))
    }
    pub(in crate::apiserver) fn gc_wanted(&self) {
        if self.gc_enabled.load(Ordering::Relaxed) {
            self.gc_notify.notify_one();
        }
    }
    pub(in crate::apiserver) fn server_address(&self) -> String {
        self.address.lock().clone()
    }
}

impl Drop for Shared {
    /// Wakes the collector so that it sees the server is gone and ends.
    fn drop(&mut self) {
        self.gc_notify.notify_one();
    }
}
