//! Machine, read in either dialect.

use kube::api::DynamicObject;

use super::conditions::{self, Condition};
use super::{
    object::Controller, object::Dialect, object::ObjectRef, object::TypedRef,
    object::cluster_name_of, object::controller_of, object::is_deleting,
    object::is_paused_by_annotation, object::label,
};
use crate::names::CONTROL_PLANE_LABEL;

#[derive(Debug, Clone)]
pub struct MachineView {
    pub reference: ObjectRef,
    pub cluster_name: Option<String>,
    /// clusterctl's "has a node": v1beta2 `status.nodeRef.name` non-empty, v1beta1 `status.nodeRef` set.
    pub has_node: bool,
    pub node_name: Option<String>,
    pub deleting: bool,
    pub controller: Option<Controller>,
    pub paused_annotation: bool,
    pub control_plane: bool,
    pub conditions: Vec<Condition>,
    pub bootstrap_ref: Option<TypedRef>,
    pub infrastructure_ref: Option<TypedRef>,
}

impl MachineView {
    pub fn read(object: &DynamicObject) -> MachineView {
        let dialect = Dialect::of(object);
        let v2 = dialect == Dialect::V1beta2;
        let status = &object.data["status"];
        let node_name = status["nodeRef"]["name"]
            .as_str()
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        let has_node = if v2 {
            node_name.is_some()
        } else {
            status["nodeRef"].is_object()
        };
        let spec = &object.data["spec"];
        MachineView {
            reference: ObjectRef::of(object),
            cluster_name: cluster_name_of(object),
            has_node,
            node_name,
            deleting: is_deleting(object),
            controller: controller_of(object),
            paused_annotation: is_paused_by_annotation(object),
            control_plane: label(object, CONTROL_PLANE_LABEL).is_some(),
            conditions: conditions::current(status, v2),
            bootstrap_ref: TypedRef::read(&spec["bootstrap"]["configRef"]),
            infrastructure_ref: TypedRef::read(&spec["infrastructureRef"]),
        }
    }

    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        conditions::find(&self.conditions, type_)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::object::fixtures::object;

    #[test]
    fn node_ref_in_both_dialects() {
        let v2 = MachineView::read(&object(
            "apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata:
  name: m1
  namespace: ns
  labels: {cluster.x-k8s.io/cluster-name: c1, cluster.x-k8s.io/control-plane: ''}
  ownerReferences: [{apiVersion: controlplane.cluster.x-k8s.io/v1beta2, kind: KubeadmControlPlane, name: cp, uid: u9, controller: true}]
spec:
  clusterName: c1
  bootstrap: {configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: KubeadmConfig, name: m1}}
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachine, name: m1}
status:
  nodeRef: {name: node-1}
  conditions: [{type: NodeHealthy, status: 'True'}]
",
        ));
        assert!(v2.has_node);
        assert_eq!(v2.node_name.as_deref(), Some("node-1"));
        assert!(v2.control_plane);
        assert_eq!(v2.controller.as_ref().unwrap().kind, "KubeadmControlPlane");
        assert!(v2.condition("NodeHealthy").unwrap().is_true());
        assert_eq!(v2.bootstrap_ref.unwrap().kind, "KubeadmConfig");

        let empty_v2 = MachineView::read(&object(
            "apiVersion: cluster.x-k8s.io/v1beta2\nkind: Machine\nmetadata: {name: m2, namespace: ns}\nspec: {clusterName: c1}\nstatus: {nodeRef: {name: ''}}\n",
        ));
        assert!(!empty_v2.has_node, "an empty name is no node in v1beta2");

        let v1 = MachineView::read(&object(
            "apiVersion: cluster.x-k8s.io/v1beta1
kind: Machine
metadata: {name: m1, namespace: ns, deletionTimestamp: '2026-01-01T00:00:00Z'}
spec: {clusterName: c1}
status:
  nodeRef: {kind: Node, name: node-1, uid: x}
  v1beta2: {conditions: [{type: NodeReady, status: 'False'}]}
",
        ));
        assert!(v1.has_node);
        assert!(v1.deleting);
        assert_eq!(v1.cluster_name.as_deref(), Some("c1"));
        assert!(!v1.condition("NodeReady").unwrap().is_true());
    }
}
