//! The controllers' loop for one management cluster: its delays and configuration, the watches
//! that wake it, and each pass (list every kind, let each controller decide, apply the writes).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::config::Config;
use super::context::{Ctx, Memory};

use super::shape::Shape;
use super::world::{KINDS, World, Write};

use super::cloud::Cloud;
use super::holds::Holds;
use crate::apiserver::server::ApiServer;

/// Running controllers of one management cluster; dropping the handle stops them.
pub struct Controllers {
    pub holds: Arc<Holds>,
    pub cloud: Cloud,
    wake: Arc<Notify>,
    passes: Arc<AtomicU64>,
    idle: watch::Receiver<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Controllers {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The User-Agent of the controllers' requests: the request log and managedFields tell them apart.
pub const USER_AGENT: &str = "capi-sandbox-controllers/v0";

impl Controllers {
    /// Starts the controllers of `server` against the shared `cloud`.
    pub fn start(server: &ApiServer, config: Config, cloud: Cloud) -> Controllers {
        let service = tower::ServiceBuilder::new()
            .map_request(|mut request: http::Request<kube::client::Body>| {
                request.headers_mut().insert(
                    http::header::USER_AGENT,
                    http::HeaderValue::from_static(USER_AGENT),
                );
                request
            })
            .service(server.service());
        let client = kube::Client::new(service, "default");
        let holds = Arc::new(Holds::default());
        let wake = Arc::new(Notify::new());
        let passes = Arc::new(AtomicU64::new(0));
        let (idle_tx, idle) = watch::channel(0);
        let task = tokio::spawn(run(
            client,
            config,
            cloud.clone(),
            holds.clone(),
            wake.clone(),
            passes.clone(),
            idle_tx,
        ));
        Controllers {
            holds,
            cloud,
            wake,
            passes,
            idle,
            task,
        }
    }

    /// Waits until the controllers finished a pass, begun after this call, that wrote nothing and
    /// waits for no timer: everything that can happen without outside help has happened.
    pub async fn settle(&self, timeout: Duration) -> Result<(), &'static str> {
        let after = self.passes.load(Ordering::SeqCst);
        self.wake.notify_one();
        let mut idle = self.idle.clone();
        tokio::time::timeout(timeout, async {
            loop {
                if *idle.borrow_and_update() > after {
                    return;
                }
                if idle.changed().await.is_err() {
                    return;
                }
            }
        })
        .await
        .map_err(|_| "controllers did not settle in time")
    }

    /// Waits until a whole pass begun after this call has run (whatever it wrote or waits for):
    /// what the controllers do at once about a change made before the call is done.
    pub async fn one_pass(&self, timeout: Duration) -> Result<(), &'static str> {
        let after = self.passes.load(Ordering::SeqCst);
        self.wake.notify_one();
        tokio::time::timeout(timeout, async {
            // A pass begins after the one that began after the call: that one ended.
            while self.passes.load(Ordering::SeqCst) < after + 2 {
                self.wake.notify_one();
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await
        .map_err(|_| "no controller pass in time")
    }

    /// Stops the controllers, as a management cluster whose Cluster API controllers are down.
    pub fn stop(&self) {
        self.task.abort();
    }

    /// Wakes the controllers (e.g. after changing the cloud from outside).
    pub fn nudge(&self) {
        self.wake.notify_one();
    }
}

/// One watcher per kind; any event wakes the loop.
fn spawn_watchers(
    client: &kube::Client,
    shape: Shape,
    wake: Arc<Notify>,
) -> Vec<tokio::task::JoinHandle<()>> {
    KINDS
        .iter()
        .map(|kind| {
            let api: Api<DynamicObject> =
                Api::all_with(client.clone(), &super::world::resource(kind, shape));
            let wake = wake.clone();
            tokio::spawn(async move {
                let mut events =
                    kube::runtime::watcher(api, kube::runtime::watcher::Config::default()).boxed();
                while let Some(event) = events.next().await {
                    if event.is_ok() {
                        wake.notify_one();
                    } else {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            })
        })
        .collect()
}

/// How a controller reconciles one object of its kind: its writes and timers go into the pass.
type Reconcile = fn(&mut Ctx, &serde_json::Value);

/// Every controller of a pass, by the kind it reconciles, in the order a pass runs them (a
/// Cluster's own controller, then its topology).
const CONTROLLERS: &[(&str, &[Reconcile])] = &[
    (
        "Cluster",
        &[
            super::cluster::reconcile_cluster,
            super::topology::reconcile,
        ],
    ),
    ("DockerCluster", &[super::cluster::reconcile_docker_cluster]),
    ("KubeadmControlPlane", &[super::control_plane::reconcile]),
    ("MachineDeployment", &[super::workers::reconcile_deployment]),
    ("MachineSet", &[super::workers::reconcile_set]),
    ("MachinePool", &[super::pools::reconcile_pool]),
    ("DockerMachinePool", &[super::pools::reconcile_docker_pool]),
    ("Machine", &[super::machine::reconcile_machine]),
    ("DockerMachine", &[super::machine::reconcile_docker_machine]),
    ("MachineHealthCheck", &[super::health::reconcile]),
];

/// One pass of every controller over a snapshot: the writes and the next timer.
pub fn reconcile_all(
    world: &World,
    config: &Config,
    cloud: &Cloud,
    holds: &Holds,
    memory: &mut Memory,
    now: Instant,
) -> (Vec<Write>, Option<Instant>) {
    let shape = Shape {
        dialect: config.dialect,
    };
    let mut ctx = Ctx {
        world,
        shape,
        config,
        cloud,
        holds,
        memory,
        now,
        time: crate::apiserver::ops::now(),
        writes: Vec::new(),
        wake: None,
    };
    for (kind, reconcilers) in CONTROLLERS {
        for object in world.all(kind) {
            for reconcile in *reconcilers {
                reconcile(&mut ctx, object);
            }
        }
    }
    (ctx.writes, ctx.wake)
}

async fn run(
    client: kube::Client,
    config: Config,
    cloud: Cloud,
    holds: Arc<Holds>,
    wake: Arc<Notify>,
    passes: Arc<AtomicU64>,
    idle: watch::Sender<u64>,
) {
    let shape = Shape {
        dialect: config.dialect,
    };
    let _watchers = WatcherGuard(spawn_watchers(&client, shape, wake.clone()));
    let mut memory = Memory::new(config.seed);
    loop {
        let pass = passes.fetch_add(1, Ordering::SeqCst) + 1;
        let world = match World::load(&client, shape).await {
            Ok(world) => world,
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let (writes, next) =
            reconcile_all(&world, &config, &cloud, &holds, &mut memory, Instant::now());
        for write in &writes {
            // Failures (conflicts, vanished objects) are retried by the next pass.
            let _ = write.apply(&client, shape, &cloud).await;
        }
        if !writes.is_empty() {
            continue;
        }
        if next.is_none() {
            let _ = idle.send(pass);
        }
        let sleep = next.map(tokio::time::sleep_until);
        tokio::select! {
            _ = wake.notified() => {}
            _ = holds.changed.notified() => {}
            _ = async { match sleep { Some(s) => s.await, None => std::future::pending().await } } => {}
        }
    }
}

struct WatcherGuard(Vec<tokio::task::JoinHandle<()>>);

impl Drop for WatcherGuard {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}
