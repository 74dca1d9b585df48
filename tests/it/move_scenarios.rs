//! clusterctl's move scenarios (its object-graph fixtures, built from the sandbox's real kinds),
//! each moved for real between two sandbox servers without controllers: the plan's groups are
//! what clusterctl's rules give, and afterwards every object is in the target with owner
//! references rebuilt to the target's UIDs, and the source holds only what is copied but kept.

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

pub struct World {
    pub source: ApiServer,
    pub target: ApiServer,
    serving: Option<(Serving, Serving)>,
    pub dir: tempfile::TempDir,
    /// The source's objects as loaded (before the move), by `Kind ns/name`.
    pub loaded: BTreeMap<String, Value>,
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
        }
    }

    /// Writes by the plugin in either server that changed state, in order per server.
    pub fn plugin_writes(&self) -> Vec<capi_sandbox::RequestRecord> {
        [&self.source, &self.target]
            .iter()
            .flat_map(|s| s.writes())
            .filter(|r| r.agent.starts_with("kubectl-capi/"))
            .collect()
    }

    /// How many plugin writes each server (source, target) has seen.
    pub fn writes_per_server(&self) -> [usize; 2] {
        [&self.source, &self.target].map(|s| {
            s.writes()
                .iter()
                .filter(|r| r.agent.starts_with("kubectl-capi/"))
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
                    .filter(|r| r.agent.starts_with("kubectl-capi/"))
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
        command
    }

    /// A hint the plugin printed, pasted into a shell against this world.
    pub async fn paste(&self, hint: &str) -> crate::common::Output {
        let mut command =
            crate::common::pasted_command(Some(&self.dir.path().join("kubeconfig")), hint);
        command.env("XDG_STATE_HOME", self.state_dir());
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
        .filter(|r| r.verb == "delete" && r.agent.starts_with("kubectl-capi/"))
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false);
    let w = World::start(&f).await;
    assert_eq!(
        w.plan(&["-n", "ns1"]).await.0,
        [group(&["Cluster ns1/foo"]), group(&CLUSTER_FOO)]
    );
    // -v 6 logs every request, kubectl-style, on stderr; never a body.
    let verbose = w
        .move_with(&["-n", "ns1", "--dry-run=server", "-v", "6"])
        .await;
    assert_eq!(verbose.code, 0, "{}", verbose.stderr);
    assert!(
        verbose.stdout.starts_with("Move plan:"),
        "{}",
        verbose.stdout
    );
    let logged: Vec<&str> = verbose
        .stderr
        .lines()
        .filter(|l| l.contains(" milliseconds"))
        .collect();
    assert!(
        logged.iter().any(|l| l.starts_with("GET http://")
            && l.contains("/apis/cluster.x-k8s.io/v1beta2/namespaces/ns1/clusters")
            && l.contains(" 200 OK in "))
            && logged
                .iter()
                .any(|l| l.starts_with("POST http://") && l.contains("dryRun=All")),
        "{}",
        verbose.stderr
    );
    assert!(!verbose.stderr.contains("\"data\""), "no bodies");
    // Sequential writes (clusterctl's way) give the same result as the parallel default.
    w.move_and_check(&["-n", "ns1", "--concurrency", "1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_deleted_after_planning_stops_the_move_before_any_create() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false)
        .machine("ns1", "foo", "m1", ("Cluster", "foo", true), false)
        .machine("ns1", "foo", "m2", ("Cluster", "foo", true), false);
    let w = World::start(&f).await;
    // The Cluster's pause is applied and its answer held back while someone deletes m2.
    w.source.inject(
        FaultRule::new(FaultAction::ApplyThenStall(
            std::time::Duration::from_millis(500),
        ))
        .verbs(&["patch"])
        .resource("clusters")
        .dry_run(false)
        .agent("kubectl-capi/")
        .times(1),
    );
    let args = MOVE_NS1;
    let child = w.command(&args).output();
    let meanwhile = async {
        crate::common::wait_until("the move's patch to be held", || {
            w.source.answers_held() > 0
        })
        .await;
        capi_sandbox::api::delete(&w.source.client(), CORE, "Machine", "ns1", "m2")
            .await
            .unwrap();
    };
    let (output, ()) = tokio::join!(child, meanwhile);
    let output = output.unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        // (Its DockerMachine goes too, once the garbage collector has seen the owner gone.)
        stderr.contains("error: reading the objects to move: machine.cluster.x-k8s.io/m2")
            && stderr.contains("left the source after the move was planned")
            && stderr.contains("nothing was created"),
        "{stderr}"
    );
    assert!(
        w.target.writes().iter().all(|r| r.resource == "namespaces"),
        "nothing but the namespace was created in the target"
    );
    assert!(
        w.target.object("", "namespaces", "", "ns1").is_none(),
        "and it was removed again"
    );
    // The source is left as the move found it: its pause released, its journal closed.
    let cluster = w
        .source
        .object("cluster.x-k8s.io", "clusters", "ns1", "foo")
        .unwrap();
    assert!(cluster["spec"]["paused"].is_null(), "{cluster}");
    assert!(stderr.contains("were unpaused again"), "{stderr}");
    // Run again: planned anew without m2, and moved.
    let again = w.plugin(&args).await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        w.target
            .object("cluster.x-k8s.io", "machines", "ns1", "m1")
            .is_some()
            && w.target
                .object("cluster.x-k8s.io", "machines", "ns1", "m2")
                .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machines_owned_by_the_cluster() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false);
    for m in ["m1", "m2"] {
        f.machine("ns1", "foo", m, ("Cluster", "foo", false), true);
    }
    let w = World::start(&f).await;
    let mut second = CLUSTER_FOO.to_vec();
    second.extend(["Machine ns1/m1", "Machine ns1/m2"]);
    assert_eq!(
        w.plan(&["-n", "ns1"]).await.0,
        [
            group(&["Cluster ns1/foo"]),
            group(&second),
            group(&[
                "DockerMachine ns1/m1",
                "KubeadmConfig ns1/m1",
                "DockerMachine ns1/m2",
                "KubeadmConfig ns1/m2"
            ]),
            group(&["Secret ns1/m1", "Secret ns1/m2"]),
        ]
    );
    w.move_and_check(&["-n", "ns1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_set_and_machine_deployments_with_and_without_bootstrap_configs() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false);
    f.add(
        CORE,
        "MachineSet",
        "ns1",
        "ms1",
        &[("Cluster", "foo", false)],
        json!({}),
    )
    .templates("ns1", "foo", "ms1", true)
    .machine("ns1", "foo", "m1", ("MachineSet", "ms1", true), true);
    f.machine_deployment("ns1", "foo", "md1", "md1-a").machine(
        "ns1",
        "foo",
        "m2",
        ("MachineSet", "md1-a", true),
        true,
    );
    // A static bootstrap: no config, no config template.
    f.add(
        CORE,
        "MachineDeployment",
        "ns1",
        "md2",
        &[("Cluster", "foo", false)],
        json!({}),
    )
    .templates("ns1", "foo", "md2", false)
    .add(
        CORE,
        "MachineSet",
        "ns1",
        "md2-a",
        &[("MachineDeployment", "md2", true)],
        json!({}),
    )
    .machine("ns1", "foo", "m3", ("MachineSet", "md2-a", true), false);
    let w = World::start(&f).await;
    let mut second = CLUSTER_FOO.to_vec();
    second.extend([
        "MachineSet ns1/ms1",
        "DockerMachineTemplate ns1/ms1",
        "KubeadmConfigTemplate ns1/ms1",
        "MachineDeployment ns1/md1",
        "DockerMachineTemplate ns1/md1",
        "KubeadmConfigTemplate ns1/md1",
        "MachineDeployment ns1/md2",
        "DockerMachineTemplate ns1/md2",
    ]);
    assert_eq!(
        w.plan(&["-n", "ns1"]).await.0,
        [
            group(&["Cluster ns1/foo"]),
            group(&second),
            group(&[
                "Machine ns1/m1",
                "MachineSet ns1/md1-a",
                "MachineSet ns1/md2-a"
            ]),
            group(&[
                "DockerMachine ns1/m1",
                "KubeadmConfig ns1/m1",
                "Machine ns1/m2",
                "Machine ns1/m3"
            ]),
            group(&[
                "Secret ns1/m1",
                "DockerMachine ns1/m2",
                "KubeadmConfig ns1/m2",
                "DockerMachine ns1/m3"
            ]),
            group(&["Secret ns1/m2"]),
        ]
    );
    w.move_and_check(&["-n", "ns1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_control_plane_and_a_machine_pool() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", true)
        .machine(
            "ns1",
            "foo",
            "cp1",
            ("KubeadmControlPlane", "foo", true),
            true,
        )
        .add(
            CORE,
            "MachinePool",
            "ns1",
            "mp1",
            &[("Cluster", "foo", false)],
            json!({}),
        )
        .add(
            INFRA,
            "DockerMachinePool",
            "ns1",
            "mp1",
            &[("MachinePool", "mp1", true)],
            json!({}),
        )
        .add(
            BOOTSTRAP,
            "KubeadmConfig",
            "ns1",
            "mp1",
            &[("MachinePool", "mp1", true)],
            json!({}),
        )
        .add(
            "v1",
            "Secret",
            "ns1",
            "mp1",
            &[("KubeadmConfig", "mp1", true)],
            json!({}),
        );
    let w = World::start(&f).await;
    assert_eq!(
        w.plan(&["-n", "ns1"]).await.0,
        [
            group(&["Cluster ns1/foo"]),
            group(&[
                "DockerCluster ns1/foo",
                "Secret ns1/foo-ca",
                "KubeadmControlPlane ns1/foo",
                "DockerMachineTemplate ns1/foo-cp",
                "MachinePool ns1/mp1"
            ]),
            group(&[
                "Secret ns1/foo-kubeconfig",
                "Secret ns1/foo-sa",
                "Machine ns1/cp1",
                "DockerMachinePool ns1/mp1",
                "KubeadmConfig ns1/mp1"
            ]),
            group(&[
                "DockerMachine ns1/cp1",
                "KubeadmConfig ns1/cp1",
                "Secret ns1/mp1"
            ]),
            group(&["Secret ns1/cp1"]),
        ]
    );
    w.move_and_check(&["-n", "ns1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_clusters_with_a_shared_object_moved_one_at_a_time() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false)
        .cluster("ns1", "bar", false)
        .add(
            INFRA,
            "DockerMachineTemplate",
            "ns1",
            "shared",
            &[("Cluster", "foo", false), ("Cluster", "bar", false)],
            json!({}),
        );
    let w = World::start(&f).await;
    let mut second = CLUSTER_FOO.to_vec();
    second.extend([
        "DockerCluster ns1/bar",
        "Secret ns1/bar-ca",
        "Secret ns1/bar-kubeconfig",
        "DockerMachineTemplate ns1/shared",
    ]);
    let (groups, kept) = w.plan(&["-n", "ns1"]).await;
    assert_eq!(
        groups,
        [
            group(&["Cluster ns1/foo", "Cluster ns1/bar"]),
            group(&second)
        ]
    );
    assert!(
        kept.is_empty(),
        "moving both, nothing is shared with what stays"
    );

    // Only foo: the template bar also owns is copied and kept.
    let (_, kept) = w.plan(&["foo", "-n", "ns1"]).await;
    assert_eq!(
        kept,
        BTreeSet::from(["DockerMachineTemplate ns1/shared".to_string()])
    );
    w.move_and_check(&["foo", "-n", "ns1"]).await;
    // foo's verification record says so.
    let record = w
        .target
        .object("", "configmaps", "ns1", "kubectl-capi-moved-foo")
        .unwrap();
    let record: Value =
        serde_json::from_str(record["data"]["moved.json"].as_str().unwrap()).unwrap();
    assert_eq!(
        record["keptInSource"],
        json!(["DockerMachineTemplate ns1/shared"])
    );
    assert!(
        w.source
            .object("cluster.x-k8s.io", "clusters", "ns1", "bar")
            .is_some()
    );
    assert!(
        w.target
            .object("cluster.x-k8s.io", "clusters", "ns1", "bar")
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_resource_set_and_a_cloud_config_secret_with_the_move_label() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", false)
        .add(
            "v1",
            "Secret",
            "ns1",
            "foo-cloud-config",
            &[],
            json!({"metadata": {"labels": {MOVE_LABEL: ""}}}),
        )
        .add(ADDONS, "ClusterResourceSet", "ns1", "crs1", &[], json!({}))
        .add(
            "v1",
            "Secret",
            "ns1",
            "crs1-secret",
            &[("ClusterResourceSet", "crs1", false)],
            json!({}),
        )
        .add(
            "v1",
            "ConfigMap",
            "ns1",
            "crs1-cm",
            &[("ClusterResourceSet", "crs1", false)],
            json!({}),
        )
        .add(
            ADDONS,
            "ClusterResourceSetBinding",
            "ns1",
            "foo",
            &[("ClusterResourceSet", "crs1", false)],
            json!({"spec": {"clusterName": "foo"}}),
        );
    let w = World::start(&f).await;
    let mut second = CLUSTER_FOO.to_vec();
    second.extend([
        "Secret ns1/crs1-secret",
        "ConfigMap ns1/crs1-cm",
        "ClusterResourceSetBinding ns1/foo",
    ]);
    assert_eq!(
        w.plan(&["-n", "ns1"]).await.0,
        [
            group(&[
                "Cluster ns1/foo",
                "ClusterResourceSet ns1/crs1",
                "Secret ns1/foo-cloud-config"
            ]),
            group(&second),
        ]
    );
    w.move_and_check(&["-n", "ns1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_classes_in_the_namespace_and_across_namespaces() {
    let mut f = Fixture::default();
    for (ns, class) in [("ns1", "local"), ("classes", "shared")] {
        // Templates are found through the class's references (clusterctl GETs them).
        f.add(CORE, "ClusterClass", ns, class, &[], json!({"spec": {
                "infrastructure": {"templateRef": {"apiVersion": INFRA, "kind": "DockerClusterTemplate", "name": class}},
                "controlPlane": {"templateRef": {"apiVersion": CONTROL_PLANE, "kind": "KubeadmControlPlaneTemplate", "name": class}}}}))
            .add(
                INFRA,
                "DockerClusterTemplate",
                ns,
                class,
                &[("ClusterClass", class, false)],
                json!({}),
            )
            .add(
                CONTROL_PLANE,
                "KubeadmControlPlaneTemplate",
                ns,
                class,
                &[("ClusterClass", class, false)],
                json!({}),
            );
    }
    f.cluster("ns1", "foo", false).cluster("ns1", "bar", false);
    f.objects[6].0["spec"]["topology"] = json!({"classRef": {"name": "local"}});
    let bar = f
        .objects
        .iter()
        .position(|(o, _)| o["kind"] == "Cluster" && o["metadata"]["name"] == "bar")
        .unwrap();
    f.objects[bar].0["spec"]["topology"] =
        json!({"classRef": {"name": "shared", "namespace": "classes"}});
    assert_eq!(f.objects[6].0["metadata"]["name"], "foo");
    let w = World::start(&f).await;
    let (groups, kept) = w.plan(&["-n", "ns1"]).await;
    let mut third = CLUSTER_FOO.to_vec();
    third.extend([
        "DockerCluster ns1/bar",
        "Secret ns1/bar-ca",
        "Secret ns1/bar-kubeconfig",
    ]);
    assert_eq!(
        groups,
        [
            group(&["ClusterClass ns1/local", "ClusterClass classes/shared"]),
            group(&[
                "Cluster ns1/foo",
                "Cluster ns1/bar",
                "DockerClusterTemplate ns1/local",
                "KubeadmControlPlaneTemplate ns1/local",
                "DockerClusterTemplate classes/shared",
                "KubeadmControlPlaneTemplate classes/shared"
            ]),
            group(&third),
        ]
    );
    assert_eq!(
        kept,
        BTreeSet::from([
            "ClusterClass classes/shared".to_string(),
            "DockerClusterTemplate classes/shared".to_string(),
            "KubeadmControlPlaneTemplate classes/shared".to_string()
        ]),
        "a class in another namespace is copied, never deleted"
    );
    w.move_and_check(&["-n", "ns1"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_objects_a_global_identity_and_credentials() {
    let mut f = Fixture::default();
    f.crd(
        "external.cluster.x-k8s.io",
        "ExternalThing",
        true,
        MOVE_LABEL,
    )
    .crd(
        "external.cluster.x-k8s.io",
        "GlobalThing",
        false,
        MOVE_LABEL,
    );
    f.cluster("ns1", "foo", false)
        .add(
            "v1",
            "Secret",
            "ns1",
            "foo-credentials",
            &[("Cluster", "foo", false)],
            json!({}),
        )
        .add(
            "external.cluster.x-k8s.io/v1beta2",
            "ExternalThing",
            "ns1",
            "external1",
            &[],
            json!({}),
        )
        .add(
            "external.cluster.x-k8s.io/v1beta2",
            "GlobalThing",
            "",
            "global1",
            &[],
            json!({}),
        )
        .global_identity(json!({}));
    let w = World::start(&f).await;
    let (groups, kept) = w.plan(&["-n", "ns1"]).await;
    let mut second = CLUSTER_FOO.to_vec();
    second.extend([
        "Secret ns1/foo-credentials",
        "Secret capd-system/identity1-credentials",
    ]);
    assert_eq!(
        groups,
        [
            group(&[
                "Cluster ns1/foo",
                "ExternalThing ns1/external1",
                "GlobalThing /global1",
                "DockerClusterIdentity /identity1"
            ]),
            group(&second),
        ]
    );
    assert_eq!(
        kept,
        BTreeSet::from([
            "GlobalThing /global1".to_string(),
            "DockerClusterIdentity /identity1".to_string(),
            "Secret capd-system/identity1-credentials".to_string()
        ]),
        "cluster-scoped objects and their hierarchy are copied, never deleted"
    );
    w.move_and_check(&["-n", "ns1"]).await;
}

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_through_failing_writes_ends_like_a_clean_one() {
    let f = Fixture::workload(&["w1", "w2", "w3"]);
    let clean = World::start(&f).await;
    clean.move_and_check(&["-n", "ns1"]).await;

    let faulty = World::start(&f).await;
    // About one write in ten fails: server errors, throttling with Retry-After, conflicts, slow
    // answers, connections dropped before or after the write was applied.
    let writes = ["create", "update", "patch", "delete"];
    for server in [&faulty.source, &faulty.target] {
        for (action, p) in [
            (
                FaultAction::Fail {
                    code: 500,
                    retry_after: None,
                },
                0.02,
            ),
            (
                FaultAction::Fail {
                    code: 503,
                    retry_after: None,
                },
                0.01,
            ),
            (
                FaultAction::Fail {
                    code: 429,
                    retry_after: Some(1),
                },
                0.01,
            ),
            (
                FaultAction::Fail {
                    code: 409,
                    retry_after: None,
                },
                0.02,
            ),
            (
                FaultAction::Latency(std::time::Duration::from_millis(30)),
                0.02,
            ),
            (FaultAction::Drop, 0.01),
            (FaultAction::ApplyThenDrop, 0.01),
        ] {
            server.inject(
                FaultRule::new(action)
                    .verbs(&writes)
                    .agent("kubectl-capi/")
                    .probability(p),
            );
        }
    }
    // And two that surely happen: the Cluster's create fails once, a Machine's DELETE is
    // throttled once.
    faulty.target.inject(
        FaultRule::new(FaultAction::Fail {
            code: 500,
            retry_after: None,
        })
        .verbs(&["create"])
        .resource("clusters")
        .times(1),
    );
    faulty.source.inject(
        FaultRule::new(FaultAction::Fail {
            code: 429,
            retry_after: Some(1),
        })
        .verbs(&["delete"])
        .resource("machines")
        .times(1),
    );
    faulty.move_and_check(&["-n", "ns1"]).await;
    let injected = [&faulty.source, &faulty.target]
        .iter()
        .flat_map(|s| s.requests())
        .filter(|r| r.agent.starts_with("kubectl-capi/") && [429, 500, 503].contains(&r.code))
        .count();
    assert!(injected >= 2, "{injected} faults answered");
    assert_eq!(end_state(&faulty.target), end_state(&clean.target));
    assert_eq!(end_state(&faulty.source), end_state(&clean.source));
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
            .filter(|r| r.agent.starts_with("kubectl-capi/"))
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
    let before = world.writes_per_server();
    let servers = [&world.source, &world.target];
    if let KillPoint::Unanswered { server, skip } = point {
        servers[server].inject(
            FaultRule::new(FaultAction::ApplyThenStall(std::time::Duration::from_secs(
                300,
            )))
            .verbs(&["write"])
            .dry_run(false)
            .agent("kubectl-capi/")
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
            child.start_kill().unwrap();
            child.wait().await.unwrap();
            // A killed holder leaves its lease until it expires; the run after it takes it over.
            for server in servers {
                crate::common::expire_lease(server).await;
            }
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_micros(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_killed_at_any_write_converges_when_run_again() {
    let f = Fixture::workload(&["w1"]);
    let clean = World::start(&f).await;
    let writes_before = clean.plugin_writes().len();
    clean.move_and_check(&["-n", "ns1"]).await;
    let clean_writes = clean.plugin_writes();
    let total = clean_writes.len() - writes_before;
    let journal_writes = clean_writes
        .iter()
        .skip(writes_before)
        .filter(|r| journal_shard(r))
        .count();
    let args = MOVE_NS1;

    // Spread over all writes, at every phase boundary, and between a write's apply and its
    // answer at points spread over each server's writes.
    let mut points: Vec<KillPoint> = (1..total)
        .step_by((total / 16).max(1))
        .map(KillPoint::Writes)
        .collect();
    points.extend((1..journal_writes).map(KillPoint::JournalWrites));
    for (server, (writes, reviews)) in write_attempts(&clean).into_iter().enumerate() {
        points.extend((1..=5).map(|i| KillPoint::Unanswered {
            server,
            skip: (reviews + writes * i / 6) as u32,
        }));
    }

    let (mut killed, mut unanswered, mut resumed) = (0, 0, 0);
    let mut stages = BTreeSet::new();
    for point in points {
        let world = World::start(&f).await;
        if !kill_at(&world, &args, point).await {
            continue;
        }
        killed += 1;
        if matches!(point, KillPoint::Unanswered { .. }) {
            unanswered += 1;
        }
        if world.writes_since([0, 0]).len() >= 3 {
            assert!(
                journal_copies(&world) > 0,
                "killed at {point:?}: a copy in the source"
            );
        }
        // Every third time, the local journal is lost: the copy in the source carries on.
        if killed % 3 == 0 {
            let _ = std::fs::remove_dir_all(world.state_dir());
        }
        // The same command again: it finds the journal and finishes (or, killed before the
        // journal was written, starts afresh).
        let again = world.plugin(&args).await;
        assert_eq!(again.code, 0, "killed at {point:?}: {}", again.stderr);
        if again.stderr.contains("continuing the interrupted move") {
            resumed += 1;
        }
        stages.insert(
            ["Pausing", "Creating", "Deleting", "Unpausing"]
                .into_iter()
                .find(|s| again.stderr.contains(&format!("(stage: {s})")))
                .unwrap_or("none"),
        );
        assert_eq!(
            end_state(&world.target),
            end_state(&clean.target),
            "killed at {point:?}: the target"
        );
        assert_eq!(
            end_state(&world.source),
            end_state(&clean.source),
            "killed at {point:?}: the source"
        );
        assert_eq!(
            journal_copies(&world),
            0,
            "the copy goes when the move is done"
        );
        // Running it once more finds nothing left to move, and succeeds without a write.
        if killed % 4 == 0 {
            let before = world.writes_per_server();
            let again = world.plugin(&args).await;
            assert_eq!(again.code, 0, "{}", again.stderr);
            assert!(
                again.stderr.contains("nothing left to move"),
                "{}",
                again.stderr
            );
            assert!(world.writes_since(before).is_empty());
        }
    }
    assert!(
        killed >= 30,
        "{killed} kill points of {total} writes, {journal_writes} to the journal"
    );
    assert!(
        unanswered >= 8,
        "{unanswered} kills with an unanswered write"
    );
    assert!(
        resumed >= killed - 2,
        "{resumed} of {killed} reruns continued from the journal"
    );
    assert!(
        ["Pausing", "Creating", "Deleting", "Unpausing"]
            .iter()
            .all(|s| stages.contains(s)),
        "resumed from {stages:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_before_deletion_restores_the_source_and_cleans_the_target() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", true)
        .machine(
            "ns1",
            "foo",
            "cp1",
            ("KubeadmControlPlane", "foo", true),
            true,
        )
        .global_identity(json!({}));
    let args = MOVE_NS1;
    let mut rollback = args.to_vec();
    rollback.push("--rollback");

    let w = World::start(&f).await;
    // The identity is already in the target: a rollback must leave it.
    w.target
        .load(json!({"apiVersion": INFRA, "kind": "DockerClusterIdentity", "metadata": {"name": "identity1"}}))
        .unwrap();
    let source_before = end_state(&w.source);
    let target_before = end_state(&w.target);
    assert!(
        kill_at(&w, &args, KillPoint::Writes(8)).await,
        "killed while creating"
    );
    assert_ne!(end_state(&w.target), target_before, "copies were made");

    let out = w.plugin(&rollback).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.starts_with("rolled back: "), "{}", out.stdout);
    let mut target_after = end_state(&w.target);
    // Namespaces the move needed may stay (they might have been there before).
    target_after.retain(|k, _| !k.starts_with("Namespace "));
    let mut expected = target_before.clone();
    expected.retain(|k, _| !k.starts_with("Namespace "));
    assert_eq!(
        target_after, expected,
        "only what was there before remains in the target"
    );
    assert_eq!(
        end_state(&w.source),
        source_before,
        "the source as it was, unpaused"
    );
    let deletes = plugin_deletes(&w.target);
    assert!(
        !deletes.is_empty() && deletes.iter().all(|r| r.precondition_uid.is_some()),
        "every rollback DELETE names its UID"
    );
    assert_eq!(
        w.plugin(&rollback).await.code,
        2,
        "nothing left to roll back"
    );
    // The tool can start over from here.
    w.move_and_check(&["-n", "ns1"]).await;

    // Once deletion started, rollback is refused and resume finishes the move.
    let w = World::start(&f).await;
    let clean = World::start(&f).await;
    let total = {
        let before = clean.plugin_writes().len();
        clean.move_and_check(&["-n", "ns1"]).await;
        clean.plugin_writes().len() - before
    };
    assert!(
        kill_at(&w, &args, KillPoint::Writes(total - 3)).await,
        "killed while deleting"
    );
    let refused = w.plugin(&rollback).await;
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("rollback refused"),
        "{}",
        refused.stderr
    );
    let mut resume = args.to_vec();
    resume.push("--resume");
    assert_eq!(w.plugin(&resume).await.code, 0);
    assert_eq!(end_state(&w.target), end_state(&clean.target));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_c_stops_at_a_safe_point_and_says_how_to_resume() {
    let mut f = Fixture::default();
    f.cluster("ns1", "foo", true);
    for m in ["m1", "m2", "m3", "m4"] {
        f.machine("ns1", "foo", m, ("KubeadmControlPlane", "foo", true), true);
    }
    let clean = World::start(&f).await;
    clean.move_and_check(&["-n", "ns1"]).await;
    let args = MOVE_NS1;

    let w = World::start(&f).await;
    // Slow writes, so that the interrupt lands mid-creation.
    w.target
        .set_write_latency(std::time::Duration::from_millis(20));
    let before = w.plugin_writes().len();
    let child = w.command(&args).spawn().unwrap();
    crate::common::wait_until("six writes of the move", || {
        w.plugin_writes().len() - before >= 6
    })
    .await;
    let out = crate::common::interrupt(child).await;
    let stderr = &out.stderr;
    assert_eq!(out.code, 130, "{stderr}");
    assert!(
        stderr.contains(
            "continue with: kubectl capi move --context source --to-context target -n ns1 --resume"
        ),
        "{stderr}"
    );
    assert_ne!(
        end_state(&w.target),
        end_state(&clean.target),
        "stopped partway"
    );

    let mut resume = args.to_vec();
    resume.push("--resume");
    let resumed = w.plugin(&resume).await;
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(end_state(&w.target), end_state(&clean.target));
    assert_eq!(end_state(&w.source), end_state(&clean.source));
}

/// The benchmark itself stays runnable (its figures come from `capi-sandbox bench-move`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_move_benchmark_runs_on_a_small_fixture() {
    let options = capi_sandbox::bench_move::MoveOptions {
        clusters: 2,
        workers: 2,
        write_latency: std::time::Duration::ZERO,
        concurrency: 4,
        plugin: crate::common::PLUGIN.into(),
        sequential: true,
        // Objects as heavy as a real server's pass the move's preflight and move as well.
        real_shaped: true,
    };
    let report = capi_sandbox::bench_move::run(&options).await.unwrap();
    assert!(
        report.starts_with(
            "2 clusters × (1 control-plane + 2 workers) = 50 objects shaped like a real management cluster's"
        ),
        "{report}"
    );
    for line in [
        "move --concurrency   4:",
        "move --concurrency   1:",
        "raw ceiling",
        "raw ceiling with the move's 4 writes per object",
        "parallel vs sequential",
        "ms/object)  writes in flight: ",
        "phases: preflight ",
        "move vs 4-write ceiling + the move's own preflight",
    ] {
        assert!(report.contains(line), "{line}: {report}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_move_reads_per_kind_not_per_object() {
    let measure = |clusters, workers| {
        let options = capi_sandbox::bench_move::MoveOptions {
            clusters,
            workers,
            write_latency: std::time::Duration::ZERO,
            concurrency: 16,
            plugin: crate::common::PLUGIN.into(),
            sequential: false,
            real_shaped: false,
        };
        async move {
            capi_sandbox::bench_move::measure_move(&options)
                .await
                .unwrap()
        }
    };
    let small = measure(1, 1).await;
    let large = measure(6, 5).await;
    assert!(large.objects > 5 * small.objects && small.reads > 0);
    assert_eq!(
        small.reads, large.reads,
        "the same reads for {} and {} objects",
        small.objects, large.objects
    );
    for (run, clusters) in [(&small, 1), (&large, 6)] {
        // Create, managedFields, mark, DELETE; plus pausing and unpausing each Cluster, the
        // namespace and the journal's copy.
        assert!(
            run.writes <= 4 * run.objects + 3 * clusters + 30,
            "{} writes for {} objects",
            run.writes,
            run.objects
        );
    }
    // What is neither a read nor a write: one server-side dry-run create per object, and access
    // reviews per kind.
    let rest = |run: &capi_sandbox::bench_move::MoveRun| {
        run.requests - run.writes - run.reads - run.objects
    };
    assert_eq!(rest(&small), rest(&large));
}

/// The plugin's state-changing writes to `server`, as the server logged them.
fn writes_to(server: &ApiServer) -> Vec<capi_sandbox::RequestRecord> {
    server
        .writes()
        .into_iter()
        .filter(|r| r.agent.starts_with("kubectl-capi/"))
        .collect()
}

/// The most writes that were in flight at once (on the server's logical clock).
fn most_in_flight(writes: &[capi_sandbox::RequestRecord]) -> usize {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_stay_within_concurrency_and_follow_ownership_object_by_object() {
    let mut fixture = Fixture::default();
    for (name, workers) in [("a", 4), ("b", 2), ("c", 3)] {
        fixture.provisioned("ns1", name, workers);
    }
    let w = World::start(&fixture).await;
    // One slow create early in the plan: with groups as barriers nothing deeper would start
    // before it answered; object by object, other Clusters' Machines do.
    w.target.inject(
        FaultRule::new(FaultAction::Latency(std::time::Duration::from_millis(1500)))
            .verbs(&["create"])
            .resource("dockerclusters")
            .dry_run(false)
            .agent("kubectl-capi/")
            .times(1),
    );
    // The same for one slow delete: other Clusters are deleted meanwhile.
    w.source.inject(
        FaultRule::new(FaultAction::Latency(std::time::Duration::from_millis(1500)))
            .verbs(&["delete"])
            .resource("dockerclusters")
            .agent("kubectl-capi/")
            .times(1),
    );
    let moved = w.move_with(&["-n", "ns1", "--concurrency", "3"]).await;
    assert_eq!(moved.code, 0, "{}", moved.stderr);
    let creates: Vec<_> = writes_to(&w.target)
        .into_iter()
        .filter(|r| r.verb == "create")
        .collect();
    let deletes: Vec<_> = writes_to(&w.source)
        .into_iter()
        .filter(|r| r.verb == "delete" && r.resource != "configmaps")
        .collect();
    assert!(creates.len() > 60 && deletes.len() > 60);
    assert!(most_in_flight(&writes_to(&w.target)) <= 3);
    assert!(most_in_flight(&deletes) <= 3);
    assert!(
        most_in_flight(&creates) >= 2,
        "the move does write in parallel"
    );
    let slow = creates
        .iter()
        .filter(|r| r.resource == "dockerclusters")
        .max_by_key(|r| r.finished - r.started)
        .unwrap();
    assert!(
        creates
            .iter()
            .any(|r| r.resource == "machines" && r.started < slow.finished),
        "a Machine was created while an earlier group's DockerCluster was still being created"
    );
    let slow = deletes
        .iter()
        .filter(|r| r.resource == "dockerclusters")
        .max_by_key(|r| r.finished - r.started)
        .unwrap();
    assert!(
        deletes
            .iter()
            .any(|r| r.resource == "clusters" && r.name != slow.name && r.started < slow.finished),
        "another Cluster was deleted while a DockerCluster of a later group was still being deleted"
    );
    let record = |records: &[capi_sandbox::RequestRecord], kind: &str, name: &str| {
        let plural = format!("{}s", kind.to_lowercase());
        records
            .iter()
            .find(|r| r.resource == plural && r.name.as_deref() == Some(name))
            .cloned()
            .unwrap_or_else(|| panic!("{kind} {name} written"))
    };
    for object in w
        .loaded
        .values()
        .filter(|o| o["metadata"]["namespace"] == "ns1")
    {
        let (kind, name) = (
            object["kind"].as_str().unwrap(),
            object["metadata"]["name"].as_str().unwrap(),
        );
        let created = record(&creates, kind, name);
        let deleted = record(&deletes, kind, name);
        for owner in object["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let (owner_kind, owner_name) = (
                owner["kind"].as_str().unwrap(),
                owner["name"].as_str().unwrap(),
            );
            assert!(
                record(&creates, owner_kind, owner_name).finished < created.started,
                "{owner_kind} {owner_name} exists before {kind} {name} is created"
            );
            assert!(
                deleted.finished < record(&deletes, owner_kind, owner_name).started,
                "{kind} {name} is gone before its owner {owner_kind} {owner_name} is deleted"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_one_is_one_request_at_a_time_in_each_cluster() {
    let mut fixture = Fixture::default();
    fixture
        .provisioned("ns1", "a", 3)
        .provisioned("ns1", "b", 2);
    let w = World::start(&fixture).await;
    let moved = w.move_with(&["-n", "ns1", "--concurrency", "1"]).await;
    assert_eq!(moved.code, 0, "{}", moved.stderr);
    // Every request of the plugin: reads, access reviews, dry runs, writes, the journal's copy.
    let requests = |server: &ApiServer| -> Vec<capi_sandbox::RequestRecord> {
        server
            .requests()
            .into_iter()
            .filter(|r| r.agent.starts_with("kubectl-capi/") && !r.path.contains("watch=true"))
            .collect()
    };
    let dry_runs = requests(&w.target).iter().filter(|r| r.dry_run).count();
    assert!(dry_runs > 20, "the preflight's dry runs are among them");
    assert_eq!(most_in_flight(&requests(&w.target)), 1);
    assert_eq!(most_in_flight(&requests(&w.source)), 1);
}
