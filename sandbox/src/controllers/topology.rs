//! The topology controller, as far as a move sees it (Cluster API v1.14, as observed): a Cluster
//! of a ClusterClass owns the replicas of its control plane and of each MachineDeployment through
//! `spec.topology` — a direct patch of theirs is set back, a change of the topology flows down,
//! also to frozen scalers (their own controllers then wait for the release). Nothing is done
//! while the Cluster is paused or its ClusterClass carries the paused annotation.

use serde_json::{Value, json};

use super::context::Ctx;
use super::pause::PAUSED_ANNOTATION;
use super::world::{annotated, deleting, name, namespace};

/// The label naming the topology's MachineDeployment entry an MD was made for.
pub const DEPLOYMENT_NAME_LABEL: &str = "topology.cluster.x-k8s.io/deployment-name";

pub fn reconcile(ctx: &mut Ctx, cluster: &Value) {
    let topology = &cluster["spec"]["topology"];
    if topology.is_null() || deleting(cluster) || cluster["spec"]["paused"] == true {
        return;
    }
    // v1beta2 names the class by `classRef`, v1beta1 by `class`/`classNamespace`.
    let Some(class) = topology["classRef"]["name"]
        .as_str()
        .or(topology["class"].as_str())
    else {
        return;
    };
    let class_namespace = topology["classRef"]["namespace"]
        .as_str()
        .or(topology["classNamespace"].as_str())
        .unwrap_or(namespace(cluster));
    match ctx.world.get("ClusterClass", class_namespace, class) {
        Some(class) if !annotated(class, PAUSED_ANNOTATION) => {}
        // Not there yet (not reconciled), or paused: nothing flows down.
        _ => return,
    }
    let ns = namespace(cluster);
    if let (Some(replicas), Some(control_plane)) = (
        topology["controlPlane"]["replicas"].as_i64(),
        cluster["spec"]["controlPlaneRef"]["name"].as_str(),
    ) && let Some(kcp) = ctx.world.get("KubeadmControlPlane", ns, control_plane)
    {
        let kcp = kcp.clone();
        ctx.patch(
            "KubeadmControlPlane",
            &kcp,
            json!({"spec": {"replicas": replicas}}),
        );
    }
    for entry in topology["workers"]["machineDeployments"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let (Some(entry_name), Some(replicas)) =
            (entry["name"].as_str(), entry["replicas"].as_i64())
        else {
            continue;
        };
        let deployments: Vec<Value> = ctx
            .world
            .all("MachineDeployment")
            .iter()
            .filter(|md| namespace(md) == ns)
            .filter(|md| {
                md["metadata"]["labels"]["cluster.x-k8s.io/cluster-name"].as_str()
                    == Some(name(cluster))
                    && md["metadata"]["labels"][DEPLOYMENT_NAME_LABEL].as_str() == Some(entry_name)
            })
            .cloned()
            .collect();
        for md in &deployments {
            ctx.patch(
                "MachineDeployment",
                md,
                json!({"spec": {"replicas": replicas}}),
            );
        }
    }
}
