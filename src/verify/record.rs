//! A moved Cluster as the source had it (`MovedCluster`: names and IDs only), kept in the
//! target as a ConfigMap, and the readings of it the checks share.

use std::collections::BTreeMap;

use kube::api::DynamicObject;
use serde::{Deserialize, Serialize};

use crate::model::{ClusterView, MachineView, ObjectRef, ScalerKind, ScalerView, cluster_name_of};
use crate::names::CORE_GROUP;
use crate::snapshot::Snapshot;

/// One moved Cluster as the source had it when the move planned it: what its Machines were
/// called and which cloud machines they were, and how many replicas its scalers reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MovedCluster {
    pub cluster: ObjectRef,
    /// Machine name → `spec.providerID` (empty when it had none yet).
    pub machines: BTreeMap<String, String>,
    /// How many of `machines` belong to the control plane.
    pub control_plane_machines: usize,
    /// Infrastructure machine (`Kind name`) → `spec.providerID`.
    pub infrastructure_machines: BTreeMap<String, String>,
    /// Control plane, MachineDeployment or MachinePool (`Kind name`) → the replicas it reported.
    pub replicas: BTreeMap<String, i64>,
    /// The same scalers → the replicas they were asked for, where that differed: a scale-up
    /// pending at the move (frozen by `kubectl capi pause`), which the target may finish.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub scaling_to: BTreeMap<String, i64>,
    /// What the move deleted from the source for this Cluster (its source UIDs, by kind and
    /// namespace: what a verification lists there). Empty in records of older versions, which
    /// are checked by the Cluster's and its Machines' names instead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deleted: Vec<DeletedObjects>,
    /// Objects of this Cluster copied to the target and kept in the source, shared with what
    /// stays there (`Kind namespace/name`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kept_in_source: Vec<String>,
    /// Between which two clusters the move ran (their `kube-system` UIDs), and the copies it
    /// made there of objects kept in the source: a later move between the same two clusters,
    /// either way, reuses such a copy instead of refusing it (and never overwrites it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub between: Option<Between>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copies: Vec<Copied>,
}

/// The two clusters of a move, by their `kube-system` UIDs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Between {
    pub source: String,
    pub target: String,
}

impl Between {
    /// The same two clusters, whichever was the source.
    pub fn same_pair(&self, other: &Between) -> bool {
        (self.source == other.source && self.target == other.target)
            || (self.source == other.target && self.target == other.source)
    }
}

/// One object a move copied and kept in the source: its UID there and its copy's in the target.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Copied {
    pub source_uid: String,
    pub target_uid: String,
}

/// Objects of one kind in one namespace that a move deleted from the source, by source UID.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeletedObjects {
    pub group: String,
    pub kind: String,
    pub namespace: String,
    pub uids: Vec<String>,
}

/// One object a move took for a Cluster, as its plan has it.
pub struct Taken<'a> {
    pub reference: &'a ObjectRef,
    pub uid: &'a str,
    /// Copied and kept in the source rather than deleted there.
    pub kept_in_source: bool,
}

impl MovedCluster {
    /// How many Machines the target may create for this Cluster: the scale-ups pending at the
    /// move, which a target released from the freeze finishes.
    pub(in crate::verify) fn new_machines_expected(&self) -> i64 {
        self.scaling_to
            .iter()
            .map(|(scaler, to)| (to - self.replicas.get(scaler).copied().unwrap_or(0)).max(0))
            .sum()
    }
}

/// `Kind name`: how the record keys an object of a Cluster's namespace.
pub(super) fn kind_name(kind: &str, name: &str) -> String {
    format!("{kind} {name}")
}

impl MovedCluster {
    /// Records `cluster` as the source `snapshot` has it.
    pub fn record(cluster: &ClusterView, snapshot: &Snapshot) -> MovedCluster {
        let (namespace, name) = (&cluster.reference.namespace, &cluster.reference.name);
        let machines: Vec<(MachineView, String)> = snapshot
            .of_cluster(CORE_GROUP, crate::names::MACHINE, namespace, name)
            .map(|o| (MachineView::read(o), provider_id(o)))
            .collect();
        let infrastructure_machines = machines
            .iter()
            .filter_map(|(m, _)| m.infrastructure_ref.as_ref())
            .filter_map(|r| {
                let object = named(snapshot.of_kind(&r.api_group, &r.kind), namespace, &r.name)?;
                Some((kind_name(&r.kind, &r.name), provider_id(object)))
            })
            .collect();
        let scalers: Vec<ScalerView> =
            scalers(snapshot, &cluster.reference, control_plane_name(cluster)).collect();
        MovedCluster {
            between: None,
            copies: Vec::new(),
            cluster: cluster.reference.clone(),
            control_plane_machines: machines
                .iter()
                .filter(|(m, _)| of_control_plane(m, cluster))
                .count(),
            machines: machines
                .into_iter()
                .map(|(m, id)| (m.reference.name, id))
                .collect(),
            infrastructure_machines,
            replicas: scalers
                .iter()
                .filter_map(|s| {
                    Some((kind_name(&s.reference.kind, &s.reference.name), s.replicas?))
                })
                .collect(),
            scaling_to: scalers
                .iter()
                .filter(|s| s.desired.is_some() && s.desired != s.replicas)
                .filter_map(|s| Some((kind_name(&s.reference.kind, &s.reference.name), s.desired?)))
                .collect(),
            deleted: Vec::new(),
            kept_in_source: Vec::new(),
        }
    }

    /// Adds what the move takes for this Cluster: deleted from the source, or kept there.
    pub fn taking<'a>(mut self, objects: impl IntoIterator<Item = Taken<'a>>) -> MovedCluster {
        let mut deleted: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
        for taken in objects {
            let reference = taken.reference;
            if taken.kept_in_source {
                self.kept_in_source.push(reference.kind_and_place());
            } else {
                deleted
                    .entry((
                        reference.group().to_string(),
                        reference.kind.clone(),
                        reference.namespace.clone(),
                    ))
                    .or_default()
                    .push(taken.uid.to_string());
            }
        }
        self.kept_in_source.sort();
        self.deleted = deleted
            .into_iter()
            .map(|((group, kind, namespace), uids)| DeletedObjects {
                group,
                kind,
                namespace,
                uids,
            })
            .collect();
        self
    }

    /// The namespaces the move deleted from for this Cluster, its own included.
    pub fn namespaces(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.cluster.namespace.as_str())
            .chain(self.deleted.iter().map(|d| d.namespace.as_str()))
    }

    /// The kinds the move deleted from the source for this Cluster: `(group, kind)`.
    pub fn deleted_kinds(&self) -> impl Iterator<Item = (&str, &str)> {
        self.deleted
            .iter()
            .map(|d| (d.group.as_str(), d.kind.as_str()))
    }
}

/// Marks a ConfigMap as a moved Cluster's record; its value is the Cluster's name.
pub use crate::names::RECORD_LABEL;
/// The record's key in the ConfigMap's data.
pub const RECORD_KEY: &str = "moved.json";
/// The most a record's JSON may weigh in its ConfigMap: a server refuses ConfigMap data over
/// 1 MiB. Past this (a Cluster of a few thousand Machines) the record leaves out the UIDs of what
/// the move deleted, and the source is checked by the Cluster's and its Machines' names.
const RECORD_LIMIT: usize = 768 * 1024;

impl MovedCluster {
    /// The name of the ConfigMap that keeps this record next to the Cluster in the target.
    pub fn record_name(&self) -> String {
        format!("{}{}", crate::names::RECORD_PREFIX, self.cluster.name)
    }

    /// The record as a ConfigMap in the target, owned by the Cluster there (`cluster_uid`): it
    /// goes when the Cluster goes and moves along with it, as clusterctl moves what a Cluster
    /// owns. Names and IDs only.
    pub fn to_configmap(&self, cluster_uid: &str, moved_at: &str) -> serde_json::Value {
        let mut text = serde_json::to_string(self).unwrap_or_default();
        if text.len() > RECORD_LIMIT {
            let lighter = MovedCluster {
                deleted: Vec::new(),
                ..self.clone()
            };
            text = serde_json::to_string(&lighter).unwrap_or_default();
        }
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": self.record_name(),
                "namespace": self.cluster.namespace,
                "labels": {RECORD_LABEL: self.cluster.name},
                "annotations": {(crate::names::MOVED_AT_ANNOTATION): moved_at},
                "ownerReferences": [{
                    "apiVersion": self.cluster.api_version,
                    "kind": self.cluster.kind,
                    "name": self.cluster.name,
                    "uid": cluster_uid,
                }],
            },
            "data": {RECORD_KEY: text},
        })
    }

    /// Whether `object` is a ConfigMap holding a moved Cluster's record.
    pub fn is_record(object: &DynamicObject) -> bool {
        object.types.as_ref().is_none_or(|t| t.kind == "ConfigMap")
            && object
                .metadata
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(RECORD_LABEL))
    }

    /// Reads a record back from its ConfigMap; `None` when it is not one.
    pub fn from_configmap(object: &DynamicObject) -> Option<MovedCluster> {
        let labelled = object
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(RECORD_LABEL));
        let text = object.data["data"][RECORD_KEY].as_str()?;
        labelled.then(|| serde_json::from_str(text).ok()).flatten()
    }
}

/// A control-plane Machine: labelled so, or controlled by the Cluster's control plane.
fn of_control_plane(machine: &MachineView, cluster: &ClusterView) -> bool {
    machine.control_plane
        || machine
            .controller
            .as_ref()
            .zip(cluster.control_plane_ref.as_ref())
            .is_some_and(|(owner, plane)| owner.kind == plane.kind && owner.name == plane.name)
}

pub(super) use crate::snapshot::index::named_in as named;

pub(super) fn control_plane_name(cluster: &ClusterView) -> Option<&str> {
    cluster.control_plane_ref.as_ref().map(|r| r.name.as_str())
}

pub(super) fn provider_id(object: &DynamicObject) -> String {
    object.data["spec"]["providerID"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The scalers of one Cluster in a snapshot whose replicas a verification compares: those
/// labelled with its name, and its control plane (by the Cluster's reference).
pub(super) fn scalers<'a>(
    snapshot: &'a Snapshot,
    cluster: &'a ObjectRef,
    control_plane: Option<&'a str>,
) -> impl Iterator<Item = ScalerView> + 'a {
    snapshot
        .kinds()
        .filter_map(|(group, kind)| Some((group, kind, crate::model::kinds::scaler(group, kind)?)))
        .filter(|(_, _, scaler)| *scaler != ScalerKind::MachineSet)
        .flat_map(move |(group, kind, scaler)| {
            // Snapshot::of_cluster's rule, and the control plane the Cluster names.
            snapshot
                .of_kind(group, kind)
                .iter()
                .filter(move |o| {
                    o.metadata.namespace.as_deref() == Some(cluster.namespace.as_str())
                        && (cluster_name_of(o).as_deref() == Some(cluster.name.as_str())
                            || (scaler == ScalerKind::ControlPlane
                                && o.metadata.name.as_deref() == control_plane))
                })
                .map(move |o| ScalerView::read(o, scaler))
        })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::verify::checks::ClusterVerification;
    use crate::verify::report::evaluate;

    const CORE: &str = "cluster.x-k8s.io/v1beta2";

    fn labelled(cluster: &str) -> Value {
        json!({"cluster.x-k8s.io/cluster-name": cluster})
    }

    fn machine(name: &str, control_plane: bool) -> Vec<Value> {
        let mut labels = labelled("prod");
        if control_plane {
            labels["cluster.x-k8s.io/control-plane"] = json!("");
        }
        let id = format!("docker:////{name}");
        vec![
            json!({"apiVersion": CORE, "kind": "Machine",
                "metadata": {"name": name, "namespace": "ns", "uid": format!("m-{name}"), "labels": labels},
                "spec": {"clusterName": "prod", "providerID": id,
                    "infrastructureRef": {"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": "DockerMachine", "name": name}},
                "status": {"nodeRef": {"name": name}}}),
            json!({"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerMachine",
                "metadata": {"name": name, "namespace": "ns", "uid": format!("d-{name}"), "labels": labelled("prod")},
                "spec": {"providerID": id}}),
        ]
    }

    /// A healthy Cluster `prod`: one control-plane Machine, two workers.
    fn healthy() -> Vec<Value> {
        let mut objects = vec![
            json!({"apiVersion": CORE, "kind": "Cluster",
                "metadata": {"name": "prod", "namespace": "ns", "uid": "c"},
                "spec": {"controlPlaneRef": {"apiGroup": "controlplane.cluster.x-k8s.io", "kind": "KubeadmControlPlane", "name": "prod"}},
                "status": {"conditions": [{"type": "Available", "status": "True"}]}}),
            json!({"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlane",
                "metadata": {"name": "prod", "namespace": "ns", "uid": "kcp"},
                "spec": {"replicas": 1}, "status": {"replicas": 1}}),
            json!({"apiVersion": CORE, "kind": "MachineDeployment",
                "metadata": {"name": "prod-md-0", "namespace": "ns", "uid": "md", "labels": labelled("prod")},
                "spec": {"clusterName": "prod", "replicas": 2}, "status": {"replicas": 2}}),
        ];
        for (name, control_plane) in [
            ("prod-cp-a", true),
            ("prod-md-0-x", false),
            ("prod-md-0-y", false),
        ] {
            objects.extend(machine(name, control_plane));
        }
        objects
    }

    fn snapshot(objects: &[Value]) -> Snapshot {
        Snapshot::from_objects(
            objects
                .iter()
                .map(|o| serde_json::from_value::<DynamicObject>(o.clone()).unwrap()),
        )
    }

    fn recorded() -> Vec<MovedCluster> {
        let source = snapshot(&healthy());
        let cluster = ClusterView::read(&source.clusters()[0]);
        vec![MovedCluster::record(&cluster, &source)]
    }

    fn verify(target: &[Value], source: &[Value]) -> ClusterVerification {
        let report = evaluate(
            &recorded(),
            &snapshot(target),
            Some(&snapshot(source)),
            " --context t",
        );
        report.clusters.into_iter().next().unwrap()
    }

    fn without(objects: Vec<Value>, kind: &str, name: &str) -> Vec<Value> {
        objects
            .into_iter()
            .filter(|o| !(o["kind"] == kind && o["metadata"]["name"] == name))
            .collect()
    }

    #[test]
    fn the_record_keeps_names_ids_and_replicas() {
        let moved = &recorded()[0];
        assert_eq!(moved.machines.len(), 3);
        assert_eq!(moved.control_plane_machines, 1);
        assert_eq!(moved.machines["prod-md-0-x"], "docker:////prod-md-0-x");
        assert_eq!(
            moved.infrastructure_machines["DockerMachine prod-cp-a"],
            "docker:////prod-cp-a"
        );
        assert_eq!(
            moved.replicas,
            BTreeMap::from([
                ("KubeadmControlPlane prod".to_string(), 1),
                ("MachineDeployment prod-md-0".to_string(), 2)
            ])
        );
    }

    #[test]
    fn the_same_machines_healthy_in_the_target_and_gone_from_the_source_verify() {
        let result = verify(&healthy(), &[]);
        assert!(result.verified, "{result:?}");
        assert_eq!(
            result.summary,
            "cluster.cluster.x-k8s.io/prod verified: 1 control-plane + 2 worker Machines adopted, Available"
        );
    }

    #[test]
    fn a_machine_created_in_the_target_fails_and_says_how_to_stop_it() {
        let mut target = healthy();
        target.extend(machine("prod-md-0-z", false));
        let result = verify(&target, &[]);
        assert!(!result.verified);
        assert_eq!(result.failed.len(), 1, "{:?}", result.failed);
        assert!(result.failed[0].starts_with(
            "Machine ns/prod-md-0-z was created in the target after the move: the target's controllers are provisioning new infrastructure instead of adopting — pause the Cluster (`kubectl capi pause prod -n ns --context t`)"
        ), "{}", result.failed[0]);
    }

    #[test]
    fn new_machines_of_a_scale_up_pending_at_the_move_are_expected_and_no_more() {
        // The MachineDeployment was asked for 3 while it had 2: a frozen scale-up.
        let mut source = healthy();
        source[2]["spec"]["replicas"] = json!(3);
        let snapshot = snapshot(&source);
        let cluster = ClusterView::read(&snapshot.clusters()[0]);
        let moved = vec![MovedCluster::record(&cluster, &snapshot)];
        assert_eq!(
            moved[0].scaling_to,
            BTreeMap::from([("MachineDeployment prod-md-0".to_string(), 3)])
        );
        let check = |target: &[Value]| {
            evaluate(&moved, &super::tests::snapshot(target), None, "")
                .clusters
                .remove(0)
        };
        // Released in the target, it finishes: one new Machine, three replicas.
        let mut target = source.clone();
        target.extend(machine("prod-md-0-z", false));
        target[2]["status"]["replicas"] = json!(3);
        let result = check(&target);
        assert!(result.verified, "{result:?}");
        assert!(
            result
                .summary
                .contains("adopted, 1 new from the scale-up pending at the move, Available"),
            "{}",
            result.summary
        );
        // Still frozen there: nothing new, and the replicas it had are fine too.
        assert!(check(&source).verified);
        // Two new Machines where one was expected: both are reported.
        target.extend(machine("prod-md-0-w", false));
        let result = check(&target);
        assert_eq!(result.failed.len(), 2, "{:?}", result.failed);
    }

    #[test]
    fn the_pause_hint_comes_once_with_the_first_machine_failure() {
        let mut target = healthy();
        target.extend(machine("prod-md-0-z", false));
        target.extend(machine("prod-md-0-w", false));
        let result = verify(&target, &[]);
        assert_eq!(result.failed.len(), 2, "{:?}", result.failed);
        assert!(result.failed[0].ends_with(
            "— pause the Cluster (`kubectl capi pause prod -n ns --context t`) and check the provider's version and credentials in the target"
        ), "{}", result.failed[0]);
        assert!(!result.failed[1].contains("pause"), "{}", result.failed[1]);
    }

    #[test]
    fn a_machine_deleted_in_the_target_fails() {
        let target = without(
            without(healthy(), "Machine", "prod-md-0-y"),
            "DockerMachine",
            "prod-md-0-y",
        );
        let result = verify(&target, &[]);
        assert_eq!(result.failed.len(), 1, "{:?}", result.failed);
        assert!(
            result.failed[0]
                .starts_with("Machine ns/prod-md-0-y was deleted in the target after the move")
        );
    }

    #[test]
    fn a_machine_being_deleted_in_the_target_fails() {
        let mut target = healthy();
        target[5]["metadata"]["deletionTimestamp"] = json!("2026-12-03T18:00:00Z");
        assert_eq!(target[5]["metadata"]["name"], "prod-md-0-x");
        let result = verify(&target, &[]);
        assert_eq!(result.failed.len(), 1, "{:?}", result.failed);
        assert!(
            result.failed[0].starts_with(
                "Machine ns/prod-md-0-x is being deleted in the target after the move"
            )
        );
    }

    #[test]
    fn an_infrastructure_machine_with_another_provider_id_fails() {
        let mut target = healthy();
        for o in &mut target {
            if o["kind"] == "DockerMachine" && o["metadata"]["name"] == "prod-cp-a" {
                o["spec"]["providerID"] = json!("docker:////someone-else");
            }
        }
        let result = verify(&target, &[]);
        assert_eq!(result.failed.len(), 1, "{:?}", result.failed);
        assert!(result.failed[0].starts_with(
            "DockerMachine ns/prod-cp-a has providerID docker:////someone-else in the target, docker:////prod-cp-a in the source"
        ));
    }

    #[test]
    fn health_and_replicas_not_there_yet_are_pending_not_failed() {
        let mut target = healthy();
        target[0]["status"]["conditions"] =
            json!([{"type": "Available", "status": "False", "reason": "ControlPlaneNotAvailable"}]);
        target[2]["status"]["replicas"] = json!(1);
        target[1]["status"] = json!({});
        let result = verify(&target, &[]);
        assert!(!result.verified && result.failed.is_empty());
        assert_eq!(
            result.pending,
            [
                "Cluster ns/prod is not healthy yet: Available=False (ControlPlaneNotAvailable)",
                "KubeadmControlPlane prod reports no replicas, 1 before the move",
                "MachineDeployment prod-md-0 reports 1 replicas, 2 before the move"
            ]
        );
    }

    #[test]
    fn a_v1beta1_cluster_is_healthy_when_ready() {
        let mut target = healthy();
        target[0]["apiVersion"] = json!("cluster.x-k8s.io/v1beta1");
        target[0]["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
        let result = verify(&target, &[]);
        assert!(result.verified);
        assert!(
            result.summary.ends_with("Machines adopted, Ready"),
            "{}",
            result.summary
        );
        target[0]["status"] = json!({"conditions": [{"type": "Ready", "status": "False", "reason": "WaitingForControlPlane"}]});
        assert_eq!(
            verify(&target, &[]).pending,
            ["Cluster ns/prod is not healthy yet: Ready=False (WaitingForControlPlane)"]
        );
    }

    #[test]
    fn the_record_reads_back_from_its_configmap_and_nothing_else_does() {
        let moved = &recorded()[0];
        let configmap = moved.to_configmap("target-uid", "2026-12-03T18:00:00Z");
        assert_eq!(configmap["metadata"]["name"], "kubectl-capi-moved-prod");
        assert_eq!(
            configmap["metadata"]["ownerReferences"][0]["uid"],
            "target-uid"
        );
        let object: DynamicObject = serde_json::from_value(configmap.clone()).unwrap();
        assert_eq!(MovedCluster::from_configmap(&object).as_ref(), Some(moved));
        let mut unlabelled = configmap;
        unlabelled["metadata"]["labels"] = json!({});
        let object: DynamicObject = serde_json::from_value(unlabelled).unwrap();
        assert_eq!(MovedCluster::from_configmap(&object), None);
    }

    #[test]
    fn the_text_has_a_line_per_verified_cluster_and_one_per_check_otherwise() {
        let mut target = healthy();
        target.extend(machine("prod-md-0-z", false));
        target[0]["status"]["conditions"] = json!([{"type": "Available", "status": "False"}]);
        let recorded = recorded();
        let report = evaluate(&recorded, &snapshot(&target), None, "");
        assert!(!report.source_checked && report.failed());
        let text = report.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "cluster.cluster.x-k8s.io/prod not verified: 1 failed, 1 pending"
        );
        assert!(lines[1].starts_with("  failed: Machine ns/prod-md-0-z was created"));
        assert_eq!(
            lines[2],
            "  pending: Cluster ns/prod is not healthy yet: Available=False"
        );
        assert_eq!(lines.len(), 3);
        let verified = evaluate(&recorded, &snapshot(&healthy()), None, "");
        assert_eq!(verified.text().lines().count(), 1);
        assert!(verified.verified());
    }

    #[test]
    fn what_is_left_in_the_source_fails() {
        let source: Vec<Value> = healthy()
            .into_iter()
            .filter(|o| o["kind"] == "Cluster" || o["metadata"]["name"] == "prod-md-0-x")
            .collect();
        let result = verify(&healthy(), &source);
        assert_eq!(
            result.failed,
            [
                "still in the source: Cluster ns/prod, Machine ns/prod-md-0-x — run the move again with --resume to finish deleting"
            ]
        );
    }

    #[test]
    fn what_the_move_deleted_is_found_by_uid_and_what_it_kept_is_listed() {
        let refer = |api_version: &str, kind: &str, name: &str| ObjectRef {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: "ns".into(),
            name: name.into(),
        };
        let taken = [
            (refer(CORE, "Cluster", "prod"), "c", false),
            (refer("v1", "Secret", "prod-kubeconfig"), "s", false),
            (refer("v1", "Secret", "prod-ca"), "s2", false),
            (refer(CORE, "ClusterClass", "quick-start"), "cc", true),
        ];
        let moved = recorded()
            .remove(0)
            .taking(taken.iter().map(|(reference, uid, kept)| Taken {
                reference,
                uid,
                kept_in_source: *kept,
            }));
        let of = |group: &str, kind: &str, uids: &[&str]| DeletedObjects {
            group: group.into(),
            kind: kind.into(),
            namespace: "ns".into(),
            uids: uids.iter().map(|u| u.to_string()).collect(),
        };
        assert_eq!(
            moved.deleted,
            [
                of("", "Secret", &["s", "s2"]),
                of(CORE_GROUP, "Cluster", &["c"])
            ]
        );
        assert_eq!(moved.kept_in_source, ["ClusterClass ns/quick-start"]);

        let secret = |name: &str, uid: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "ns", "uid": uid}});
        let source = [
            // The moved Secret, still there.
            secret("prod-kubeconfig", "s"),
            // Another Secret of a moved Secret's name, made after the move: not the moved one.
            secret("prod-ca", "made-later"),
            json!({"apiVersion": CORE, "kind": "ClusterClass", "metadata": {"name": "quick-start", "namespace": "ns", "uid": "cc"}}),
        ];
        let report = evaluate(
            std::slice::from_ref(&moved),
            &snapshot(&healthy()),
            Some(&snapshot(&source)),
            "",
        );
        let result = &report.clusters[0];
        assert_eq!(
            result.failed,
            [
                "still in the source: Secret ns/prod-kubeconfig — run the move again with --resume to finish deleting"
            ]
        );
        assert_eq!(result.kept_in_source, ["ClusterClass ns/quick-start"]);
        assert!(
            report.text().contains(
                "  copied and kept in the source (shared with what stays there): ClusterClass ns/quick-start\n"
            ),
            "{}",
            report.text()
        );

        // Gone from the source: verified, and the shared object still listed.
        let report = evaluate(
            std::slice::from_ref(&moved),
            &snapshot(&healthy()),
            Some(&snapshot(&source[1..])),
            "",
        );
        assert!(report.verified(), "{}", report.text());
        assert_eq!(
            report.clusters[0].kept_in_source,
            ["ClusterClass ns/quick-start"]
        );
    }

    #[test]
    fn a_record_too_heavy_for_a_configmap_leaves_out_the_deleted_uids() {
        let refer = ObjectRef {
            api_version: "v1".into(),
            kind: "Secret".into(),
            namespace: "ns".into(),
            name: "s".into(),
        };
        let uids: Vec<String> = (0..40_000).map(|n| format!("uid-{n:032}")).collect();
        let heavy = recorded().remove(0).taking(uids.iter().map(|uid| Taken {
            reference: &refer,
            uid,
            kept_in_source: false,
        }));
        let read_back = |moved: &MovedCluster| {
            let configmap: DynamicObject =
                serde_json::from_value(moved.to_configmap("c", "now")).unwrap();
            let text = configmap.data["data"][RECORD_KEY].as_str().unwrap().len();
            (MovedCluster::from_configmap(&configmap).unwrap(), text)
        };
        let (back, size) = read_back(&heavy);
        assert!(size <= RECORD_LIMIT, "{size}");
        assert!(back.deleted.is_empty());
        assert_eq!(back.machines, heavy.machines);

        let light = recorded()
            .remove(0)
            .taking(uids[..10].iter().map(|uid| Taken {
                reference: &refer,
                uid,
                kept_in_source: false,
            }));
        assert_eq!(read_back(&light).0, light);
    }
}
