//! The Cluster controller and the infrastructure provider's DockerCluster controller.

use serde_json::{Value, json};

use super::cloud::load_balancer_key;
use super::context::Ctx;
use super::shape::{Cond, Shape, flag};
use super::world::{World, annotated, controller_ref, deleting, name, namespace, uid};

pub const CLUSTER_FINALIZER: &str = "cluster.cluster.x-k8s.io";
pub const DOCKER_CLUSTER_FINALIZER: &str = "dockercluster.infrastructure.cluster.x-k8s.io";
pub const DELETE_FOR_MOVE: &str = "clusterctl.cluster.x-k8s.io/delete-for-move";
pub const BLOCK_MOVE: &str = "clusterctl.cluster.x-k8s.io/block-move";

/// The object a Cluster's `spec.<field>` references, in its namespace.
pub fn referenced<'w>(
    world: &'w World,
    cluster: &Value,
    field: &str,
    kind: &str,
) -> Option<&'w Value> {
    let (ref_kind, ref_name) = Shape::read_ref(&cluster["spec"][field])?;
    (ref_kind == kind)
        .then(|| world.get(kind, namespace(cluster), &ref_name))
        .flatten()
}

/// Infrastructure provisioned, in the provider contract of either dialect.
pub fn infra_provisioned(shape: Shape, infra: &Value) -> bool {
    if shape.v2() {
        infra["status"]["initialization"]["provisioned"] == true
    } else {
        infra["status"]["ready"] == true
    }
}

pub fn cluster_infra_provisioned(shape: Shape, cluster: &Value) -> bool {
    if shape.v2() {
        cluster["status"]["initialization"]["infrastructureProvisioned"] == true
    } else {
        cluster["status"]["infrastructureReady"] == true
    }
}

pub fn cluster_cp_initialized(shape: Shape, cluster: &Value) -> bool {
    if shape.v2() {
        cluster["status"]["initialization"]["controlPlaneInitialized"] == true
    } else {
        cluster["status"]["controlPlaneReady"] == true
    }
}

pub fn kcp_initialized(shape: Shape, kcp: &Value) -> bool {
    if shape.v2() {
        kcp["status"]["initialization"]["controlPlaneInitialized"] == true
    } else {
        kcp["status"]["initialized"] == true
    }
}

fn counters(objects: &[&Value], shape: Shape) -> Value {
    let sum = |field: &str| -> i64 {
        objects
            .iter()
            .map(|o| {
                let status = &o["status"];
                let v = if shape.v2() || field == "replicas" {
                    &status[field]
                } else {
                    &status["v1beta2"][field]
                };
                v.as_i64().unwrap_or(0)
            })
            .sum()
    };
    let desired: i64 = objects
        .iter()
        .map(|o| o["spec"]["replicas"].as_i64().unwrap_or(0))
        .sum();
    json!({"desiredReplicas": desired, "replicas": sum("replicas"), "readyReplicas": sum("readyReplicas"),
        "availableReplicas": sum("availableReplicas"), "upToDateReplicas": sum("upToDateReplicas")})
}

/// The Cluster owns its infrastructure cluster and control plane, as CAPI's controller sets it
/// (an owner reference that is not the controller's).
fn own_parts(ctx: &mut Ctx, cluster: &Value, parts: &[(&str, Option<&Value>)]) {
    for &(kind, object) in parts {
        if let Some(object) = object
            && object["metadata"]["ownerReferences"]
                .as_array()
                .is_none_or(|refs| !refs.iter().any(|r| r["uid"] == uid(cluster)))
        {
            let mut refs = object["metadata"]["ownerReferences"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let mut owner = controller_ref(cluster);
            owner["controller"] = json!(false);
            refs.push(owner);
            ctx.patch(kind, object, json!({"metadata": {"ownerReferences": refs}}));
        }
    }
}

/// A Cluster's v1beta2 conditions, from its infrastructure, its control plane and its scaling.
fn cluster_conditions(
    infra_ready: bool,
    cp_initialized: bool,
    (scaling_up, scaling_down): (bool, bool),
) -> [Cond; 9] {
    let available = infra_ready && cp_initialized;
    [
        flag("InfrastructureReady", infra_ready, "Ready", "NotReady"),
        flag(
            "ControlPlaneInitialized",
            cp_initialized,
            "Initialized",
            "NotInitialized",
        ),
        flag(
            "ControlPlaneAvailable",
            cp_initialized,
            "Available",
            "NotAvailable",
        ),
        Cond::new("WorkersAvailable", true, "Available", ""),
        flag("Available", available, "Available", "NotAvailable"),
        flag("ScalingUp", scaling_up, "ScalingUp", "NotScalingUp"),
        flag("ScalingDown", scaling_down, "ScalingDown", "NotScalingDown"),
        Cond::new("RollingOut", false, "NotRollingOut", ""),
        flag(
            "RemoteConnectionProbe",
            cp_initialized,
            "ProbeSucceeded",
            "ProbeFailed",
        ),
    ]
}

pub fn reconcile_cluster(ctx: &mut Ctx, cluster: &Value) {
    let world = ctx.world;
    let shape = ctx.shape;
    let ns = namespace(cluster);
    let belongs = |o: &&Value| {
        namespace(o) == ns && world.cluster_of(o).is_some_and(|c| uid(c) == uid(cluster))
    };
    let control_plane = referenced(world, cluster, "controlPlaneRef", "KubeadmControlPlane");
    let infra = referenced(world, cluster, "infrastructureRef", "DockerCluster");

    if ctx.ensure_paused("Cluster", cluster, Some(cluster)) {
        return;
    }
    if deleting(cluster) {
        delete_cluster(ctx, cluster, infra);
        return;
    }
    ctx.ensure_finalizer("Cluster", cluster, CLUSTER_FINALIZER);
    own_parts(
        ctx,
        cluster,
        &[
            ("DockerCluster", infra),
            ("KubeadmControlPlane", control_plane),
        ],
    );

    let infra_ready = infra.is_some_and(|i| infra_provisioned(shape, i));
    let cp_initialized = control_plane.is_some_and(|cp| kcp_initialized(shape, cp))
        || cluster_cp_initialized(shape, cluster);
    let workers: Vec<&Value> = world
        .all("MachineDeployment")
        .iter()
        .chain(world.all("MachinePool"))
        .filter(belongs)
        .collect();
    let cp: Vec<&Value> = control_plane.into_iter().collect();
    let cp_counters = counters(&cp, shape);
    let worker_counters = counters(&workers, shape);
    let scaling_up = cp_counters["replicas"].as_i64() < cp_counters["desiredReplicas"].as_i64()
        || worker_counters["replicas"].as_i64() < worker_counters["desiredReplicas"].as_i64();
    let scaling_down = cp_counters["replicas"].as_i64() > cp_counters["desiredReplicas"].as_i64()
        || worker_counters["replicas"].as_i64() > worker_counters["desiredReplicas"].as_i64();
    let available = infra_ready && cp_initialized;
    let time = ctx.time.clone();
    let status = Shape::status_of(cluster);
    let conds = cluster_conditions(infra_ready, cp_initialized, (scaling_up, scaling_down));
    let mut patch = shape.with_conditions(&status, &conds, &time);
    let legacy = [Cond::new(
        "ControlPlaneInitialized",
        cp_initialized,
        "WaitingForControlPlaneProviderInitialized",
        "Waiting for control plane provider to indicate the control plane has been initialized",
    )];
    super::shape::merge(
        &mut patch,
        &shape.with_legacy_conditions(&status, &legacy, &time),
    );
    let phase = if available {
        "Provisioned"
    } else {
        "Provisioning"
    };
    if shape.v2() {
        super::shape::merge(
            &mut patch,
            &json!({"phase": phase, "initialization": {"infrastructureProvisioned": infra_ready, "controlPlaneInitialized": cp_initialized},
                "controlPlane": cp_counters, "workers": worker_counters}),
        );
    } else {
        super::shape::merge(
            &mut patch,
            &json!({"phase": phase, "infrastructureReady": infra_ready, "controlPlaneReady": cp_initialized,
                "v1beta2": {"controlPlane": cp_counters, "workers": worker_counters}}),
        );
    }
    ctx.status("Cluster", cluster, patch);
}

/// A Cluster being deleted: released at once when a move deletes it; else its control plane,
/// scalers and health checks are deleted, then (once no Machine is left) its infrastructure
/// cluster, and the Cluster goes when nothing of it is left.
fn delete_cluster(ctx: &mut Ctx, cluster: &Value, infra: Option<&Value>) {
    let world = ctx.world;
    let ns = namespace(cluster);
    let belongs = |o: &&Value| {
        namespace(o) == ns && world.cluster_of(o).is_some_and(|c| uid(c) == uid(cluster))
    };
    if annotated(cluster, DELETE_FOR_MOVE) {
        ctx.remove_finalizer("Cluster", cluster, CLUSTER_FINALIZER);
        return;
    }
    let mut remaining = 0;
    for kind in [
        "KubeadmControlPlane",
        "MachineDeployment",
        "MachinePool",
        "MachineHealthCheck",
        "MachineSet",
        "Machine",
    ] {
        for object in world.all(kind).iter().filter(belongs) {
            remaining += 1;
            if kind != "Machine" && kind != "MachineSet" {
                ctx.delete(kind, object);
            }
        }
    }
    // The infrastructure cluster (its load balancer) goes last, once no Machine is left.
    let machines_left = world.all("Machine").iter().filter(belongs).count();
    if machines_left == 0
        && let Some(infra) = infra
    {
        ctx.delete("DockerCluster", infra);
        remaining += 1;
    }

    if remaining == 0 {
        ctx.remove_finalizer("Cluster", cluster, CLUSTER_FINALIZER);
    }
}

/// The block-move protocol: once its Cluster is paused, a DockerCluster finishes pausing, then
/// lets the move go on (its annotation removed).
fn release_block_move(ctx: &mut Ctx, infra: &Value, cluster: Option<&Value>) {
    if ctx.config.block_move
        && annotated(infra, BLOCK_MOVE)
        && cluster.is_some_and(|c| c["spec"]["paused"] == true)
    {
        let k = Ctx::key(infra);
        if ctx.waited(
            &k,
            "block-move-release",
            ctx.config.delays.block_move_release,
        ) {
            ctx.patch(
                "DockerCluster",
                infra,
                json!({"metadata": {"annotations": {BLOCK_MOVE: null}}}),
            );
        }
    }
}

pub fn reconcile_docker_cluster(ctx: &mut Ctx, infra: &Value) {
    let world = ctx.world;
    let shape = ctx.shape;
    let cluster = world.cluster_of(infra).or_else(|| {
        world.all("Cluster").iter().find(|c| {
            namespace(c) == namespace(infra)
                && Shape::read_ref(&c["spec"]["infrastructureRef"])
                    .is_some_and(|(_, n)| n == name(infra))
        })
    });
    let cluster_name = cluster.map(name).unwrap_or(name(infra)).to_string();
    let key = load_balancer_key(namespace(infra), &cluster_name);
    if ctx.ensure_paused("DockerCluster", infra, cluster) {
        release_block_move(ctx, infra, cluster);
        return;
    }
    if deleting(infra) {
        if !annotated(infra, DELETE_FOR_MOVE) {
            ctx.writes
                .push(super::world::Write::CloudDeleteLoadBalancer { key });
        }
        ctx.remove_finalizer("DockerCluster", infra, DOCKER_CLUSTER_FINALIZER);
        return;
    }
    ctx.ensure_finalizer("DockerCluster", infra, DOCKER_CLUSTER_FINALIZER);
    if ctx.config.block_move && !annotated(infra, BLOCK_MOVE) {
        ctx.patch(
            "DockerCluster",
            infra,
            json!({"metadata": {"annotations": {BLOCK_MOVE: ""}}}),
        );
    }
    if infra_provisioned(shape, infra) && ctx.cloud.load_balancer(&key).is_some() {
        return;
    }
    // Adopt a load balancer that exists (after a move), else provision one after the delay.
    let exists = ctx.cloud.load_balancer(&key).is_some();
    if !exists {
        let k = Ctx::key(infra);
        if !ctx.waited(
            &k,
            "load-balancer",
            ctx.config.delays.infrastructure_cluster,
        ) {
            return;
        }
        ctx.writes
            .push(super::world::Write::CloudCreateLoadBalancer { key: key.clone() });
    }
    let host = format!("{}.sandbox.local", key.replace('/', "-"));
    ctx.patch(
        "DockerCluster",
        infra,
        json!({"spec": {"controlPlaneEndpoint": {"host": host, "port": 6443}}}),
    );
    let time = ctx.time.clone();
    let mut patch = shape.with_conditions(
        &Shape::status_of(infra),
        &[Cond::new("Ready", true, "Ready", "")],
        &time,
    );
    if shape.v2() {
        super::shape::merge(
            &mut patch,
            &json!({"initialization": {"provisioned": true}}),
        );
    } else {
        super::shape::merge(&mut patch, &json!({"ready": true}));
    }
    ctx.status("DockerCluster", infra, patch);
}
