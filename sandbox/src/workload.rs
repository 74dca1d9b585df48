//! The objects a user applies to create a workload cluster (what `clusterctl generate cluster`
//! would print for the Docker provider), in either dialect.

use serde_json::{Value, json};

use crate::controllers::shape::Shape;
use crate::crds::Dialect;

#[derive(Debug, Clone)]
pub struct Workload {
    pub namespace: String,
    pub name: String,
    pub control_plane_replicas: i64,
    /// Replicas of the MachineDeployment (none when 0 and `machine_deployment` is false).
    pub workers: i64,
    pub machine_deployment: bool,
    /// Replicas of a MachinePool, if any.
    pub machine_pool: Option<i64>,
    pub health_check: bool,
    pub kubernetes_version: String,
    /// The ClusterClass it is made from: its topology then owns the control plane's and the
    /// MachineDeployment's replicas (scale it through `spec.topology`).
    pub class: Option<String>,
}

impl Workload {
    pub fn new(namespace: &str, name: &str) -> Workload {
        Workload {
            namespace: namespace.to_string(),
            name: name.to_string(),
            control_plane_replicas: 1,
            workers: 1,
            machine_deployment: true,
            machine_pool: None,
            health_check: false,
            kubernetes_version: "v1.33.0".to_string(),
            class: None,
        }
    }

    /// Its ClusterClass, to create before it (once, whatever uses it).
    pub fn cluster_class(&self, dialect: Dialect) -> Option<Value> {
        let shape = Shape { dialect };
        let class = self.class.as_ref()?;
        Some(
            json!({"apiVersion": shape.api_version("cluster.x-k8s.io"), "kind": "ClusterClass",
            "metadata": {"name": class, "namespace": self.namespace}, "spec": {}}),
        )
    }

    /// `spec.topology` of a Cluster made from `class`.
    fn topology(&self, shape: Shape, class: &str) -> Value {
        let mut topology = if shape.v2() {
            json!({"classRef": {"name": class}})
        } else {
            json!({"class": class})
        };
        topology["version"] = json!(self.kubernetes_version);
        topology["controlPlane"] = json!({"replicas": self.control_plane_replicas});
        if self.machine_deployment {
            topology["workers"] = json!({"machineDeployments": [
                {"name": "md-0", "class": "default-worker", "replicas": self.workers}]});
        }
        topology
    }

    pub fn objects(&self, dialect: Dialect) -> Vec<Value> {
        let shape = Shape { dialect };
        let ns = &self.namespace;
        let name = &self.name;
        let core = shape.api_version("cluster.x-k8s.io");
        let infra = shape.api_version("infrastructure.cluster.x-k8s.io");
        let bootstrap = shape.api_version("bootstrap.cluster.x-k8s.io");
        let cp = shape.api_version("controlplane.cluster.x-k8s.io");
        let label = json!({"cluster.x-k8s.io/cluster-name": name});
        let meta = |n: String| json!({"name": n, "namespace": ns, "labels": label});
        let cp_template_ref = shape.reference(
            "infrastructure.cluster.x-k8s.io",
            "DockerMachineTemplate",
            &format!("{name}-control-plane"),
            ns,
        );
        let machine_template = if shape.v2() {
            json!({"spec": {"infrastructureRef": cp_template_ref}})
        } else {
            json!({"infrastructureRef": cp_template_ref})
        };
        let mut objects = vec![
            json!({"apiVersion": core, "kind": "Cluster", "metadata": meta(name.clone()),
                "spec": {"clusterNetwork": {"pods": {"cidrBlocks": ["192.168.0.0/16"]}},
                    "controlPlaneRef": shape.reference("controlplane.cluster.x-k8s.io", "KubeadmControlPlane", &format!("{name}-control-plane"), ns),
                    "infrastructureRef": shape.reference("infrastructure.cluster.x-k8s.io", "DockerCluster", name, ns)}}),
            json!({"apiVersion": infra, "kind": "DockerCluster", "metadata": meta(name.clone()), "spec": {}}),
            json!({"apiVersion": infra, "kind": "DockerMachineTemplate", "metadata": meta(format!("{name}-control-plane")),
                "spec": {"template": {"spec": {"extraMounts": [{"containerPath": "/var/run/docker.sock", "hostPath": "/var/run/docker.sock"}]}}}}),
            json!({"apiVersion": cp, "kind": "KubeadmControlPlane", "metadata": meta(format!("{name}-control-plane")),
                "spec": {"replicas": self.control_plane_replicas, "version": self.kubernetes_version, "machineTemplate": machine_template,
                    "kubeadmConfigSpec": {"clusterConfiguration": {"apiServer": {"certSANs": ["localhost", "127.0.0.1"]}}}}}),
        ];
        if let Some(class) = &self.class {
            objects[0]["spec"]["topology"] = self.topology(shape, class);
        }
        if self.machine_deployment {
            let md = format!("{name}-md-0");
            objects.push(json!({"apiVersion": infra, "kind": "DockerMachineTemplate", "metadata": meta(md.clone()), "spec": {"template": {"spec": {}}}}));
            objects.push(json!({"apiVersion": bootstrap, "kind": "KubeadmConfigTemplate", "metadata": meta(md.clone()),
                "spec": {"template": {"spec": {"joinConfiguration": {"nodeRegistration": {"kubeletExtraArgs": {}}}}}}}));
            let mut md_meta = meta(md.clone());
            if self.class.is_some() {
                md_meta["labels"][crate::controllers::topology::DEPLOYMENT_NAME_LABEL] =
                    json!("md-0");
            }
            objects.push(json!({"apiVersion": core, "kind": "MachineDeployment", "metadata": md_meta,
                "spec": {"clusterName": name, "replicas": self.workers,
                    "selector": {"matchLabels": {"cluster.x-k8s.io/cluster-name": name}},
                    "template": {"metadata": {"labels": {"cluster.x-k8s.io/cluster-name": name, "nodepool": "md-0"}},
                        "spec": {"clusterName": name, "version": self.kubernetes_version,
                            "bootstrap": {"configRef": shape.reference("bootstrap.cluster.x-k8s.io", "KubeadmConfigTemplate", &md, ns)},
                            "infrastructureRef": shape.reference("infrastructure.cluster.x-k8s.io", "DockerMachineTemplate", &md, ns)}}}}));
        }
        if let Some(replicas) = self.machine_pool {
            let mp = format!("{name}-mp-0");
            objects.push(json!({"apiVersion": infra, "kind": "DockerMachinePool", "metadata": meta(mp.clone()), "spec": {"template": {}}}));
            objects.push(json!({"apiVersion": bootstrap, "kind": "KubeadmConfig", "metadata": meta(mp.clone()), "spec": {}}));
            objects.push(json!({"apiVersion": core, "kind": "MachinePool", "metadata": meta(mp.clone()),
                "spec": {"clusterName": name, "replicas": replicas,
                    "template": {"spec": {"clusterName": name, "version": self.kubernetes_version,
                        "bootstrap": {"configRef": shape.reference("bootstrap.cluster.x-k8s.io", "KubeadmConfig", &mp, ns)},
                        "infrastructureRef": shape.reference("infrastructure.cluster.x-k8s.io", "DockerMachinePool", &mp, ns)}}}}));
        }
        if self.health_check {
            objects.push(json!({"apiVersion": core, "kind": "MachineHealthCheck", "metadata": meta(format!("{name}-workers")),
                "spec": {"clusterName": name, "selector": {"matchLabels": {"nodepool": "md-0"}},
                    "checks": {"unhealthyNodeConditions": [{"type": "Ready", "status": "False"}]}}}));
        }
        objects
    }
}
