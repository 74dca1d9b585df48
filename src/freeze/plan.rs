//! Which objects a freeze touches, and what to do with each: pure functions over a snapshot.
//!
//! Frozen are exactly the objects that create or delete Machines: the control plane object,
//! every MachineDeployment and every MachineSet (a paused MachineDeployment does not pause its
//! MachineSets), every MachinePool and its infrastructure machine pool (which does the scaling),
//! and the Cluster's MachineHealthChecks (remediation deletes and recreates Machines). Never the
//! Cluster, Machines, bootstrap configs or infrastructure machines, never
//! `MachineDeployment.spec.paused` (it stops rollouts, not scaling).

use kube::api::DynamicObject;
use serde::Serialize;

use crate::model::{ClusterView, ObjectRef, ScalerKind, ScalerView, TypedRef, has_annotation};
use crate::names::{CORE_GROUP, FROZEN_BY_ANNOTATION};
use crate::snapshot::Snapshot;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Unpaused,
    /// Carries the paused annotation and this tool's marker.
    FrozenByUs,
    /// Carries the paused annotation without the marker: someone else paused it.
    PausedByOthers,
}

/// One object a freeze concerns.
#[derive(Debug, Clone)]
pub struct Target {
    pub object: ObjectRef,
    pub resource_version: String,
    pub state: State,
    /// The `Paused` condition: `None` when the controller reports none.
    pub paused_condition: Option<bool>,
    /// Annotated for cluster-autoscaler or with replicas managed elsewhere.
    pub autoscaled: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    Frozen,
    AlreadyFrozen,
    /// Paused by someone else (pause and resume both leave it).
    LeftAsIs,
    Resumed,
    NotFrozen,
}

impl Action {
    /// kubectl-style confirmation words.
    pub fn words(self) -> &'static str {
        match self {
            Action::Frozen => "frozen",
            Action::AlreadyFrozen => "already frozen by kubectl-capi",
            Action::LeftAsIs => "already paused (not by kubectl-capi), left as is",
            Action::Resumed => "resumed",
            Action::NotFrozen => "not frozen",
        }
    }

    /// Does this action write?
    pub fn writes(self) -> bool {
        matches!(self, Action::Frozen | Action::Resumed)
    }
}

pub fn state_of(object: &DynamicObject) -> State {
    match (
        crate::model::is_paused_by_annotation(object),
        has_annotation(object, FROZEN_BY_ANNOTATION),
    ) {
        (false, _) => State::Unpaused,
        (true, true) => State::FrozenByUs,
        (true, false) => State::PausedByOthers,
    }
}

fn target(object: &DynamicObject, scaler: Option<ScalerKind>) -> Target {
    let (paused_condition, autoscaled) = match scaler {
        Some(kind) => {
            let view = ScalerView::read(object, kind);
            (view.paused_condition, view.autoscaled)
        }
        None => (
            crate::model::HealthCheckView::read(object).paused_condition,
            false,
        ),
    };
    Target {
        object: ObjectRef::of(object),
        resource_version: object.metadata.resource_version.clone().unwrap_or_default(),
        state: state_of(object),
        paused_condition,
        autoscaled,
    }
}

fn find<'a>(
    snapshot: &'a Snapshot,
    reference: &TypedRef,
    namespace: &str,
) -> Option<&'a DynamicObject> {
    snapshot
        .named(
            (&reference.api_group, &reference.kind),
            namespace,
            &reference.name,
        )
        .map(|o| o.as_ref())
}

/// Every object a freeze of `cluster` (namespace, name) concerns, in a stable order.
pub fn targets(
    snapshot: &Snapshot,
    namespace: &str,
    cluster: &str,
    keep_remediation: bool,
) -> Vec<Target> {
    let mut out = Vec::new();
    let Some(cluster_object) =
        snapshot.named((CORE_GROUP, crate::names::CLUSTER), namespace, cluster)
    else {
        return out;
    };
    let view = ClusterView::read(cluster_object);
    if let Some(cp) = view
        .control_plane_ref
        .as_ref()
        .and_then(|r| find(snapshot, r, namespace))
    {
        out.push(target(cp, Some(ScalerKind::ControlPlane)));
    }
    for (kind, scaler) in crate::model::kinds::CORE_SCALERS {
        let mut objects: Vec<&DynamicObject> = snapshot
            .of_cluster(CORE_GROUP, kind, namespace, cluster)
            .map(|o| o.as_ref())
            .collect();
        objects.sort_by_key(|o| o.metadata.name.clone());
        for object in objects {
            out.push(target(object, Some(scaler)));
            if scaler == ScalerKind::MachinePool
                && let Some(infra) = ScalerView::read(object, scaler)
                    .infrastructure_ref
                    .as_ref()
                    .and_then(|r| find(snapshot, r, namespace))
            {
                // The infrastructure pool does the pool's scaling.
                out.push(target(infra, Some(ScalerKind::MachinePool)));
            }
        }
    }
    if !keep_remediation {
        let mut checks: Vec<&DynamicObject> = snapshot
            .of_cluster(
                CORE_GROUP,
                crate::model::kinds::REMEDIATION,
                namespace,
                cluster,
            )
            .map(|o| o.as_ref())
            .collect();
        checks.sort_by_key(|o| o.metadata.name.clone());
        for object in checks {
            out.push(target(object, None));
        }
    }
    out
}

pub fn freeze_action(target: &Target) -> Action {
    match target.state {
        State::Unpaused => Action::Frozen,
        State::FrozenByUs => Action::AlreadyFrozen,
        State::PausedByOthers => Action::LeftAsIs,
    }
}

pub fn resume_action(target: &Target) -> Action {
    match target.state {
        State::FrozenByUs => Action::Resumed,
        State::PausedByOthers => Action::LeftAsIs,
        State::Unpaused => Action::NotFrozen,
    }
}

/// Deep-merges `patch` into `base` (test fixtures).
/// Of `clusters`, those whose control plane is frozen now and so can never become ready (see
/// [`frozen_forever`]): a wait for them ends at once instead of at its timeout. Empty
/// `clusters`: every Cluster of the snapshot.
pub fn stuck_while_frozen(
    snapshot: &Snapshot,
    clusters: &[(String, String)],
) -> Vec<(ObjectRef, String)> {
    let references: Vec<ObjectRef> = snapshot
        .clusters()
        .iter()
        .map(|o| ClusterView::read(o))
        .filter(|c| {
            clusters.is_empty()
                || clusters
                    .iter()
                    .any(|(ns, name)| *ns == c.reference.namespace && *name == c.reference.name)
        })
        .filter(|c| {
            c.control_plane_ref.as_ref().is_some_and(|r| {
                snapshot
                    .named((&r.api_group, &r.kind), &c.reference.namespace, &r.name)
                    .is_some_and(|o| crate::model::is_paused_by_annotation(o))
            })
        })
        .map(|c| c.reference)
        .collect();
    frozen_forever(snapshot, &references)
        .into_iter()
        .map(|(cluster, why)| {
            let why = why.replace("frozen, it could never", "frozen, it can never");
            (cluster, why)
        })
        .collect()
}

/// Clusters a freeze would keep from ever becoming ready (pure): a control plane that has not
/// initialized and has no control-plane Machine yet — frozen, it cannot create its first one, so
/// a wait for readiness could only time out. `(cluster, why)` for each.
pub fn frozen_forever(snapshot: &Snapshot, clusters: &[ObjectRef]) -> Vec<(ObjectRef, String)> {
    clusters
        .iter()
        .filter_map(|reference| {
            let object = snapshot.named(
                (CORE_GROUP, crate::names::CLUSTER),
                &reference.namespace,
                &reference.name,
            )?;
            let cluster = ClusterView::read(object);
            let initialized = cluster.control_plane_initialized_condition == Some(true)
                || (cluster.control_plane_ref.is_some() && cluster.control_plane_initialized);
            let has_control_plane_machine = snapshot
                .of_cluster(
                    CORE_GROUP,
                    crate::names::MACHINE,
                    &reference.namespace,
                    &reference.name,
                )
                .any(|m| crate::model::MachineView::read(m).control_plane);
            (cluster.control_plane_ref.is_some() && !initialized && !has_control_plane_machine)
                .then(|| {
                    (
                        reference.clone(),
                        "its control plane has not initialized and has no control-plane Machine yet: frozen, it could never create the first one, so waiting for it would only time out".to_string(),
                    )
                })
        })
        .collect()
}

#[cfg(test)]
pub fn merge_into(base: &mut serde_json::Value, patch: &serde_json::Value) {
    match (base, patch) {
        (serde_json::Value::Object(b), serde_json::Value::Object(p)) => {
            for (k, v) in p {
                merge_into(b.entry(k.clone()).or_insert(serde_json::Value::Null), v);
            }
        }
        (b, p) => *b = p.clone(),
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use serde_json::json;

    fn object(value: serde_json::Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    fn snapshot(mp_annotations: serde_json::Value) -> Snapshot {
        let owner = |kind: &str, name: &str| json!([{"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": kind, "name": name, "uid": format!("{name}-uid"), "controller": true}]);
        Snapshot::from_objects(
            [
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Cluster", "metadata": {"name": "c", "namespace": "ns", "uid": "c-uid"},
                    "spec": {"controlPlaneRef": {"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": "c-cp"}}}),
                json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane", "metadata": {"name": "c-cp", "namespace": "ns", "uid": "cp-uid", "resourceVersion": "7"}}),
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment", "metadata": {"name": "md", "namespace": "ns", "uid": "md-uid"}, "spec": {"clusterName": "c"}}),
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "metadata": {"name": "md-1", "namespace": "ns", "uid": "ms1-uid", "ownerReferences": owner("MachineDeployment", "md")}, "spec": {"clusterName": "c"}}),
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineSet", "metadata": {"name": "lone", "namespace": "ns", "uid": "lone-uid",
                    "annotations": {"cluster.x-k8s.io/paused": "ops"}}, "spec": {"clusterName": "c"}}),
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachinePool", "metadata": {"name": "mp", "namespace": "ns", "uid": "mp-uid", "annotations": mp_annotations},
                    "spec": {"clusterName": "c", "template": {"spec": {"infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachinePool", "name": "mp"}}}}}),
                json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerMachinePool", "metadata": {"name": "mp", "namespace": "ns", "uid": "dmp-uid"}}),
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineHealthCheck", "metadata": {"name": "mhc", "namespace": "ns", "uid": "mhc-uid"}, "spec": {"clusterName": "c"}}),
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "Machine", "metadata": {"name": "m", "namespace": "ns", "uid": "m-uid"}, "spec": {"clusterName": "c"}}),
                json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineDeployment", "metadata": {"name": "other", "namespace": "ns", "uid": "o-uid"}, "spec": {"clusterName": "other"}}),
            ]
            .into_iter()
            .map(object),
        )
    }

    #[test]
    fn exactly_the_objects_that_create_or_delete_machines() {
        let targets = targets(&snapshot(json!({})), "ns", "c", false);
        let names: Vec<String> = targets
            .iter()
            .map(|t| format!("{}/{}", t.object.kind, t.object.name))
            .collect();
        assert_eq!(
            names,
            vec![
                "KubeadmControlPlane/c-cp",
                "MachineDeployment/md",
                "MachineSet/lone",
                "MachineSet/md-1",
                "MachinePool/mp",
                "DockerMachinePool/mp",
                "MachineHealthCheck/mhc"
            ]
        );
        assert_eq!(targets[0].resource_version, "7");
        let kept = super::targets(&snapshot(json!({})), "ns", "c", true);
        assert!(
            kept.iter().all(|t| t.object.kind != "MachineHealthCheck"),
            "--keep-remediation"
        );
    }

    #[test]
    fn actions_respect_who_paused_what() {
        let marked = json!({"cluster.x-k8s.io/paused": "", "kubectl-capi.dev/frozen": "{}"});
        let targets = targets(&snapshot(marked), "ns", "c", false);
        let by_name = |name: &str, kind: &str| {
            targets
                .iter()
                .find(|t| t.object.name == name && t.object.kind == kind)
                .unwrap()
        };
        assert_eq!(
            freeze_action(by_name("md", "MachineDeployment")),
            Action::Frozen
        );
        assert_eq!(
            freeze_action(by_name("lone", "MachineSet")),
            Action::LeftAsIs
        );
        assert_eq!(
            freeze_action(by_name("mp", "MachinePool")),
            Action::AlreadyFrozen
        );
        assert_eq!(resume_action(by_name("mp", "MachinePool")), Action::Resumed);
        assert_eq!(
            resume_action(by_name("lone", "MachineSet")),
            Action::LeftAsIs,
            "someone else's pause stays"
        );
        assert_eq!(
            resume_action(by_name("md", "MachineDeployment")),
            Action::NotFrozen
        );
    }
}
