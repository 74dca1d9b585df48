//! Cluster and ClusterClass, read in either dialect.

use kube::api::DynamicObject;
use serde_json::Value;

use super::conditions::{self, Condition};
use super::{
    object::Dialect, object::ObjectRef, object::TypedRef, object::is_deleting,
    object::is_paused_by_annotation,
};

#[derive(Debug, Clone)]
pub struct ClusterView {
    pub reference: ObjectRef,
    pub uid: String,
    pub dialect: Dialect,
    /// `spec.paused`.
    pub paused: bool,
    pub paused_annotation: bool,
    /// v1beta2 `status.initialization.infrastructureProvisioned`, v1beta1 `status.infrastructureReady`.
    pub infrastructure_provisioned: bool,
    /// The `ControlPlaneInitialized` condition clusterctl checks (v1beta2 `status.conditions`,
    /// v1beta1 the Cluster API conditions in `status.conditions`); `None` when absent.
    pub control_plane_initialized_condition: Option<bool>,
    /// v1beta2 `status.initialization.controlPlaneInitialized`, v1beta1 `status.controlPlaneReady`.
    pub control_plane_initialized: bool,
    pub control_plane_ref: Option<TypedRef>,
    pub infrastructure_ref: Option<TypedRef>,
    /// The ClusterClass of a topology-managed Cluster: (namespace if given, name).
    pub topology_class: Option<(Option<String>, String)>,
    /// metav1 conditions wherever the dialect keeps them.
    pub conditions: Vec<Condition>,
    pub deleting: bool,
    /// The mark of the kubectl-capi move that created this copy paused and has not unpaused it
    /// yet (the move's ID).
    pub moved_by: Option<String>,
}

impl ClusterView {
    pub fn read(object: &DynamicObject) -> ClusterView {
        let dialect = Dialect::of(object);
        let v2 = dialect == Dialect::V1beta2;
        let spec = &object.data["spec"];
        let status = &object.data["status"];
        let (infrastructure_provisioned, control_plane_initialized) = if v2 {
            (
                status["initialization"]["infrastructureProvisioned"]
                    .as_bool()
                    .unwrap_or(false),
                status["initialization"]["controlPlaneInitialized"]
                    .as_bool()
                    .unwrap_or(false),
            )
        } else {
            (
                status["infrastructureReady"].as_bool().unwrap_or(false),
                status["controlPlaneReady"].as_bool().unwrap_or(false),
            )
        };
        // clusterctl reads the condition from `status.conditions` in both eras; the shape differs.
        let primary = conditions::read(&status["conditions"]);
        let control_plane_initialized_condition =
            conditions::find(&primary, "ControlPlaneInitialized").map(Condition::is_true);
        let topology = &spec["topology"];
        let topology_class = if v2 {
            topology["classRef"]["name"].as_str().map(|name| {
                (
                    topology["classRef"]["namespace"]
                        .as_str()
                        .map(str::to_string),
                    name.to_string(),
                )
            })
        } else {
            topology["class"].as_str().map(|name| {
                (
                    topology["classNamespace"].as_str().map(str::to_string),
                    name.to_string(),
                )
            })
        };
        ClusterView {
            reference: ObjectRef::of(object),
            uid: object.metadata.uid.clone().unwrap_or_default(),
            dialect,
            paused: spec["paused"].as_bool().unwrap_or(false),
            paused_annotation: is_paused_by_annotation(object),
            moved_by: super::object::annotation(object, crate::names::MOVED_BY_ANNOTATION)
                .map(str::to_string),
            infrastructure_provisioned,
            control_plane_initialized_condition,
            control_plane_initialized,
            control_plane_ref: TypedRef::read(&spec["controlPlaneRef"]),
            infrastructure_ref: TypedRef::read(&spec["infrastructureRef"]),
            topology_class,
            conditions: conditions::current(status, v2),
            deleting: is_deleting(object),
        }
    }

    /// Cluster API's `IsPaused` for the Cluster itself.
    pub fn is_paused(&self) -> bool {
        self.paused || self.paused_annotation
    }
}

#[derive(Debug, Clone)]
pub struct ClusterClassView {
    pub reference: ObjectRef,
    pub paused_annotation: bool,
    /// Template references the class holds (infrastructure, control plane, workers).
    pub template_refs: Vec<TypedRef>,
}

impl ClusterClassView {
    pub fn read(object: &DynamicObject) -> ClusterClassView {
        let spec = &object.data["spec"];
        let mut refs = Vec::new();
        let mut push = |v: &Value| {
            // v1beta2 wraps references in `templateRef`, v1beta1 in `ref`.
            for key in ["templateRef", "ref"] {
                if let Some(r) = TypedRef::read(&v[key]) {
                    refs.push(r);
                }
            }
        };
        push(&spec["infrastructure"]);
        push(&spec["controlPlane"]);
        push(&spec["controlPlane"]["machineInfrastructure"]);
        for list in ["machineDeployments", "machinePools"] {
            for class in spec["workers"][list].as_array().into_iter().flatten() {
                let template = if class.get("template").is_some() {
                    &class["template"]
                } else {
                    class
                };
                push(&template["infrastructure"]);
                push(&template["bootstrap"]);
            }
        }
        ClusterClassView {
            reference: ObjectRef::of(object),
            paused_annotation: is_paused_by_annotation(object),
            template_refs: refs,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::object::fixtures::object;

    #[test]
    fn reads_a_v1beta2_cluster() {
        let cluster = ClusterView::read(&object(
            "apiVersion: cluster.x-k8s.io/v1beta2
kind: Cluster
metadata: {name: c1, namespace: ns, uid: u1}
spec:
  controlPlaneRef: {apiGroup: controlplane.cluster.x-k8s.io, kind: KubeadmControlPlane, name: c1-cp}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerCluster, name: c1}
  topology: {classRef: {name: quick-start, namespace: classes}}
status:
  initialization: {infrastructureProvisioned: true, controlPlaneInitialized: true}
  conditions:
  - {type: ControlPlaneInitialized, status: 'True'}
  - {type: Available, status: 'False', reason: NotAvailable}
",
        ));
        assert_eq!(cluster.dialect, Dialect::V1beta2);
        assert!(cluster.infrastructure_provisioned && cluster.control_plane_initialized);
        assert_eq!(cluster.control_plane_initialized_condition, Some(true));
        assert_eq!(
            cluster.control_plane_ref.as_ref().unwrap().kind,
            "KubeadmControlPlane"
        );
        assert_eq!(
            cluster.control_plane_ref.as_ref().unwrap().api_version,
            None
        );
        assert_eq!(
            cluster.topology_class,
            Some((Some("classes".into()), "quick-start".into()))
        );
        assert_eq!(cluster.conditions.len(), 2);
        assert!(!cluster.is_paused());
        assert_eq!(
            cluster.reference.gvk_string(),
            "cluster.x-k8s.io/v1beta2, Kind=Cluster"
        );
    }

    #[test]
    fn reads_a_v1beta1_cluster() {
        let cluster = ClusterView::read(&object(
            "apiVersion: cluster.x-k8s.io/v1beta1
kind: Cluster
metadata: {name: c1, namespace: ns, annotations: {cluster.x-k8s.io/paused: ''}}
spec:
  paused: false
  controlPlaneRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta1, kind: KubeadmControlPlane, name: c1-cp, namespace: ns}
  topology: {class: quick-start}
status:
  infrastructureReady: true
  controlPlaneReady: false
  conditions:
  - {type: ControlPlaneInitialized, status: 'False', severity: Info, reason: WaitingForControlPlane}
  v1beta2:
    conditions:
    - {type: Available, status: 'False'}
",
        ));
        assert_eq!(cluster.dialect, Dialect::V1beta1);
        assert!(cluster.infrastructure_provisioned);
        assert!(!cluster.control_plane_initialized);
        assert_eq!(cluster.control_plane_initialized_condition, Some(false));
        assert_eq!(
            cluster.control_plane_ref.as_ref().unwrap().api_group,
            "controlplane.cluster.x-k8s.io"
        );
        assert_eq!(cluster.topology_class, Some((None, "quick-start".into())));
        assert_eq!(
            cluster.conditions[0].type_, "Available",
            "new-style conditions from status.v1beta2"
        );
        assert!(cluster.is_paused(), "the annotation pauses too");
    }

    #[test]
    fn reads_cluster_class_templates_in_both_dialects() {
        let v2 = ClusterClassView::read(&object(
            "apiVersion: cluster.x-k8s.io/v1beta2
kind: ClusterClass
metadata: {name: cc, namespace: ns}
spec:
  infrastructure: {templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta2, kind: DockerClusterTemplate, name: i}}
  controlPlane:
    templateRef: {apiVersion: controlplane.cluster.x-k8s.io/v1beta2, kind: KubeadmControlPlaneTemplate, name: cp}
    machineInfrastructure: {templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta2, kind: DockerMachineTemplate, name: cpm}}
  workers:
    machineDeployments:
    - class: default
      bootstrap: {templateRef: {apiVersion: bootstrap.cluster.x-k8s.io/v1beta2, kind: KubeadmConfigTemplate, name: b}}
      infrastructure: {templateRef: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta2, kind: DockerMachineTemplate, name: w}}
",
        ));
        assert_eq!(v2.template_refs.len(), 5);
        let v1 = ClusterClassView::read(&object(
            "apiVersion: cluster.x-k8s.io/v1beta1
kind: ClusterClass
metadata: {name: cc, namespace: ns, annotations: {cluster.x-k8s.io/paused: ''}}
spec:
  infrastructure: {ref: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerClusterTemplate, name: i}}
  workers:
    machineDeployments:
    - class: default
      template:
        bootstrap: {ref: {apiVersion: bootstrap.cluster.x-k8s.io/v1beta1, kind: KubeadmConfigTemplate, name: b}}
        infrastructure: {ref: {apiVersion: infrastructure.cluster.x-k8s.io/v1beta1, kind: DockerMachineTemplate, name: w}}
",
        ));
        assert_eq!(v1.template_refs.len(), 3);
        assert!(v1.paused_annotation);
    }
}
