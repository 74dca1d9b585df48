//! MachinePool with its infrastructure machine pool, which does the scaling: its instances are
//! the fake cloud's machines.

use serde_json::{Value, json};

use super::cloud::{CloudMachine, provider_id};
use super::cluster::DELETE_FOR_MOVE;
use super::context::Ctx;
use super::shape::{Cond, Shape};
use super::workers::scaling_conds;
use super::world::{
    Write, annotated, controller_ref, controller_uid, deleting, name, namespace, uid,
};

fn pool_infrastructure<'w>(ctx: &Ctx<'w>, pool: &Value) -> Option<&'w Value> {
    let (_, infra) = Shape::read_ref(&pool["spec"]["template"]["spec"]["infrastructureRef"])?;
    ctx.world.get("DockerMachinePool", namespace(pool), &infra)
}

pub fn reconcile_pool(ctx: &mut Ctx, pool: &Value) {
    let world = ctx.world;
    let shape = ctx.shape;
    if deleting(pool) {
        return;
    }
    let cluster = world.cluster_of(pool);
    if ctx.ensure_paused("MachinePool", pool, cluster) {
        return;
    }
    if let Some(cluster) = cluster {
        ctx.ensure_owner("MachinePool", pool, cluster, false);
    }
    let bootstrap = Shape::read_ref(&pool["spec"]["template"]["spec"]["bootstrap"]["configRef"])
        .and_then(|(_, n)| world.get("KubeadmConfig", namespace(pool), &n));
    if let Some(config) = bootstrap {
        ctx.ensure_owner("KubeadmConfig", config, pool, true);
    }
    let Some(infra) = pool_infrastructure(ctx, pool) else {
        return;
    };
    if controller_uid(infra) != Some(uid(pool)) {
        ctx.patch(
            "DockerMachinePool",
            infra,
            json!({"metadata": {"ownerReferences": [controller_ref(pool)]}}),
        );
    }
    let instances = infra["status"]["instances"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ids: Vec<Value> = instances.iter().map(|i| i["providerID"].clone()).collect();
    let ready = instances.iter().filter(|i| i["ready"] == true).count() as i64;
    let desired = pool["spec"]["replicas"].as_i64().unwrap_or(1);
    let count = instances.len() as i64;
    ctx.patch(
        "MachinePool",
        pool,
        json!({"spec": {"providerIDList": ids}}),
    );
    let time = ctx.time.clone();
    let mut conds = scaling_conds(count, desired).to_vec();
    let provisioned = super::machine::infrastructure_ready(shape, infra);
    conds.push(Cond::new(
        "InfrastructureReady",
        provisioned,
        if provisioned { "Ready" } else { "NotReady" },
        "",
    ));
    let mut patch = shape.with_conditions(&Shape::status_of(pool), &conds, &time);
    if shape.v2() {
        super::shape::merge(
            &mut patch,
            &json!({"replicas": count, "readyReplicas": ready, "availableReplicas": ready, "upToDateReplicas": count,
            "initialization": {"infrastructureProvisioned": provisioned, "bootstrapDataSecretCreated": true}}),
        );
    } else {
        super::shape::merge(
            &mut patch,
            &json!({"replicas": count, "readyReplicas": ready, "availableReplicas": ready, "infrastructureReady": provisioned, "bootstrapReady": true,
            "v1beta2": {"readyReplicas": ready, "availableReplicas": ready, "upToDateReplicas": count}}),
        );
    }
    ctx.status("MachinePool", pool, patch);
}

/// The infrastructure machine pool scales the pool's instances in the cloud, one per delay.
/// A deleted pool's cloud machines go with it (not when it is deleted for a move).
fn delete_instances(ctx: &mut Ctx, infra: &Value) {
    for instance in infra["status"]["instances"]
        .as_array()
        .into_iter()
        .flatten()
    {
        if let Some(pid) = instance["providerID"].as_str() {
            ctx.writes.push(Write::CloudDeleteMachine {
                provider_id: pid.to_string(),
            });
        }
    }
}

/// One instance more or fewer towards `desired`: a new cloud machine once the infrastructure
/// delay has passed, or the last one removed.
fn scale_instances(
    ctx: &mut Ctx,
    infra: &Value,
    cluster: &Value,
    instances: &mut Vec<String>,
    desired: i64,
) {
    let ns = namespace(infra);
    let key = Ctx::key(infra);
    if (instances.len() as i64) < desired {
        if ctx.waited(&key, "pool-instance", ctx.config.delays.infrastructure) {
            ctx.reset(&key, "pool-instance");
            let instance = ctx.new_name(name(infra));
            ctx.writes.push(Write::CloudCreateMachine {
                provider_id: provider_id(ns, &instance),
                machine: CloudMachine {
                    namespace: ns.to_string(),
                    cluster: name(cluster).to_string(),
                    name: instance.clone(),
                    healthy: true,
                },
            });
            instances.push(instance);
        }
    } else if (instances.len() as i64) > desired
        && let Some(last) = instances.pop()
    {
        ctx.writes.push(Write::CloudDeleteMachine {
            provider_id: provider_id(ns, &last),
        });
    }
}

pub fn reconcile_docker_pool(ctx: &mut Ctx, infra: &Value) {
    let world = ctx.world;
    let shape = ctx.shape;
    let pool = world
        .all("MachinePool")
        .iter()
        .find(|p| controller_uid(infra) == Some(uid(p)));
    let cluster = world
        .cluster_of(infra)
        .or_else(|| pool.and_then(|p| world.cluster_of(p)));
    if ctx.ensure_paused("DockerMachinePool", infra, cluster) {
        return;
    }
    if deleting(infra) {
        if !annotated(infra, DELETE_FOR_MOVE) {
            delete_instances(ctx, infra);
        }
        return;
    }
    let (Some(pool), Some(cluster)) = (pool, cluster) else {
        return;
    };
    let ns = namespace(infra);
    let desired = pool["spec"]["replicas"].as_i64().unwrap_or(1);
    // Instances are the cloud machines of this pool (adopted as they are after a move).
    let prefix = format!("{}-", name(infra));
    let mut instances: Vec<String> = ctx
        .cloud
        .machines()
        .values()
        .filter(|m| m.namespace == ns && m.name.starts_with(&prefix))
        .map(|m| m.name.clone())
        .collect();
    instances.sort();
    scale_instances(ctx, infra, cluster, &mut instances, desired);
    let rendered: Vec<Value> = instances
        .iter()
        .map(|i| json!({"instanceName": i, "providerID": provider_id(ns, i), "ready": true}))
        .collect();
    let time = ctx.time.clone();
    let mut patch = shape.with_conditions(
        &Shape::status_of(infra),
        &[Cond::new("Ready", true, "Ready", "")],
        &time,
    );
    let provisioned = !rendered.is_empty();
    super::shape::merge(
        &mut patch,
        &json!({"instances": rendered, "replicas": instances.len()}),
    );
    if shape.v2() {
        super::shape::merge(
            &mut patch,
            &json!({"initialization": {"provisioned": provisioned}}),
        );
    } else {
        super::shape::merge(&mut patch, &json!({"ready": provisioned}));
    }
    ctx.status("DockerMachinePool", infra, patch);
}
