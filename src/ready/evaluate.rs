//! The readiness evaluator: a pure function over a snapshot, shared with `move`'s preflight.
//! clusterctl's own checks come first, with its wording; then what clusterctl misses.

use std::collections::BTreeSet;

use kube::api::DynamicObject;

use super::next_steps::NextSteps;
use super::scaling::{frozen_state, scaling};
use super::scope::{Checks, ClusterScope};
use crate::model::{
    ClusterClassView, ClusterView, HealthCheckView, MachineView, ObjectRef, has_annotation, kinds,
};
use crate::names::{BLOCK_MOVE_ANNOTATION, CORE_GROUP, PAUSED_ANNOTATION, clusterctl};
use crate::settings::shell_word;
use crate::snapshot::Snapshot;

pub use super::report::{
    Check, CheckId, CheckStatus, ClusterReport, Frozen, MachineCount, Options, Report,
    UnfinishedMove,
};

pub fn evaluate(snapshot: &Snapshot, options: &Options) -> Report {
    let mut clusters: Vec<&DynamicObject> =
        snapshot.clusters().iter().map(|c| c.as_ref()).collect();
    if !options.clusters.is_empty() {
        clusters.retain(|c| {
            options.clusters.iter().any(|(ns, n)| {
                c.metadata.namespace.as_deref() == Some(ns.as_str())
                    && c.metadata.name.as_deref() == Some(n.as_str())
            })
        });
    }
    clusters.sort_by_key(|c| (c.metadata.namespace.clone(), c.metadata.name.clone()));
    let reports: Vec<ClusterReport> = clusters
        .iter()
        .map(|c| evaluate_cluster(snapshot, c, options))
        .collect();
    Report {
        api_version: crate::names::OUTPUT_API_VERSION,
        kind: "ReadinessReport",
        // An empty scope blocks nothing (clusterctl moves it); Clusters named but not found are
        // not ready.
        ready: reports.iter().all(|r| r.ready)
            && (options.clusters.is_empty() || !reports.is_empty()),
        clusters: reports,
    }
}

fn evaluate_cluster(
    snapshot: &Snapshot,
    object: &DynamicObject,
    options: &Options,
) -> ClusterReport {
    let cluster = ClusterView::read(object);
    let namespace = cluster.reference.namespace.clone();
    let scope = ClusterScope {
        snapshot,
        namespace: &namespace,
        cluster: &cluster,
        cluster_object: object,
    };
    let mut checks = Checks {
        list: Vec::new(),
        next: NextSteps {
            namespace: namespace.clone(),
            name: cluster.reference.name.clone(),
            flags: options.flags.clone(),
            waiting: options.waiting,
            mid_move: super::report::mid_move(&cluster, &options.unfinished_moves),
        },
    };
    provisioning(&cluster, &mut checks);
    let machines = machines(&scope, options, &mut checks);
    let mut scaling = scaling(&scope, &machines, &mut checks);
    remediation(&scope, &machines, &mut scaling.frozen, &mut checks);
    paused(&cluster, snapshot, &options.unfinished_moves, &mut checks);
    annotations_and_owners(&scope, snapshot, &mut checks);

    let mut checks = checks.list;
    checks.sort_by_key(|c| c.status);
    let ready = !checks.iter().any(|c| c.status == CheckStatus::Fail);
    ClusterReport {
        namespace: cluster.reference.namespace.clone(),
        name: cluster.reference.name.clone(),
        ready,
        machines: MachineCount {
            total: machines.len(),
            with_node: machines.iter().filter(|m| m.has_node).count(),
        },
        frozen: scaling.frozen,
        checks,
        control_plane: scaling.control_plane,
        workers: scaling.workers,
        paused: cluster.paused,
    }
}

/// clusterctl's P1–P3.
fn provisioning(cluster: &ClusterView, checks: &mut Checks) {
    let gvk = cluster.reference.gvk_string();
    let (ns, name) = (&cluster.reference.namespace, &cluster.reference.name);
    // clusterctl P1–P3: they short-circuit per Cluster, as clusterctl's loop does.
    if !cluster.infrastructure_provisioned {
        checks.push(
            CheckId::InfrastructureProvisioned,
            CheckStatus::Fail,
            &cluster.reference,
            checks
                .next
                .until_over(clusterctl::infrastructure(&gvk, ns, name)),
        );
    } else {
        checks.push(
            CheckId::InfrastructureProvisioned,
            CheckStatus::Pass,
            &cluster.reference,
            "infrastructure provisioned".into(),
        );
        let v1beta1 = cluster.dialect == crate::model::Dialect::V1beta1;
        if cluster.control_plane_initialized_condition != Some(true) {
            checks.push(
                CheckId::ControlPlaneInitialized,
                CheckStatus::Fail,
                &cluster.reference,
                checks
                    .next
                    .until_over(clusterctl::control_plane_not_initialized(&gvk, ns, name)),
            );
        } else if cluster.control_plane_ref.is_some() && !cluster.control_plane_initialized {
            let message = if v1beta1 {
                clusterctl::control_plane_not_ready(&gvk, ns, name)
            } else {
                clusterctl::control_plane_not_initialized(&gvk, ns, name)
            };
            checks.push(
                CheckId::ControlPlaneInitialized,
                CheckStatus::Fail,
                &cluster.reference,
                checks.next.until_over(message),
            );
        } else {
            checks.push(
                CheckId::ControlPlaneInitialized,
                CheckStatus::Pass,
                &cluster.reference,
                "control plane initialized".into(),
            );
        }
    }
}

/// clusterctl's P4, Machines being deleted, and node health; returns the Cluster's Machines.
fn machines(scope: &ClusterScope<'_>, options: &Options, checks: &mut Checks) -> Vec<MachineView> {
    let cluster = scope.cluster;
    // clusterctl P4, every Machine; plus deletions and node health.
    let machines: Vec<MachineView> = scope
        .of(CORE_GROUP, crate::names::MACHINE)
        .into_iter()
        .map(MachineView::read)
        .collect();
    for machine in &machines {
        if !machine.has_node {
            let message = clusterctl::node(
                &machine.reference.gvk_string(),
                &machine.reference.namespace,
                &machine.reference.name,
            );
            checks.push(
                CheckId::MachineNode,
                CheckStatus::Fail,
                &machine.reference,
                checks.next.until_over(message),
            );
        }
        if machine.deleting {
            checks.push(
                CheckId::MachineDeleting,
                CheckStatus::Fail,
                &machine.reference,
                format!(
                    "{} is being deleted; a move would recreate it in the target — wait until it is gone with {}",
                    machine.reference.kind_and_place(),
                    checks.next.wait()
                ),
            );
        }
        if machine.has_node {
            let unhealthy = ["NodeHealthy", "NodeReady"]
                .iter()
                .find(|t| machine.condition(t).is_some_and(|c| !c.is_true()));
            if let Some(condition) = unhealthy {
                checks.push(
                    CheckId::NodeHealth,
                    CheckStatus::fail_or_warn(options.strict),
                    &machine.reference,
                    format!(
                        "{} reports {condition}=False{}",
                        machine.reference.kind_and_place(),
                        if options.strict {
                            "; repair the node, or check without --strict to let it only warn"
                        } else {
                            ""
                        }
                    ),
                );
            }
        }
    }
    let with_node = machines.iter().filter(|m| m.has_node).count();
    if !machines.is_empty() && with_node == machines.len() {
        checks.push(
            CheckId::MachineNode,
            CheckStatus::Pass,
            &cluster.reference,
            format!("all {} Machines have a node", machines.len()),
        );
    }

    machines
}

/// MachineHealthChecks holding unhealthy Machines.
fn remediation(
    scope: &ClusterScope<'_>,
    machines: &[MachineView],
    frozen: &mut Vec<Frozen>,
    checks: &mut Checks,
) {
    // MachineHealthCheck remediation in progress.
    for object in scope.of(CORE_GROUP, kinds::REMEDIATION) {
        let mhc = HealthCheckView::read(object);
        if let Some(f) = frozen_state(object, mhc.paused_condition) {
            frozen.push(f);
        }
        let marked: Vec<&MachineView> = machines
            .iter()
            .filter(|m| m.condition("OwnerRemediated").is_some_and(|c| !c.is_true()))
            .collect();
        if mhc.paused_annotation {
            // Frozen: it cannot remediate, and its status is as old as the freeze — what the
            // Machines say is told, and no freeze is suggested.
            if !marked.is_empty() {
                checks.push(
                    CheckId::Remediation,
                    CheckStatus::Warn,
                    &mhc.reference,
                    format!(
                        "{} is frozen with {} Machine(s) marked unhealthy; it remediates them once resumed (kubectl capi resume), wherever it then lives",
                        mhc.reference.kind_and_place(),
                        marked.len()
                    ),
                );
            }
        } else if mhc.unhealthy() > 0 || !marked.is_empty() {
            checks.push(
                CheckId::Remediation,
                CheckStatus::Fail,
                &mhc.reference,
                checks.next.or_freeze(
                    format!(
                        "{} holds {} Machine(s) unhealthy and remediation may delete and recreate Machines",
                        mhc.reference.kind_and_place(),
                        mhc.unhealthy().max(marked.len() as i64),
                    ),
                    "wait for it to finish or freeze it with",
                ),
            );
        }
    }
}

/// Paused Clusters and ClusterClasses.
fn paused(
    cluster: &ClusterView,
    snapshot: &Snapshot,
    unfinished_moves: &[UnfinishedMove],
    checks: &mut Checks,
) {
    let (ns, name) = (&cluster.reference.namespace, &cluster.reference.name);
    // Paused Cluster / ClusterClass: clusterctl ≥ 1.12 refuses to move them.
    if cluster.is_paused() {
        let paused_by_move = UnfinishedMove::of(unfinished_moves, (ns, name));
        let next = match paused_by_move {
            Some(unfinished) => format!(
                "a kubectl-capi move paused it and did not finish: continue it with `{}` or undo it with `{}`",
                unfinished.resume, unfinished.rollback
            ),
            // A copy a move made paused: unpausing it by hand lets its controllers act while
            // the move still writes (new Machines, copies deleted). Never suggested.
            None if cluster.moved_by.is_some() => format!(
                "it is a copy that the kubectl-capi move {} created paused and has not finished: do not unpause it by hand — continue that move with --resume or undo it with --rollback, run against its source cluster (kubectl capi ready there prints both commands)",
                cluster.moved_by.as_deref().unwrap_or_default()
            ),
            None => format!(
                "unpause it with {} (kubectl capi pause freezes scaling without pausing the Cluster)",
                unpause_cluster(cluster, &checks.next)
            ),
        };
        checks.push(
            CheckId::ClusterPaused,
            CheckStatus::Fail,
            &cluster.reference,
            format!(
                "{}; {next}",
                clusterctl::paused_clusters(&format!("{ns}/{name}"))
            ),
        );
    }
    if let Some((class_ns, class_name)) = &cluster.topology_class {
        let class_ns = class_ns.clone().unwrap_or_else(|| ns.clone());
        if let Some(class) = snapshot.named(
            (CORE_GROUP, crate::names::CLUSTER_CLASS),
            &class_ns,
            class_name,
        ) {
            let view = ClusterClassView::read(class);
            if view.paused_annotation {
                checks.push(
                    CheckId::ClusterclassPaused,
                    CheckStatus::Fail,
                    &view.reference,
                    format!(
                        "{}; unpause it with {}",
                        clusterctl::paused_cluster_classes(&format!("{class_ns}/{class_name}")),
                        checks.next.kubectl(
                            &format!(
                                "annotate {} {} {PAUSED_ANNOTATION}-",
                                crate::names::qualified("clusterclasses", CORE_GROUP),
                                shell_word(class_name)
                            ),
                            &class_ns
                        )
                    ),
                );
            }
        }
    }
}

/// The command that unpauses a Cluster: its `spec.paused`, and the annotation when it has it.
fn unpause_cluster(cluster: &ClusterView, next: &NextSteps) -> String {
    let name = shell_word(&cluster.reference.name);
    let ns = &cluster.reference.namespace;
    let clusters = crate::names::qualified("clusters", CORE_GROUP);
    let spec = next.kubectl(
        &format!(r#"patch {clusters} {name} --type merge -p '{{"spec":{{"paused":false}}}}'"#),
        ns,
    );
    let annotation = next.kubectl(
        &format!("annotate {clusters} {name} {PAUSED_ANNOTATION}-"),
        ns,
    );
    match (cluster.paused, cluster.paused_annotation) {
        (true, true) => format!("{spec} and {annotation}"),
        (false, true) => annotation,
        _ => spec,
    }
}

/// block-move annotations (information) and owner references to objects that do not exist.
fn annotations_and_owners(scope: &ClusterScope<'_>, snapshot: &Snapshot, checks: &mut Checks) {
    // block-move (information) and dangling owner references.
    let listed: BTreeSet<(String, String)> = snapshot.kinds().cloned().collect();
    for object in scope.all_objects() {
        let reference = ObjectRef::of(object);
        if has_annotation(object, BLOCK_MOVE_ANNOTATION) {
            checks.push(
                CheckId::BlockMove,
                CheckStatus::Info,
                &reference,
                format!(
                    "{} carries {BLOCK_MOVE_ANNOTATION}; its provider removes it once it sees the Cluster paused, which move does and then waits for",
                    reference.kind_and_place()
                ),
            );
        }
        for owner in object.metadata.owner_references.iter().flatten() {
            let group = crate::names::group_of(&owner.api_version).to_string();
            if listed.contains(&(group, owner.kind.clone()))
                && snapshot.by_uid(&owner.uid).is_none()
            {
                checks.push(
                    CheckId::DanglingOwner,
                    CheckStatus::Fail,
                    &reference,
                    format!(
                        "{} names a missing owner {} {} (uid {}); clusterctl move fails on it (\"an empty namespace may not be set\") — remove the reference or restore the owner",
                        reference.kind_and_place(),
                        owner.kind,
                        owner.name,
                        owner.uid
                    ),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// Fixtures of one healthy, provisioned cluster in either dialect; tests break one thing each.
    struct Fixture {
        v2: bool,
        objects: Vec<Value>,
    }

    impl Fixture {
        fn new(v2: bool) -> Fixture {
            let version = if v2 { "v1beta2" } else { "v1beta1" };
            let reference = |group: &str, kind: &str, name: &str| {
                if v2 {
                    json!({"apiGroup": group, "kind": kind, "name": name})
                } else {
                    json!({"apiVersion": format!("{group}/{version}"), "kind": kind, "name": name, "namespace": "ns"})
                }
            };
            let cluster_status = if v2 {
                json!({"initialization": {"infrastructureProvisioned": true, "controlPlaneInitialized": true},
                    "conditions": [{"type": "ControlPlaneInitialized", "status": "True"}]})
            } else {
                json!({"infrastructureReady": true, "controlPlaneReady": true,
                    "conditions": [{"type": "ControlPlaneInitialized", "status": "True", "severity": ""}]})
            };
            let mut objects = vec![
                json!({"apiVersion": format!("cluster.x-k8s.io/{version}"), "kind": "Cluster",
                    "metadata": {"name": "c1", "namespace": "ns", "uid": "cluster-uid"},
                    "spec": {"controlPlaneRef": reference("controlplane.cluster.x-k8s.io", "KubeadmControlPlane", "c1-cp"),
                        "infrastructureRef": reference("infrastructure.cluster.x-k8s.io", "DockerCluster", "c1")},
                    "status": cluster_status}),
                json!({"apiVersion": format!("controlplane.cluster.x-k8s.io/{version}"), "kind": "KubeadmControlPlane",
                    "metadata": {"name": "c1-cp", "namespace": "ns", "uid": "kcp-uid", "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
                    "spec": {"replicas": 1}}),
                json!({"apiVersion": format!("infrastructure.cluster.x-k8s.io/{version}"), "kind": "DockerCluster",
                    "metadata": {"name": "c1", "namespace": "ns", "uid": "dc-uid", "labels": {"cluster.x-k8s.io/cluster-name": "c1"}}}),
                json!({"apiVersion": format!("cluster.x-k8s.io/{version}"), "kind": "MachineDeployment",
                    "metadata": {"name": "md", "namespace": "ns", "uid": "md-uid"}, "spec": {"clusterName": "c1", "replicas": 1}}),
                json!({"apiVersion": format!("cluster.x-k8s.io/{version}"), "kind": "MachineSet",
                    "metadata": {"name": "ms", "namespace": "ns", "uid": "ms-uid",
                        "ownerReferences": [{"apiVersion": format!("cluster.x-k8s.io/{version}"), "kind": "MachineDeployment", "name": "md", "uid": "md-uid", "controller": true}]},
                    "spec": {"clusterName": "c1", "replicas": 1}}),
            ];
            let mut fixture = Fixture {
                v2,
                objects: Vec::new(),
            };
            objects.push(fixture.machine("cp-1", "KubeadmControlPlane", "c1-cp", "kcp-uid", true));
            objects.push(fixture.machine("w-1", "MachineSet", "ms", "ms-uid", true));
            fixture.objects = objects;
            fixture
        }

        fn machine(
            &self,
            name: &str,
            owner_kind: &str,
            owner: &str,
            owner_uid: &str,
            node: bool,
        ) -> Value {
            let version = if self.v2 { "v1beta2" } else { "v1beta1" };
            let group = if owner_kind == "KubeadmControlPlane" {
                "controlplane.cluster.x-k8s.io"
            } else {
                "cluster.x-k8s.io"
            };
            let mut labels = json!({"cluster.x-k8s.io/cluster-name": "c1"});
            if owner_kind == "KubeadmControlPlane" {
                labels["cluster.x-k8s.io/control-plane"] = json!("");
            }
            let node_ref = if self.v2 {
                json!({"name": format!("node-{name}")})
            } else {
                json!({"kind": "Node", "name": format!("node-{name}")})
            };
            let conditions = json!([{"type": "NodeHealthy", "status": "True"}, {"type": "NodeReady", "status": "True"}]);
            let status = match (node, self.v2) {
                (true, true) => json!({"nodeRef": node_ref, "conditions": conditions}),
                (true, false) => {
                    json!({"nodeRef": node_ref, "v1beta2": {"conditions": conditions}})
                }
                (false, _) => json!({}),
            };
            json!({"apiVersion": format!("cluster.x-k8s.io/{version}"), "kind": "Machine",
                "metadata": {"name": name, "namespace": "ns", "uid": format!("{name}-uid"), "labels": labels,
                    "ownerReferences": [{"apiVersion": format!("{group}/{version}"), "kind": owner_kind, "name": owner, "uid": owner_uid, "controller": true}]},
                "spec": {"clusterName": "c1"}, "status": status})
        }

        fn edit(&mut self, kind: &str, name: &str, f: impl FnOnce(&mut Value)) -> &mut Self {
            let object = self
                .objects
                .iter_mut()
                .find(|o| o["kind"] == kind && o["metadata"]["name"] == name)
                .expect("fixture object");
            f(object);
            self
        }

        fn report(&self, strict: bool) -> ClusterReport {
            let objects = self
                .objects
                .iter()
                .map(|o| serde_json::from_value::<DynamicObject>(o.clone()).unwrap());
            let snapshot = Snapshot::from_objects(objects);
            let report = evaluate(
                &snapshot,
                &Options {
                    clusters: Vec::new(),
                    strict,
                    // Suggested commands repeat the user's connection flags.
                    flags: " --context src".into(),
                    ..Options::default()
                },
            );
            assert_eq!(report.clusters.len(), 1);
            report.clusters.into_iter().next().unwrap()
        }
    }

    fn failing(report: &ClusterReport) -> Vec<(&'static str, String)> {
        report
            .checks
            .iter()
            .filter(|c| c.status == CheckStatus::Fail)
            .map(|c| (c.check.as_str(), c.message.clone()))
            .collect()
    }

    fn both(mut test: impl FnMut(bool)) {
        test(true);
        test(false);
    }

    #[test]
    fn a_provisioned_cluster_is_ready() {
        both(|v2| {
            let report = Fixture::new(v2).report(false);
            assert!(report.ready, "{:?}", report.checks);
            assert_eq!(
                report.machines,
                MachineCount {
                    total: 2,
                    with_node: 2
                }
            );
            assert!(report.checks.iter().all(|c| c.status == CheckStatus::Pass));
        });
    }

    #[test]
    fn infrastructure_not_provisioned_uses_clusterctl_wording_and_short_circuits() {
        both(|v2| {
            let mut f = Fixture::new(v2);
            f.edit("Cluster", "c1", |c| {
                if v2 {
                    c["status"]["initialization"]["infrastructureProvisioned"] = json!(false);
                    c["status"]["conditions"] = json!([]);
                } else {
                    c["status"]["infrastructureReady"] = json!(false);
                    c["status"]["conditions"] = json!([]);
                }
            });
            let version = if v2 { "v1beta2" } else { "v1beta1" };
            let report = f.report(false);
            assert_eq!(
                failing(&report),
                vec![(
                    "infrastructure-provisioned",
                    format!(
                        "cannot start the move operation while \"cluster.x-k8s.io/{version}, Kind=Cluster\" ns/c1 is still provisioning the infrastructure; wait for it with `kubectl capi ready c1 -n ns --wait --context src`"
                    )
                )]
            );
        });
    }

    #[test]
    fn control_plane_condition_and_field() {
        both(|v2| {
            let version = if v2 { "v1beta2" } else { "v1beta1" };
            let mut missing = Fixture::new(v2);
            missing.edit("Cluster", "c1", |c| c["status"]["conditions"] = json!([]));
            assert_eq!(
                failing(&missing.report(false)),
                vec![(
                    "control-plane-initialized",
                    format!(
                        "cannot start the move operation while the control plane for \"cluster.x-k8s.io/{version}, Kind=Cluster\" ns/c1 is not yet initialized; wait for it with `kubectl capi ready c1 -n ns --wait --context src`"
                    )
                )]
            );

            let mut field = Fixture::new(v2);
            field.edit("Cluster", "c1", |c| {
                if v2 {
                    c["status"]["initialization"]["controlPlaneInitialized"] = json!(false)
                } else {
                    c["status"]["controlPlaneReady"] = json!(false)
                }
            });
            let expected = if v2 {
                "is not yet initialized"
            } else {
                "is not yet ready"
            };
            let failures = failing(&field.report(false));
            assert_eq!(failures.len(), 1);
            assert!(
                failures[0].1.ends_with(&format!(
                    "{expected}; wait for it with `kubectl capi ready c1 -n ns --wait --context src`"
                )),
                "{failures:?}"
            );
        });
    }

    #[test]
    fn machines_without_node_and_being_deleted_block() {
        both(|v2| {
            let mut f = Fixture::new(v2);
            let machine = f.machine("w-2", "MachineSet", "ms", "ms-uid", false);
            f.objects.push(machine);
            f.edit("MachineSet", "ms", |s| s["spec"]["replicas"] = json!(2));
            f.edit("MachineDeployment", "md", |d| {
                d["spec"]["replicas"] = json!(2)
            });
            f.edit("Machine", "cp-1", |m| {
                m["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z")
            });
            let report = f.report(false);
            let checks: Vec<&str> = failing(&report).iter().map(|(c, _)| *c).collect();
            assert!(checks.contains(&"machine-node"));
            assert!(checks.contains(&"machine-deleting"));
            assert!(
                failing(&report).iter().any(
                    |(_, m)| m.contains("Kind=Machine\" ns/w-2 is still provisioning the node")
                )
            );
            assert_eq!(
                report.machines,
                MachineCount {
                    total: 3,
                    with_node: 2
                }
            );
        });
    }

    #[test]
    fn scaling_blocks_until_frozen_then_warns() {
        both(|v2| {
            let mut f = Fixture::new(v2);
            f.edit("KubeadmControlPlane", "c1-cp", |k| {
                k["spec"]["replicas"] = json!(3)
            });
            let report = f.report(false);
            let scaling: Vec<String> = failing(&report)
                .into_iter()
                .filter(|(c, _)| *c == "scaling")
                .map(|(_, m)| m)
                .collect();
            assert_eq!(
                scaling,
                vec![
                    "KubeadmControlPlane ns/c1-cp is scaling up (1 of 3 Machines); freeze its scaling with `kubectl capi pause c1 -n ns --context src`"
                ]
            );

            f.edit("KubeadmControlPlane", "c1-cp", |k| {
                k["metadata"]["annotations"] =
                    json!({"cluster.x-k8s.io/paused": "", "kubectl-capi.dev/frozen": "{}"});
                let conditions = json!([{"type": "Paused", "status": "True"}]);
                if v2 {
                    k["status"] = json!({"conditions": conditions})
                } else {
                    k["status"] = json!({"v1beta2": {"conditions": conditions}})
                }
            });
            let frozen = f.report(false);
            assert!(frozen.ready, "{:?}", failing(&frozen));
            assert_eq!(frozen.frozen.len(), 1);
            assert_eq!(frozen.frozen[0].acknowledged, Some(true));
            assert!(frozen.frozen[0].by_kubectl_capi);
            assert!(frozen.checks.iter().any(|c| {
                c.check == "scaling"
                    && c.status == CheckStatus::Warn
                    && c.message
                        .contains("continues once resumed (kubectl capi resume)")
            }));
        });
    }

    #[test]
    fn a_machine_pool_is_held_to_the_replicas_its_status_reports() {
        both(|v2| {
            let version = if v2 { "v1beta2" } else { "v1beta1" };
            let mut f = Fixture::new(v2);
            f.objects.push(json!({"apiVersion": format!("cluster.x-k8s.io/{version}"), "kind": "MachinePool",
                "metadata": {"name": "mp", "namespace": "ns", "uid": "mp-uid", "labels": {"cluster.x-k8s.io/cluster-name": "c1"}},
                "spec": {"clusterName": "c1", "replicas": 3}}));
            let scaling = |f: &Fixture| -> Vec<String> {
                failing(&f.report(false))
                    .into_iter()
                    .filter(|(c, _)| *c == "scaling")
                    .map(|(_, m)| m)
                    .collect()
            };
            assert_eq!(
                scaling(&f),
                [
                    "MachinePool ns/mp is not yet provisioned (its status reports no replicas; it wants 3); freeze its scaling with `kubectl capi pause c1 -n ns --context src`"
                ]
            );
            f.edit("MachinePool", "mp", |p| {
                p["status"] = json!({"replicas": 1})
            });
            assert_eq!(
                scaling(&f),
                [
                    "MachinePool ns/mp is scaling up (1 of 3 replicas); freeze its scaling with `kubectl capi pause c1 -n ns --context src`"
                ]
            );
            f.edit("MachinePool", "mp", |p| {
                p["status"] = json!({"replicas": 3})
            });
            assert!(
                scaling(&f).is_empty(),
                "no Machines needed: {:?}",
                scaling(&f)
            );
        });
    }

    #[test]
    fn machine_set_scaling_and_unacknowledged_freeze() {
        let mut f = Fixture::new(true);
        f.edit("MachineSet", "ms", |s| {
            s["spec"]["replicas"] = json!(2);
            s["metadata"]["annotations"] = json!({"cluster.x-k8s.io/paused": ""});
        });
        f.edit("MachineDeployment", "md", |d| {
            d["spec"]["replicas"] = json!(2)
        });
        let report = f.report(false);
        // The MachineDeployment is not frozen: it can still change its MachineSet.
        assert_eq!(
            failing(&report)
                .iter()
                .filter(|(c, _)| *c == "scaling")
                .count(),
            1
        );
        assert_eq!(
            report.frozen[0].acknowledged, None,
            "no Paused condition reported"
        );
        assert!(!report.frozen[0].by_kubectl_capi);
    }

    #[test]
    fn paused_cluster_and_class_are_refused_like_clusterctl() {
        both(|v2| {
            let mut f = Fixture::new(v2);
            f.edit("Cluster", "c1", |c| {
                c["spec"]["paused"] = json!(true);
                if v2 {
                    c["spec"]["topology"] = json!({"classRef": {"name": "cc"}})
                } else {
                    c["spec"]["topology"] = json!({"class": "cc"})
                }
            });
            let version = if v2 { "v1beta2" } else { "v1beta1" };
            f.objects.push(json!({"apiVersion": format!("cluster.x-k8s.io/{version}"), "kind": "ClusterClass",
                "metadata": {"name": "cc", "namespace": "ns", "uid": "cc-uid", "annotations": {"cluster.x-k8s.io/paused": ""}}}));
            let failures = failing(&f.report(false));
            assert!(failures.iter().any(|(c, m)| *c == "cluster-paused"
                && m.starts_with(
                    "cannot start operation while the following Clusters are paused: ns/c1"
                )));
            assert!(failures.iter().any(|(c, m)| *c == "cluster-paused"
                && m.ends_with(
                    r#"unpause it with `kubectl patch clusters.cluster.x-k8s.io c1 --type merge -p '{"spec":{"paused":false}}' -n ns --context src` (kubectl capi pause freezes scaling without pausing the Cluster)"#
                )), "{failures:?}");
            assert!(failures.iter().any(|(c, m)| *c == "clusterclass-paused" && m == "cannot start operation while the following ClusterClasses are paused: ns/cc; unpause it with `kubectl annotate clusterclasses.cluster.x-k8s.io cc cluster.x-k8s.io/paused- -n ns --context src`"), "{failures:?}");
        });
    }

    #[test]
    fn dangling_owners_block_and_block_move_informs() {
        let mut f = Fixture::new(true);
        f.edit("Machine", "w-1", |m| {
            m["metadata"]["ownerReferences"][0]["uid"] = json!("gone-uid")
        });
        f.edit("DockerCluster", "c1", |d| {
            d["metadata"]["annotations"] = json!({"clusterctl.cluster.x-k8s.io/block-move": ""})
        });
        let report = f.report(false);
        let dangling: Vec<String> = failing(&report)
            .into_iter()
            .filter(|(c, _)| *c == "dangling-owner")
            .map(|(_, m)| m)
            .collect();
        assert_eq!(dangling.len(), 1);
        assert!(
            dangling[0]
                .contains("Machine ns/w-1 names a missing owner MachineSet ms (uid gone-uid)"),
            "{dangling:?}"
        );
        let info: Vec<&Check> = report
            .checks
            .iter()
            .filter(|c| c.status == CheckStatus::Info)
            .collect();
        assert_eq!(info.len(), 1);
        assert_eq!(info[0].check, "block-move");
        assert_eq!(info[0].object.kind, "DockerCluster");
    }

    #[test]
    fn node_health_warns_unless_strict_and_autoscalers_warn() {
        both(|v2| {
            let mut f = Fixture::new(v2);
            f.edit("Machine", "w-1", |m| {
                let conditions = json!([{"type": "NodeHealthy", "status": "False"}]);
                if v2 {
                    m["status"]["conditions"] = conditions
                } else {
                    m["status"]["v1beta2"]["conditions"] = conditions
                }
            });
            f.edit(
                "MachineDeployment",
                "md",
                |d| {
                    d["metadata"]["annotations"] =
                        json!({"cluster.x-k8s.io/cluster-api-autoscaler-node-group-max-size": "5"})
                },
            );
            let lenient = f.report(false);
            assert!(lenient.ready);
            assert_eq!(lenient.warnings(), 2);
            assert!(!f.report(true).ready, "--strict blocks on node health");
        });
    }

    /// A paused controller writes no status: a frozen control plane's progress is counted from
    /// its Machines, never from the replicas its status still reports.
    #[test]
    fn a_frozen_scaler_is_described_from_its_machines_not_its_stale_status() {
        let mut f = Fixture::new(true);
        f.edit("KubeadmControlPlane", "c1-cp", |kcp| {
            kcp["spec"]["replicas"] = json!(3);
            kcp["metadata"]["annotations"] = json!({"cluster.x-k8s.io/paused": ""});
            kcp["status"] = json!({"replicas": 2, "readyReplicas": 1});
        });
        let (cp2, cp3) = (
            f.machine("cp-2", "KubeadmControlPlane", "c1-cp", "kcp-uid", true),
            f.machine("cp-3", "KubeadmControlPlane", "c1-cp", "kcp-uid", true),
        );
        f.objects.extend([cp2, cp3]);
        let report = f.report(false);
        assert!(report.ready, "{:?}", report.checks);
        assert!(
            report
                .checks
                .iter()
                .all(|c| c.check != CheckId::Scaling && !c.message.contains("2 of 3")),
            "all 3 Machines are there: no scaling from the stale status: {:?}",
            report.checks
        );
    }

    #[test]
    fn remediation_in_progress_blocks() {
        let mut f = Fixture::new(true);
        f.objects.push(json!({"apiVersion": "cluster.x-k8s.io/v1beta2", "kind": "MachineHealthCheck",
            "metadata": {"name": "mhc", "namespace": "ns", "uid": "mhc-uid"}, "spec": {"clusterName": "c1"},
            "status": {"expectedMachines": 1, "currentHealthy": 0}}));
        let report = f.report(false);
        assert!(failing(&report).iter().any(|(c, m)| *c == "remediation"
            && m.contains("MachineHealthCheck ns/mhc holds 1 Machine(s) unhealthy")));
        f.edit("MachineHealthCheck", "mhc", |m| {
            m["metadata"]["annotations"] = json!({"cluster.x-k8s.io/paused": ""})
        });
        let frozen = f.report(false);
        assert!(frozen.ready, "a frozen health check does not block");
        assert!(
            frozen
                .checks
                .iter()
                .all(|c| !c.message.contains("freeze it")),
            "nothing tells the user to freeze what is frozen: {:?}",
            frozen.checks
        );
    }

    #[test]
    fn selection_by_name_and_overall_verdict() {
        let f = Fixture::new(true);
        let objects: Vec<DynamicObject> = f
            .objects
            .iter()
            .map(|o| serde_json::from_value(o.clone()).unwrap())
            .collect();
        let snapshot = Snapshot::from_objects(objects);
        let none = evaluate(
            &snapshot,
            &Options {
                clusters: vec![("ns".into(), "other".into())],
                strict: false,
                ..Options::default()
            },
        );
        assert!(!none.ready, "no cluster selected is not ready");
        let empty = evaluate(&Snapshot::from_objects(Vec::new()), &Options::default());
        assert!(
            empty.ready && empty.clusters.is_empty(),
            "an empty scope blocks nothing"
        );
        let one = evaluate(
            &snapshot,
            &Options {
                clusters: vec![("ns".into(), "c1".into())],
                strict: false,
                ..Options::default()
            },
        );
        assert!(one.ready);
        assert_eq!(
            serde_json::to_value(&one).unwrap()["kind"],
            "ReadinessReport"
        );
    }
}
