//! The checks of one moved Cluster against the target (and the source): adoption, what the
//! target's controllers did to the Machines, replicas, health — and, while its scalers are
//! frozen, which of them wait for the freeze to be released.

use std::collections::BTreeMap;

use kube::api::DynamicObject;
use serde::Serialize;

use super::{
    record::MovedCluster, record::control_plane_name, record::kind_name, record::named,
    record::provider_id, record::scalers,
};
use crate::model::conditions;
use crate::model::{ClusterView, Dialect, MachineView, ObjectRef};
use crate::names::CORE_GROUP;
use crate::settings::shell_word;
use crate::snapshot::Snapshot;

/// What a verification found about one Cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterVerification {
    pub cluster: ObjectRef,
    /// Every check passed.
    pub verified: bool,
    /// Checks that failed: the target did something a move must not lead to. Final.
    pub failed: Vec<String>,
    /// Checks not passed yet (health, replicas): may still pass.
    pub pending: Vec<String>,
    /// Checks that wait for the freeze `pause` put on the Cluster's scalers (which travelled
    /// with the move) to be released: frozen controllers write no status, so waiting for them
    /// is pointless until then. What a frozen target can show was checked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub after_resume: Vec<String>,
    /// The one-line account: what was adopted, or how many checks failed and are pending.
    pub summary: String,
    /// Shared objects copied to the target and kept in the source, as the move meant.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kept_in_source: Vec<String>,
}

pub(super) fn verify_cluster(
    moved: &MovedCluster,
    target: &Snapshot,
    source: Option<&Snapshot>,
    flags: &str,
) -> ClusterVerification {
    let (namespace, name) = (&moved.cluster.namespace, &moved.cluster.name);
    let mut failed = Vec::new();
    let mut pending = Vec::new();
    let find_cluster = |snapshot: &Snapshot| named(snapshot.clusters(), namespace, name).cloned();
    let pause_hint = format!(
        "pause the Cluster (`kubectl capi pause {name} -n {namespace}{flags}`) and check the provider's version and credentials in the target"
    );

    let cluster_in_target = find_cluster(target);
    let mut healthy_as = "Available";
    match &cluster_in_target {
        None => failed.push(format!("Cluster {namespace}/{name} is not in the target")),
        Some(cluster) => match health(cluster) {
            Ok(condition) => healthy_as = condition,
            Err(reason) => pending.push(format!(
                "Cluster {namespace}/{name} is not healthy yet: {reason}"
            )),
        },
    }

    let machine_failures_from = failed.len();
    let scaled_up = machines_adopted(moved, target, &mut failed);
    infrastructure_machines_kept(moved, target, &mut failed);

    // What the target does to its Machines goes on until stopped: the first such failure says
    // how (once, not on every line).
    if let Some(first) = failed.get_mut(machine_failures_from) {
        first.push_str(&format!(" — {pause_hint}"));
    }

    let frozen = frozen_in_target(moved, target, cluster_in_target.as_deref());
    replicas_kept(
        moved,
        target,
        cluster_in_target,
        (&mut failed, &mut pending),
    );
    let no_node = nodes_back(moved, target);
    let mut after_resume = Vec::new();
    if !frozen.is_empty() {
        // Health and replicas come from frozen controllers' status: they wait for the release.
        after_resume = std::mem::take(&mut pending);
        let (ns, cluster) = (shell_word(namespace), shell_word(name));
        after_resume.push(format!(
            "{} frozen by kubectl capi pause: release them with `kubectl capi resume {cluster} -n {ns}{flags}`, then check again with `kubectl capi verify {cluster} -n {ns}{flags} --wait`",
            frozen.join(", ")
        ));
    }
    // Available is said only when every adopted Machine has its node again.
    pending.extend(no_node);

    let left_in_source = source.map_or_else(Vec::new, |source| left_in(source, moved));
    if !left_in_source.is_empty() {
        failed.push(format!(
            "still in the source: {} — run the move again with --resume to finish deleting",
            left_in_source.join(", ")
        ));
    }

    let verified = failed.is_empty() && pending.is_empty() && after_resume.is_empty();
    let summary = summary_line(moved, (verified, &failed, &pending), scaled_up, healthy_as);
    ClusterVerification {
        summary,
        cluster: moved.cluster.clone(),
        verified,
        failed,
        pending,
        after_resume,
        kept_in_source: moved.kept_in_source.clone(),
    }
}

/// The Cluster's line of the report: verified with what was adopted and how it is healthy,
/// adopted while frozen, or not verified with how many checks failed and wait.
fn summary_line(
    moved: &MovedCluster,
    (verified, failed, pending): (bool, &[String], &[String]),
    scaled_up: usize,
    healthy_as: &str,
) -> String {
    let workers = moved.machines.len() - moved.control_plane_machines;
    let new = match scaled_up {
        0 => String::new(),
        n => format!(", {n} new from the scale-up pending at the move"),
    };
    if verified {
        format!(
            "{} verified: {} control-plane + {workers} worker Machines adopted{new}, {healthy_as}",
            moved.cluster.kubectl_name(),
            moved.control_plane_machines
        )
    } else if failed.is_empty() && pending.is_empty() {
        format!(
            "{} adopted while frozen: {} control-plane + {workers} worker Machines with their providerIDs, none created, none deleted; health and replicas wait for the freeze to be released",
            moved.cluster.kubectl_name(),
            moved.control_plane_machines
        )
    } else {
        format!(
            "{} not verified: {} failed, {} pending",
            moved.cluster.kubectl_name(),
            failed.len(),
            pending.len()
        )
    }
}

/// The scalers of the moved Cluster that `kubectl capi pause` froze in the target (`Kind/name`).
fn frozen_in_target(
    moved: &MovedCluster,
    target: &Snapshot,
    cluster_in_target: Option<&DynamicObject>,
) -> Vec<String> {
    let view = cluster_in_target.map(ClusterView::read);
    let control_plane = view.as_ref().and_then(control_plane_name);
    scalers(target, &moved.cluster, control_plane)
        .filter(|s| s.paused_annotation)
        .map(|s| kind_name(&s.reference.kind, &s.reference.name))
        .collect()
}

/// The moved Machines in the target that have no node yet (named), so that a healthy Cluster is
/// not reported before they do.
fn nodes_back(moved: &MovedCluster, target: &Snapshot) -> Vec<String> {
    let (namespace, name) = (&moved.cluster.namespace, &moved.cluster.name);
    let without: Vec<String> = target
        .of_cluster(CORE_GROUP, crate::names::MACHINE, namespace, name)
        .filter(|o| {
            o.metadata
                .name
                .as_ref()
                .is_some_and(|m| moved.machines.contains_key(m))
        })
        .filter(|o| !MachineView::read(o).has_node)
        .filter_map(|o| o.metadata.name.clone())
        .collect();
    if without.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "Machine(s) {} in {namespace} have no node in the target yet",
        without.join(", ")
    )]
}

/// The moved Cluster's Machines in the target: each adopted (same providerID), none deleted,
/// none created beyond the scale-ups pending at the move. Returns how many were created by those.
fn machines_adopted(moved: &MovedCluster, target: &Snapshot, failed: &mut Vec<String>) -> usize {
    let (namespace, name) = (&moved.cluster.namespace, &moved.cluster.name);
    let machines_now: Vec<&std::sync::Arc<DynamicObject>> = target
        .of_cluster(CORE_GROUP, crate::names::MACHINE, namespace, name)
        .collect();
    let now: BTreeMap<String, String> = machines_now
        .iter()
        .map(|o| (o.metadata.name.clone().unwrap_or_default(), provider_id(o)))
        .collect();
    for machine in machines_now
        .iter()
        .filter(|o| o.metadata.deletion_timestamp.is_some())
        .filter_map(|o| o.metadata.name.as_ref())
        .filter(|m| moved.machines.contains_key(*m))
    {
        failed.push(format!(
            "Machine {namespace}/{machine} is being deleted in the target after the move"
        ));
    }
    let created: Vec<&String> = now
        .keys()
        .filter(|m| !moved.machines.contains_key(*m))
        .collect();
    // New Machines up to the scale-ups pending at the move are those scale-ups finishing.
    let expected_new = usize::try_from(moved.new_machines_expected()).unwrap_or(0);
    let scaled_up = if created.len() <= expected_new {
        created.len()
    } else {
        0
    };
    for (machine, id) in &now {
        match moved.machines.get(machine) {
            None if scaled_up > 0 => {}
            None => failed.push(format!(
                "Machine {namespace}/{machine} was created in the target after the move: the target's controllers are provisioning new infrastructure instead of adopting"
            )),
            Some(before) if !before.is_empty() && before != id => failed.push(format!(
                "Machine {namespace}/{machine} has providerID {} in the target, {before} in the source: it is not the same machine",
                shown(id)
            )),
            Some(_) => {}
        }
    }
    for machine in moved.machines.keys().filter(|m| !now.contains_key(*m)) {
        failed.push(format!(
            "Machine {namespace}/{machine} was deleted in the target after the move"
        ));
    }

    scaled_up
}

/// The infrastructure machines keep their providerIDs in the target.
fn infrastructure_machines_kept(moved: &MovedCluster, target: &Snapshot, failed: &mut Vec<String>) {
    let namespace = &moved.cluster.namespace;
    for (key, before) in &moved.infrastructure_machines {
        let Some((kind, infra)) = key.split_once(' ') else {
            continue;
        };
        let found = target
            .kinds()
            .filter(|k| k.1 == kind)
            .find_map(|k| named(target.of_kind(&k.0, &k.1), namespace, infra));
        match found {
            // Its Machine's absence is reported already.
            None => {}
            Some(o) if !before.is_empty() && provider_id(o) != *before => failed.push(format!(
                "{kind} {namespace}/{infra} has providerID {} in the target, {before} in the source",
                shown(&provider_id(o))
            )),
            Some(_) => {}
        }
    }
}

/// The scalers report the replicas they had at the move (or those they were scaling to).
fn replicas_kept(
    moved: &MovedCluster,
    target: &Snapshot,
    cluster_in_target: Option<std::sync::Arc<DynamicObject>>,
    (failed, pending): (&mut Vec<String>, &mut Vec<String>),
) {
    let in_target = cluster_in_target.map(|o| ClusterView::read(&o));
    let control_plane = in_target.as_ref().and_then(control_plane_name);
    let replicas_now: BTreeMap<String, Option<i64>> =
        scalers(target, &moved.cluster, control_plane)
            .map(|s| (kind_name(&s.reference.kind, &s.reference.name), s.replicas))
            .collect();
    for (scaler, before) in &moved.replicas {
        let scaling_to = moved.scaling_to.get(scaler);
        match replicas_now.get(scaler) {
            None => failed.push(format!("{scaler} is not in the target")),
            Some(now) if *now != Some(*before) && scaling_to.is_none_or(|to| *now != Some(*to)) => {
                pending.push(format!(
                    "{scaler} reports {} replicas, {before} before the move{}",
                    now.map_or("no".to_string(), |n| n.to_string()),
                    scaling_to
                        .map(|to| format!(" (scaling to {to})"))
                        .unwrap_or_default()
                ))
            }
            Some(_) => {}
        }
    }
}

/// What of `moved` is still in `source`: what the move deleted there, by UID (so an object made
/// later under the same name is not it); for a record of an older version, which has no UIDs, its
/// Cluster and Machines by name.
fn left_in(source: &Snapshot, moved: &MovedCluster) -> Vec<String> {
    if moved.deleted.is_empty() {
        let (namespace, name) = (&moved.cluster.namespace, &moved.cluster.name);
        return named(source.clusters(), namespace, name)
            .into_iter()
            .chain(source.of_cluster(CORE_GROUP, crate::names::MACHINE, namespace, name))
            .map(|o| ObjectRef::of(o).kind_and_place())
            .collect();
    }
    moved
        .deleted
        .iter()
        .flat_map(|d| &d.uids)
        .filter_map(|uid| source.by_uid(uid))
        .map(|o| ObjectRef::of(o).kind_and_place())
        .collect()
}

fn shown(id: &str) -> &str {
    if id.is_empty() { "(none)" } else { id }
}

/// The condition that says a Cluster is healthy (v1beta2 `Available=True`; a v1beta1 Cluster
/// without v1beta2 conditions, `Ready=True`), or why it is not.
fn health(object: &DynamicObject) -> Result<&'static str, String> {
    let status = &object.data["status"];
    let v2 = Dialect::of(object) == Dialect::V1beta2;
    let current = conditions::current(status, v2);
    if let Some(available) = conditions::find(&current, "Available") {
        return if available.is_true() {
            Ok("Available")
        } else {
            Err(describe(available))
        };
    }
    let legacy = conditions::read(&status["conditions"]);
    match conditions::find(&legacy, "Ready") {
        Some(ready) if ready.is_true() => Ok("Ready"),
        Some(ready) => Err(describe(ready)),
        None => Err("it reports no Available or Ready condition".into()),
    }
}

fn describe(condition: &conditions::Condition) -> String {
    let mut text = format!("{}={}", condition.type_, condition.status);
    if let Some(reason) = &condition.reason {
        text.push_str(&format!(" ({reason})"));
    }
    if let Some(message) = &condition.message {
        text.push_str(&format!(": {message}"));
    }
    text
}
