//! Workers: MachineDeployment → MachineSet → Machine (MachinePools are `pools`).

use std::hash::{Hash, Hasher};

use serde_json::{Map, Value, json};

use super::context::Ctx;
use super::machine::{
    CLUSTER_NAME_LABEL, NewMachine, create_machine, needs_remediation, node_healthy,
};
use super::shape::{Cond, Shape, flag};
use super::world::{annotated, controller_ref, deleting, name, namespace, uid};

pub const TEMPLATE_HASH_LABEL: &str = "machine-template-hash";
pub const DEPLOYMENT_NAME_LABEL: &str = "cluster.x-k8s.io/deployment-name";
pub const SET_NAME_LABEL: &str = "cluster.x-k8s.io/set-name";
pub const DELETE_MACHINE_ANNOTATION: &str = "cluster.x-k8s.io/delete-machine";

fn template_hash(template: &Value) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    template.to_string().hash(&mut hasher);
    format!("{:x}", hasher.finish() % 0xffff_ffff)
}

/// `ScalingUp` and `ScalingDown` as Cluster API's scalers report them.
pub(super) fn scaling_conds(count: i64, desired: i64) -> [Cond; 2] {
    [
        Cond::new(
            "ScalingUp",
            count < desired,
            if count < desired {
                "ScalingUp"
            } else {
                "NotScalingUp"
            },
            if count < desired {
                format!("Scaling up from {count} to {desired} replicas")
            } else {
                String::new()
            },
        ),
        Cond::new(
            "ScalingDown",
            count > desired,
            if count > desired {
                "ScalingDown"
            } else {
                "NotScalingDown"
            },
            "",
        ),
    ]
}

/// A new MachineSet of the deployment's current template (named after its hash), at the
/// desired replicas.
fn create_set(ctx: &mut Ctx, md: &Value, cluster: &Value, hash: &str, desired: i64) {
    let shape = ctx.shape;
    let set_name = format!("{}-{}", name(md), &hash[..hash.len().min(5)]);
    let mut labels = md["spec"]["template"]["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    labels.insert(CLUSTER_NAME_LABEL.into(), json!(name(cluster)));
    labels.insert(DEPLOYMENT_NAME_LABEL.into(), json!(name(md)));
    labels.insert(TEMPLATE_HASH_LABEL.into(), json!(hash));
    ctx.create(
        "MachineSet",
        json!({"apiVersion": shape.api_version("cluster.x-k8s.io"), "kind": "MachineSet",
            "metadata": {"name": set_name, "namespace": namespace(md), "labels": labels, "ownerReferences": [controller_ref(md)]},
            "spec": {"clusterName": name(cluster), "replicas": desired,
                "selector": {"matchLabels": {CLUSTER_NAME_LABEL: name(cluster), TEMPLATE_HASH_LABEL: hash}},
                "template": md["spec"]["template"]}}),
    );
}

/// The deployment's status: its sets' replicas summed, with the conditions Cluster API sets.
fn deployment_status(
    ctx: &mut Ctx,
    md: &Value,
    cluster: &Value,
    (replicas, ready, up_to_date, desired): (i64, i64, i64, i64),
) {
    let shape = ctx.shape;
    let time = ctx.time.clone();
    let mut conds = scaling_conds(replicas, desired).to_vec();
    conds.push(Cond::new(
        "Available",
        ready >= desired,
        if ready >= desired {
            "Available"
        } else {
            "NotAvailable"
        },
        "",
    ));
    conds.push(Cond::new(
        "RollingOut",
        up_to_date < replicas,
        if up_to_date < replicas {
            "RollingOut"
        } else {
            "NotRollingOut"
        },
        "",
    ));
    let mut patch = shape.with_conditions(&Shape::status_of(md), &conds, &time);
    let selector = format!(
        "{CLUSTER_NAME_LABEL}={},{DEPLOYMENT_NAME_LABEL}={}",
        name(cluster),
        name(md)
    );
    if shape.v2() {
        super::shape::merge(
            &mut patch,
            &json!({"replicas": replicas, "readyReplicas": ready, "availableReplicas": ready, "upToDateReplicas": up_to_date, "selector": selector}),
        );
    } else {
        super::shape::merge(
            &mut patch,
            &json!({"replicas": replicas, "readyReplicas": ready, "availableReplicas": ready, "updatedReplicas": up_to_date,
            "unavailableReplicas": (replicas - ready).max(0), "selector": selector,
            "v1beta2": {"readyReplicas": ready, "availableReplicas": ready, "upToDateReplicas": up_to_date}}),
        );
    }
    ctx.status("MachineDeployment", md, patch);
}

pub fn reconcile_deployment(ctx: &mut Ctx, md: &Value) {
    let world = ctx.world;
    if deleting(md) {
        return;
    }
    let cluster = world.cluster_of(md);
    if ctx.ensure_paused("MachineDeployment", md, cluster) {
        return;
    }
    let Some(cluster) = cluster else {
        return;
    };
    ctx.ensure_owner("MachineDeployment", md, cluster, false);
    own_templates(ctx, &md["spec"]["template"]["spec"], namespace(md), cluster);
    let desired = md["spec"]["replicas"].as_i64().unwrap_or(1);
    let hash = template_hash(&md["spec"]["template"]);
    let sets: Vec<&Value> = world.controlled_by("MachineSet", uid(md)).collect();
    let current = sets
        .iter()
        .find(|s| s["metadata"]["labels"][TEMPLATE_HASH_LABEL] == hash.as_str())
        .copied();
    // spec.paused stops rollouts, never scaling (as in Cluster API).
    let rollout_paused = md["spec"]["paused"] == true;
    let target = match current {
        Some(set) => Some(set),
        None if rollout_paused && !sets.is_empty() => sets
            .iter()
            .max_by_key(|s| {
                s["metadata"]["creationTimestamp"]
                    .as_str()
                    .unwrap_or("")
                    .to_string()
            })
            .copied(),
        None => {
            create_set(ctx, md, cluster, &hash, desired);
            None
        }
    };
    for set in &sets {
        let replicas = if Some(*set) == target {
            desired
        } else if rollout_paused {
            continue;
        } else {
            0
        };
        if set["spec"]["replicas"].as_i64() != Some(replicas) {
            ctx.patch("MachineSet", set, json!({"spec": {"replicas": replicas}}));
        }
    }
    let sum = |field: &str| -> i64 {
        sets.iter()
            .map(|s| s["status"][field].as_i64().unwrap_or(0))
            .sum()
    };
    let replicas = sum("replicas");
    let ready = sum("readyReplicas");
    let up_to_date = target
        .map(|t| t["status"]["replicas"].as_i64().unwrap_or(0))
        .unwrap_or(0);
    deployment_status(ctx, md, cluster, (replicas, ready, up_to_date, desired));
}

pub fn reconcile_set(ctx: &mut Ctx, set: &Value) {
    let world = ctx.world;
    let shape = ctx.shape;
    if deleting(set) {
        return;
    }
    let cluster = world.cluster_of(set);
    // As observed in Cluster API v1.14: a MachineSet stops acting on a pause at once, but reports
    // `Paused` only at its next resync (up to ~15 s later; here a quarter of a node's delay).
    let key = Ctx::key(set);
    if super::pause::is_paused(cluster, set) {
        let reported = shape.condition_true(&Shape::status_of(set), "Paused") == Some(true);
        if !reported && !ctx.waited(&key, "paused-report", ctx.config.delays.node / 4) {
            return;
        }
    } else {
        ctx.reset(&key, "paused-report");
    }
    if ctx.ensure_paused("MachineSet", set, cluster) {
        return;
    }
    let Some(cluster) = cluster else {
        return;
    };
    if set["metadata"]["ownerReferences"]
        .as_array()
        .is_none_or(|r| r.is_empty())
    {
        ctx.ensure_owner("MachineSet", set, cluster, false);
    }
    own_templates(
        ctx,
        &set["spec"]["template"]["spec"],
        namespace(set),
        cluster,
    );
    let machines: Vec<&Value> = world.controlled_by("Machine", uid(set)).collect();
    let active: Vec<&Value> = machines.iter().copied().filter(|m| !deleting(m)).collect();
    let desired = set["spec"]["replicas"].as_i64().unwrap_or(1);
    let count = active.len() as i64;
    let marked: Vec<&Value> = active
        .iter()
        .copied()
        .filter(|m| needs_remediation(shape, m))
        .collect();
    if !marked.is_empty() {
        for machine in marked {
            ctx.delete("Machine", machine);
        }
    } else if count < desired {
        add_machines(ctx, set, cluster, desired - count);
    } else if count > desired {
        remove_machines(ctx, active.clone(), count - desired);
    }
    let ready = active.iter().filter(|m| node_healthy(shape, m)).count() as i64;
    let time = ctx.time.clone();
    let mut conds = scaling_conds(count, desired).to_vec();
    conds.push(flag("MachinesReady", ready == count, "Ready", "NotReady"));
    let mut patch = shape.with_conditions(&Shape::status_of(set), &conds, &time);
    let selector = format!(
        "{CLUSTER_NAME_LABEL}={},{SET_NAME_LABEL}={}",
        name(cluster),
        name(set)
    );
    if shape.v2() {
        super::shape::merge(
            &mut patch,
            &json!({"replicas": count, "readyReplicas": ready, "availableReplicas": ready, "upToDateReplicas": count, "selector": selector}),
        );
    } else {
        super::shape::merge(
            &mut patch,
            &json!({"replicas": count, "readyReplicas": ready, "availableReplicas": ready, "fullyLabeledReplicas": count, "selector": selector,
            "v1beta2": {"readyReplicas": ready, "availableReplicas": ready, "upToDateReplicas": count}}),
        );
    }
    ctx.status("MachineSet", set, patch);
}

/// `extra` Machines of a set deleted: those marked for deletion first, then the newest.
fn remove_machines(ctx: &mut Ctx, mut active: Vec<&Value>, extra: i64) {
    active.sort_by_key(|m| {
        (
            !annotated(m, DELETE_MACHINE_ANNOTATION),
            std::cmp::Reverse(
                m["metadata"]["creationTimestamp"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            ),
        )
    });
    for machine in active.into_iter().take(extra as usize) {
        ctx.delete("Machine", machine);
    }
}

/// `missing` more Machines of the set, from its template.
fn add_machines(ctx: &mut Ctx, set: &Value, cluster: &Value, missing: i64) {
    let world = ctx.world;
    let template = &set["spec"]["template"]["spec"];
    let infra = Shape::read_ref(&template["infrastructureRef"])
        .and_then(|(_, n)| world.get("DockerMachineTemplate", namespace(set), &n));
    let bootstrap = Shape::read_ref(&template["bootstrap"]["configRef"])
        .and_then(|(_, n)| world.get("KubeadmConfigTemplate", namespace(set), &n));
    if let Some(infra) = infra {
        for _ in 0..missing {
            let mut labels: Map<String, Value> = set["spec"]["template"]["metadata"]["labels"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            labels.insert(CLUSTER_NAME_LABEL.into(), json!(name(cluster)));
            labels.insert(SET_NAME_LABEL.into(), json!(name(set)));
            for key in [DEPLOYMENT_NAME_LABEL, TEMPLATE_HASH_LABEL] {
                if let Some(v) = set["metadata"]["labels"].get(key) {
                    labels.insert(key.into(), v.clone());
                }
            }
            let machine_name = ctx.new_name(name(set));
            create_machine(
                ctx,
                NewMachine {
                    owner_kind: "MachineSet",
                    owner: set,
                    cluster: name(cluster),
                    name: machine_name,
                    labels,
                    infrastructure_template: infra,
                    bootstrap_spec: bootstrap
                        .map(|b| b["spec"]["template"]["spec"].clone())
                        .unwrap_or(json!({})),
                    version: template["version"].as_str().map(str::to_string),
                },
            );
        }
    }
}

/// The Cluster owns the templates its machine templates reference (CAPI sets this owner).
fn own_templates(ctx: &mut Ctx, template_spec: &Value, ns: &str, cluster: &Value) {
    let world = ctx.world;
    let infra = Shape::read_ref(&template_spec["infrastructureRef"])
        .and_then(|(_, n)| world.get("DockerMachineTemplate", ns, &n));
    let bootstrap = Shape::read_ref(&template_spec["bootstrap"]["configRef"])
        .and_then(|(_, n)| world.get("KubeadmConfigTemplate", ns, &n));
    if let Some(t) = infra {
        ctx.ensure_owner("DockerMachineTemplate", t, cluster, false);
    }
    if let Some(t) = bootstrap {
        ctx.ensure_owner("KubeadmConfigTemplate", t, cluster, false);
    }
}
