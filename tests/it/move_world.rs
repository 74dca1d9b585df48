//! The two-server world the move suites share: sandbox servers without controllers, the
//! plugin run against them, and what they read back (end states, kill points, writes).

use crate::common::Writes;
use std::collections::{BTreeMap, BTreeSet};

use capi_sandbox::apiserver::{KubeconfigEntry, write_kubeconfig};
use capi_sandbox::crds::{self, Dialect};
use capi_sandbox::{ApiServer, FaultAction, FaultRule, ServerOptions, Serving};
use serde_json::{Value, json};

pub use capi_sandbox::fixture::{
    BOOTSTRAP, CONTROL_PLANE, CORE, Fixture, INFRA, MOVE_HIERARCHY_LABEL, key,
};

pub const ADDONS: &str = "addons.cluster.x-k8s.io/v1beta2";
pub const MOVE_LABEL: &str = "clusterctl.cluster.x-k8s.io/move";

/// A move of namespace ns1 from the world's source to its target.
pub const MOVE_NS1: [&str; 7] = [
    "move",
    "--context",
    "source",
    "--to-context",
    "target",
    "-n",
    "ns1",
];

/// A move of one Cluster of namespace ns1, from the world's source to its target.
pub fn move_one(cluster: &str) -> Vec<&str> {
    [&MOVE_NS1[..1], &[cluster], &MOVE_NS1[1..]].concat()
}

/// The move of ns1 the other way, from the world's target back into its source.
pub const MOVE_BACK: [&str; 7] = [
    "move",
    "--context",
    "target",
    "--to-context",
    "source",
    "-n",
    "ns1",
];

pub struct World {
    pub source: ApiServer,
    pub target: ApiServer,
    serving: Option<(Serving, Serving)>,
    pub dir: tempfile::TempDir,
    /// The source's objects as loaded (before the move), by `Kind ns/name`.
    pub loaded: BTreeMap<String, Value>,
    /// Environment every command of this world runs with (a lease duration, a stepped clock).
    env: std::sync::Mutex<Vec<(String, String)>>,
}

impl World {
    pub async fn start(fixture: &Fixture) -> World {
        let source = ApiServer::new(ServerOptions::default());
        let target = ApiServer::new(ServerOptions::default());
        for server in [&source, &target] {
            crds::install_with_inventory(server, Dialect::V1beta2).unwrap();
        }
        let loaded: BTreeMap<String, Value> = fixture
            .load(&[&source, &target])
            .unwrap()
            .into_iter()
            .map(|o| (key(&o), o))
            .collect();
        let serving = (
            source.serve(0).await.unwrap(),
            target.serve(0).await.unwrap(),
        );
        let dir = tempfile::tempdir().unwrap();
        // The source also under another name, and by another URL of the same server: both
        // are the same cluster to a move.
        let mut by_localhost = serving.0.kubeconfig_entry("source-localhost");
        by_localhost.server = by_localhost.server.replace("127.0.0.1", "localhost");
        let entries: Vec<KubeconfigEntry> = vec![
            serving.0.kubeconfig_entry("source"),
            serving.1.kubeconfig_entry("target"),
            serving.0.kubeconfig_entry("source-again"),
            by_localhost,
        ];
        write_kubeconfig(&dir.path().join("kubeconfig"), &entries).unwrap();
        World {
            source,
            target,
            serving: Some(serving),
            dir,
            loaded,
            env: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Writes by the plugin in either server that changed state, in order per server.
    pub fn plugin_writes(&self) -> Vec<capi_sandbox::RequestRecord> {
        [&self.source, &self.target]
            .iter()
            .flat_map(|s| s.writes())
            .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
            .collect()
    }

    /// How many plugin writes each server (source, target) has seen.
    pub fn writes_per_server(&self) -> [usize; 2] {
        [&self.source, &self.target].map(|s| {
            s.writes()
                .iter()
                .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
                .count()
        })
    }

    /// The plugin's writes after `before` (from [`World::writes_per_server`]).
    pub fn writes_since(&self, before: [usize; 2]) -> Vec<capi_sandbox::RequestRecord> {
        [&self.source, &self.target]
            .iter()
            .zip(before)
            .flat_map(|(s, n)| {
                s.writes()
                    .into_iter()
                    .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
                    .skip(n)
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Both management clusters recreated at the same addresses (a rebuilt kind cluster, a new
    /// VIP): new servers — so new `kube-system` UIDs — holding `fixture` again, nothing moved.
    pub async fn recreate(&mut self, fixture: &Fixture) {
        let old = self.serving.take().expect("serving");
        let ports = (old.0.addr.port(), old.1.addr.port());
        drop(old);
        let source = ApiServer::new(ServerOptions::default());
        let target = ApiServer::new(ServerOptions::default());
        for server in [&source, &target] {
            crds::install_with_inventory(server, Dialect::V1beta2).unwrap();
        }
        fixture.load(&[&source, &target]).unwrap();
        // The old listeners close as their tasks end.
        let serve_at = |server: &ApiServer, port: u16| {
            let server = server.clone();
            async move {
                for _ in 0..200 {
                    if let Ok(serving) = server.serve(port).await {
                        return serving;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
                panic!("port {port} stayed taken");
            }
        };
        self.serving = Some((
            serve_at(&source, ports.0).await,
            serve_at(&target, ports.1).await,
        ));
        self.source = source;
        self.target = target;
    }

    /// `move --context source --to-context target` and `extra`.
    pub async fn move_with(&self, extra: &[&str]) -> crate::common::Output {
        let mut args = vec!["move", "--context", "source", "--to-context", "target"];
        args.extend_from_slice(extra);
        self.plugin(&args).await
    }

    pub async fn plugin(&self, args: &[&str]) -> crate::common::Output {
        let output = self.command(args).output().await.unwrap();
        output.into()
    }

    /// The plugin against this world, with journals in this world's own state directory.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command =
            crate::common::plugin_command(Some(&self.dir.path().join("kubeconfig")), args);
        command.env("XDG_STATE_HOME", self.state_dir());
        command.envs(self.env.lock().unwrap().clone());
        command
    }

    /// Every later command of this world runs with `name=value`.
    pub fn set_env(&self, name: &str, value: &str) {
        let mut env = self.env.lock().unwrap();
        env.retain(|(n, _)| n != name);
        env.push((name.to_string(), value.to_string()));
    }

    /// A hint the plugin printed, pasted into a shell against this world.
    pub async fn paste(&self, hint: &str) -> crate::common::Output {
        let mut command =
            crate::common::pasted_command(Some(&self.dir.path().join("kubeconfig")), hint);
        command.env("XDG_STATE_HOME", self.state_dir());
        command.envs(self.env.lock().unwrap().clone());
        let output = command.output().await.unwrap();
        output.into()
    }

    pub fn state_dir(&self) -> std::path::PathBuf {
        self.dir.path().join("state")
    }

    /// The plan's groups as sorted `Kind ns/name` lists, and the objects copied but kept.
    pub async fn plan(&self, args: &[&str]) -> (Vec<Vec<String>>, BTreeSet<String>) {
        let mut full = vec![
            "move",
            "--context",
            "source",
            "--to-context",
            "target",
            "--dry-run",
            "-o",
            "json",
        ];
        full.extend_from_slice(args);
        let out = self.plugin(&full).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        let plan: Value = serde_json::from_str(&out.stdout).unwrap();
        let mut kept = BTreeSet::new();
        let groups = plan["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                let mut objects: Vec<String> = g["objects"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|o| {
                        let k = format!(
                            "{} {}/{}",
                            o["kind"].as_str().unwrap(),
                            o["namespace"].as_str().unwrap_or(""),
                            o["name"].as_str().unwrap()
                        );
                        if o["keptInSource"] == true {
                            kept.insert(k.clone());
                        }
                        k
                    })
                    .collect();
                objects.sort();
                objects
            })
            .collect();
        (groups, kept)
    }

    /// Moves for real and checks the end state against the plan.
    pub async fn move_and_check(&self, args: &[&str]) {
        let (groups, kept) = self.plan(args).await;
        let mut full = vec!["move", "--context", "source", "--to-context", "target"];
        full.extend_from_slice(args);
        let before = self.writes_per_server();
        let out = self.plugin(&full).await;
        assert_eq!(out.code, 0, "{}", out.stderr);
        assert!(self.source.lease().is_none(), "the move released its lease");

        // At most four writes per moved object (create, managedFields, mark, DELETE), plus the
        // pause and unpause of each Cluster and ClusterClass and the namespaces made.
        // (The journal's copy in the source is a few writes per step, not per object.)
        let all_writes = self.writes_since(before);
        // Every DELETE names the UID of what it deletes, the journal copy's included.
        for r in all_writes.iter().filter(|r| r.verb == "delete") {
            assert!(
                r.precondition_uid.is_some(),
                "DELETE {} {:?} without a UID precondition",
                r.resource,
                r.name
            );
        }
        let writes: Vec<capi_sandbox::RequestRecord> = all_writes
            .into_iter()
            .filter(|r| !journal_shard(r))
            .collect();
        let moved = groups.iter().map(Vec::len).sum::<usize>();
        let pausable = groups
            .iter()
            .flatten()
            .filter(|k| k.starts_with("Cluster ") || k.starts_with("ClusterClass "))
            .count();
        let namespaces = writes.iter().filter(|r| r.resource == "namespaces").count();
        // And one verification record left next to each moved Cluster in the target.
        let clusters = groups
            .iter()
            .flatten()
            .filter(|k| k.starts_with("Cluster "))
            .count();
        assert!(
            writes.len() <= 4 * moved + 2 * pausable + namespaces + clusters,
            "{} writes for {moved} objects: {:?}",
            writes.len(),
            writes
                .iter()
                .map(|r| format!("{} {} {:?}", r.verb, r.resource, r.name))
                .collect::<Vec<_>>()
        );

        let in_target: BTreeMap<String, Value> = self
            .target
            .dump()
            .into_iter()
            .map(|o| (key(&o), o))
            .collect();
        let in_source: BTreeSet<String> = self.source.dump().iter().map(key).collect();
        let by_uid: BTreeMap<&str, &Value> = in_target
            .values()
            .map(|o| (o["metadata"]["uid"].as_str().unwrap(), o))
            .collect();
        for moved in groups.iter().flatten() {
            let before = &self.loaded[moved];
            let after = in_target
                .get(moved)
                .unwrap_or_else(|| panic!("{moved} is in the target"));
            assert_ne!(after["metadata"]["uid"], before["metadata"]["uid"]);
            // The source's managedFields, written back as they were (the move reads them as
            // text, apart from the object); Clusters and ClusterClasses add the unpause's.
            if !moved.starts_with("Cluster ") && !moved.starts_with("ClusterClass ") {
                assert_eq!(
                    after["metadata"]["managedFields"], before["metadata"]["managedFields"],
                    "{moved} keeps its managedFields"
                );
            }
            let owners = after["metadata"]["ownerReferences"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            // References to owners that moved, in order; one to a Cluster that stays is dropped.
            let source_owners: Vec<Value> = before["metadata"]["ownerReferences"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter(|o| {
                    let owner = self
                        .loaded
                        .values()
                        .find(|l| l["metadata"]["uid"] == o["uid"])
                        .unwrap();
                    groups.iter().flatten().any(|g| *g == key(owner))
                })
                .collect();
            assert_eq!(
                owners.len(),
                source_owners.len(),
                "{moved} keeps its owners"
            );
            for (owner, was) in owners.iter().zip(&source_owners) {
                let target_owner = by_uid
                    .get(owner["uid"].as_str().unwrap())
                    .unwrap_or_else(|| panic!("{moved}: owner {owner} resolves in the target"));
                assert_eq!(
                    (&target_owner["kind"], &target_owner["metadata"]["name"]),
                    (&was["kind"], &was["name"]),
                    "{moved}: owner rebuilt to the same object"
                );
                assert_eq!(owner["controller"], was["controller"], "{moved}");
                assert_eq!(
                    owner["blockOwnerDeletion"], was["blockOwnerDeletion"],
                    "{moved}"
                );
            }
            assert_eq!(
                in_source.contains(moved),
                kept.contains(moved),
                "{moved}: in the source afterwards exactly when copied but kept"
            );
        }

        // Each moved Cluster's verification record names what the move deleted for it (by
        // source UID) and what it copied but kept, as the plan said.
        let loaded_by_uid: BTreeMap<&str, String> = self
            .loaded
            .iter()
            .map(|(k, o)| (o["metadata"]["uid"].as_str().unwrap(), k.clone()))
            .collect();
        for k in groups
            .iter()
            .flatten()
            .filter(|k| k.starts_with("Cluster "))
        {
            let (namespace, name) = k["Cluster ".len()..].split_once('/').unwrap();
            let record = &in_target[&format!("ConfigMap {namespace}/kubectl-capi-moved-{name}")];
            let record: Value =
                serde_json::from_str(record["data"]["moved.json"].as_str().unwrap()).unwrap();
            let deleted: BTreeSet<&String> = record["deleted"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|d| d["uids"].as_array().unwrap())
                .map(|uid| &loaded_by_uid[uid.as_str().unwrap()])
                .collect();
            assert!(deleted.contains(k), "{k}'s record lists it: {deleted:?}");
            for d in &deleted {
                assert!(
                    groups.iter().flatten().any(|g| g == *d) && !kept.contains(*d),
                    "{k}'s record: {d} was moved and not kept"
                );
            }
            for c in record["keptInSource"].as_array().into_iter().flatten() {
                assert!(
                    kept.contains(c.as_str().unwrap()),
                    "{k}'s record: {c} was kept"
                );
            }
        }
    }
}

/// The plugin's DELETE requests to `server`.
pub fn plugin_deletes(server: &ApiServer) -> Vec<capi_sandbox::RequestRecord> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.verb == "delete" && r.agent.starts_with(crate::common::PLUGIN_AGENT))
        .collect()
}

/// A write to the journal's copy in the source cluster.
pub fn journal_shard(r: &capi_sandbox::RequestRecord) -> bool {
    r.resource == "configmaps"
        && r.name
            .as_deref()
            .is_some_and(|n| n.starts_with("kubectl-capi-move-"))
}

/// The journal's ConfigMaps in the source.
pub fn journal_copies(world: &World) -> usize {
    world
        .source
        .dump()
        .iter()
        .filter(|o| {
            o["kind"] == "ConfigMap"
                && o["metadata"]["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("kubectl-capi-move-"))
        })
        .count()
}

pub fn group(items: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = items.iter().map(|s| s.to_string()).collect();
    v.sort();
    v
}

pub const CLUSTER_FOO: [&str; 3] = [
    "DockerCluster ns1/foo",
    "Secret ns1/foo-ca",
    "Secret ns1/foo-kubeconfig",
];

/// Each object as the end state knows it: owners by kind and name, spec, labels — no UIDs,
/// versions or timestamps, which differ between any two runs.
pub fn end_state(server: &ApiServer) -> BTreeMap<String, Value> {
    server
        .dump()
        .into_iter()
        .filter(|o| {
            !matches!(
                o["kind"].as_str(),
                Some("CustomResourceDefinition") | Some("Event")
            )
        })
        .map(|o| {
            let owners: Vec<Value> = o["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    json!([
                        r["kind"],
                        r["name"],
                        r["controller"],
                        r["blockOwnerDeletion"]
                    ])
                })
                .collect();
            let mut annotations = o["metadata"]["annotations"].clone();
            if let Some(map) = annotations.as_object_mut() {
                map.remove("kubectl.kubernetes.io/last-applied-configuration");
                // When a move ended differs between two moves of the same objects.
                map.remove("kubectl-capi.dev/moved-at");
            }
            (
                key(&o),
                json!({"owners": owners, "spec": o["spec"], "labels": o["metadata"]["labels"],
                    "annotations": annotations, "finalizers": o["metadata"]["finalizers"]}),
            )
        })
        .collect()
}

/// Where a crash test kills the move.
#[derive(Clone, Copy, Debug)]
pub enum KillPoint {
    /// Once this many of its writes changed state, in either server.
    Writes(usize),
    /// Right after its Nth write to the journal's copy: the journal is written at every
    /// stage boundary and after every group, so these are the phase boundaries.
    JournalWrites(usize),
    /// While a write is applied but its answer held back: the real (not dry-run) write
    /// attempt number `skip + 1` in `server` (0 source, 1 target).
    Unanswered { server: usize, skip: u32 },
}

/// Per server (source, target): the plugin's write attempts that are not dry runs, and its
/// access reviews, which come first and which a [`KillPoint::Unanswered`] rule counts too.
pub fn write_attempts(world: &World) -> [(usize, usize); 2] {
    [&world.source, &world.target].map(|s| {
        let requests: Vec<_> = s
            .requests()
            .into_iter()
            .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
            .collect();
        (
            requests.iter().filter(|r| r.is_write_attempt()).count(),
            requests
                .iter()
                .filter(|r| r.resource == "selfsubjectaccessreviews")
                .count(),
        )
    })
}

/// Starts the plugin and SIGKILLs it at `point`. Returns whether it was killed (false: it
/// finished first).
pub async fn kill_at(world: &World, args: &[&str], point: KillPoint) -> bool {
    let (mut child, reached) = run_to(world, args, point).await;
    if !reached {
        return false;
    }
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    // A killed holder leaves its lease until it expires; the run after it takes it over.
    for server in [&world.source, &world.target] {
        crate::common::expire_lease(server).await;
    }
    true
}

/// Starts the plugin and returns it once it reaches `point` (`true`), or once it ended first.
pub async fn run_to(
    world: &World,
    args: &[&str],
    point: KillPoint,
) -> (tokio::process::Child, bool) {
    let before = world.writes_per_server();
    let servers = [&world.source, &world.target];
    if let KillPoint::Unanswered { server, skip } = point {
        servers[server].inject(
            FaultRule::new(FaultAction::ApplyThenStall(std::time::Duration::from_secs(
                300,
            )))
            .verbs(&["write"])
            .dry_run(false)
            .agent(crate::common::PLUGIN_AGENT)
            .skip(skip)
            .times(1),
        );
    }
    let mut child = world.command(args).spawn().unwrap();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the kill point was not reached within 60 s"
        );
        let reached = match point {
            KillPoint::Writes(n) => world.writes_since(before).len() >= n,
            KillPoint::JournalWrites(n) => {
                world
                    .writes_since(before)
                    .iter()
                    .filter(|r| journal_shard(r))
                    .count()
                    >= n
            }
            KillPoint::Unanswered { server, .. } => servers[server].answers_held() > 0,
        };
        if reached {
            return (child, true);
        }
        if child.try_wait().unwrap().is_some() {
            return (child, false);
        }
        tokio::time::sleep(std::time::Duration::from_micros(200)).await;
    }
}

/// The plugin's state-changing writes to `server`, as the server logged them.
pub fn writes_to(server: &ApiServer) -> Vec<capi_sandbox::RequestRecord> {
    server
        .writes()
        .into_iter()
        .filter(|r| r.agent.starts_with(crate::common::PLUGIN_AGENT))
        .collect()
}

/// The most writes that were in flight at once (on the server's logical clock).
pub fn most_in_flight(writes: &[capi_sandbox::RequestRecord]) -> usize {
    writes
        .iter()
        .map(|w| {
            writes
                .iter()
                .filter(|v| v.started <= w.started && w.started < v.finished)
                .count()
        })
        .max()
        .unwrap_or(0)
}

/// The one move journal in the world's state directory.
pub fn local_journal(w: &World) -> serde_json::Value {
    let dir = w.state_dir().join("kubectl-capi/moves");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap()
}

/// What an intruder who can write ConfigMaps in ns1 of the source may do to an interrupted
/// move: add an entry to the journal's copy pairing the Secret `victim-secret` of UID
/// `decoy_uid` in the source with the object of UID `victim_uid` in the target. False when
/// there is no copy to add it to.
pub async fn forge_journal_entry(world: &World, decoy_uid: &str, victim_uid: &str) -> bool {
    use kubectl_capi::mover::journal::{Entry, copy};
    let source = kubectl_capi::kube::Cluster::from_client(world.source.client(), "source");
    let Some(key) = copy::keys(&source, "ns1")
        .await
        .ok()
        .and_then(|keys| keys.first().cloned())
    else {
        return false;
    };
    let Ok(Some(mut journal)) = copy::load(&source, "ns1", &key).await else {
        return false;
    };
    let forged = Entry {
        object: kubectl_capi::model::ObjectRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            namespace: "ns1".into(),
            name: "victim-secret".into(),
        },
        resource: "secrets".into(),
        namespaced: true,
        uid: decoy_uid.to_string(),
        group: 0,
        kept_in_source: false,
        target_uid: Some(victim_uid.to_string()),
        created: true,
        preexisting: false,
        deleted: false,
        sent: true,
        removed: false,
        reused: false,
        owners: Vec::new(),
    };
    // Entries are kept sorted by source UID.
    let at = journal
        .entries
        .partition_point(|e| e.uid.as_str() < decoy_uid);
    journal.entries.insert(at, forged);
    let slices = copy::shards(journal.to_json_pieces());
    copy::save(
        &source,
        "ns1",
        &key,
        &slices,
        (None, &tokio::sync::Semaphore::new(4)),
    )
    .await
    .is_ok()
}
