//! The move's preflight: every check before the first write — clusterctl's (through `ready`'s
//! evaluator), the target's kinds and providers, permissions in both clusters for the move and
//! its journal, and a server-side dry-run create of every object.

use std::collections::BTreeSet;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject};

use crate::error::Result;
use crate::kube::Cluster;
use crate::model::ObjectRef;
use crate::names::CORE_GROUP;
use crate::ready::{CheckId, CheckStatus, Options, evaluate};

use crate::kube::Connected;
use crate::mover::addressing::type_of;
use crate::mover::graph::discover::MoveType;
use crate::mover::graph::object_graph::TypeInfo;
use crate::mover::graph::plan::MovePlan;

use crate::mover::checks::access::check_permissions;
use crate::mover::checks::dry_runs::{dry_run_creates, existing_in_target, judge_existing};
use crate::mover::checks::findings::{Preflight, Refusal, ThisMove};
use crate::mover::checks::providers::check_providers;

/// The readiness checks that neither a freeze nor waiting clears.
const WAITING_CANNOT_CLEAR: [CheckId; 3] = [
    CheckId::ClusterPaused,
    CheckId::ClusterclassPaused,
    CheckId::DanglingOwner,
];

/// Every check, before any write.
pub async fn preflight(
    plan: &MovePlan,
    types: &[MoveType],
    objects: &[(Arc<DynamicObject>, TypeInfo)],
    source: &Cluster,
    target: Option<&Connected>,
    clusters: &[ObjectRef],
    this_move: &ThisMove<'_>,
) -> Result<Preflight> {
    let mut failures = source_checks(plan, objects, clusters, this_move);
    let Some(target) = target else {
        return Ok(Preflight {
            failures,
            in_target: BTreeSet::new(),
            reused: BTreeSet::new(),
            unchecked: Vec::new(),
            removed_namespaces: Vec::new(),
            made_namespaces: Vec::new(),
        });
    };
    failures.extend(served_kinds(plan, types, target).await?);
    failures.extend(check_providers(source, &target.cluster).await?);
    failures.extend(check_permissions(plan, types, source, &target.cluster, this_move).await?);
    // Read-only, so that its refusals come with every other one.
    let existing = existing_in_target(plan, types, &target.cluster).await?;
    let judged = judge_existing(existing, &target.cluster, this_move).await?;
    failures.extend(fold_mid_move(plan, this_move, judged.refusals));
    if !failures.is_empty() || this_move.before_freeze {
        return Ok(Preflight {
            failures,
            in_target: judged.in_target,
            reused: judged.reused,
            made_namespaces: Vec::new(),
            unchecked: Vec::new(),
            removed_namespaces: Vec::new(),
        });
    }
    let mut checked =
        dry_run_creates(plan, types, &target.cluster, this_move, &judged.in_target).await?;
    checked.in_target.extend(judged.in_target);
    checked.reused = judged.reused;
    Ok(checked)
}

/// The objects already in the target that belong to a Cluster mid-move (paused by another
/// kubectl-capi move that did not finish: the originals, or copies, of that move) are one
/// refusal, not one per object: finishing or undoing that move — which the Cluster's own refusal
/// gives the commands for — settles them all, and "delete it there" would destroy them.
fn fold_mid_move(
    plan: &MovePlan,
    this_move: &ThisMove<'_>,
    refusals: Vec<Refusal>,
) -> Vec<Refusal> {
    let paused_by_this_move = this_move
        .earlier
        .map(|j| j.paused.as_slice())
        .unwrap_or_default();
    let mid_move: BTreeSet<&str> = plan
        .scheduled
        .iter()
        .map(|uid| plan.node(uid))
        .filter(|n| crate::names::is_core_cluster(n.reference.group(), &n.reference.kind))
        .filter(|n| !paused_by_this_move.contains(&n.reference))
        .filter(|n| {
            n.object.as_ref().is_some_and(|o| {
                let view = crate::model::ClusterView::read(o);
                crate::ready::report::mid_move(&view, this_move.unfinished)
            })
        })
        .map(|n| n.uid.as_str())
        .collect();
    if mid_move.is_empty() {
        return refusals;
    }
    let of_mid_move: BTreeSet<&ObjectRef> = plan
        .scheduled
        .iter()
        .map(|uid| plan.node(uid))
        .filter(|n| {
            mid_move.contains(n.uid.as_str())
                || n.tenants.iter().any(|t| mid_move.contains(t.as_str()))
        })
        .map(|n| &n.reference)
        .collect();
    let (folded, mut kept): (Vec<Refusal>, Vec<Refusal>) = refusals
        .into_iter()
        .partition(|r| matches!(r, Refusal::AlreadyExists(o) if of_mid_move.contains(o)));
    if !folded.is_empty() {
        kept.push(Refusal::Source(format!(
            "{} object(s) of the Clusters that move did not finish with are in the target already (what it copied from, or to); finishing or undoing that move settles them — do not delete them",
            folded.len()
        )));
    }
    kept
}

/// clusterctl's preflight and what ready adds, through the same evaluator, and clusterctl's P6
/// for every ClusterClass that moves (a class no Cluster uses included). A resumed move's own
/// pauses do not block it.
fn source_checks(
    plan: &MovePlan,
    objects: &[(Arc<DynamicObject>, TypeInfo)],
    clusters: &[ObjectRef],
    this_move: &ThisMove<'_>,
) -> Vec<Refusal> {
    let paused_by_this_move = this_move
        .earlier
        .map(|j| j.paused.as_slice())
        .unwrap_or_default();
    let snapshot = crate::mover::graph::object_graph::snapshot_of(objects);
    let options = Options {
        clusters: clusters
            .iter()
            .map(|c| (c.namespace.clone(), c.name.clone()))
            .collect(),
        strict: false,
        unfinished_moves: this_move.unfinished.to_vec(),
        flags: this_move.flags.to_string(),
        waiting: false,
    };
    let report = evaluate(&snapshot, &options);
    let mut failures: Vec<Refusal> = report
        .clusters
        .iter()
        .flat_map(|cluster| &cluster.checks)
        .filter(|c| c.status == CheckStatus::Fail)
        // Before freezing, only what the freeze and the wait cannot clear.
        .filter(|c| !this_move.before_freeze || WAITING_CANNOT_CLEAR.contains(&c.check))
        .filter(|c| !(c.check == CheckId::ClusterPaused && paused_by_this_move.contains(&c.object)))
        // Paused ClusterClasses are checked over the whole plan below, used or not.
        .filter(|c| c.check != CheckId::ClusterclassPaused)
        .map(|c| Refusal::Source(c.message.clone()))
        .collect();
    let mut paused_classes: Vec<String> = plan
        .scheduled
        .iter()
        .map(|uid| plan.node(uid))
        .filter(|n| {
            n.reference.kind == crate::names::CLUSTER_CLASS && n.reference.group() == CORE_GROUP
        })
        .filter(|n| !paused_by_this_move.contains(&n.reference))
        .filter(|n| {
            n.object
                .as_ref()
                .is_some_and(|o| crate::model::object::is_paused_by_annotation(o))
        })
        .map(|n| format!("{}/{}", n.reference.namespace, n.reference.name))
        .collect();
    paused_classes.sort();
    if !paused_classes.is_empty() {
        failures.push(Refusal::PausedClasses(paused_classes));
    }
    failures.extend(no_room_for_annotations(plan, this_move.flags));
    failures
}

/// A real API server refuses an object whose annotations (keys and values) exceed this.
pub const MAX_ANNOTATION_BYTES: usize = 256 * 1024;

/// Objects whose annotations leave no room for what the move adds: its mark on every copy
/// (a move ID of 16 hex digits), and the pause annotation on a ClusterClass (in the source, and
/// so on its copy). The server would refuse those writes halfway through the move.
fn no_room_for_annotations(plan: &MovePlan, flags: &str) -> Vec<Refusal> {
    let mark = crate::names::MOVED_BY_ANNOTATION.len() + 16;
    let pause = crate::names::PAUSED_ANNOTATION.len();
    plan.scheduled
        .iter()
        .map(|uid| plan.node(uid))
        .filter_map(|node| {
            let annotations = node.object.as_ref()?.metadata.annotations.as_ref()?;
            let held: usize = annotations.iter().map(|(k, v)| k.len() + v.len()).sum();
            let is_class = node.reference.kind == crate::names::CLUSTER_CLASS
                && node.reference.group() == CORE_GROUP;
            let added = mark + if is_class { pause } else { 0 };
            (held + added > MAX_ANNOTATION_BYTES).then(|| {
                Refusal::Source(format!(
                    "{} carries {held} bytes of annotations (keys and values), and with the {added} the move adds ({}{}) it would pass the {MAX_ANNOTATION_BYTES} bytes an API server accepts: remove or shorten annotations of it in the source (list them with `kubectl get {}{} -o jsonpath='{{.metadata.annotations}}'{flags}`) and run the move again",
                    node.reference.kind_and_place(),
                    crate::names::MOVED_BY_ANNOTATION,
                    if is_class {
                        format!(", {}", crate::names::PAUSED_ANNOTATION)
                    } else {
                        String::new()
                    },
                    node.reference.kubectl_name(),
                    if node.reference.namespace.is_empty() {
                        String::new()
                    } else {
                        format!(" -n {}", node.reference.namespace)
                    },
                ))
            })
        })
        .collect()
}

/// The target must serve every kind to move at the version it is stored in here.
async fn served_kinds(
    plan: &MovePlan,
    types: &[MoveType],
    target: &Connected,
) -> Result<Vec<Refusal>> {
    let mut failures = Vec::new();
    let mut checked = BTreeSet::new();
    for uid in plan.groups.iter().flatten() {
        let node = plan.node(uid);
        let Some(t) = type_of(types, &node.reference) else {
            continue;
        };
        if t.info.group.is_empty() || !checked.insert((t.info.kind.clone(), t.info.group.clone())) {
            continue;
        }
        let served = match target.catalog.kind(&t.info.group, &t.info.kind) {
            Some(k) => k.served_versions.contains(&t.resource.version),
            // Kinds outside Cluster API's groups (a provider's external objects) are not in the
            // catalog: ask for their CRD.
            None => serves_by_crd(target, t).await?,
        };
        if !served {
            failures.push(Refusal::NotServed {
                kind: t.info.kind.clone(),
                group: t.info.group.clone(),
                version: t.resource.version.clone(),
            });
        }
    }
    Ok(failures)
}
/// Whether the target has a CRD for the kind that serves the version it is stored in here.
/// From the CRDs listed when the target was connected; asked for when they could not be listed.
pub(in crate::mover) async fn serves_by_crd(target: &Connected, t: &MoveType) -> Result<bool> {
    if let Ok(crds) = target.catalog.crds() {
        return Ok(crds.iter().any(|crd| {
            crd.group == t.info.group
                && crd.plural == t.resource.plural
                && crd.kind == t.info.kind
                && crd.served_versions.contains(&t.resource.version)
        }));
    }
    let target = &target.cluster;
    let crds: Api<CustomResourceDefinition> = Api::all(target.client.clone());
    let name = format!("{}.{}", t.resource.plural, t.info.group);
    let crd = crds
        .get_opt(&name)
        .await
        .map_err(|e| target.api_error(e, &format!("reading CustomResourceDefinition {name}")))?;
    Ok(crd.is_some_and(|crd| {
        crd.spec.names.kind == t.info.kind
            && crd
                .spec
                .versions
                .iter()
                .any(|v| v.served && v.name == t.resource.version)
    }))
}
