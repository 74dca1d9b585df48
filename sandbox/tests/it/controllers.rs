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
