//! The move itself, as idempotent steps over an explicit plan:
//! preflight → pause → wait for block-move → create groups → delete groups → unpause.
//! Nothing is written before every check passed (the only exception: namespaces the server-side
//! dry run needs in the target, removed again when the preflight fails).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde::Serialize;
use serde_json::{Value, json};

use super::discover::{MoveType, list_objects};
use super::graph::TypeInfo;
use super::journal::{self, Entry, Journal, Stage};
use super::plan::{Excluded, MovePlan};
use super::progress::{Phase, Progress, Silent};
use crate::error::{Error, Result};
use crate::kube::{Catalog, Cluster};
use crate::model::ObjectRef;
use crate::names::{
    BLOCK_MOVE_ANNOTATION, CORE_GROUP, DELETE_FOR_MOVE_ANNOTATION, PAUSED_ANNOTATION,
};
use crate::ready::{CheckStatus, Options, evaluate};
use crate::snapshot::{ListScope, Snapshot};

pub const FIELD_MANAGER: &str = "kubectl-capi";

/// Writes in flight at once within a move group, unless `--concurrency` says otherwise.
pub const DEFAULT_CONCURRENCY: usize = 16;

/// The journal of a running move and where it is kept: a local file, and a copy in the source
/// cluster (removed once the move is over).
pub struct JournalFile {
    pub path: std::path::PathBuf,
    pub journal: Journal,
    pub copy: Option<JournalCopy>,
}

/// Where the journal's copy lives in the source cluster.
pub struct JournalCopy {
    pub cluster: Cluster,
    pub namespace: String,
    pub key: String,
    /// The slices this process last wrote (`None`: not saved yet).
    pub written: Option<journal::copy::Written>,
}

impl JournalFile {
    pub async fn save(&mut self) -> Result<()> {
        if self.journal.stage.finished() {
            // A finished move leaves a short record (so a rerun can say it finished) and no
            // copy in the cluster.
            journal::save_text(&self.journal.finished_record().to_json(), &self.path)?;
            if let Some(copy) = &mut self.copy {
                journal::copy::remove(&copy.cluster, &copy.namespace, &copy.key).await?;
                copy.written = Some(Vec::new());
            }
            return Ok(());
        }
        // Serialised once for both places.
        let text = self.journal.to_json();
        journal::save_text(&text, &self.path)?;
        if let Some(copy) = &mut self.copy {
            copy.written = Some(
                journal::copy::save(
                    &copy.cluster,
                    &copy.namespace,
                    &copy.key,
                    &text,
                    copy.written.as_ref(),
                )
                .await?,
            );
        }
        Ok(())
    }

    pub async fn stage(&mut self, stage: Stage) -> Result<()> {
        self.journal.stage = stage;
        self.save().await
    }
}

/// The destination management cluster.
pub struct Destination {
    pub cluster: Cluster,
    pub catalog: Catalog,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub clusters: Vec<ObjectRef>,
    /// Objects created in the target, per `Kind.group`.
    pub created: BTreeMap<String, usize>,
    pub deleted: usize,
    /// Objects the move meant to delete but found replaced by another of the same name.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
    pub kept_in_source: usize,
    pub excluded: Vec<Excluded>,
    /// Objects frozen by `kubectl capi pause` that stay frozen in the target.
    pub frozen_in_target: Vec<ObjectRef>,
    pub seconds: f64,
}

pub fn type_of<'a>(types: &'a [MoveType], reference: &ObjectRef) -> Option<&'a MoveType> {
    types
        .iter()
        .find(|t| t.info.group == reference.group() && t.info.kind == reference.kind)
}

fn api(cluster: &Cluster, resource: &ApiResource, namespace: &str) -> Api<DynamicObject> {
    if namespace.is_empty() {
        Api::all_with(cluster.client.clone(), resource)
    } else {
        Api::namespaced_with(cluster.client.clone(), namespace, resource)
    }
}

fn params(dry_run: bool) -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        dry_run,
        ..PatchParams::default()
    }
}

/// The body to create in the target: server-owned fields cleared, owners rebuilt with the
/// target's UIDs, managedFields returned separately (a create ignores them; a patch restores them).
pub fn target_body(
    plan: &MovePlan,
    object: &DynamicObject,
    target_uids: &HashMap<String, String>,
) -> (Value, Option<Value>) {
    let mut body = serde_json::to_value(object).expect("object serialises");
    let meta = body["metadata"].as_object_mut().expect("metadata");
    let managed = meta.remove("managedFields");
    for key in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "selfLink",
    ] {
        meta.remove(key);
    }
    if meta.get("name").is_some() {
        meta.remove("generateName");
    }
    // The source's references, each keeping its own fields (controller, blockOwnerDeletion,
    // even when explicitly false) with the owner's UID in the target. A reference to a real owner
    // that is not part of this move (a Cluster that stays, in a named move) is dropped: it would
    // dangle in the target, and moving that owner later adds it back by update.
    let refs: Vec<Value> = object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter_map(|source_ref| {
            let owner = plan.graph.nodes.get(&source_ref.uid)?;
            let new_uid = match target_uids.get(&source_ref.uid) {
                Some(uid) => uid.clone(),
                None if owner.is_virtual() || plan.scheduled.contains(&source_ref.uid) => {
                    source_ref.uid.clone()
                }
                None => return None,
            };
            let mut r = serde_json::to_value(source_ref).expect("owner reference serialises");
            r["uid"] = json!(new_uid);
            Some(r)
        })
        .collect();
    if refs.is_empty() {
        meta.remove("ownerReferences");
    } else {
        meta.insert("ownerReferences".into(), Value::Array(refs));
    }
    (
        body,
        managed.filter(|m| m.as_array().is_some_and(|a| !a.is_empty())),
    )
}

/// clusterctl's provider check: every source provider in the target at an equal or newer version.
async fn check_providers(source: &Cluster, target: &Cluster, failures: &mut Vec<String>) {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("clusterctl.cluster.x-k8s.io", "v1alpha3", "Provider"),
        "providers",
    );
    let list = |c: &Cluster| {
        let api: Api<DynamicObject> = Api::all_with(c.client.clone(), &resource);
        async move {
            api.list(&ListParams::default())
                .await
                .map(|l| l.items)
                .unwrap_or_default()
        }
    };
    let (source_providers, target_providers) = (list(source).await, list(target).await);
    let version = |v: &str| -> Vec<u64> {
        v.trim_start_matches('v')
            .split(['.', '-'])
            .filter_map(|p| p.parse().ok())
            .collect()
    };
    for p in &source_providers {
        let (name, type_, v) = (
            p.data["providerName"].as_str().unwrap_or(""),
            p.data["type"].as_str().unwrap_or(""),
            p.data["version"].as_str().unwrap_or(""),
        );
        let label = p.metadata.name.clone().unwrap_or_default();
        let matching: Vec<&DynamicObject> = target_providers
            .iter()
            .filter(|t| t.data["providerName"] == name && t.data["type"] == type_)
            .collect();
        match matching.iter().map(|t| t.data["version"].as_str().unwrap_or("")).max_by_key(|t| version(t)) {
            None => failures.push(format!("failed to check providers in target cluster: provider {label} not found in the target cluster")),
            Some(t) if version(t) < version(v) => failures.push(format!(
                "failed to check providers in target cluster: provider {label} in the target cluster is older than in the source cluster (source: {v}, target: {t})"
            )),
            _ => {}
        }
    }
}

async fn access_review(
    cluster: &Cluster,
    verb: &str,
    group: &str,
    resource: &str,
    namespace: &str,
) -> Result<bool> {
    let review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": verb, "group": group, "resource": resource, "namespace": namespace}}});
    let resource_def = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("authorization.k8s.io", "v1", "SelfSubjectAccessReview"),
        "selfsubjectaccessreviews",
    );
    let api: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &resource_def);
    let object: DynamicObject = serde_json::from_value(review).expect("valid review");
    let answer = api
        .create(&PostParams::default(), &object)
        .await
        .map_err(|e| cluster.api_error(e, "reviewing permissions"))?;
    Ok(answer.data["status"]["allowed"] == true)
}

async fn check_permissions(
    plan: &MovePlan,
    types: &[MoveType],
    source: &Cluster,
    target: &Cluster,
    this_move: &ThisMove<'_>,
    failures: &mut Vec<String>,
) -> Result<()> {
    let mut needed: BTreeSet<(bool, &'static str, String, String, String)> = BTreeSet::new();
    // The journal's copy: written at every step, read to resume, removed at the end.
    if let Some(namespace) = this_move.journal_namespace {
        for verb in ["get", "list", "create", "patch", "delete"] {
            needed.insert((
                true,
                verb,
                String::new(),
                "configmaps".into(),
                namespace.into(),
            ));
        }
    }
    for uid in plan.groups.iter().flatten() {
        let node = plan.node(uid);
        let Some(t) = type_of(types, &node.reference) else {
            continue;
        };
        let ns = if t.info.namespaced {
            node.reference.namespace.clone()
        } else {
            String::new()
        };
        let (group, resource) = (t.info.group.clone(), t.resource.plural.clone());
        for verb in ["get", "list"] {
            needed.insert((true, verb, group.clone(), resource.clone(), ns.clone()));
        }
        if !plan.kept_in_source.contains(uid) {
            for verb in ["patch", "delete"] {
                needed.insert((true, verb, group.clone(), resource.clone(), ns.clone()));
            }
        }
        // A shared ClusterClass stays in the source, but is paused there while the move runs.
        if is_pausable(&node.reference) {
            needed.insert((true, "patch", group.clone(), resource.clone(), ns.clone()));
        }
        for verb in ["create", "get", "patch"] {
            needed.insert((false, verb, group.clone(), resource.clone(), ns.clone()));
        }
        if this_move.overwrite_existing {
            needed.insert((false, "update", group.clone(), resource.clone(), ns.clone()));
        }
        if !ns.is_empty() {
            needed.insert((
                false,
                "create",
                String::new(),
                "namespaces".into(),
                String::new(),
            ));
        }
    }
    // Sixteen reviews at a time; answers in a stable order for the report.
    let answers: Vec<_> = stream::iter(needed.into_iter().map(
        |(in_source, verb, group, resource, ns)| async move {
            let cluster = if in_source { source } else { target };
            let allowed = access_review(cluster, verb, &group, &resource, &ns).await;
            (in_source, verb, group, resource, ns, allowed)
        },
    ))
    .buffered(DEFAULT_CONCURRENCY)
    .collect()
    .await;
    for (in_source, verb, group, resource, ns, allowed) in answers {
        if !allowed? {
            let qualified = if group.is_empty() {
                resource.clone()
            } else {
                format!("{resource}.{group}")
            };
            let place = if ns.is_empty() {
                String::new()
            } else {
                format!(" in namespace {ns}")
            };
            let which = if in_source { "source" } else { "target" };
            failures.push(format!(
                "missing permission in the {which} cluster: {verb} {qualified}{place}"
            ));
        }
    }
    Ok(())
}

/// A namespace a move created in the target, by name and UID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MadeNamespace {
    pub name: String,
    pub uid: String,
}

fn namespaces_api(cluster: &Cluster) -> Api<DynamicObject> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("", "v1", "Namespace"),
        "namespaces",
    );
    Api::all_with(cluster.client.clone(), &resource)
}

/// Removes namespaces this move created and wrote nothing into (each by its UID, so one made
/// anew by someone else since stays). Best effort: a leftover empty namespace is harmless.
pub async fn remove_namespaces(target: &Cluster, made: &[MadeNamespace]) {
    let api = namespaces_api(target);
    for namespace in made {
        let only_this = DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                uid: Some(namespace.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        let _ = api.delete(&namespace.name, &only_this).await;
    }
}

/// Ensures a namespace exists in the target; returns it if this call created it.
async fn ensure_namespace(target: &Cluster, namespace: &str) -> Result<Option<MadeNamespace>> {
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("", "v1", "Namespace"),
        "namespaces",
    );
    let api: Api<DynamicObject> = Api::all_with(target.client.clone(), &resource);
    if api
        .get_opt(namespace)
        .await
        .map_err(|e| target.api_error(e, "reading namespaces"))?
        .is_some()
    {
        return Ok(None);
    }
    let object: DynamicObject = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
    )
    .expect("valid");
    match api
        .create(
            &PostParams {
                field_manager: Some(FIELD_MANAGER.into()),
                ..Default::default()
            },
            &object,
        )
        .await
    {
        Ok(made) => Ok(Some(MadeNamespace {
            name: namespace.to_string(),
            uid: made.metadata.uid.unwrap_or_default(),
        })),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
        Err(e) => Err(target.api_error(e, &format!("creating namespace {namespace}"))),
    }
}

/// What the preflight found.
pub struct Preflight {
    /// Every reason the move cannot start (empty: go).
    pub failures: Vec<String>,
    /// Objects (source UIDs) that already exist in the target, from the dry-run creates: a
    /// rollback must never remove them.
    pub in_target: BTreeSet<String>,
    /// Namespaces the dry runs needed and the preflight created in the target (when it
    /// passed): to remove again if the move writes nothing into them (a dry run, a stop before
    /// the first create).
    pub made_namespaces: Vec<MadeNamespace>,
}

/// What the preflight knows of this move beyond its plan.
#[derive(Default)]
pub struct ThisMove<'a> {
    /// The journal of an earlier, interrupted attempt: its own pauses and copies do not block it.
    pub earlier: Option<&'a Journal>,
    /// `--overwrite-existing`.
    pub overwrite_existing: bool,
    /// Where the journal's copy is kept in the source (its ConfigMaps need permissions too).
    pub journal_namespace: Option<&'a str>,
}

/// Every check, before any write.
pub async fn preflight(
    plan: &MovePlan,
    types: &[MoveType],
    objects: &[(Arc<DynamicObject>, TypeInfo)],
    source: &Cluster,
    target: Option<&Destination>,
    clusters: &[ObjectRef],
    this_move: &ThisMove<'_>,
) -> Result<Preflight> {
    let paused_by_this_move = this_move
        .earlier
        .map(|j| j.paused.as_slice())
        .unwrap_or_default();
    let mut failures = Vec::new();
    let in_target = BTreeSet::new();
    // clusterctl's preflight and what ready adds, through the same evaluator.
    let mut by_kind: BTreeMap<(String, String), Vec<Arc<DynamicObject>>> = BTreeMap::new();
    for (object, info) in objects {
        by_kind
            .entry((info.group.clone(), info.kind.clone()))
            .or_default()
            .push(object.clone());
    }
    let snapshot = Snapshot::from_stores(by_kind);
    let options = Options {
        clusters: clusters
            .iter()
            .map(|c| (c.namespace.clone(), c.name.clone()))
            .collect(),
        strict: false,
    };
    let report = evaluate(&snapshot, &options);
    for cluster in &report.clusters {
        for check in cluster
            .checks
            .iter()
            .filter(|c| c.status == CheckStatus::Fail)
            // A resumed move's own pause does not block it.
            .filter(|c| !(c.check == "cluster-paused" && paused_by_this_move.contains(&c.object)))
            // Paused ClusterClasses are checked over the whole plan below, used or not.
            .filter(|c| c.check != "clusterclass-paused")
        {
            failures.push(check.message.clone());
        }
    }
    // clusterctl's P6, for every ClusterClass that moves (a class no Cluster uses included).
    let mut paused_classes: Vec<String> = plan
        .scheduled
        .iter()
        .map(|uid| plan.node(uid))
        .filter(|n| n.reference.kind == "ClusterClass" && n.reference.group() == CORE_GROUP)
        .filter(|n| !paused_by_this_move.contains(&n.reference))
        .filter(|n| {
            n.object
                .as_ref()
                .is_some_and(|o| crate::names::is_paused_annotation(o))
        })
        .map(|n| format!("{}/{}", n.reference.namespace, n.reference.name))
        .collect();
    paused_classes.sort();
    if !paused_classes.is_empty() {
        failures.push(crate::names::clusterctl::paused_cluster_classes(
            &paused_classes.join(", "),
        ));
    }
    let Some(target) = target else {
        return Ok(Preflight {
            failures,
            in_target,
            made_namespaces: Vec::new(),
        });
    };
    // The target must serve every kind to move at the version it is stored in here.
    let mut missing = BTreeSet::new();
    let mut checked = BTreeSet::new();
    for uid in plan.groups.iter().flatten() {
        let node = plan.node(uid);
        let Some(t) = type_of(types, &node.reference) else {
            continue;
        };
        if t.info.group.is_empty() {
            continue;
        }
        let key = (t.info.kind.clone(), t.info.group.clone());
        if missing.contains(&key) || checked.contains(&key) {
            continue;
        }
        let served = match target.catalog.kind(&t.info.group, &t.info.kind) {
            Some(k) => k.served_versions.contains(&t.resource.version),
            // Kinds outside Cluster API's groups (a provider's external objects) are not in the
            // catalog: ask for their CRD.
            None => serves_by_crd(&target.cluster, t).await?,
        };
        checked.insert(key.clone());
        if !served && missing.insert(key) {
            failures.push(format!(
                "the target cluster does not serve {}.{} at {}; install its provider there (clusterctl init) first",
                t.info.kind, t.info.group, t.resource.version
            ));
        }
    }
    check_providers(source, &target.cluster, &mut failures).await;
    check_permissions(
        plan,
        types,
        source,
        &target.cluster,
        this_move,
        &mut failures,
    )
    .await?;
    if !failures.is_empty() {
        return Ok(Preflight {
            failures,
            in_target,
            made_namespaces: Vec::new(),
        });
    }
    dry_run_creates(plan, types, &target.cluster, this_move, failures).await
}

/// A server-side dry run of every create in the target, so schema, size and webhook rejections
/// surface before any write; objects already there are refused unless expected (global, this
/// move's own, `--overwrite-existing`). The namespaces the dry runs need are created, and removed
/// again when anything fails.
pub async fn dry_run_creates(
    plan: &MovePlan,
    types: &[MoveType],
    target: &Cluster,
    this_move: &ThisMove<'_>,
    mut failures: Vec<String>,
) -> Result<Preflight> {
    let mut in_target = BTreeSet::new();
    let mut created_namespaces = Vec::new();
    let mut seen_namespaces = BTreeSet::new();
    for uid in plan.groups.iter().flatten() {
        let namespace = &plan.node(uid).reference.namespace;
        if !namespace.is_empty() && seen_namespaces.insert(namespace.clone()) {
            created_namespaces.extend(ensure_namespace(target, namespace).await?);
        }
    }
    let dry_runs = plan.groups.iter().flatten().filter_map(|uid| {
        let node = plan.node(uid);
        let t = type_of(types, &node.reference)?;
        let object = node.object.as_ref()?;
        Some((uid, node, t, object))
    });
    // In parallel, answers kept in plan order so the report reads the same every time.
    let answers: Vec<_> = stream::iter(dry_runs.map(|(uid, node, t, object)| async move {
        let (body, _) = target_body(plan, object, &HashMap::new());
        let object: DynamicObject = serde_json::from_value(body).expect("valid body");
        let result = api(target, &t.resource, &node.reference.namespace)
            .create(
                &PostParams {
                    dry_run: true,
                    field_manager: Some(FIELD_MANAGER.into()),
                },
                &object,
            )
            .await
            // Only the verdict is kept: 10,000 answered objects would double the move's memory.
            .map(|_| ());
        (uid, node, result)
    }))
    .buffered(DEFAULT_CONCURRENCY)
    .collect()
    .await;
    for (uid, node, result) in answers {
        match result {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
                in_target.insert(uid.clone());
                // Shared by design (reused), or this move's own copy from an earlier attempt.
                let expected = node.is_global
                    || node.global_hierarchy
                    || this_move
                        .earlier
                        .is_some_and(|j| j.created_by_this_move(uid));
                if !expected && !this_move.overwrite_existing {
                    failures.push(already_exists(&node.reference));
                }
            }
            Err(kube::Error::Api(s)) => failures.push(format!(
                "the target cluster rejects {}: {}",
                node.reference.kubectl_name(),
                s.message
            )),
            Err(e) => {
                return Err(target.api_error(e, "dry-run creating objects in the target"));
            }
        }
    }
    if !failures.is_empty() {
        remove_namespaces(target, &created_namespaces).await;
        created_namespaces.clear();
    }
    Ok(Preflight {
        failures,
        in_target,
        made_namespaces: created_namespaces,
    })
}

/// Whether the target has a CRD for the kind that serves the version it is stored in here.
async fn serves_by_crd(target: &Cluster, t: &MoveType) -> Result<bool> {
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

/// Pauses the source Clusters (`spec.paused`) and ClusterClasses (annotation).
async fn set_paused(
    cluster: &Cluster,
    plan: &MovePlan,
    types: &[MoveType],
    paused: bool,
    concurrency: usize,
    progress: &dyn Progress,
) -> Result<()> {
    let pausable: Vec<(ApiResource, ObjectRef)> = plan
        .groups
        .iter()
        .flatten()
        .map(|uid| &plan.node(uid).reference)
        .filter(|r| is_pausable(r))
        .filter_map(|r| Some((type_of(types, r)?.resource.clone(), r.clone())))
        .collect();
    patch_paused(cluster, &pausable, paused, concurrency, progress).await
}

/// Clusters and ClusterClasses: what a move pauses.
fn is_pausable(reference: &ObjectRef) -> bool {
    reference.group() == CORE_GROUP && matches!(reference.kind.as_str(), "Cluster" | "ClusterClass")
}

/// Pauses (or unpauses) Clusters (`spec.paused`) and ClusterClasses (annotation), up to
/// `concurrency` at once; every started patch finishes before the first error is returned.
async fn patch_paused(
    cluster: &Cluster,
    objects: &[(ApiResource, ObjectRef)],
    paused: bool,
    concurrency: usize,
    progress: &dyn Progress,
) -> Result<()> {
    let phase = if paused { Phase::Pause } else { Phase::Unpause };
    progress.begin(phase, objects.len());
    let answers: Vec<Result<()>> = stream::iter(objects.iter().map(|(resource, reference)| async move {
        let patch = if reference.kind == "Cluster" {
            json!({"spec": {"paused": if paused { json!(true) } else { Value::Null }}})
        } else {
            json!({"metadata": {"annotations": {PAUSED_ANNOTATION: if paused { json!("") } else { Value::Null }}}})
        };
        api(cluster, resource, &reference.namespace)
            .patch(&reference.name, &params(false), &Patch::Merge(&patch))
            .await
            .map_err(|e| {
                cluster.api_error(
                    e,
                    &format!(
                        "{} {}",
                        if paused { "pausing" } else { "unpausing" },
                        reference.kubectl_name()
                    ),
                )
            })?;
        progress.done(phase, reference);
        Ok(())
    }))
    .buffer_unordered(concurrency.max(1))
    .collect()
    .await;
    answers.into_iter().collect::<Result<Vec<()>>>()?;
    progress.end(phase);
    Ok(())
}

/// Re-reads the planned objects (after pausing, so they arrive paused) and waits until none
/// carries block-move, within one global timeout. Objects outside the plan are not kept.
async fn read_when_unblocked(
    source: &Cluster,
    types: &[MoveType],
    scope: &ListScope,
    plan: &MovePlan,
    timeout: Duration,
) -> Result<HashMap<String, Arc<DynamicObject>>> {
    let deadline = Instant::now() + timeout;
    let mut delay = Duration::from_millis(100);
    loop {
        let objects = list_objects(source, types, scope).await?;
        let fresh: HashMap<String, Arc<DynamicObject>> = objects
            .into_iter()
            .map(|(o, _)| (o.metadata.uid.clone().unwrap_or_default(), o))
            .filter(|(uid, _)| plan.scheduled.contains(uid))
            .collect();
        let blocked: Vec<String> = plan
            .groups
            .iter()
            .flatten()
            .filter_map(|uid| fresh.get(uid))
            .filter(|o| crate::model::has_annotation(o, BLOCK_MOVE_ANNOTATION))
            .map(|o| ObjectRef::of(o).kubectl_name())
            .collect();
        if blocked.is_empty() {
            return Ok(fresh);
        }
        if Instant::now() > deadline {
            return Err(Error::Api {
                context: "waiting for block-move".into(),
                message: format!(
                    "resource is not ready to move: {} still carries {BLOCK_MOVE_ANNOTATION}; the source stays paused — unpause its Clusters or run the move again",
                    blocked.join(", ")
                ),
            });
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

/// What a create does when the target already has an object of that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenExisting {
    /// Keep it as is and use its UID: a global object (shared by design), a restored one.
    Reuse,
    /// It is this move's own copy (made by an earlier attempt, or by this create whose answer
    /// was lost): use its UID and finish it (managedFields).
    Adopt,
    /// `--overwrite-existing`: clusterctl's update (the target's UID and resourceVersion, then a
    /// full replace).
    Overwrite,
    /// It was there before this move: never touch it.
    Refuse,
}

/// clusterctl's update of an object already in the target: its UID and resourceVersion, then a
/// full replace; a conflict (a controller wrote meanwhile) reads it again, a few times.
async fn overwrite(
    target: &Cluster,
    api: &Api<DynamicObject>,
    object: DynamicObject,
    mut existing: DynamicObject,
    reference: &ObjectRef,
) -> Result<()> {
    let write = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let failed = |e| {
        target.api_error(
            e,
            &format!("updating {} in the target", reference.kubectl_name()),
        )
    };
    for attempt in 0.. {
        let mut replacement = object.clone();
        replacement.metadata.uid = existing.metadata.uid.clone();
        replacement.metadata.resource_version = existing.metadata.resource_version.clone();
        match api.replace(&reference.name, &write, &replacement).await {
            Ok(_) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "Conflict" && attempt < 4 => {
                existing = api.get(&reference.name).await.map_err(failed)?;
            }
            Err(e) => return Err(failed(e)),
        }
    }
    unreachable!("the loop returns")
}

/// The refusal for an object that is in the target but not because of this move.
pub fn already_exists(reference: &ObjectRef) -> String {
    let place = if reference.namespace.is_empty() {
        reference.name.clone()
    } else {
        format!("{}/{}", reference.namespace, reference.name)
    };
    format!(
        "{} {place} already exists in the target and was not created by this move; delete it there or pass --overwrite-existing",
        reference.kind
    )
}

/// Creates one object in the target (an existing one as `when_existing` says), restores its
/// managedFields, and returns its target UID and whether this move made it.
async fn create_one(
    target: &Cluster,
    t: &MoveType,
    when_existing: WhenExisting,
    body: Value,
    managed: Option<Value>,
    reference: &ObjectRef,
) -> Result<(String, bool)> {
    let name = &reference.name;
    let namespace = if t.info.namespaced {
        reference.namespace.as_str()
    } else {
        ""
    };
    let target_api = api(target, &t.resource, namespace);
    let object: DynamicObject = serde_json::from_value(body).expect("valid body");
    let write = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let (uid, made) = match target_api.create(&write, &object).await {
        Ok(created) => (created.metadata.uid.unwrap_or_default(), true),
        Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
            let existing = target_api.get(name).await.map_err(|e| {
                target.api_error(
                    e,
                    &format!("reading {} in the target", reference.kubectl_name()),
                )
            })?;
            let existing_uid = existing.metadata.uid.clone().unwrap_or_default();
            match when_existing {
                WhenExisting::Reuse => return Ok((existing_uid, false)),
                WhenExisting::Refuse => {
                    return Err(Error::Refused(vec![already_exists(reference)]));
                }
                WhenExisting::Adopt => (existing_uid, true),
                WhenExisting::Overwrite => {
                    overwrite(target, &target_api, object, existing, reference).await?;
                    (existing_uid, false)
                }
            }
        }
        Err(e) => {
            return Err(target.api_error(
                e,
                &format!("creating {} in the target", reference.kubectl_name()),
            ));
        }
    };
    if let Some(managed) = managed {
        target_api
            .patch(
                name,
                &PatchParams::default(),
                &Patch::Merge(&json!({"metadata": {"managedFields": managed}})),
            )
            .await
            .map_err(|e| {
                target.api_error(
                    e,
                    &format!("restoring managedFields of {}", reference.kubectl_name()),
                )
            })?;
    }
    Ok((uid, made))
}

/// What deleting one object came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deletion {
    Deleted,
    /// Nothing had that name any more.
    AlreadyGone,
    /// An object of that name with another UID is there now: someone replaced the one this move
    /// meant. It is left alone.
    Replaced {
        found_uid: String,
    },
}

/// An object a move left alone, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    pub object: ObjectRef,
    pub reason: String,
}

impl Skipped {
    /// The object that replaced the one `uid` named.
    fn replaced(object: &ObjectRef, uid: &str, found_uid: &str, which: &str) -> Skipped {
        Skipped {
            object: object.clone(),
            reason: format!(
                "not deleted: the {which} holds another object of that name (UID {found_uid}, not {uid}); left as is"
            ),
        }
    }
}

/// Deletes exactly the object with `uid` (every write carries it as a precondition) in two
/// writes: one patch that marks it `delete-for-move` and drops its finalizers (its Cluster is
/// paused, so no controller acts on either), then the DELETE, which removes it at once.
/// clusterctl strips finalizers after the DELETE instead; the end state is the same, without the
/// object lingering as Terminating in between. Should something re-add a finalizer before the
/// DELETE, the answer still carries the object and the finalizers are stripped again (a
/// finalizer cannot be added once deletion started). A failed precondition is never repeated:
/// the object is read again, and one with another UID is reported, not touched.
pub async fn delete_one(
    cluster: &Cluster,
    resource: &ApiResource,
    reference: &ObjectRef,
    uid: &str,
) -> Result<Deletion> {
    let api = api(cluster, resource, &reference.namespace);
    let named = reference.kubectl_name();
    let not_found = |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 404);
    // A real server answers a patch whose UID differs with 422 (immutable field), a DELETE with
    // 409; either way the object is read again.
    let precondition_failed =
        |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 409 || s.code == 422);
    let mut step = DeleteStep::Mark;
    let mut conflicts = 0;
    loop {
        let failure = match delete_step(&api, &reference.name, uid, step).await {
            Ok(Some(next)) => {
                step = next;
                continue;
            }
            Ok(None) => return Ok(Deletion::Deleted),
            Err(e) if not_found(&e) => return Ok(Deletion::AlreadyGone),
            Err(e) if precondition_failed(&e) => e,
            Err(e) => {
                return Err(cluster.api_error(e, &format!("{} {named}", step.describe())));
            }
        };
        let current = api
            .get_opt(&reference.name)
            .await
            .map_err(|e| cluster.api_error(e, &format!("reading {named}")))?;
        match current.and_then(|o| o.metadata.uid) {
            None => return Ok(Deletion::AlreadyGone),
            Some(found_uid) if found_uid != uid => return Ok(Deletion::Replaced { found_uid }),
            // The same object: the conflict was passing (a concurrent writer). The same step
            // again, a few times.
            Some(_) if conflicts < 3 => conflicts += 1,
            Some(_) => {
                return Err(cluster.api_error(failure, &format!("{} {named}", step.describe())));
            }
        }
    }
}

/// The writes of [`delete_one`], in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeleteStep {
    /// Mark `delete-for-move` and drop the finalizers.
    Mark,
    Delete,
    /// Drop finalizers re-added before the DELETE.
    Strip,
}

impl DeleteStep {
    fn describe(self) -> &'static str {
        match self {
            DeleteStep::Mark => "marking for move",
            DeleteStep::Delete => "deleting",
            DeleteStep::Strip => "removing finalizers of",
        }
    }
}

/// One write of [`delete_one`], each conditional on `uid`; returns the step that follows, if any.
async fn delete_step(
    api: &Api<DynamicObject>,
    name: &str,
    uid: &str,
    step: DeleteStep,
) -> std::result::Result<Option<DeleteStep>, kube::Error> {
    match step {
        DeleteStep::Mark => {
            let mark = json!({"metadata": {"uid": uid, "finalizers": null,
                "annotations": {DELETE_FOR_MOVE_ANNOTATION: ""}}});
            api.patch(name, &params(false), &Patch::Merge(&mark))
                .await?;
            Ok(Some(DeleteStep::Delete))
        }
        DeleteStep::Delete => {
            let only_this = DeleteParams {
                preconditions: Some(kube::api::Preconditions {
                    uid: Some(uid.to_string()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            // The object itself in the answer means it is still there (Terminating).
            let lingering = api
                .delete(name, &only_this)
                .await?
                .left()
                .and_then(|still_there| still_there.metadata.finalizers)
                .is_some_and(|f| !f.is_empty());
            Ok(lingering.then_some(DeleteStep::Strip))
        }
        DeleteStep::Strip => {
            let strip = json!({"metadata": {"uid": uid, "finalizers": null}});
            api.patch(name, &params(false), &Patch::Merge(&strip))
                .await?;
            Ok(None)
        }
    }
}

/// The source management cluster, and what move reads there.
pub struct Source<'a> {
    pub cluster: &'a Cluster,
    pub types: &'a [MoveType],
    pub scope: &'a ListScope,
}

/// How the move runs.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// One global limit for block-move to go.
    pub timeout: Duration,
    /// Replay `.status` after create.
    pub restore_status: bool,
    /// Writes in flight at once within a move group.
    pub concurrency: usize,
    /// `--overwrite-existing`: update objects that were in the target before the move.
    pub overwrite_existing: bool,
    /// Namespaces the preflight created in the target: removed again if the move stops before
    /// its first create.
    pub made_namespaces: Vec<MadeNamespace>,
    /// Set on Ctrl-C: no new write starts; those in flight finish and are journalled.
    pub stop: Stop,
}

/// A request to stop at the next safe point (between writes).
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<std::sync::atomic::AtomicBool>);

impl Stop {
    pub fn request(&self) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn requested(&self) -> bool {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// `Err(Interrupted)` once a stop was requested.
    fn check(&self) -> Result<()> {
        if self.requested() {
            Err(Error::Interrupted)
        } else {
            Ok(())
        }
    }
}

/// A create's answer: the source UID, the target UID, whether this attempt made it, its type.
type CreateAnswer<'a> = Result<(String, (String, bool), &'a MoveType)>;

/// How objects are created in the target.
#[derive(Debug, Clone)]
pub struct Creating {
    /// Without a journal (a restore): the objects (source UIDs) the preflight found in the
    /// target.
    pub preexisting: BTreeSet<String>,
    /// `--overwrite-existing`: objects that were in the target before the move are updated.
    pub overwrite_existing: bool,
    pub restore_status: bool,
    /// Creates in flight at once within a group.
    pub concurrency: usize,
    pub stop: Stop,
}

/// Runs the move after a passed preflight.
pub async fn run(
    plan: &MovePlan,
    source: &Source<'_>,
    target: &Destination,
    options: &RunOptions,
    clusters: Vec<ObjectRef>,
    progress: &dyn Progress,
    journal: &mut JournalFile,
) -> Result<Summary> {
    let timeout = options.timeout;
    let (types, scope) = (source.types, source.scope);
    let source = source.cluster;
    let started = Instant::now();
    let before_creating = async {
        journal.stage(Stage::Pausing).await?;
        set_paused(source, plan, types, true, options.concurrency, progress).await?;
        let fresh = read_when_unblocked(source, types, scope, plan, timeout).await?;
        // clusterctl reads each object again before creating it and stops when one is gone; so
        // does this, before the first create.
        let vanished: Vec<String> = plan
            .groups
            .iter()
            .flatten()
            .filter(|uid| !fresh.contains_key(*uid))
            .map(|uid| plan.node(uid).reference.kubectl_name())
            .collect();
        if !vanished.is_empty() {
            return Err(Error::Api {
                context: "reading the objects to move".into(),
                message: format!(
                    "{} left the source after the move was planned; nothing was created — run the move again to plan it anew",
                    vanished.join(", ")
                ),
            });
        }
        journal.journal.sending_group(0);
        journal.stage(Stage::Creating).await?;
        Ok(fresh)
    };
    let fresh = match before_creating.await {
        Ok(fresh) => fresh,
        Err(e) => {
            // Nothing was written into the target yet: it is left as it was found.
            remove_namespaces(&target.cluster, &options.made_namespaces).await;
            return Err(e);
        }
    };
    let created = create_groups(
        plan,
        types,
        target,
        &fresh,
        Creating {
            preexisting: BTreeSet::new(),
            overwrite_existing: options.overwrite_existing,
            restore_status: options.restore_status,
            concurrency: options.concurrency,
            stop: options.stop.clone(),
        },
        progress,
        Some(&mut *journal),
    )
    .await?;
    options.stop.check()?;
    journal.stage(Stage::Deleting).await?;
    let deleted = delete_entries(
        source,
        journal,
        |e| (!e.kept_in_source && !e.deleted).then(|| e.uid.clone()),
        |e| e.deleted = true,
        "source",
        (options.concurrency, &options.stop),
        progress,
    )
    .await?;
    journal.stage(Stage::Unpausing).await?;
    set_paused(
        &target.cluster,
        plan,
        types,
        false,
        options.concurrency,
        progress,
    )
    .await?;
    journal.stage(Stage::Done).await?;
    Ok(Summary {
        api_version: "kubectl-capi/v1",
        kind: "MoveSummary",
        clusters,
        created: created.per_kind,
        deleted: deleted.count,
        skipped: deleted.skipped,
        kept_in_source: plan.kept_in_source.len(),
        excluded: plan.excluded.clone(),
        frozen_in_target: created.frozen,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// What [`delete_entries`] did.
pub struct Deleted {
    pub count: usize,
    pub skipped: Vec<Skipped>,
}

/// Deletes from `cluster` (the `which` of the move) the journal entries that `pending` gives a
/// UID for — exactly that object, see [`delete_one`] — in descending groups, up to
/// `--concurrency` at once. `record` marks each done entry, and the journal is saved after
/// every group, also when a sibling failed, so a rerun never repeats or loses a write.
async fn delete_entries(
    cluster: &Cluster,
    journal: &mut JournalFile,
    pending: impl Fn(&Entry) -> Option<String>,
    record: impl Fn(&mut Entry),
    which: &str,
    (concurrency, stop): (usize, &Stop),
    progress: &dyn Progress,
) -> Result<Deleted> {
    let mut deleted = Deleted {
        count: 0,
        skipped: Vec::new(),
    };
    let work: Vec<(Entry, String)> = journal
        .journal
        .entries
        .iter()
        .filter_map(|e| Some((e.clone(), pending(e)?)))
        .collect();
    let last_group = work.iter().map(|(e, _)| e.group).max().unwrap_or(0);
    progress.begin(Phase::Delete, work.len());
    for group in (0..=last_group).rev() {
        let jobs = work
            .iter()
            .filter(|(e, _)| e.group == group)
            .map(|(entry, uid)| async move {
                stop.check()?;
                let mut reference = entry.object.clone();
                if !entry.namespaced {
                    reference.namespace.clear();
                }
                let outcome = delete_one(cluster, &entry_resource(entry), &reference, uid).await?;
                progress.done(Phase::Delete, &entry.object);
                Ok::<_, Error>((entry, uid, outcome))
            });
        let answers: Vec<_> = stream::iter(jobs)
            .buffer_unordered(concurrency.max(1))
            .collect()
            .await;
        let (done, failure) = successes_and_first_error(answers);
        for (entry, uid, outcome) in done {
            match outcome {
                Deletion::Replaced { found_uid } => {
                    deleted
                        .skipped
                        .push(Skipped::replaced(&entry.object, uid, &found_uid, which))
                }
                Deletion::Deleted | Deletion::AlreadyGone => deleted.count += 1,
            }
            // Replaced is recorded too: the object this move meant is gone, and a rerun must not
            // try the one that took its name.
            if let Some(entry) = journal.journal.entry_mut(&entry.uid) {
                record(entry);
            }
        }
        journal.save().await?;
        if let Some(e) = failure {
            return Err(e);
        }
    }
    progress.end(Phase::Delete);
    Ok(deleted)
}

/// Splits a group's answers: what succeeded (to journal) and the first error (to end the move
/// with once the successes are recorded).
fn successes_and_first_error<T>(answers: Vec<Result<T>>) -> (Vec<T>, Option<Error>) {
    let mut done = Vec::new();
    let mut failure = None;
    for answer in answers {
        match answer {
            Ok(value) => done.push(value),
            Err(e) => failure = failure.or(Some(e)),
        }
    }
    (done, failure)
}

/// The API resource of a journal entry.
fn entry_resource(entry: &Entry) -> ApiResource {
    let (group, version) = entry
        .object
        .api_version
        .rsplit_once('/')
        .unwrap_or(("", entry.object.api_version.as_str()));
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk(group, version, &entry.object.kind),
        &entry.resource,
    )
}

/// The journal's Clusters and ClusterClasses (what the move pauses), with their API resources.
fn pausable_entries(journal: &Journal) -> Vec<(ApiResource, ObjectRef)> {
    journal
        .entries
        .iter()
        .filter(|e| is_pausable(&e.object))
        .map(|e| (entry_resource(e), e.object.clone()))
        .collect()
}

/// A journal entry's object, read by name in `cluster` (the `source` or `target`, for the
/// message), with its API resource; `None` when there is none.
pub(crate) async fn read_entry(
    cluster: &Cluster,
    entry: &Entry,
    which: &str,
) -> Result<Option<(ApiResource, DynamicObject)>> {
    let resource = entry_resource(entry);
    let namespace = if entry.namespaced {
        entry.object.namespace.as_str()
    } else {
        ""
    };
    let object = api(cluster, &resource, namespace)
        .get_opt(&entry.object.name)
        .await
        .map_err(|e| {
            cluster.api_error(
                e,
                &format!("reading {} in the {which}", entry.object.kubectl_name()),
            )
        })?;
    Ok(object.map(|o| (resource, o)))
}

/// The summary's per-kind key: `Kind.group`, or `Kind` for the core group.
fn kind_key(kind: &str, group: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

/// Resumes a move whose objects all exist in the target (stage Deleting or Unpausing) from its
/// journal alone: the source may be half deleted, so it cannot be planned again.
pub async fn finish_from_journal(
    source: &Cluster,
    target: &Cluster,
    journal: &mut JournalFile,
    concurrency: usize,
    progress: &dyn Progress,
) -> Result<Summary> {
    let started = Instant::now();
    let mut skipped = Vec::new();
    if journal.journal.stage == Stage::Deleting {
        skipped = delete_entries(
            source,
            journal,
            |e| (!e.kept_in_source && !e.deleted).then(|| e.uid.clone()),
            |e| e.deleted = true,
            "source",
            (concurrency, &Stop::default()),
            progress,
        )
        .await?
        .skipped;
        journal.stage(Stage::Unpausing).await?;
    }
    patch_paused(
        target,
        &pausable_entries(&journal.journal),
        false,
        concurrency,
        progress,
    )
    .await?;
    journal.stage(Stage::Done).await?;
    let mut created: BTreeMap<String, usize> = BTreeMap::new();
    for entry in &journal.journal.entries {
        *created
            .entry(kind_key(&entry.object.kind, entry.object.group()))
            .or_default() += 1;
    }
    Ok(Summary {
        api_version: "kubectl-capi/v1",
        kind: "MoveSummary",
        clusters: journal
            .journal
            .entries
            .iter()
            .filter(|e| e.object.kind == "Cluster" && e.object.group() == CORE_GROUP)
            .map(|e| e.object.clone())
            .collect(),
        created,
        deleted: journal.journal.entries.iter().filter(|e| e.deleted).count(),
        skipped,
        kept_in_source: journal
            .journal
            .entries
            .iter()
            .filter(|e| e.kept_in_source)
            .count(),
        excluded: Vec::new(),
        frozen_in_target: Vec::new(),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// `--rollback`: before deletion started, removes from the target every object this move put
/// there — descending groups, each marked `delete-for-move` with its finalizers dropped while the
/// target's Clusters are still paused, so no target controller tears down infrastructure the
/// source still owns — and only those: each by the UID its create answered with, never one that
/// was there before or that someone has put in its place since; then unpauses the source.
pub async fn rollback_from_journal(
    source: &Cluster,
    target: &Cluster,
    journal: &mut JournalFile,
    concurrency: usize,
    progress: &dyn Progress,
) -> Result<Deleted> {
    claim_unanswered_creates(target, journal, concurrency).await?;
    let removed = delete_entries(
        target,
        journal,
        |e| {
            (e.created && !e.preexisting && !e.removed)
                .then(|| e.target_uid.clone())
                .flatten()
        },
        |e| e.removed = true,
        "target",
        (concurrency, &Stop::default()),
        progress,
    )
    .await?;
    patch_paused(
        source,
        &pausable_entries(&journal.journal),
        false,
        concurrency,
        progress,
    )
    .await?;
    journal.stage(Stage::RolledBack).await?;
    Ok(removed)
}

/// A create whose answer was lost (the move was killed while it was in flight) left no target UID
/// in the journal. The journal says which creates may have been sent; an object of that name in
/// the target, for such an entry, is this move's copy, since the first preflight found
/// none there. Its UID is recorded, so what follows deletes exactly it.
async fn claim_unanswered_creates(
    target: &Cluster,
    journal: &mut JournalFile,
    concurrency: usize,
) -> Result<()> {
    let unanswered: Vec<Entry> = journal
        .journal
        .entries
        .iter()
        .filter(|e| e.sent && !e.preexisting && !e.removed && e.target_uid.is_none())
        .cloned()
        .collect();
    if unanswered.is_empty() {
        return Ok(());
    }
    let found: Vec<(String, Option<String>)> =
        stream::iter(unanswered.iter().map(|entry| async move {
            let copy = read_entry(target, entry, "target").await?;
            Ok::<_, Error>((entry.uid.clone(), copy.and_then(|(_, o)| o.metadata.uid)))
        }))
        .buffer_unordered(concurrency.max(1))
        .try_collect()
        .await?;
    for (uid, target_uid) in found {
        if let (Some(entry), Some(target_uid)) = (journal.journal.entry_mut(&uid), target_uid) {
            entry.target_uid = Some(target_uid);
            entry.created = true;
        }
    }
    journal.save().await
}

/// What creating the groups in the target did.
pub struct Created {
    pub uids: HashMap<String, String>,
    pub per_kind: BTreeMap<String, usize>,
    pub frozen: Vec<ObjectRef>,
}

/// Creates every group in order. An object already in the target is this move's own copy
/// (adopted), a global or restored one (reused), or one that was there before the move (updated
/// with `--overwrite-existing`, else refused: the preflight has refused it already, so only an
/// object that appeared since gets here).
pub async fn create_groups(
    plan: &MovePlan,
    types: &[MoveType],
    target: &Destination,
    objects: &HashMap<String, Arc<DynamicObject>>,
    how: Creating,
    progress: &dyn Progress,
    mut journal: Option<&mut JournalFile>,
) -> Result<Created> {
    let mut created = Created {
        uids: HashMap::new(),
        per_kind: BTreeMap::new(),
        frozen: Vec::new(),
    };
    let mut namespaces: BTreeSet<String> = BTreeSet::new();
    progress.begin(Phase::Create, plan.groups.iter().map(Vec::len).sum());
    for (index, group) in plan.groups.iter().enumerate() {
        // Objects of one group never own each other, so they are created in parallel; their
        // owners' target UIDs are all known from the groups before.
        let mut jobs = Vec::new();
        for uid in group {
            let node = plan.node(uid);
            let Some(t) = type_of(types, &node.reference) else {
                continue;
            };
            let Some(object) = objects.get(uid).cloned().or_else(|| node.object.clone()) else {
                continue;
            };
            let namespace = if t.info.namespaced {
                node.reference.namespace.clone()
            } else {
                String::new()
            };
            if !namespace.is_empty() && namespaces.insert(namespace.clone()) {
                ensure_namespace(&target.cluster, &namespace).await?;
            }
            if crate::model::has_annotation(&object, crate::names::FROZEN_BY_ANNOTATION) {
                created.frozen.push(node.reference.clone());
            }
            let was_there = match journal.as_deref() {
                Some(j) => j.journal.entry(uid).is_some_and(|e| e.preexisting),
                None => how.preexisting.contains(uid),
            };
            let when_existing = if node.is_global || node.global_hierarchy {
                WhenExisting::Reuse
            } else if was_there {
                if how.overwrite_existing {
                    WhenExisting::Overwrite
                } else {
                    WhenExisting::Refuse
                }
            } else {
                WhenExisting::Adopt
            };
            jobs.push((uid, node, t, object, namespace, when_existing));
        }
        let uids = &created.uids;
        let how = &how;
        // Every started create finishes and is journalled, even when another fails or a stop
        // was requested; only then does the first error end the move.
        let answers: Vec<CreateAnswer> = stream::iter(jobs.into_iter().map(
            |(uid, node, t, object, namespace, when_existing)| async move {
                how.stop.check()?;
                let (body, managed) = target_body(plan, &object, uids);
                let status = object
                    .data
                    .get("status")
                    .filter(|s| how.restore_status && t.status && !s.is_null())
                    .cloned();
                let new_uid = create_one(
                    &target.cluster,
                    t,
                    when_existing,
                    body,
                    managed,
                    &node.reference,
                )
                .await?;
                if let Some(status) = status {
                    restore_status(&target.cluster, t, &node.reference, &namespace, status).await?;
                }
                progress.done(Phase::Create, &node.reference);
                Ok::<_, Error>((uid.clone(), new_uid, t))
            },
        ))
        .buffer_unordered(how.concurrency.max(1))
        .collect()
        .await;
        let (results, failure) = successes_and_first_error(answers);
        for (uid, (new_uid, made), t) in results {
            if let Some(entry) = journal
                .as_deref_mut()
                .and_then(|j| j.journal.entry_mut(&uid))
            {
                entry.target_uid = Some(new_uid.clone());
                // Made by this move, now or by an earlier attempt of it.
                entry.created |= made;
            }
            created.uids.insert(uid, new_uid);
            *created
                .per_kind
                .entry(kind_key(&t.info.kind, &t.info.group))
                .or_default() += 1;
        }
        if let Some(journal) = journal.as_deref_mut() {
            // The next group's creates are sent only after this save.
            journal.journal.sending_group(index + 1);
            journal.save().await?;
        }
        if let Some(e) = failure {
            return Err(e);
        }
    }
    progress.end(Phase::Create);
    Ok(created)
}

/// `--restore-status`: replays an object's `.status` through the status subresource.
async fn restore_status(
    target: &Cluster,
    t: &MoveType,
    reference: &ObjectRef,
    namespace: &str,
    status: Value,
) -> Result<()> {
    api(target, &t.resource, namespace)
        .patch_status(
            &reference.name,
            &params(false),
            &Patch::Merge(&json!({"status": status})),
        )
        .await
        .map_err(|e| {
            target.api_error(
                e,
                &format!("restoring the status of {}", reference.kubectl_name()),
            )
        })?;
    Ok(())
}

/// `--to-directory`: pause the source, write every moved object, unpause the source.
pub async fn backup(
    plan: &MovePlan,
    source: &Source<'_>,
    directory: &std::path::Path,
) -> Result<usize> {
    super::directory::create_backup_directory(directory)?;
    set_paused(
        source.cluster,
        plan,
        source.types,
        true,
        DEFAULT_CONCURRENCY,
        &Silent,
    )
    .await?;
    let result = async {
        let objects = list_objects(source.cluster, source.types, source.scope).await?;
        let fresh: HashMap<String, Arc<DynamicObject>> = objects
            .into_iter()
            .map(|(o, _)| (o.metadata.uid.clone().unwrap_or_default(), o))
            .collect();
        super::directory::write(directory, plan, &fresh)
    }
    .await;
    // The source is unpaused whatever happened: a backup must not leave it paused.
    set_paused(
        source.cluster,
        plan,
        source.types,
        false,
        DEFAULT_CONCURRENCY,
        &Silent,
    )
    .await?;
    result
}

/// `--from-directory`: create every object of a backup in the target (after its preflight,
/// whose findings `preflight` carries), then unpause its Clusters and ClusterClasses there.
pub async fn restore(
    plan: &MovePlan,
    types: &[MoveType],
    target: &Destination,
    preflight: Preflight,
    overwrite_existing: bool,
    progress: &dyn Progress,
) -> Result<Created> {
    let created = create_groups(
        plan,
        types,
        target,
        &HashMap::new(),
        Creating {
            preexisting: preflight.in_target,
            overwrite_existing,
            restore_status: false,
            concurrency: DEFAULT_CONCURRENCY,
            stop: Stop::default(),
        },
        progress,
        None,
    )
    .await?;
    set_paused(
        &target.cluster,
        plan,
        types,
        false,
        DEFAULT_CONCURRENCY,
        progress,
    )
    .await?;
    Ok(created)
}
