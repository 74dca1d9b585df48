//! MachineHealthCheck, as in Cluster API: it only marks. A Machine whose node stays unhealthy
//! beyond the timeout gets `HealthCheckSucceeded=False` and `OwnerRemediated=False`; its owner
//! (MachineSet or control plane) replaces it. A paused check marks nothing.

use serde_json::{Value, json};

use super::context::Ctx;
use super::machine::{has_node, node_healthy};
use super::pause::is_paused;
use super::shape::{Cond, Shape};
use super::world::{World, deleting, name, namespace, uid};

fn selected(selector: &Value, machine: &Value) -> bool {
    selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| machine["metadata"]["labels"].get(k) == Some(v))
}

/// The Machines of `cluster` that `mhc` selects and that are not being deleted.
fn targets_of<'w>(world: &'w World, mhc: &Value, cluster: &Value) -> Vec<&'w Value> {
    world
        .all("Machine")
        .iter()
        .filter(|m| namespace(m) == namespace(mhc) && !deleting(m))
        .filter(|m| world.cluster_of(m).is_some_and(|c| uid(c) == uid(cluster)))
        .filter(|m| selected(&mhc["spec"]["selector"], m))
        .collect()
}

pub fn reconcile(ctx: &mut Ctx, mhc: &Value) {
    let world = ctx.world;
    let shape = ctx.shape;
    if deleting(mhc) {
        return;
    }
    let cluster = world.cluster_of(mhc);
    if ctx.ensure_paused("MachineHealthCheck", mhc, cluster) {
        return;
    }
    let Some(cluster) = cluster else {
        return;
    };
    ctx.ensure_owner("MachineHealthCheck", mhc, cluster, false);
    let timeout = mhc["spec"]["checks"]["unhealthyNodeConditions"][0]["timeoutSeconds"]
        .as_u64()
        .map(std::time::Duration::from_secs)
        .unwrap_or(ctx.config.health_check_timeout);
    let targets = targets_of(world, mhc, cluster);
    let time = ctx.time.clone();
    let mut healthy = 0;
    for machine in &targets {
        let key = format!("{}/{}", namespace(machine), name(machine));
        if is_paused(Some(cluster), machine) || !has_node(shape, machine) {
            continue;
        }
        if node_healthy(shape, machine) {
            healthy += 1;
            ctx.reset(&key, "unhealthy");
            let patch = shape.with_conditions(
                &Shape::status_of(machine),
                &[Cond::new(
                    "HealthCheckSucceeded",
                    true,
                    "HealthCheckSucceeded",
                    "",
                )],
                &time,
            );
            ctx.status("Machine", machine, patch);
        } else if ctx.waited(&key, "unhealthy", timeout) {
            let conds = [
                Cond::new(
                    "HealthCheckSucceeded",
                    false,
                    "UnhealthyNode",
                    "Condition NodeHealthy on Node is reporting status False",
                ),
                Cond::new(
                    "OwnerRemediated",
                    false,
                    "WaitingForRemediation",
                    "Waiting for remediation",
                ),
            ];
            let patch = shape.with_conditions(&Shape::status_of(machine), &conds, &time);
            ctx.status("Machine", machine, patch);
        }
    }
    let expected = targets.len() as i64;
    let mut patch = json!({"expectedMachines": expected, "currentHealthy": healthy, "remediationsAllowed": (expected - healthy).max(0),
        "targets": targets.iter().map(|m| name(m)).collect::<Vec<_>>()});
    super::shape::merge(
        &mut patch,
        &shape.with_conditions(
            &Shape::status_of(mhc),
            &[Cond::new(
                "RemediationAllowed",
                true,
                "RemediationAllowed",
                "",
            )],
            &time,
        ),
    );
    ctx.status("MachineHealthCheck", mhc, patch);
}
