//! The KubeadmControlPlane controller: one Machine at a time toward `spec.replicas`, the
//! cluster's certificate and kubeconfig Secrets, remediation of marked Machines.

use serde_json::{Map, Value, json};

use super::cluster::{DELETE_FOR_MOVE, cluster_infra_provisioned};
use super::context::Ctx;
use super::machine::{
    CLUSTER_NAME_LABEL, CONTROL_PLANE_LABEL, NewMachine, create_machine, has_node,
    needs_remediation, node_healthy,
};
use super::shape::{Cond, Shape, flag};
use super::world::{annotated, controller_ref, deleting, name, namespace, uid};

pub const KCP_FINALIZER: &str = "kubeadm.controlplane.cluster.x-k8s.io";
const CLUSTER_SECRETS: &[&str] = &["ca", "etcd", "sa", "proxy"];

fn infrastructure_template<'w>(ctx: &Ctx<'w>, kcp: &Value) -> Option<&'w Value> {
    // v1beta2 nests the reference under machineTemplate.spec; v1beta1 does not.
    let reference = if ctx.shape.v2() {
        &kcp["spec"]["machineTemplate"]["spec"]["infrastructureRef"]
    } else {
        &kcp["spec"]["machineTemplate"]["infrastructureRef"]
    };
    let (_, template) = Shape::read_ref(reference)?;
    ctx.world
        .get("DockerMachineTemplate", namespace(kcp), &template)
}

/// A control plane being deleted: its Machines first (not when a move deletes it), then its
/// finalizer.
fn delete_control_plane(ctx: &mut Ctx, kcp: &Value, machines: &[&Value]) {
    if !annotated(kcp, DELETE_FOR_MOVE) {
        for machine in machines {
            ctx.delete("Machine", machine);
        }
        if !machines.is_empty() {
            return;
        }
    }
    ctx.remove_finalizer("KubeadmControlPlane", kcp, KCP_FINALIZER);
}

/// The control plane's status: its Machines counted, with the conditions Cluster API sets.
fn control_plane_status(
    ctx: &mut Ctx,
    kcp: &Value,
    cluster_name: &str,
    (count, ready, desired): (i64, i64, i64),
    initialized: bool,
) {
    let shape = ctx.shape;
    let time = ctx.time.clone();
    let status = Shape::status_of(kcp);
    let mut conds = super::workers::scaling_conds(count, desired).to_vec();
    conds.extend([
        flag("Initialized", initialized, "Initialized", "NotInitialized"),
        flag("Available", initialized, "Available", "NotAvailable"),
        flag("MachinesReady", ready == count, "Ready", "NotReady"),
        Cond::new("RollingOut", false, "NotRollingOut", ""),
    ]);
    let mut patch = shape.with_conditions(&status, &conds, &time);
    let selector = format!("{CLUSTER_NAME_LABEL}={cluster_name},{CONTROL_PLANE_LABEL}");
    if shape.v2() {
        super::shape::merge(
            &mut patch,
            &json!({"replicas": count, "readyReplicas": ready, "availableReplicas": ready, "upToDateReplicas": count,
            "selector": selector, "initialization": {"controlPlaneInitialized": initialized}, "version": kcp["spec"]["version"]}),
        );
    } else {
        super::shape::merge(
            &mut patch,
            &json!({"replicas": count, "readyReplicas": ready, "updatedReplicas": count, "unavailableReplicas": count - ready,
            "selector": selector, "initialized": initialized, "ready": ready > 0, "version": kcp["spec"]["version"],
            "v1beta2": {"readyReplicas": ready, "availableReplicas": ready, "upToDateReplicas": count}}),
        );
    }
    ctx.status("KubeadmControlPlane", kcp, patch);
}

pub fn reconcile(ctx: &mut Ctx, kcp: &Value) {
    let world = ctx.world;
    let shape = ctx.shape;
    let ns = namespace(kcp);
    let cluster = world.cluster_of(kcp).or_else(|| {
        world.all("Cluster").iter().find(|c| {
            namespace(c) == ns
                && Shape::read_ref(&c["spec"]["controlPlaneRef"])
                    .is_some_and(|(_, n)| n == name(kcp))
        })
    });
    let machines: Vec<&Value> = world.controlled_by("Machine", uid(kcp)).collect();
    if ctx.ensure_paused("KubeadmControlPlane", kcp, cluster) {
        return;
    }
    if deleting(kcp) {
        delete_control_plane(ctx, kcp, &machines);
        return;
    }
    let Some(cluster) = cluster else {
        return;
    };
    ctx.ensure_finalizer("KubeadmControlPlane", kcp, KCP_FINALIZER);
    if let Some(template) = infrastructure_template(ctx, kcp) {
        ctx.ensure_owner("DockerMachineTemplate", template, cluster, false);
    }
    let cluster_name = name(cluster).to_string();
    if kcp["metadata"]["labels"].get(CLUSTER_NAME_LABEL).is_none() {
        ctx.patch(
            "KubeadmControlPlane",
            kcp,
            json!({"metadata": {"labels": {CLUSTER_NAME_LABEL: cluster_name}}}),
        );
    }
    cluster_secrets(ctx, kcp, &cluster_name);

    let active: Vec<&Value> = machines.iter().copied().filter(|m| !deleting(m)).collect();
    let with_node = active.iter().filter(|m| has_node(shape, m)).count() as i64;
    let ready = active.iter().filter(|m| node_healthy(shape, m)).count() as i64;
    let desired = kcp["spec"]["replicas"].as_i64().unwrap_or(1);
    let count = active.len() as i64;
    let initialized = with_node > 0 || super::cluster::kcp_initialized(shape, kcp);
    if initialized {
        kubeconfig_secret(ctx, kcp, &cluster_name);
    }

    let busy = machines.iter().any(|m| deleting(m));
    if let Some(marked) = active
        .iter()
        .find(|m| needs_remediation(shape, m))
        .filter(|_| !busy)
    {
        ctx.delete("Machine", marked);
    } else if count < desired
        && !busy
        && active.iter().all(|m| has_node(shape, m))
        && cluster_infra_provisioned(shape, cluster)
    {
        // One at a time: the next Machine only once every existing one has its node.
        add_machine(ctx, kcp, &cluster_name);
    } else if count > desired && !busy {
        // Scale down the oldest Machine.
        if let Some(oldest) = active.iter().min_by_key(|m| {
            m["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or("")
                .to_string()
        }) {
            ctx.delete("Machine", oldest);
        }
    }

    let counts = (count, ready, desired);
    control_plane_status(ctx, kcp, &cluster_name, counts, initialized);
}

/// One more control-plane Machine, from the control plane's infrastructure template.
fn add_machine(ctx: &mut Ctx, kcp: &Value, cluster_name: &str) {
    if let Some(template) = infrastructure_template(ctx, kcp) {
        let mut labels = Map::new();
        labels.insert(CLUSTER_NAME_LABEL.into(), json!(cluster_name));
        labels.insert(CONTROL_PLANE_LABEL.into(), json!(""));
        labels.insert(
            "cluster.x-k8s.io/control-plane-name".into(),
            json!(name(kcp)),
        );
        let machine_name = ctx.new_name(name(kcp));
        create_machine(
            ctx,
            NewMachine {
                owner_kind: "KubeadmControlPlane",
                owner: kcp,
                cluster: cluster_name,
                name: machine_name,
                labels,
                infrastructure_template: template,
                bootstrap_spec: kcp["spec"]["kubeadmConfigSpec"].clone(),
                version: kcp["spec"]["version"].as_str().map(str::to_string),
            },
        );
    }
}

/// The Secrets kubeadm's control plane makes for its cluster (certificates and keys).
fn cluster_secrets(ctx: &mut Ctx, kcp: &Value, cluster_name: &str) {
    let (world, ns) = (ctx.world, namespace(kcp));
    for suffix in CLUSTER_SECRETS {
        let secret = format!("{cluster_name}-{suffix}");
        if world.get("Secret", ns, &secret).is_none() {
            ctx.create(
                "Secret",
                cluster_secret(kcp, cluster_name, &secret, "cluster.x-k8s.io/secret"),
            );
        }
    }
}

/// The cluster's kubeconfig Secret, once its control plane is initialised.
fn kubeconfig_secret(ctx: &mut Ctx, kcp: &Value, cluster_name: &str) {
    let (world, ns) = (ctx.world, namespace(kcp));
    if world
        .get("Secret", ns, &format!("{cluster_name}-kubeconfig"))
        .is_none()
    {
        let mut secret = cluster_secret(
            kcp,
            cluster_name,
            &format!("{cluster_name}-kubeconfig"),
            "cluster.x-k8s.io/secret",
        );
        if let Some(kubeconfig) = ctx.config.kubeconfigs.get(cluster_name) {
            // As Cluster API writes it: the kubeconfig in `value`.
            secret["stringData"] = json!({ "value": kubeconfig });
        }
        ctx.create("Secret", secret);
    }
}

fn cluster_secret(kcp: &Value, cluster: &str, name_: &str, type_: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "type": type_,
        "metadata": {"name": name_, "namespace": namespace(kcp), "labels": {CLUSTER_NAME_LABEL: cluster},
            "ownerReferences": [controller_ref(kcp)]},
        "stringData": {"tls.crt": format!("sandbox certificate {name_}"), "tls.key": format!("sandbox key {name_}")}})
}
