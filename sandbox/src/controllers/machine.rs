//! Machines with their bootstrap (KubeadmConfig) and infrastructure (DockerMachine) providers
//! folded in: create them from an owner's templates, then provision step by step.

use serde_json::{Map, Value, json};

use super::cloud::{CloudMachine, provider_id};
use super::cluster::{DELETE_FOR_MOVE, cluster_cp_initialized, infra_provisioned};
use super::context::Ctx;
use super::holds::Step;
use super::machine_status::machine_status;
use super::pause::is_paused;
use super::shape::{Cond, Shape};
use super::world::{
    Write, annotated, controller_ref, controller_uid, deleting, name, namespace, uid,
};

pub const MACHINE_FINALIZER: &str = "machine.cluster.x-k8s.io";
pub const DOCKER_MACHINE_FINALIZER: &str = "dockermachine.infrastructure.cluster.x-k8s.io";
pub const CONTROL_PLANE_LABEL: &str = "cluster.x-k8s.io/control-plane";
pub const CLUSTER_NAME_LABEL: &str = "cluster.x-k8s.io/cluster-name";
/// Set by `capi-sandbox node` to make a Machine's node unhealthy (or healthy again) from outside
/// the process that holds the cloud.
pub const NODE_HEALTH_ANNOTATION: &str = "sandbox.capi.x-k8s.io/node-health";

/// What an owner (control plane or MachineSet) asks for when it creates a Machine.
pub struct NewMachine<'a> {
    pub owner_kind: &'static str,
    pub owner: &'a Value,
    pub cluster: &'a str,
    pub name: String,
    pub labels: Map<String, Value>,
    /// The DockerMachineTemplate to clone.
    pub infrastructure_template: &'a Value,
    /// The KubeadmConfig spec.
    pub bootstrap_spec: Value,
    pub version: Option<String>,
}

/// Infrastructure machine, bootstrap config, then the Machine, all controlled by the owner first;
/// the Machine controller then takes over its two dependents, as Cluster API does.
pub fn create_machine(ctx: &mut Ctx, new: NewMachine) {
    let shape = ctx.shape;
    let ns = namespace(new.owner).to_string();
    let owner = controller_ref(new.owner);
    let labels = Value::Object(new.labels.clone());
    ctx.create(
        "DockerMachine",
        json!({"apiVersion": shape.api_version("infrastructure.cluster.x-k8s.io"), "kind": "DockerMachine",
            "metadata": {"name": new.name, "namespace": ns, "labels": labels, "ownerReferences": [owner]},
            "spec": new.infrastructure_template["spec"]["template"]["spec"]}),
    );
    ctx.create(
        "KubeadmConfig",
        json!({"apiVersion": shape.api_version("bootstrap.cluster.x-k8s.io"), "kind": "KubeadmConfig",
            "metadata": {"name": new.name, "namespace": ns, "labels": labels, "ownerReferences": [owner]},
            "spec": new.bootstrap_spec}),
    );
    let mut spec = json!({
        "clusterName": new.cluster,
        "bootstrap": {"configRef": shape.reference("bootstrap.cluster.x-k8s.io", "KubeadmConfig", &new.name, &ns)},
        "infrastructureRef": shape.reference("infrastructure.cluster.x-k8s.io", "DockerMachine", &new.name, &ns),
    });
    if let Some(version) = new.version {
        spec["version"] = json!(version);
    }
    let _ = new.owner_kind;
    ctx.create(
        "Machine",
        json!({"apiVersion": shape.api_version("cluster.x-k8s.io"), "kind": "Machine",
            "metadata": {"name": new.name, "namespace": ns, "labels": labels, "ownerReferences": [owner]},
            "spec": spec}),
    );
}

/// Has the Machine a node (clusterctl's check), in either dialect?
pub fn has_node(shape: Shape, machine: &Value) -> bool {
    if shape.v2() {
        machine["status"]["nodeRef"]["name"]
            .as_str()
            .is_some_and(|n| !n.is_empty())
    } else {
        machine["status"]["nodeRef"].is_object()
    }
}

pub fn node_healthy(shape: Shape, machine: &Value) -> bool {
    shape.condition_true(&machine["status"], "NodeHealthy") == Some(true)
}

/// Marked for remediation by a MachineHealthCheck: the owner must replace it.
pub fn needs_remediation(shape: Shape, machine: &Value) -> bool {
    shape.condition_true(&machine["status"], "OwnerRemediated") == Some(false)
}

fn take_over(ctx: &mut Ctx, kind: &str, dependent: &Value, machine: &Value) {
    if controller_uid(dependent) != Some(uid(machine)) {
        ctx.patch(
            kind,
            dependent,
            json!({"metadata": {"ownerReferences": [controller_ref(machine)]}}),
        );
    }
}

/// The bootstrap data: the Machine's Secret (owned by its config), the config ready and the
/// Machine pointing at the Secret.
fn write_bootstrap_data(ctx: &mut Ctx, machine: &Value, bootstrap: &Value, cluster: &Value) {
    let (world, shape, time) = (ctx.world, ctx.shape, ctx.time.clone());
    let ns = namespace(machine);
    let machine_name = name(machine).to_string();
    let secret_name = machine_name.clone();
    if world.get("Secret", ns, &secret_name).is_none() {
        ctx.create(
            "Secret",
            json!({"apiVersion": "v1", "kind": "Secret", "type": "cluster.x-k8s.io/secret",
                "metadata": {"name": secret_name, "namespace": ns,
                    "labels": {CLUSTER_NAME_LABEL: cluster["metadata"]["name"]},
                    "ownerReferences": [controller_ref(bootstrap)]},
                "stringData": {"format": "cloud-config", "value": format!("#cloud-config\n# bootstrap data of {machine_name}\n")}}),
        );
    }
    let mut config_status = shape.with_conditions(
        &Shape::status_of(bootstrap),
        &[Cond::new("Ready", true, "Ready", "")],
        &time,
    );
    super::shape::merge(
        &mut config_status,
        &if shape.v2() {
            json!({"dataSecretName": secret_name, "initialization": {"dataSecretCreated": true}})
        } else {
            json!({"dataSecretName": secret_name, "ready": true})
        },
    );
    ctx.status("KubeadmConfig", bootstrap, config_status);
    ctx.patch(
        "Machine",
        machine,
        json!({"spec": {"bootstrap": {"dataSecretName": secret_name}}}),
    );
}

/// The node health the sandbox's annotation asks for, made so in the fake cloud.
fn sync_node_health(ctx: &mut Ctx, machine: &Value, currently_healthy: bool) {
    let Some(wanted) = machine["metadata"]["annotations"][NODE_HEALTH_ANNOTATION].as_str() else {
        return;
    };
    let healthy = wanted != "unhealthy";
    if currently_healthy != healthy {
        ctx.writes.push(Write::CloudSetHealth {
            namespace: namespace(machine).to_string(),
            name: name(machine).to_string(),
            healthy,
        });
    }
}

pub fn reconcile_machine(ctx: &mut Ctx, machine: &Value) {
    let world = ctx.world;
    let shape = ctx.shape;
    let ns = namespace(machine);
    let machine_name = name(machine).to_string();
    let cluster = world.cluster_of(machine);
    let bootstrap = Shape::read_ref(&machine["spec"]["bootstrap"]["configRef"])
        .and_then(|(_, n)| world.get("KubeadmConfig", ns, &n));
    let infra = Shape::read_ref(&machine["spec"]["infrastructureRef"])
        .and_then(|(_, n)| world.get("DockerMachine", ns, &n));

    if ctx.ensure_paused("Machine", machine, cluster) {
        return;
    }
    if deleting(machine) {
        delete_machine(ctx, machine, bootstrap, infra);
        return;
    }
    ctx.ensure_finalizer("Machine", machine, MACHINE_FINALIZER);
    if let Some(bootstrap) = bootstrap {
        take_over(ctx, "KubeadmConfig", bootstrap, machine);
    }
    if let Some(infra) = infra {
        take_over(ctx, "DockerMachine", infra, machine);
    }
    let (Some(bootstrap), Some(infra), Some(cluster)) = (bootstrap, infra, cluster) else {
        return;
    };
    let key = Ctx::key(machine);
    let pid = machine["spec"]["providerID"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| provider_id(ns, &machine_name));
    let in_cloud = ctx.cloud.machine(&pid);
    if in_cloud.is_none() && ctx.cloud.cannot_adopt() && machine["spec"]["providerID"].is_string() {
        cloud_machine_lost(ctx, machine);
        return;
    }
    if let Some(current) = &in_cloud {
        sync_node_health(ctx, machine, current.healthy);
    }

    // 1. Bootstrap data (paused only by the config's own annotation or the Cluster).
    let bootstrapped = bootstrap_ready(shape, bootstrap) || in_cloud.is_some();
    if !bootstrapped && !may_bootstrap(ctx, machine, bootstrap, cluster) {
        return;
    }
    write_bootstrap_data(ctx, machine, bootstrap, cluster);

    // 2. Infrastructure (paused only by the infra machine's own annotation or the Cluster).
    if !provision(ctx, machine, (infra, cluster), &pid, in_cloud.is_some()) {
        return;
    }

    // 3. The node joins. A Machine whose cloud machine exists while its status says nothing
    // (copied by a move) is adopted: its status comes back at once, nothing is provisioned again.
    let healthy = in_cloud.as_ref().is_none_or(|m| m.healthy);
    let adopted = in_cloud.is_some() && !machine_infrastructure_provisioned(shape, machine);
    if !has_node(shape, machine)
        && !adopted
        && (in_cloud.is_none()
            || ctx.held(&machine_name, Step::Node)
            || !ctx.waited(&key, "node", ctx.config.delays.node))
    {
        machine_status(ctx, machine, true, true, None);
        return;
    }
    machine_status(ctx, machine, true, true, Some(healthy));
}

/// The Machine's infrastructure: its cloud machine created (unless it exists, or the infra
/// machine is paused, held or waiting), its providerID and status set. `false` while it is not
/// provisioned yet.
fn provision(
    ctx: &mut Ctx,
    machine: &Value,
    (infra, cluster): (&Value, &Value),
    pid: &str,
    provisioned: bool,
) -> bool {
    let (shape, time) = (ctx.shape, ctx.time.clone());
    let (ns, machine_name, key) = (
        namespace(machine),
        name(machine).to_string(),
        Ctx::key(machine),
    );
    if !provisioned {
        if is_paused(Some(cluster), infra) {
            ctx.ensure_paused("DockerMachine", infra, Some(cluster));
            machine_status(ctx, machine, true, false, None);
            return false;
        }
        if ctx.held(&machine_name, Step::Infrastructure)
            || !ctx.waited(&key, "infrastructure", ctx.config.delays.infrastructure)
        {
            machine_status(ctx, machine, true, false, None);
            return false;
        }
        ctx.writes.push(Write::CloudCreateMachine {
            provider_id: pid.to_string(),
            machine: CloudMachine {
                namespace: ns.to_string(),
                cluster: cluster["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                name: machine_name.clone(),
                healthy: true,
            },
        });
    }
    ctx.ensure_finalizer("DockerMachine", infra, DOCKER_MACHINE_FINALIZER);
    ctx.patch("DockerMachine", infra, json!({"spec": {"providerID": pid}}));
    let mut infra_status = shape.with_conditions(
        &Shape::status_of(infra),
        &[Cond::new("Ready", true, "Ready", "")],
        &time,
    );
    super::shape::merge(
        &mut infra_status,
        &if shape.v2() {
            json!({"initialization": {"provisioned": true}, "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]})
        } else {
            json!({"ready": true, "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}]})
        },
    );
    ctx.status("DockerMachine", infra, infra_status);
    ctx.patch("Machine", machine, json!({"spec": {"providerID": pid}}));
    true
}

/// A Machine being deleted: released at once when a move deletes it (its infrastructure stays),
/// else its infrastructure and bootstrap config are deleted first.
fn delete_machine(
    ctx: &mut Ctx,
    machine: &Value,
    bootstrap: Option<&Value>,
    infra: Option<&Value>,
) {
    if annotated(machine, DELETE_FOR_MOVE) {
        ctx.remove_finalizer("Machine", machine, MACHINE_FINALIZER);
        return;
    }
    // Drain is instant here; delete the infrastructure and wait until it is gone.
    if let Some(infra) = infra {
        ctx.delete("DockerMachine", infra);
        return;
    }
    if let Some(bootstrap) = bootstrap {
        ctx.delete("KubeadmConfig", bootstrap);
    }
    ctx.remove_finalizer("Machine", machine, MACHINE_FINALIZER);
}

/// A Machine whose cloud machine cannot be found.
fn cloud_machine_lost(ctx: &mut Ctx, machine: &Value) {
    let shape = ctx.shape;
    // Its cloud machine cannot be found: failed, as a MachineHealthCheck finds a Machine
    // whose node is gone; its owner replaces it with a new one.
    if !needs_remediation(shape, machine) {
        let conditions = [
            Cond::new(
                "NodeHealthy",
                false,
                "NodeNotFound",
                "the machine was not found in the cloud",
            ),
            Cond::new(
                "OwnerRemediated",
                false,
                "WaitingForRemediation",
                "Waiting for remediation",
            ),
        ];
        let time = ctx.time.clone();
        let status = shape.with_conditions(&Shape::status_of(machine), &conditions, &time);
        ctx.status("Machine", machine, status);
    }
}

/// Whether the bootstrap data of a Machine may be made now: not paused, the cluster's control
/// plane initialised (or this Machine initialises it), its infrastructure ready, no hold, and the
/// configured delay waited.
fn may_bootstrap(ctx: &mut Ctx, machine: &Value, bootstrap: &Value, cluster: &Value) -> bool {
    let (world, shape) = (ctx.world, ctx.shape);
    let machine_name = name(machine).to_string();
    let key = Ctx::key(machine);
    let control_plane = machine["metadata"]["labels"]
        .get(CONTROL_PLANE_LABEL)
        .is_some();
    if is_paused(Some(cluster), bootstrap) {
        ctx.ensure_paused("KubeadmConfig", bootstrap, Some(cluster));
        return false;
    }
    // The first control-plane Machine initialises the cluster; every other joins it.
    let first = control_plane
        && !cluster_cp_initialized(shape, cluster)
        && !world.all("Machine").iter().any(|m| {
            m["metadata"]["labels"].get(CONTROL_PLANE_LABEL).is_some()
                && world.cluster_of(m).is_some_and(|c| uid(c) == uid(cluster))
                && has_node(shape, m)
        });
    if !first && !cluster_cp_initialized(shape, cluster) {
        return false;
    }
    if !super::cluster::cluster_infra_provisioned(shape, cluster)
        || ctx.held(&machine_name, Step::Bootstrap)
        || !ctx.waited(&key, "bootstrap", ctx.config.delays.bootstrap)
    {
        return false;
    }
    true
}

fn machine_infrastructure_provisioned(shape: Shape, machine: &Value) -> bool {
    if shape.v2() {
        machine["status"]["initialization"]["infrastructureProvisioned"] == true
    } else {
        machine["status"]["infrastructureReady"] == true
    }
}

fn bootstrap_ready(shape: Shape, config: &Value) -> bool {
    if shape.v2() {
        config["status"]["initialization"]["dataSecretCreated"] == true
    } else {
        config["status"]["ready"] == true
    }
}

/// The Machine's status after the steps done so far; `node` is Some(healthy) once it has a node.
/// The infrastructure machine's own deletion: release the cloud machine unless moving.
pub fn reconcile_docker_machine(ctx: &mut Ctx, infra: &Value) {
    // A paused object's controller does nothing, deletion included.
    if !deleting(infra) || is_paused(ctx.world.cluster_of(infra), infra) {
        return;
    }
    if !annotated(infra, DELETE_FOR_MOVE)
        && let Some(pid) = infra["spec"]["providerID"].as_str()
    {
        ctx.writes.push(Write::CloudDeleteMachine {
            provider_id: pid.to_string(),
        });
    }
    ctx.remove_finalizer("DockerMachine", infra, DOCKER_MACHINE_FINALIZER);
}

/// Is this infrastructure object provisioned (both dialects)?
pub fn infrastructure_ready(shape: Shape, infra: &Value) -> bool {
    infra_provisioned(shape, infra)
}
