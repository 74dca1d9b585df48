//! The objects that create and delete Machines (control plane, MachineDeployment, MachineSet,
//! MachinePool) and MachineHealthCheck, read in either dialect.

use kube::api::DynamicObject;
use serde::Serialize;

use super::conditions::{self, Condition};
use super::{
    object::Controller, object::Dialect, object::ObjectRef, object::TypedRef,
    object::cluster_name_of, object::controller_of, object::has_annotation, object::int,
    object::is_deleting, object::is_paused_by_annotation,
};
use crate::names::{
    AUTOSCALER_MAX_ANNOTATION, AUTOSCALER_MIN_ANNOTATION, REPLICAS_MANAGED_BY_ANNOTATION,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum ScalerKind {
    ControlPlane,
    MachineDeployment,
    MachineSet,
    MachinePool,
}

#[derive(Debug, Clone)]
pub struct ScalerView {
    pub reference: ObjectRef,
    pub uid: String,
    pub scaler: ScalerKind,
    pub dialect: Dialect,
    pub cluster_name: Option<String>,
    /// `spec.replicas` (None when unset, e.g. an externally managed pool).
    pub desired: Option<i64>,
    /// `status.replicas`: Machines that exist.
    pub replicas: Option<i64>,
    pub ready_replicas: Option<i64>,
    pub available_replicas: Option<i64>,
    pub up_to_date_replicas: Option<i64>,
    pub paused_annotation: bool,
    /// The `Paused` condition: `Some(true)` acknowledged, `Some(false)` not (yet), `None` not reported.
    pub paused_condition: Option<bool>,
    pub controller: Option<Controller>,
    /// Annotated for cluster-autoscaler, or its replicas managed outside Cluster API.
    pub autoscaled: bool,
    /// The infrastructure machine pool of a MachinePool.
    pub infrastructure_ref: Option<TypedRef>,
    pub deleting: bool,
    pub conditions: Vec<Condition>,
}

impl ScalerView {
    pub fn read(object: &DynamicObject, scaler: ScalerKind) -> ScalerView {
        let dialect = Dialect::of(object);
        let v2 = dialect == Dialect::V1beta2;
        let status = &object.data["status"];
        let current = conditions::current(status, v2);
        // v1beta2 moved the meaning of readyReplicas etc.; both eras keep the new counters
        // (v1beta1 under status.v1beta2).
        let counters = if v2 {
            status
        } else {
            &status[crate::names::V1BETA2_STATUS]
        };
        let infrastructure_ref = if scaler == ScalerKind::MachinePool {
            TypedRef::read(&object.data["spec"]["template"]["spec"]["infrastructureRef"])
        } else {
            None
        };
        ScalerView {
            reference: ObjectRef::of(object),
            uid: object.metadata.uid.clone().unwrap_or_default(),
            scaler,
            dialect,
            cluster_name: cluster_name_of(object),
            desired: int(&object.data["spec"]["replicas"]),
            replicas: int(&status["replicas"]),
            ready_replicas: int(&counters["readyReplicas"]).or(int(&status["readyReplicas"])),
            available_replicas: int(&counters["availableReplicas"])
                .or(int(&status["availableReplicas"])),
            up_to_date_replicas: int(&counters["upToDateReplicas"]),
            paused_annotation: is_paused_by_annotation(object),
            paused_condition: conditions::find(&current, "Paused").map(Condition::is_true),
            controller: controller_of(object),
            autoscaled: has_annotation(object, AUTOSCALER_MIN_ANNOTATION)
                || has_annotation(object, AUTOSCALER_MAX_ANNOTATION)
                || has_annotation(object, REPLICAS_MANAGED_BY_ANNOTATION),
            infrastructure_ref,
            deleting: is_deleting(object),
            conditions: current,
        }
    }
}

#[derive(Debug, Clone)]
pub struct HealthCheckView {
    pub reference: ObjectRef,
    pub cluster_name: Option<String>,
    pub paused_annotation: bool,
    pub paused_condition: Option<bool>,
    pub expected_machines: Option<i64>,
    pub current_healthy: Option<i64>,
    pub remediations_allowed: Option<i64>,
}

impl HealthCheckView {
    pub fn read(object: &DynamicObject) -> HealthCheckView {
        let v2 = Dialect::of(object) == Dialect::V1beta2;
        let status = &object.data["status"];
        HealthCheckView {
            reference: ObjectRef::of(object),
            cluster_name: cluster_name_of(object),
            paused_annotation: is_paused_by_annotation(object),
            paused_condition: conditions::find(&conditions::current(status, v2), "Paused")
                .map(Condition::is_true),
            expected_machines: int(&status["expectedMachines"]),
            current_healthy: int(&status["currentHealthy"]),
            remediations_allowed: int(&status["remediationsAllowed"]),
        }
    }

    /// Machines the check holds unhealthy right now.
    pub fn unhealthy(&self) -> i64 {
        match (self.expected_machines, self.current_healthy) {
            (Some(expected), Some(healthy)) => (expected - healthy).max(0),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::object::fixtures::object;

    #[test]
    fn control_plane_counters_and_pause_in_both_dialects() {
        let v2 = ScalerView::read(
            &object(
                "apiVersion: controlplane.cluster.x-k8s.io/v1beta2
kind: KubeadmControlPlane
metadata:
  name: cp
  namespace: ns
  labels: {cluster.x-k8s.io/cluster-name: c1}
  annotations: {cluster.x-k8s.io/paused: ''}
spec: {replicas: 3}
status:
  replicas: 2
  readyReplicas: 1
  upToDateReplicas: 2
  conditions: [{type: Paused, status: 'True', reason: Paused}]
",
            ),
            ScalerKind::ControlPlane,
        );
        assert_eq!(
            (v2.desired, v2.replicas, v2.ready_replicas),
            (Some(3), Some(2), Some(1))
        );
        assert_eq!(v2.cluster_name.as_deref(), Some("c1"));
        assert!(v2.paused_annotation);
        assert_eq!(v2.paused_condition, Some(true));

        let v1 = ScalerView::read(
            &object(
                "apiVersion: cluster.x-k8s.io/v1beta1
kind: MachineDeployment
metadata:
  name: md
  namespace: ns
  annotations: {cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size: '5'}
spec: {clusterName: c1, replicas: 2}
status:
  replicas: 2
  readyReplicas: 2
  v1beta2: {readyReplicas: 1, upToDateReplicas: 2, conditions: [{type: Paused, status: 'False', reason: NotPaused}]}
",
            ),
            ScalerKind::MachineDeployment,
        );
        assert_eq!(
            v1.ready_replicas,
            Some(1),
            "v1beta2 counters take precedence"
        );
        assert_eq!(v1.paused_condition, Some(false));
        assert!(v1.autoscaled);
        assert!(!v1.paused_annotation);
    }

    #[test]
    fn machine_pool_names_its_infrastructure_pool() {
        let pool = ScalerView::read(
            &object(
                "apiVersion: cluster.x-k8s.io/v1beta2
kind: MachinePool
metadata: {name: mp, namespace: ns, annotations: {cluster.x-k8s.io/replicas-managed-by: autoscaler}}
spec:
  clusterName: c1
  template: {spec: {infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DockerMachinePool, name: mp}}}
",
            ),
            ScalerKind::MachinePool,
        );
        assert_eq!(pool.infrastructure_ref.unwrap().kind, "DockerMachinePool");
        assert!(pool.autoscaled);
        assert_eq!(pool.desired, None);
    }

    #[test]
    fn health_check_counts_unhealthy() {
        let mhc = HealthCheckView::read(&object(
            "apiVersion: cluster.x-k8s.io/v1beta2\nkind: MachineHealthCheck\nmetadata: {name: h, namespace: ns}\nspec: {clusterName: c1}\nstatus: {expectedMachines: 3, currentHealthy: 2, remediationsAllowed: 1}\n",
        ));
        assert_eq!(mhc.unhealthy(), 1);
        assert_eq!(mhc.cluster_name.as_deref(), Some("c1"));
    }
}
