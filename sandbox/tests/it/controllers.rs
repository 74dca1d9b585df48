//! The simulated Cluster API controllers: scaling, provisioning and CAPI's exact pause semantics.

use std::time::Duration;

use capi_sandbox::controllers::{Cloud, Config, Controllers, Delays, Step};
use capi_sandbox::crds::{self, Dialect};
use capi_sandbox::workload::Workload;
use capi_sandbox::{ApiServer, ServerOptions};
use serde_json::{Value, json};

const SETTLE: Duration = Duration::from_secs(20);

pub struct Mgmt {
    pub server: ApiServer,
    pub controllers: Controllers,
    pub dialect: Dialect,
}

impl Mgmt {
    pub fn start(dialect: Dialect, cloud: Cloud) -> Mgmt {
        Self::start_with(Config::new(dialect, Delays::millis(15)), cloud)
    }

    pub fn start_with(config: Config, cloud: Cloud) -> Mgmt {
        let server = ApiServer::new(ServerOptions::default());
        crds::install_with_inventory(&server, config.dialect).unwrap();
        let dialect = config.dialect;
        let controllers = Controllers::start(&server, config, cloud);
        Mgmt {
            server,
            controllers,
            dialect,
        }
    }

    pub fn version(&self) -> &'static str {
        if self.dialect == Dialect::V1beta1 {
            "v1beta1"
        } else {
            "v1beta2"
        }
    }

    pub async fn create(&self, workload: &Workload) {
        for object in workload.objects(self.dialect) {
            create(&self.server, object).await;
        }
    }

    pub async fn settle(&self) {
        self.controllers
            .settle(SETTLE)
            .await
            .expect("controllers settle");
    }

    pub fn machines(&self, namespace: &str, cluster: &str) -> Vec<Value> {
        let mut machines: Vec<Value> = self
            .server
            .dump()
            .into_iter()
            .filter(|o| {
                o["kind"] == "Machine"
                    && o["metadata"]["namespace"] == namespace
                    && o["spec"]["clusterName"] == cluster
            })
            .collect();
        machines.sort_by_key(|m| {
            m["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or("")
                .to_string()
                + m["metadata"]["resourceVersion"].as_str().unwrap_or("")
        });
        machines
    }

    pub fn has_node(&self, machine: &Value) -> bool {
        if self.dialect == Dialect::V1beta1 {
            machine["status"]["nodeRef"].is_object()
        } else {
            machine["status"]["nodeRef"]["name"]
                .as_str()
                .is_some_and(|n| !n.is_empty())
        }
    }

    pub fn get(&self, group: &str, plural: &str, namespace: &str, name: &str) -> Value {
        self.server
            .object(group, plural, namespace, name)
            .unwrap_or_else(|| panic!("{plural}/{name} exists"))
    }

    pub fn condition(&self, object: &Value, type_: &str) -> Option<String> {
        let list = if self.dialect == Dialect::V1beta1 {
            &object["status"]["v1beta2"]["conditions"]
        } else {
            &object["status"]["conditions"]
        };
        list.as_array()?
            .iter()
            .find(|c| c["type"] == type_)
            .and_then(|c| c["status"].as_str())
            .map(str::to_string)
    }

    pub async fn patch(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        name: &str,
        patch: Value,
    ) {
        let path = format!(
            "/apis/{group}/{}/namespaces/{namespace}/{plural}/{name}",
            self.version()
        );
        let request = http::Request::patch(path)
            .header("content-type", "application/merge-patch+json")
            .body(patch.to_string().into_bytes())
            .unwrap();
        let response = self
            .server
            .client()
            .send(request.map(kube::client::Body::from))
            .await
            .unwrap();
        assert!(
            response.status().is_success(),
            "patch {plural}/{name}: {}",
            response.status()
        );
    }

    /// Waits (bounded) until some Machine is held at `step`.
    pub async fn wait_held(&self, step: Step) -> String {
        for _ in 0..400 {
            if let Some((name, _)) = self
                .controllers
                .holds
                .waiting()
                .into_iter()
                .find(|(_, s)| *s == step)
            {
                return name;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("no Machine reached {step:?}");
    }
}

pub async fn create(server: &ApiServer, object: Value) {
    let api_version = object["apiVersion"].as_str().unwrap();
    let kind = object["kind"].as_str().unwrap();
    let plural = crds::KINDS
        .iter()
        .find(|k| k.kind == kind)
        .map(|k| k.plural.to_string())
        .unwrap_or_else(|| format!("{}s", kind.to_lowercase()));
    let namespace = object["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default");
    let prefix = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    let path = format!("{prefix}/namespaces/{namespace}/{plural}");
    let request = http::Request::post(path)
        .header("content-type", "application/json")
        .body(object.to_string().into_bytes())
        .unwrap();
    let response = server
        .client()
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap();
    assert!(
        response.status().is_success(),
        "create {kind}: {}",
        response.status()
    );
}

const CORE: &str = "cluster.x-k8s.io";
const CP: &str = "controlplane.cluster.x-k8s.io";

fn workload(cp: i64, workers: i64) -> Workload {
    let mut w = Workload::new("default", "w1");
    w.control_plane_replicas = cp;
    w.workers = workers;
    w.machine_deployment = workers > 0;
    w
}

async fn control_plane_paused_mid_scale_up(dialect: Dialect) {
    let m = Mgmt::start(dialect, Cloud::new());
    m.create(&workload(1, 0)).await;
    m.settle().await;
    let machines = m.machines("default", "w1");
    assert_eq!(machines.len(), 1);
    assert!(m.has_node(&machines[0]));
    let cluster = m.get(CORE, "clusters", "default", "w1");
    assert_eq!(
        m.condition(&cluster, "ControlPlaneInitialized").as_deref(),
        Some("True")
    );

    m.controllers.holds.hold(None, Step::Node);
    m.patch(
        CP,
        "kubeadmcontrolplanes",
        "default",
        "w1-control-plane",
        json!({"spec": {"replicas": 3}}),
    )
    .await;
    let second = m.wait_held(Step::Node).await;
    m.patch(
        CP,
        "kubeadmcontrolplanes",
        "default",
        "w1-control-plane",
        json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": ""}}}),
    )
    .await;
    m.settle().await;
    let kcp = m.get(CP, "kubeadmcontrolplanes", "default", "w1-control-plane");
    assert_eq!(
        m.condition(&kcp, "Paused").as_deref(),
        Some("True"),
        "the control plane acknowledges the pause"
    );
    m.controllers.holds.release(Step::Node);
    m.settle().await;
    let machines = m.machines("default", "w1");
    assert_eq!(
        machines.len(),
        2,
        "Machine 3 is never created while the control plane is paused"
    );
    let in_flight = machines
        .iter()
        .find(|x| x["metadata"]["name"] == second.as_str())
        .unwrap();
    assert!(
        m.has_node(in_flight),
        "Machine 2 still gets its node while its owner is paused"
    );

    m.patch(
        CP,
        "kubeadmcontrolplanes",
        "default",
        "w1-control-plane",
        json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": null}}}),
    )
    .await;
    m.settle().await;
    let machines = m.machines("default", "w1");
    assert_eq!(machines.len(), 3, "unpaused, Machine 3 appears");
    assert!(machines.iter().all(|x| m.has_node(x)));
    let kcp = m.get(CP, "kubeadmcontrolplanes", "default", "w1-control-plane");
    assert_eq!(m.condition(&kcp, "Paused").as_deref(), Some("False"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_plane_pause_stops_new_machines_but_not_in_flight_ones() {
    control_plane_paused_mid_scale_up(Dialect::V1beta2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_plane_pause_in_the_v1beta1_dialect() {
    control_plane_paused_mid_scale_up(Dialect::V1beta1).await;
}

fn annotate_paused(on: bool) -> Value {
    json!({"metadata": {"annotations": {"cluster.x-k8s.io/paused": if on { json!("") } else { Value::Null }}}})
}

fn machine_sets(m: &Mgmt) -> Vec<Value> {
    m.server
        .dump()
        .into_iter()
        .filter(|o| o["kind"] == "MachineSet")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machine_deployment_freeze_needs_the_machine_sets_too() {
    let m = Mgmt::start(Dialect::V1beta2, Cloud::new());
    m.create(&workload(1, 1)).await;
    m.settle().await;
    assert_eq!(m.machines("default", "w1").len(), 2);
    let set = machine_sets(&m).remove(0);
    let set_name = set["metadata"]["name"].as_str().unwrap().to_string();

    m.controllers.holds.hold(None, Step::Node);
    m.patch(
        CORE,
        "machinedeployments",
        "default",
        "w1-md-0",
        json!({"spec": {"replicas": 3}}),
    )
    .await;
    m.wait_held(Step::Node).await;
    m.patch(
        CORE,
        "machinedeployments",
        "default",
        "w1-md-0",
        annotate_paused(true),
    )
    .await;
    m.patch(
        CORE,
        "machinesets",
        "default",
        &set_name,
        annotate_paused(true),
    )
    .await;
    m.settle().await;
    // A user scales further while frozen: nothing may happen until resume.
    m.patch(
        CORE,
        "machinedeployments",
        "default",
        "w1-md-0",
        json!({"spec": {"replicas": 5}}),
    )
    .await;
    m.controllers.holds.release(Step::Node);
    m.settle().await;
    let machines = m.machines("default", "w1");
    assert_eq!(
        machines.len(),
        4,
        "1 control plane + the 3 workers already created; none for replicas 5"
    );
    assert!(
        machines.iter().all(|x| m.has_node(x)),
        "in-flight workers finished"
    );
    assert_eq!(
        m.get(CORE, "machinesets", "default", &set_name)["spec"]["replicas"],
        3,
        "a paused MachineDeployment does not propagate replicas"
    );
    let md = m.get(CORE, "machinedeployments", "default", "w1-md-0");
    assert_eq!(m.condition(&md, "Paused").as_deref(), Some("True"));

    m.patch(
        CORE,
        "machinedeployments",
        "default",
        "w1-md-0",
        annotate_paused(false),
    )
    .await;
    m.patch(
        CORE,
        "machinesets",
        "default",
        &set_name,
        annotate_paused(false),
    )
    .await;
    m.settle().await;
    assert_eq!(m.machines("default", "w1").len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_machine_deployment_alone_still_scales_through_its_machine_set() {
    let m = Mgmt::start(Dialect::V1beta2, Cloud::new());
    m.create(&workload(1, 1)).await;
    m.settle().await;
    let set_name = machine_sets(&m)[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();
    // spec.paused (clusterctl alpha rollout pause) stops rollouts, not scaling.
    m.patch(
        CORE,
        "machinedeployments",
        "default",
        "w1-md-0",
        json!({"spec": {"paused": true, "replicas": 2}}),
    )
    .await;
    m.settle().await;
    assert_eq!(
        m.get(CORE, "machinesets", "default", &set_name)["spec"]["replicas"],
        2
    );
    assert_eq!(m.machines("default", "w1").len(), 3);
    // Only the MachineSet annotated: the MachineDeployment still propagates, the set ignores it.
    m.patch(
        CORE,
        "machinesets",
        "default",
        &set_name,
        annotate_paused(true),
    )
    .await;
    m.patch(
        CORE,
        "machinedeployments",
        "default",
        "w1-md-0",
        json!({"spec": {"replicas": 4}}),
    )
    .await;
    m.settle().await;
    assert_eq!(
        m.get(CORE, "machinesets", "default", &set_name)["spec"]["replicas"],
        4
    );
    assert_eq!(
        m.machines("default", "w1").len(),
        3,
        "the paused MachineSet creates nothing"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn machine_pool_freeze_needs_the_infrastructure_pool() {
    let cloud = Cloud::new();
    let m = Mgmt::start(Dialect::V1beta2, cloud.clone());
    let mut w = workload(1, 0);
    w.machine_pool = Some(1);
    m.create(&w).await;
    m.settle().await;
    let pool_instances = || {
        cloud
            .machines()
            .values()
            .filter(|x| x.name.starts_with("w1-mp-0-"))
            .count()
    };
    assert_eq!(pool_instances(), 1);
    m.patch(
        CORE,
        "machinepools",
        "default",
        "w1-mp-0",
        annotate_paused(true),
    )
    .await;
    m.patch(
        "infrastructure.cluster.x-k8s.io",
        "dockermachinepools",
        "default",
        "w1-mp-0",
        annotate_paused(true),
    )
    .await;
    m.patch(
        CORE,
        "machinepools",
        "default",
        "w1-mp-0",
        json!({"spec": {"replicas": 3}}),
    )
    .await;
    m.settle().await;
    assert_eq!(
        pool_instances(),
        1,
        "the frozen infrastructure pool does not scale"
    );
    m.patch(
        "infrastructure.cluster.x-k8s.io",
        "dockermachinepools",
        "default",
        "w1-mp-0",
        annotate_paused(false),
    )
    .await;
    m.settle().await;
    assert_eq!(
        pool_instances(),
        3,
        "the infrastructure pool does the scaling"
    );
    m.patch(
        CORE,
        "machinepools",
        "default",
        "w1-mp-0",
        annotate_paused(false),
    )
    .await;
    m.settle().await;
    let pool = m.get(CORE, "machinepools", "default", "w1-mp-0");
    assert_eq!(pool["status"]["replicas"], 3);
    assert_eq!(pool["spec"]["providerIDList"].as_array().unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scale_down_and_cluster_deletion_release_the_cloud() {
    let cloud = Cloud::new();
    let m = Mgmt::start(Dialect::V1beta2, cloud.clone());
    m.create(&workload(3, 2)).await;
    m.settle().await;
    assert_eq!(cloud.machines().len(), 5);
    assert_eq!(cloud.load_balancers().len(), 1);
    m.patch(
        CP,
        "kubeadmcontrolplanes",
        "default",
        "w1-control-plane",
        json!({"spec": {"replicas": 1}}),
    )
    .await;
    m.patch(
        CORE,
        "machinedeployments",
        "default",
        "w1-md-0",
        json!({"spec": {"replicas": 1}}),
    )
    .await;
    m.settle().await;
    assert_eq!(m.machines("default", "w1").len(), 2);
    assert_eq!(
        cloud.machines().len(),
        2,
        "deleted Machines release their cloud machines"
    );
    let machine = &m.machines("default", "w1")[0];
    assert!(
        machine["metadata"]["finalizers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "machine.cluster.x-k8s.io")
    );

    let delete =
        http::Request::delete("/apis/cluster.x-k8s.io/v1beta2/namespaces/default/clusters/w1")
            .body(Vec::new())
            .unwrap();
    m.server
        .client()
        .send(delete.map(kube::client::Body::from))
        .await
        .unwrap();
    for _ in 0..20 {
        m.settle().await;
        m.server.collect_garbage();
        if m.server.object(CORE, "clusters", "default", "w1").is_none() {
            break;
        }
    }
    assert!(
        m.server.object(CORE, "clusters", "default", "w1").is_none(),
        "the Cluster's finalizer goes last"
    );
    assert!(m.machines("default", "w1").is_empty());
    assert!(
        cloud.machines().is_empty() && cloud.load_balancers().is_empty(),
        "nothing left in the cloud"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_checks_mark_and_owners_remediate_unless_frozen() {
    let cloud = Cloud::new();
    let m = Mgmt::start(Dialect::V1beta2, cloud.clone());
    let mut w = workload(1, 2);
    w.health_check = true;
    m.create(&w).await;
    m.settle().await;
    let workers: Vec<String> = m
        .machines("default", "w1")
        .iter()
        .filter(|x| {
            x["metadata"]["labels"]
                .get("cluster.x-k8s.io/control-plane")
                .is_none()
        })
        .map(|x| x["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(workers.len(), 2);
    let set_name = machine_sets(&m)[0]["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_string();

    // Frozen owner: the Machine is marked, nothing replaces it.
    m.patch(
        CORE,
        "machinesets",
        "default",
        &set_name,
        annotate_paused(true),
    )
    .await;
    assert!(cloud.set_healthy("default", &workers[0], false));
    m.controllers.nudge();
    m.settle().await;
    let marked = m.get(CORE, "machines", "default", &workers[0]);
    assert_eq!(
        m.condition(&marked, "HealthCheckSucceeded").as_deref(),
        Some("False")
    );
    assert_eq!(
        m.condition(&marked, "OwnerRemediated").as_deref(),
        Some("False")
    );
    assert!(
        marked["metadata"].get("deletionTimestamp").is_none(),
        "a frozen MachineSet remediates nothing"
    );

    m.patch(
        CORE,
        "machinesets",
        "default",
        &set_name,
        annotate_paused(false),
    )
    .await;
    m.settle().await;
    let names: Vec<String> = m
        .machines("default", "w1")
        .iter()
        .map(|x| x["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        !names.contains(&workers[0]),
        "the owner replaced the marked Machine"
    );
    assert_eq!(names.len(), 3);

    // A paused MachineHealthCheck marks nothing.
    m.patch(
        CORE,
        "machinehealthchecks",
        "default",
        "w1-workers",
        annotate_paused(true),
    )
    .await;
    assert!(cloud.set_healthy("default", &workers[1], false));
    m.controllers.nudge();
    m.settle().await;
    let unmarked = m.get(CORE, "machines", "default", &workers[1]);
    assert_ne!(
        m.condition(&unmarked, "OwnerRemediated").as_deref(),
        Some("False")
    );
    assert_eq!(
        m.condition(&unmarked, "NodeHealthy").as_deref(),
        Some("False")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_move_is_released_after_the_cluster_is_paused() {
    let mut config = Config::new(Dialect::V1beta2, Delays::millis(15));
    config.block_move = true;
    let m = Mgmt::start_with(config, Cloud::new());
    m.create(&workload(1, 0)).await;
    m.settle().await;
    let infra = || {
        m.get(
            "infrastructure.cluster.x-k8s.io",
            "dockerclusters",
            "default",
            "w1",
        )
    };
    assert!(
        infra()["metadata"]["annotations"]
            .get("clusterctl.cluster.x-k8s.io/block-move")
            .is_some()
    );
    m.patch(
        CORE,
        "clusters",
        "default",
        "w1",
        json!({"spec": {"paused": true}}),
    )
    .await;
    m.settle().await;
    assert!(
        infra()["metadata"]["annotations"]
            .get("clusterctl.cluster.x-k8s.io/block-move")
            .is_none()
    );
    assert_eq!(m.condition(&infra(), "Paused").as_deref(), Some("True"));
}

async fn hand_move(source: &Mgmt, target: &Mgmt, namespace: &str, cluster: &str) {
    source
        .patch(
            CORE,
            "clusters",
            namespace,
            cluster,
            json!({"spec": {"paused": true}}),
        )
        .await;
    source.settle().await;
    capi_sandbox::environment::hand_move(
        &source.server,
        &target.server,
        source.dialect,
        namespace,
        cluster,
    )
    .await
    .unwrap();
}

async fn adoption(dialect: Dialect) {
    let cloud = Cloud::new();
    let source = Mgmt::start(dialect, cloud.clone());
    let target = Mgmt::start(dialect, cloud.clone());
    let mut w = workload(3, 2);
    w.machine_pool = Some(2);
    source.create(&w).await;
    source.settle().await;
    let before_machines = cloud.machines();
    let before_totals = cloud.totals();
    assert_eq!(
        before_machines.len(),
        7,
        "3 control plane + 2 workers + 2 pool instances"
    );

    hand_move(&source, &target, "default", "w1").await;
    target.settle().await;
    source.settle().await;

    assert_eq!(
        cloud.machines(),
        before_machines,
        "the same cloud machines, nothing orphaned"
    );
    assert_eq!(
        cloud.totals(),
        before_totals,
        "a move creates and deletes no infrastructure"
    );
    assert_eq!(cloud.load_balancers().len(), 1);
    assert!(
        source.machines("default", "w1").is_empty(),
        "nothing left in the source"
    );
    let machines = target.machines("default", "w1");
    assert_eq!(machines.len(), 5);
    assert!(
        machines.iter().all(|x| target.has_node(x)),
        "adopted Machines get their status back"
    );
    let cluster = target.get(CORE, "clusters", "default", "w1");
    assert_eq!(
        target.condition(&cluster, "Available").as_deref(),
        Some("True")
    );
    let pool = target.get(CORE, "machinepools", "default", "w1-mp-0");
    assert_eq!(pool["status"]["replicas"], 2);

    // The target's controllers own the cluster now: scaling happens there.
    target
        .patch(
            CORE,
            "machinedeployments",
            "default",
            "w1-md-0",
            json!({"spec": {"replicas": 3}}),
        )
        .await;
    target.settle().await;
    assert_eq!(target.machines("default", "w1").len(), 6);
    assert_eq!(cloud.machines().len(), 8);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moved_objects_are_adopted_without_new_infrastructure() {
    adoption(Dialect::V1beta2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moved_objects_are_adopted_in_the_v1beta1_dialect() {
    adoption(Dialect::V1beta1).await;
}

/// A self-hosted pivot's workload cluster: its `NAME-kubeconfig` Secret in the source holds, in
/// `value` as Cluster API writes it, a kubeconfig that reaches the target server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_hosted_workload_clusters_kubeconfig_reaches_the_target() {
    use capi_sandbox::environment::{Environment, Options};
    use k8s_openapi::api::core::v1::{Namespace, Secret};
    use kube::api::Api;

    let dir = tempfile::tempdir().unwrap();
    let mut options = Options::new(Dialect::V1beta2, Delays::millis(15));
    options.self_hosted = Some("w1".into());
    let env = Environment::start(&options, &dir.path().join("kubeconfig"))
        .await
        .unwrap();
    let mut workload = Workload::new("default", "w1");
    workload.workers = 0;
    env.create_workload(&workload).await.unwrap();
    env.wait_provisioned(&env.source, "default", "w1", SETTLE)
        .await
        .unwrap();
    // The kubeconfig Secret comes in a pass after the control plane is up: once they settle.
    env.source.controllers.settle(SETTLE).await.unwrap();
    let secrets: Api<Secret> = Api::namespaced(env.source.server.client(), "default");
    let secret = secrets.get("w1-kubeconfig").await.unwrap();
    let value = &secret.data.unwrap()["value"].0;
    let text = String::from_utf8(value.clone()).unwrap();
    assert!(text.contains("w1-admin@w1"), "{text}");
    let kubeconfig: kube::config::Kubeconfig = serde_saphyr::from_str(&text).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let through_secret = kube::Client::try_from(config).unwrap();
    let uid = |client: kube::Client| async move {
        Api::<Namespace>::all(client)
            .get("kube-system")
            .await
            .unwrap()
            .metadata
            .uid
    };
    assert_eq!(
        uid(through_secret).await,
        uid(env.target.server.client()).await,
        "the Secret's kubeconfig reaches the target server"
    );
}

/// A ClusterClass Cluster: the topology owns the replicas of its control plane and of its
/// MachineDeployment — a direct patch is set back, a topology change flows down — and nothing
/// flows while its ClusterClass carries the paused annotation (as Cluster API v1.14 does).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_topology_owns_the_replicas_unless_its_class_is_paused() {
    let m = Mgmt::start(Dialect::V1beta2, Cloud::new());
    m.create(&workload(1, 1)).await;
    create(
        &m.server,
        json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "ClusterClass",
        "metadata": {"name": "class1", "namespace": "default"}, "spec": {}}),
    )
    .await;
    m.settle().await;
    m.patch(
        CORE,
        "machinedeployments",
        "default",
        "w1-md-0",
        json!({
        "metadata": {"labels": {"topology.cluster.x-k8s.io/deployment-name": "md-0"}}}),
    )
    .await;
    m.patch(CORE, "clusters", "default", "w1", json!({"spec": {"topology": {
        "classRef": {"name": "class1"},
        "controlPlane": {"replicas": 1},
        "workers": {"machineDeployments": [{"name": "md-0", "class": "default-worker", "replicas": 1}]}}}})).await;
    m.settle().await;
    let replicas = |plural: &str, group: &str, name: &str| {
        m.get(group, plural, "default", name)["spec"]["replicas"].as_i64()
    };
    // A direct patch is set back.
    m.patch(
        CP,
        "kubeadmcontrolplanes",
        "default",
        "w1-control-plane",
        json!({"spec": {"replicas": 3}}),
    )
    .await;
    m.patch(
        CORE,
        "machinedeployments",
        "default",
        "w1-md-0",
        json!({"spec": {"replicas": 4}}),
    )
    .await;
    m.settle().await;
    assert_eq!(
        replicas("kubeadmcontrolplanes", CP, "w1-control-plane"),
        Some(1)
    );
    assert_eq!(replicas("machinedeployments", CORE, "w1-md-0"), Some(1));
    // The topology flows down.
    m.patch(CORE, "clusters", "default", "w1", json!({"spec": {"topology": {
        "workers": {"machineDeployments": [{"name": "md-0", "class": "default-worker", "replicas": 2}]}}}})).await;
    m.settle().await;
    assert_eq!(replicas("machinedeployments", CORE, "w1-md-0"), Some(2));
    // Not while the class is paused.
    m.patch(
        CORE,
        "clusterclasses",
        "default",
        "class1",
        annotate_paused(true),
    )
    .await;
    m.patch(CORE, "clusters", "default", "w1", json!({"spec": {"topology": {
        "workers": {"machineDeployments": [{"name": "md-0", "class": "default-worker", "replicas": 3}]}}}})).await;
    m.settle().await;
    assert_eq!(replicas("machinedeployments", CORE, "w1-md-0"), Some(2));
    m.patch(
        CORE,
        "clusterclasses",
        "default",
        "class1",
        annotate_paused(false),
    )
    .await;
    m.settle().await;
    assert_eq!(replicas("machinedeployments", CORE, "w1-md-0"), Some(3));
}

/// As Cluster API v1.14 was observed: a MachineSet stops acting on a pause at once, but reports
/// `Paused` only at its next resync; the control plane reports it at its next reconcile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_set_reports_its_pause_later_but_honours_it_at_once() {
    let mut config = Config::new(Dialect::V1beta2, Delays::millis(15));
    config.delays.node = Duration::from_secs(4);
    let m = Mgmt::start_with(config, Cloud::new());
    m.create(&workload(1, 1)).await;
    m.settle().await;
    let set = machine_sets(&m).remove(0);
    let set_name = set["metadata"]["name"].as_str().unwrap().to_string();
    let machines_before = m.machines("default", "w1").len();
    m.patch(
        CORE,
        "machinesets",
        "default",
        &set_name,
        annotate_paused(true),
    )
    .await;
    m.patch(
        CORE,
        "machinedeployments",
        "default",
        "w1-md-0",
        annotate_paused(true),
    )
    .await;
    m.patch(
        CORE,
        "machinesets",
        "default",
        &set_name,
        json!({"spec": {"replicas": 3}}),
    )
    .await;
    // Passes that act on the patches at once: the set's report comes ~1 s later.
    for _ in 0..3 {
        m.controllers.one_pass(SETTLE).await.unwrap();
    }
    let set_now = m.get(CORE, "machinesets", "default", &set_name);
    assert_ne!(
        m.condition(&set_now, "Paused").as_deref(),
        Some("True"),
        "not reported yet"
    );
    assert_eq!(
        m.machines("default", "w1").len(),
        machines_before,
        "but honoured"
    );
    m.settle().await;
    let set_now = m.get(CORE, "machinesets", "default", &set_name);
    assert_eq!(m.condition(&set_now, "Paused").as_deref(), Some("True"));
    assert_eq!(m.machines("default", "w1").len(), machines_before);
}
