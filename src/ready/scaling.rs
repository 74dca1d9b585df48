//! The scaling check of one Cluster: every scaler (its control plane, MachineDeployments,
//! MachineSets, MachinePools) that can still create or delete Machines blocks the move; one
//! frozen by `kubectl capi pause` only warns.

use kube::api::DynamicObject;

use super::report::{CheckId, CheckStatus, Frozen};
use super::scope::{Checks, ClusterScope};
use crate::model::{MachineView, ObjectRef, ScalerKind, ScalerView, has_annotation, kinds};
use crate::names::{CORE_GROUP, FROZEN_BY_ANNOTATION};

/// The scaler kind of `object`, by its group and kind.
fn scaler_kind(object: &DynamicObject) -> Option<ScalerKind> {
    let types = object.types.as_ref()?;
    let group = crate::names::group_of(&types.api_version);
    kinds::scaler(group, &types.kind)
}

/// Frozen = carries the paused annotation and acknowledged it (or reports no Paused condition).
pub fn frozen_state(object: &DynamicObject, paused_condition: Option<bool>) -> Option<Frozen> {
    if !crate::model::object::is_paused_by_annotation(object) {
        return None;
    }
    Some(Frozen {
        object: ObjectRef::of(object),
        acknowledged: paused_condition,
        by_kubectl_capi: has_annotation(object, FROZEN_BY_ANNOTATION),
    })
}

/// What the scaling checks count for the report.
pub(super) struct Scaling {
    pub(super) frozen: Vec<Frozen>,
    pub(super) control_plane: Option<(usize, i64)>,
    pub(super) workers: (usize, i64),
}

/// Scaling in progress, autoscalers, and what is frozen.
pub(super) fn scaling(
    scope: &ClusterScope<'_>,
    machines: &[MachineView],
    checks: &mut Checks,
) -> Scaling {
    // Scaling: blocking while the owner can still create or delete Machines, a warning once frozen.
    let mut frozen = Vec::new();
    let mut scalers: Vec<&DynamicObject> = Vec::new();
    if let Some(cp) = scope.control_plane() {
        scalers.push(cp);
    }
    for (kind, _) in kinds::CORE_SCALERS {
        scalers.extend(scope.of(CORE_GROUP, kind));
    }
    let mut control_plane = None;
    let mut workers = (0usize, 0i64);
    for object in scalers {
        let Some(kind) = scaler_kind(object) else {
            continue;
        };
        let view = ScalerView::read(object, kind);
        let uid = object.metadata.uid.clone().unwrap_or_default();
        let owned =
            |m: &&MachineView| m.controller.as_ref().is_some_and(|c| c.uid == uid) && !m.deleting;
        let actual = actual(scope, machines, kind, &view, &uid);
        let desired = view.desired.unwrap_or(actual);
        match kind {
            ScalerKind::ControlPlane => {
                control_plane = Some((
                    machines.iter().filter(owned).filter(|m| m.has_node).count(),
                    desired,
                ))
            }
            ScalerKind::MachineDeployment | ScalerKind::MachinePool => {
                workers.1 += desired;
            }
            ScalerKind::MachineSet => {}
        }
        let state = frozen_state(object, view.paused_condition);
        if let Some(f) = &state {
            frozen.push(f.clone());
        }
        if view.autoscaled {
            checks.push(
                CheckId::Autoscaler,
                CheckStatus::Warn,
                &view.reference,
                format!(
                    "{} is managed by an autoscaler; its replicas may change during or after the move",
                    view.reference.kind_and_place()
                ),
            );
        }
        scaling_check(checks, (&view, kind), (desired, actual), state.is_some());
    }
    workers.0 = machines
        .iter()
        .filter(|m| !m.control_plane && m.has_node)
        .count();

    Scaling {
        frozen,
        control_plane,
        workers,
    }
}

/// How many Machines (or a pool's replicas) `view` of `kind` has now: its own Machines, a
/// MachineDeployment's through its MachineSets, a pool's as its status reports.
fn actual(
    scope: &ClusterScope<'_>,
    machines: &[MachineView],
    kind: ScalerKind,
    view: &ScalerView,
    uid: &str,
) -> i64 {
    let owned =
        |m: &&MachineView| m.controller.as_ref().is_some_and(|c| c.uid == uid) && !m.deleting;
    match kind {
        ScalerKind::MachinePool => view.replicas.unwrap_or(0),
        ScalerKind::MachineDeployment => {
            let sets: Vec<String> = scope
                .of(CORE_GROUP, crate::names::MACHINE_SET)
                .iter()
                .filter(|s| crate::model::controller_of(s).is_some_and(|c| c.uid == uid))
                .filter_map(|s| s.metadata.uid.clone())
                .collect();
            machines
                .iter()
                .filter(|m| {
                    m.controller.as_ref().is_some_and(|c| sets.contains(&c.uid)) && !m.deleting
                })
                .count() as i64
        }
        _ => machines.iter().filter(owned).count() as i64,
    }
}

/// The scaling check of `view`: scaling up or down (or a pool not provisioned yet) fails the
/// Cluster unless it is `frozen`, which only warns.
fn scaling_check(
    checks: &mut Checks,
    (view, kind): (&ScalerView, ScalerKind),
    (desired, actual): (i64, i64),
    frozen: bool,
) {
    // A pool's instances need not be Machines: it is held to the replicas its status reports.
    let unit = if kind == ScalerKind::MachinePool {
        "replicas"
    } else {
        "Machines"
    };
    let unprovisioned_pool =
        kind == ScalerKind::MachinePool && view.replicas.is_none() && desired > 0;
    if unprovisioned_pool || desired != actual {
        let direction = if desired > actual { "up" } else { "down" };
        let what = if unprovisioned_pool {
            format!(
                "{} is not yet provisioned (its status reports no replicas; it wants {desired})",
                view.reference.kind_and_place()
            )
        } else {
            format!(
                "{} is scaling {direction} ({actual} of {desired} {unit})",
                view.reference.kind_and_place()
            )
        };
        match frozen {
            true => checks.push(
                CheckId::Scaling,
                CheckStatus::Warn,
                &view.reference,
                format!(
                    "{what}; it is frozen, so the change continues once resumed (kubectl capi resume), wherever it then lives"
                ),
            ),
            false => checks.push(
                CheckId::Scaling,
                CheckStatus::Fail,
                &view.reference,
                checks.next.or_freeze(what, "freeze its scaling with"),
            ),
        }
    }
}
