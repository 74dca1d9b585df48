//! The one registry of Cluster API kinds and their roles — which create and delete Machines,
//! which is an infrastructure pool, which remediates, which a move pauses — read by `model`,
//! `ready`, `freeze` and `mover`. A new scaling kind is one entry here (and its tests).

use super::scalers::ScalerKind;
use crate::kube::Catalog;
use crate::names::{
    BOOTSTRAP_GROUP, CONTROL_PLANE_GROUP, CORE_GROUP, INFRASTRUCTURE_GROUP, MACHINE_DEPLOYMENT,
    MACHINE_HEALTH_CHECK, MACHINE_POOL, MACHINE_SET,
};

/// The core kinds that create and delete Machines, in the order freeze and ready take them.
pub const CORE_SCALERS: [(&str, ScalerKind); 3] = [
    (MACHINE_DEPLOYMENT, ScalerKind::MachineDeployment),
    (MACHINE_SET, ScalerKind::MachineSet),
    (MACHINE_POOL, ScalerKind::MachinePool),
];

/// The kind that marks unhealthy Machines for their owners to remediate (delete and recreate).
pub const REMEDIATION: &str = MACHINE_HEALTH_CHECK;

/// What a kind does to a Cluster's Machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Creates and deletes Machines (a control plane, a MachineDeployment, …).
    Scaler(ScalerKind),
    /// A MachinePool's infrastructure pool, which does the pool's scaling.
    InfrastructurePool,
    /// Remediation: marks Machines that its owners then replace.
    Remediation,
}

impl Role {
    /// How an object of this role is read (its replicas, its `Paused` condition): an
    /// infrastructure pool as the pool it scales; remediation is not a scaler.
    pub fn reads_as(self) -> Option<ScalerKind> {
        match self {
            Role::Scaler(kind) => Some(kind),
            Role::InfrastructurePool => Some(ScalerKind::MachinePool),
            Role::Remediation => None,
        }
    }
}

/// The role of `kind` served in API group `group`, if it has one. Templates have none.
pub fn role(group: &str, kind: &str) -> Option<Role> {
    if kind.ends_with("Template") {
        return None;
    }
    match group {
        CORE_GROUP if kind == REMEDIATION => Some(Role::Remediation),
        CORE_GROUP => CORE_SCALERS
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, scaler)| Role::Scaler(*scaler)),
        CONTROL_PLANE_GROUP => Some(Role::Scaler(ScalerKind::ControlPlane)),
        INFRASTRUCTURE_GROUP if kind.ends_with(MACHINE_POOL) => Some(Role::InfrastructurePool),
        _ => None,
    }
}

/// The scaler kind of `kind` in `group`: what ready's scaling check counts (an infrastructure
/// pool is counted through its MachinePool, so it is none).
pub fn scaler(group: &str, kind: &str) -> Option<ScalerKind> {
    match role(group, kind)? {
        Role::Scaler(scaler) => Some(scaler),
        Role::InfrastructurePool | Role::Remediation => None,
    }
}

/// Whether an evaluation (ready's checks, a move's preflight) reads this kind's status: every
/// kind's but the bootstrap configs' and the infrastructure machines', whose state their
/// Machines report. A move's planning leaves those unread (a real server's are large).
pub fn status_evaluated(group: &str, kind: &str) -> bool {
    !(group == BOOTSTRAP_GROUP
        || (group == INFRASTRUCTURE_GROUP && kind.ends_with(crate::names::MACHINE)))
}

/// Whether planning (the graph, readiness, the preflight) reads what objects of this kind carry
/// besides their metadata; the content of the others (bootstrap configs, infrastructure
/// machines, Secrets, ConfigMaps) is only sent on, and held as text.
pub fn content_read_by_planning(group: &str, kind: &str) -> bool {
    status_evaluated(group, kind) && !(group.is_empty() && matches!(kind, "Secret" | "ConfigMap"))
}

/// Whether the move's graph reads what objects of this kind carry: a Cluster's class, a
/// ClusterClass's templates, a ClusterResourceSetBinding's Cluster.
pub fn content_read_by_graph(group: &str, kind: &str) -> bool {
    (group == CORE_GROUP && matches!(kind, crate::names::CLUSTER | crate::names::CLUSTER_CLASS))
        || group == crate::names::ADDONS_GROUP
}

/// What a move pauses for its duration: Clusters (`spec.paused`) and ClusterClasses (the paused
/// annotation).
pub fn paused_by_move(group: &str, kind: &str) -> bool {
    group == CORE_GROUP && matches!(kind, crate::names::CLUSTER | crate::names::CLUSTER_CLASS)
}

/// Whether `object` already carries the pause a move would set (a Cluster's `spec.paused`, a
/// ClusterClass's annotation): a move leaves such an object paused when it ends.
pub fn paused_as_a_move_pauses(
    reference: &super::object::ObjectRef,
    object: &kube::api::DynamicObject,
) -> bool {
    if reference.is_core_cluster() {
        object.data["spec"]["paused"].as_bool().unwrap_or(false)
    } else {
        super::object::is_paused_by_annotation(object)
    }
}

/// The kinds the evaluation reads: the core kinds, every kind of the control plane,
/// infrastructure and bootstrap providers, and every other kind a move reads. One LIST each,
/// whatever the cluster count.
pub fn read_by_ready(catalog: &Catalog) -> Vec<(String, String)> {
    let core = [
        crate::names::CLUSTER,
        crate::names::CLUSTER_CLASS,
        crate::names::MACHINE,
        REMEDIATION,
    ]
    .into_iter()
    .chain(CORE_SCALERS.iter().map(|(kind, _)| *kind));
    let mut kinds: Vec<(String, String)> = core
        .filter(|k| catalog.kind(CORE_GROUP, k).is_some())
        .map(|k| (CORE_GROUP.to_string(), k.to_string()))
        .collect();
    for info in catalog.kinds() {
        let group = info.resource.group.as_str();
        let provider = matches!(
            group,
            CONTROL_PLANE_GROUP | INFRASTRUCTURE_GROUP | BOOTSTRAP_GROUP
        );
        // And every other kind a move reads (templates, ClusterResourceSets, identities): an
        // owner reference that is dangling among them refuses the move, so it fails ready too.
        let key = (group.to_string(), info.resource.kind.clone());
        if (provider || moved_by_clusterctl(info)) && !kinds.contains(&key) {
            kinds.push(key);
        }
    }
    kinds
}

/// Whether a move reads this kind: its CRD carries clusterctl's label (when the CRDs could be
/// read; else every Cluster API kind but clusterctl's own inventory).
fn moved_by_clusterctl(info: &crate::kube::KindInfo) -> bool {
    if info.labels.is_empty() {
        return info.resource.group != crate::names::CLUSTERCTL_GROUP;
    }
    info.labels.contains_key(crate::names::CLUSTERCTL_LABEL)
}

/// The kinds a freeze reads: Clusters, the core scalers, health checks, every control plane
/// kind and every infrastructure machine pool kind.
pub fn read_by_freeze(catalog: &Catalog) -> Vec<(String, String)> {
    let core = [crate::names::CLUSTER, REMEDIATION]
        .into_iter()
        .chain(CORE_SCALERS.iter().map(|(kind, _)| *kind));
    let mut wanted: Vec<(String, String)> = core
        .filter(|k| catalog.kind(CORE_GROUP, k).is_some())
        .map(|k| (CORE_GROUP.to_string(), k.to_string()))
        .collect();
    // Provider kinds that scale: control planes and infrastructure machine pools.
    for info in catalog.kinds() {
        let (group, kind) = (info.resource.group.as_str(), info.resource.kind.as_str());
        if group != CORE_GROUP && role(group, kind).is_some() {
            wanted.push((group.to_string(), kind.to_string()));
        }
    }
    wanted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_the_role_it_plays() {
        for (kind, scaler) in CORE_SCALERS {
            assert_eq!(role(CORE_GROUP, kind), Some(Role::Scaler(scaler)));
        }
        assert_eq!(
            role(CORE_GROUP, "MachineHealthCheck"),
            Some(Role::Remediation)
        );
        assert_eq!(role(CORE_GROUP, "Machine"), None);
        assert_eq!(
            role(CONTROL_PLANE_GROUP, "KubeadmControlPlane"),
            Some(Role::Scaler(ScalerKind::ControlPlane))
        );
        assert_eq!(
            role(CONTROL_PLANE_GROUP, "KubeadmControlPlaneTemplate"),
            None
        );
        assert_eq!(
            role(INFRASTRUCTURE_GROUP, "DockerMachinePool"),
            Some(Role::InfrastructurePool)
        );
        assert_eq!(
            role(INFRASTRUCTURE_GROUP, "DockerMachinePoolTemplate"),
            None
        );
        assert_eq!(role(INFRASTRUCTURE_GROUP, "DockerMachine"), None);
        // The pool is read as the pool it scales, but counted through its MachinePool.
        assert_eq!(
            role(INFRASTRUCTURE_GROUP, "DockerMachinePool").and_then(Role::reads_as),
            Some(ScalerKind::MachinePool)
        );
        assert_eq!(scaler(INFRASTRUCTURE_GROUP, "DockerMachinePool"), None);
        assert!(paused_by_move(CORE_GROUP, "ClusterClass"));
        assert!(!paused_by_move(CORE_GROUP, "Machine"));
    }
}
