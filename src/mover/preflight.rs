//! The move's preflight: every check before the first write — clusterctl's (through `ready`'s
//! evaluator), the target's kinds and providers, permissions in both clusters for the move and
//! its journal, and a server-side dry-run create of every object.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use futures::{StreamExt, stream};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::json;

use crate::error::Result;
use crate::kube::Cluster;
use crate::model::ObjectRef;
use crate::names::CORE_GROUP;
use crate::ready::{CheckStatus, Options, evaluate};

use super::create::{already_exists, target_body};
use super::discover::MoveType;
use super::graph::TypeInfo;
use super::journal::Journal;
use super::namespaces::{
    MadeNamespace, NamespaceState, ensure_namespace, namespace_checked_by_dry_run,
    remove_namespaces,
};
use super::pause::is_pausable;
use super::plan::MovePlan;
use super::requests::{DEFAULT_CONCURRENCY, api, type_of};
use crate::kube::Connected;

/// Why a move cannot start: what each check finds, rendered once (in clusterctl's words where
/// clusterctl has them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// clusterctl's own preflight and what `ready` adds, in their words.
    Source(String),
    /// clusterctl's P6: ClusterClasses that move while paused (`ns/name`).
    PausedClasses(Vec<String>),
    NotServed {
        kind: String,
        group: String,
        version: String,
    },
    ProviderMissing {
        provider: String,
    },
    ProviderOlder {
        provider: String,
        source: String,
        target: String,
    },
    /// A provider version that is not a semantic version: it cannot be compared.
    ProviderVersion {
        provider: String,
        cluster: &'static str,
        version: String,
    },
    Permission {
        in_source: bool,
        verb: &'static str,
        group: String,
        resource: String,
        namespace: String,
    },
    AlreadyExists(ObjectRef),
    Rejected {
        object: ObjectRef,
        message: String,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Source(message) => f.write_str(message),
            Refusal::PausedClasses(classes) => f.write_str(
                &crate::names::clusterctl::paused_cluster_classes(&classes.join(", ")),
            ),
            Refusal::NotServed {
                kind,
                group,
                version,
            } => write!(
                f,
                "the target cluster does not serve {kind}.{group} at {version}; install its provider there (clusterctl init) first"
            ),
            Refusal::ProviderMissing { provider } => write!(
                f,
                "failed to check providers in target cluster: provider {provider} not found in the target cluster"
            ),
            Refusal::ProviderOlder {
                provider,
                source,
                target,
            } => write!(
                f,
                "failed to check providers in target cluster: provider {provider} in the target cluster is older than in the source cluster (source: {source}, target: {target})"
            ),
            Refusal::ProviderVersion {
                provider,
                cluster,
                version,
            } => write!(
                f,
                "failed to check providers in target cluster: provider {provider} in the {cluster} cluster has version {version:?}, which is not a semantic version; fix its Provider inventory entry (clusterctl writes versions like v1.10.0)"
            ),
            Refusal::Permission {
                in_source,
                verb,
                group,
                resource,
                namespace,
            } => {
                let which = if *in_source { "source" } else { "target" };
                let qualified = if group.is_empty() {
                    resource.clone()
                } else {
                    format!("{resource}.{group}")
                };
                let place = if namespace.is_empty() {
                    String::new()
                } else {
                    format!(" in namespace {namespace}")
                };
                write!(
                    f,
                    "missing permission in the {which} cluster: {verb} {qualified}{place}"
                )
            }
            Refusal::AlreadyExists(object) => f.write_str(&already_exists(object)),
            Refusal::Rejected { object, message } => write!(
                f,
                "the target cluster rejects {}: {message}",
                object.kubectl_name()
            ),
        }
    }
}

/// The Provider inventory of one end: its items, or (forbidden) the permission it needs. A
/// cluster that does not serve the kind has none; any other failure is an error naming the end.
async fn provider_inventory(
    cluster: &Cluster,
    in_source: bool,
) -> Result<std::result::Result<Vec<DynamicObject>, Refusal>> {
    let resource = crate::kube::catalog::provider_resource();
    let api: Api<DynamicObject> = Api::all_with(cluster.client.clone(), &resource);
    match api.list(&ListParams::default()).await {
        Ok(list) => Ok(Ok(list.items)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Ok(Vec::new())),
        Err(kube::Error::Api(status)) if status.code == 403 => Ok(Err(Refusal::Permission {
            in_source,
            verb: "list",
            group: crate::names::CLUSTERCTL_GROUP.into(),
            resource: "providers".into(),
            namespace: String::new(),
        })),
        Err(e) => Err(cluster.api_error(
            e,
            &format!(
                "listing the Provider inventory in the {}",
                if in_source { "source" } else { "target" }
            ),
        )),
    }
}

/// clusterctl's provider check: every source provider in the target at an equal or newer version.
pub(super) async fn check_providers(source: &Cluster, target: &Cluster) -> Result<Vec<Refusal>> {
    let (in_source, in_target) = futures::try_join!(
        provider_inventory(source, true),
        provider_inventory(target, false)
    )?;
    match (in_source, in_target) {
        (Ok(source), Ok(target)) => Ok(provider_refusals(&source, &target)),
        (source, target) => Ok(source.err().into_iter().chain(target.err()).collect()),
    }
}

/// A provider's version as a semantic version (a leading `v` tolerated).
fn semantic(version: &str) -> Option<semver::Version> {
    semver::Version::parse(version.trim().trim_start_matches('v')).ok()
}

/// The provider check over two inventories (pure): every source provider must be in the target
/// at an equal or newer semantic version; a version that is not one is named, never ranked.
pub fn provider_refusals(source: &[DynamicObject], target: &[DynamicObject]) -> Vec<Refusal> {
    let mut failures = Vec::new();
    let text = |p: &DynamicObject, field: &str| p.data[field].as_str().unwrap_or("").to_string();
    for p in source {
        let label = p.metadata.name.clone().unwrap_or_default();
        let (name, type_, v) = (text(p, "providerName"), text(p, "type"), text(p, "version"));
        let Some(wanted) = semantic(&v) else {
            failures.push(Refusal::ProviderVersion {
                provider: label,
                cluster: "source",
                version: v,
            });
            continue;
        };
        let mut found = Vec::new();
        for t in target
            .iter()
            .filter(|t| text(t, "providerName") == name && text(t, "type") == type_)
        {
            let version = text(t, "version");
            match semantic(&version) {
                Some(parsed) => found.push((parsed, version)),
                None => failures.push(Refusal::ProviderVersion {
                    provider: label.clone(),
                    cluster: "target",
                    version,
                }),
            }
        }
        match found.into_iter().max_by(|a, b| a.0.cmp(&b.0)) {
            None if target
                .iter()
                .any(|t| text(t, "providerName") == name && text(t, "type") == type_) => {}
            None => failures.push(Refusal::ProviderMissing { provider: label }),
            Some((newest, shown)) if newest < wanted => failures.push(Refusal::ProviderOlder {
                provider: label,
                source: v,
                target: shown,
            }),
            Some(_) => {}
        }
    }
    failures
}

pub(super) async fn access_review(
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

pub(super) async fn check_permissions(
    plan: &MovePlan,
    types: &[MoveType],
    source: &Cluster,
    target: &Cluster,
    this_move: &ThisMove<'_>,
) -> Result<Vec<Refusal>> {
    let mut failures = Vec::new();
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
    // The lease that keeps one command at a time writing for a move (see crate::kube::lease).
    if this_move.journal_namespace.is_some() {
        for verb in ["get", "create", "patch", "delete"] {
            needed.insert((
                true,
                verb,
                "coordination.k8s.io".into(),
                "leases".into(),
                crate::names::LEASE_NAMESPACE.into(),
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
    // --concurrency reviews at a time; answers in a stable order for the report.
    let answers: Vec<_> = stream::iter(needed.into_iter().map(
        |(in_source, verb, group, resource, ns)| async move {
            let cluster = if in_source { source } else { target };
            let allowed = access_review(cluster, verb, &group, &resource, &ns).await;
            (in_source, verb, group, resource, ns, allowed)
        },
    ))
    .buffered(this_move.concurrency.max(1))
    .collect()
    .await;
    for (in_source, verb, group, resource, ns, allowed) in answers {
        if !allowed? {
            failures.push(Refusal::Permission {
                in_source,
                verb,
                group,
                resource,
                namespace: ns,
            });
        }
    }
    Ok(failures)
}

/// What the preflight found.
pub struct Preflight {
    /// Every reason the move cannot start (empty: go).
    pub failures: Vec<Refusal>,
    /// Objects (source UIDs) that already exist in the target, from the dry-run creates: a
    /// rollback must never remove them.
    pub in_target: BTreeSet<String>,
    /// Namespaces the dry runs needed and the preflight created in the target (when it
    /// passed): to remove again if the move writes nothing into them (a dry run, a stop before
    /// the first create).
    pub made_namespaces: Vec<MadeNamespace>,
    /// Objects (source UIDs) whose copy in the target an earlier move between these two
    /// clusters made: reused, not refused.
    pub reused: BTreeSet<String>,
    /// What a server-side dry run could not check yet, and why (one line each).
    pub unchecked: Vec<String>,
    /// Namespaces the dry runs needed, created and removed again because they refused: what a
    /// refusal wrote and undid.
    pub removed_namespaces: Vec<String>,
}

/// What the preflight knows of this move beyond its plan.
pub struct ThisMove<'a> {
    /// The journal of an earlier, interrupted attempt: its own pauses and copies do not block it.
    pub earlier: Option<&'a Journal>,
    /// `--overwrite-existing`.
    pub overwrite_existing: bool,
    /// Where the journal's copy is kept in the source (its ConfigMaps need permissions too).
    pub journal_namespace: Option<&'a str>,
    /// The user's source connection flags, repeated in the commands the refusals suggest.
    pub flags: &'a str,
    /// `--concurrency`: requests in flight at once (reviews, dry runs), as for the writes.
    pub concurrency: usize,
    /// Other kubectl-capi moves that paused Clusters here and did not finish: a Cluster they
    /// paused is refused with the commands that continue or undo them, never with an unpause.
    pub unfinished: &'a [crate::ready::evaluate::UnfinishedMove],
    /// The source and the two clusters' identities: where to look for the copies earlier
    /// moves between them made, which this one reuses instead of refusing.
    pub earlier_copies: Option<(&'a Cluster, &'a crate::verify::Between)>,
    /// The checks before `--freeze`/`--wait-ready`: read-only (no namespaces, no dry-run
    /// creates), and readiness only as far as freezing and waiting cannot clear it.
    pub before_freeze: bool,
    /// `--dry-run=server`: not even a namespace is created.
    pub server_dry_run: bool,
}

/// The readiness checks that neither a freeze nor waiting clears.
const WAITING_CANNOT_CLEAR: [&str; 3] = ["cluster-paused", "clusterclass-paused", "dangling-owner"];

impl Default for ThisMove<'_> {
    fn default() -> Self {
        ThisMove {
            earlier: None,
            overwrite_existing: false,
            journal_namespace: None,
            flags: "",
            concurrency: DEFAULT_CONCURRENCY,
            unfinished: &[],
            earlier_copies: None,
            before_freeze: false,
            server_dry_run: false,
        }
    }
}

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
    failures.extend(judged.refusals);
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

/// The planned objects that are in the target already (one lean LIST per kind and namespace,
/// read-only): each with the UID it has there. A kind the target does not serve has none.
pub(crate) async fn existing_in_target<'p>(
    plan: &'p MovePlan,
    types: &[MoveType],
    target: &Cluster,
) -> Result<Vec<(&'p String, &'p super::graph::Node, String)>> {
    let mut lists: BTreeMap<(String, String), Vec<(&String, &super::graph::Node)>> =
        BTreeMap::new();
    for uid in plan.groups.iter().flatten() {
        let node = plan.node(uid);
        let Some(t) = type_of(types, &node.reference) else {
            continue;
        };
        let namespace = if t.info.namespaced {
            node.reference.namespace.clone()
        } else {
            String::new()
        };
        lists
            .entry((crate::snapshot::qualified(&t.resource), namespace))
            .or_default()
            .push((uid, node));
    }
    let mut found: Vec<(&String, &super::graph::Node, String)> = Vec::new();
    for ((_, namespace), nodes) in lists {
        let t = type_of(types, &nodes[0].1.reference).expect("grouped by type");
        // (A kind the target does not serve has none; served_kinds refuses the move.)
        let uids = super::requests::uids_by_name(target, &t.resource, &namespace, "target").await?;
        for (uid, node) in nodes {
            if let Some(target_uid) = uids.get(&node.reference.name) {
                found.push((uid, node, target_uid.clone()));
            }
        }
    }
    Ok(found)
}

/// What the objects already in the target come to.
struct Judged {
    /// Every one of them (source UIDs): a rollback never removes them.
    in_target: BTreeSet<String>,
    /// Those whose copy an earlier move between these two clusters made.
    reused: BTreeSet<String>,
    refusals: Vec<Refusal>,
}

/// Objects already in the target are expected when shared by design (global), this move's own
/// copies from an earlier attempt, or to be overwritten (`--overwrite-existing`); reused when an
/// earlier move between these clusters made them (its records pair the UIDs); else refused.
async fn judge_existing(
    existing: Vec<(&String, &super::graph::Node, String)>,
    target: &Cluster,
    this_move: &ThisMove<'_>,
) -> Result<Judged> {
    let mut judged = Judged {
        in_target: existing.iter().map(|(uid, ..)| (*uid).clone()).collect(),
        reused: BTreeSet::new(),
        refusals: Vec::new(),
    };
    let unexpected: Vec<_> = existing
        .into_iter()
        .filter(|(uid, node, _)| {
            !(node.is_global
                || node.global_hierarchy
                || this_move.overwrite_existing
                || this_move
                    .earlier
                    .is_some_and(|j| j.created_by_this_move(uid)))
        })
        .collect();
    if unexpected.is_empty() {
        return Ok(judged);
    }
    let copies = match this_move.earlier_copies {
        Some((source, between)) => {
            let namespaces = unexpected
                .iter()
                .map(|(_, node, _)| node.reference.namespace.clone())
                .collect();
            super::record::earlier_copies([source, target], &namespaces, between).await?
        }
        None => BTreeSet::new(),
    };
    for (uid, node, target_uid) in unexpected {
        if copies.contains(&super::record::pair(uid, &target_uid)) {
            judged.reused.insert(uid.clone());
        } else {
            judged
                .refusals
                .push(Refusal::AlreadyExists(node.reference.clone()));
        }
    }
    Ok(judged)
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
    let snapshot = super::graph::snapshot_of(objects);
    let options = Options {
        clusters: clusters
            .iter()
            .map(|c| (c.namespace.clone(), c.name.clone()))
            .collect(),
        strict: false,
        unfinished_moves: this_move.unfinished.to_vec(),
        flags: this_move.flags.to_string(),
    };
    let report = evaluate(&snapshot, &options);
    let mut failures: Vec<Refusal> = report
        .clusters
        .iter()
        .flat_map(|cluster| &cluster.checks)
        .filter(|c| c.status == CheckStatus::Fail)
        // Before freezing, only what the freeze and the wait cannot clear.
        .filter(|c| !this_move.before_freeze || WAITING_CANNOT_CLEAR.contains(&c.check))
        .filter(|c| !(c.check == "cluster-paused" && paused_by_this_move.contains(&c.object)))
        // Paused ClusterClasses are checked over the whole plan below, used or not.
        .filter(|c| c.check != "clusterclass-paused")
        .map(|c| Refusal::Source(c.message.clone()))
        .collect();
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
        failures.push(Refusal::PausedClasses(paused_classes));
    }
    failures
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

/// A server-side dry run of every create in the target, so schema, size and webhook rejections
/// surface before any write; objects already there are refused unless expected (global, this
/// move's own, `--overwrite-existing`). The namespaces the dry runs need are created, and removed
/// again when anything fails.
pub async fn dry_run_creates(
    plan: &MovePlan,
    types: &[MoveType],
    target: &Cluster,
    this_move: &ThisMove<'_>,
    known: &BTreeSet<String>,
) -> Result<Preflight> {
    let mut failures = Vec::new();
    let mut created_namespaces = Vec::new();
    let mut seen_namespaces = BTreeSet::new();
    // `--dry-run=server` writes nothing: a namespace the target lacks is itself dry-run created,
    // and what goes into it is checked when it exists.
    let mut not_there = BTreeSet::new();
    for uid in plan.groups.iter().flatten() {
        let namespace = &plan.node(uid).reference.namespace;
        if namespace.is_empty() || !seen_namespaces.insert(namespace.clone()) {
            continue;
        }
        if this_move.server_dry_run {
            match namespace_checked_by_dry_run(target, namespace).await? {
                NamespaceState::Exists => {}
                NamespaceState::Missing => {
                    not_there.insert(namespace.clone());
                }
                NamespaceState::Rejected(message) => failures.push(Refusal::Rejected {
                    object: ObjectRef {
                        api_version: "v1".into(),
                        kind: "Namespace".into(),
                        namespace: String::new(),
                        name: namespace.clone(),
                    },
                    message,
                }),
            }
            continue;
        }
        match ensure_namespace(target, namespace).await {
            Ok(made) => created_namespaces.extend(made),
            Err(e) => {
                remove_namespaces(target, &created_namespaces).await;
                return Err(e);
            }
        }
    }
    let unchecked: Vec<&String> = plan
        .groups
        .iter()
        .flatten()
        .filter(|uid| not_there.contains(&plan.node(uid).reference.namespace))
        .collect();
    // What is in the target already was judged by the caller; its create would only conflict.
    let dry_runs = plan
        .groups
        .iter()
        .flatten()
        .filter(|uid| !known.contains(*uid))
        .filter(|uid| !not_there.contains(&plan.node(uid).reference.namespace))
        .filter_map(|uid| {
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
                    field_manager: Some(crate::kube::FIELD_MANAGER.into()),
                },
                &object,
            )
            .await
            // Only the verdict is kept: 10,000 answered objects would double the move's memory.
            .map(|_| ());
        (uid, node, result)
    }))
    .buffered(this_move.concurrency.max(1))
    .collect()
    .await;
    let mut appeared = Vec::new();
    for (uid, node, result) in answers {
        match result {
            Ok(_) => {}
            // There since the caller looked (or, for a restore, never looked): judged the same way.
            Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
                let t = type_of(types, &node.reference).expect("dry-run objects have a type");
                let found = api(target, &t.resource, &node.reference.namespace)
                    .get_opt(&node.reference.name)
                    .await
                    .map_err(|e| {
                        target.api_error(
                            e,
                            &format!("reading {} in the target", node.reference.kind_and_place()),
                        )
                    })?
                    .and_then(|o| o.metadata.uid)
                    .unwrap_or_default();
                appeared.push((uid, node, found));
            }
            Err(kube::Error::Api(s)) => failures.push(Refusal::Rejected {
                object: node.reference.clone(),
                message: s.message,
            }),
            Err(e) => {
                remove_namespaces(target, &created_namespaces).await;
                return Err(target.api_error(e, "dry-run creating objects in the target"));
            }
        }
    }
    let judged = judge_existing(appeared, target, this_move).await?;
    failures.extend(judged.refusals);
    let (in_target, reused) = (judged.in_target, judged.reused);
    let mut removed_namespaces = Vec::new();
    if !failures.is_empty() {
        remove_namespaces(target, &created_namespaces).await;
        removed_namespaces = created_namespaces.drain(..).map(|m| m.name).collect();
    }
    Ok(Preflight {
        removed_namespaces,
        failures,
        in_target,
        made_namespaces: created_namespaces,
        reused,
        unchecked: not_there
            .iter()
            .map(|namespace| {
                let count = unchecked
                    .iter()
                    .filter(|uid| plan.node(uid).reference.namespace == *namespace)
                    .count();
                format!(
                    "namespace {namespace} is not in the target yet (the move creates it; its dry run passed): the {count} object(s) to move into it are checked when it exists"
                )
            })
            .collect(),
    })
}

/// Whether the target has a CRD for the kind that serves the version it is stored in here.
/// From the CRDs listed when the target was connected; asked for when they could not be listed.
pub(super) async fn serves_by_crd(target: &Connected, t: &MoveType) -> Result<bool> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(name: &str, version: &str) -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "clusterctl.cluster.x-k8s.io/v1alpha3", "kind": "Provider",
            "metadata": {"name": format!("infrastructure-{name}")},
            "providerName": name, "type": "InfrastructureProvider", "version": version}))
        .unwrap()
    }

    fn older(source: &str, target: &str) -> bool {
        let refused =
            provider_refusals(&[provider("docker", source)], &[provider("docker", target)]);
        match refused.as_slice() {
            [] => false,
            [Refusal::ProviderOlder { .. }] => true,
            other => panic!("{source} vs {target}: {other:?}"),
        }
    }

    #[test]
    fn provider_versions_compare_as_semantic_versions() {
        assert!(
            older("v1.10.0", "v1.10.0-beta.1"),
            "a pre-release ranks below its release"
        );
        assert!(!older("v1.10.0-beta.1", "v1.10.0"));
        assert!(older("v1.10.1", "v1.10.0"));
        assert!(older("v1.10.0", "v1.9.9"), "not compared as text");
        assert!(!older("v1.9.9", "v1.10.0"));
        assert!(!older("1.10.0", "v1.10.0"), "a leading v is tolerated");
        let newest = provider_refusals(
            &[provider("docker", "v1.10.0")],
            &[provider("docker", "v1.9.0"), provider("docker", "v1.11.0")],
        );
        assert!(
            newest.is_empty(),
            "the newest target entry counts: {newest:?}"
        );
    }

    #[test]
    fn a_version_that_is_not_semantic_is_named_never_ranked() {
        let refused = provider_refusals(
            &[provider("docker", "latest")],
            &[provider("docker", "v1.10.0")],
        );
        let text: Vec<String> = refused.iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 1, "{text:?}");
        assert!(
            text[0].contains("infrastructure-docker in the source cluster has version \"latest\""),
            "{text:?}"
        );
        let refused = provider_refusals(
            &[provider("docker", "v1.10.0")],
            &[provider("docker", "v1.x")],
        );
        assert!(
            matches!(
                refused.as_slice(),
                [Refusal::ProviderVersion {
                    cluster: "target",
                    ..
                }]
            ),
            "{refused:?}"
        );
        let missing = provider_refusals(&[provider("docker", "v1.10.0")], &[]);
        assert!(matches!(
            missing.as_slice(),
            [Refusal::ProviderMissing { .. }]
        ));
    }

    #[test]
    fn refusals_render_in_clusterctl_words_where_it_has_them() {
        let rendered = [
            Refusal::PausedClasses(vec!["ns1/a".into(), "ns1/b".into()]),
            Refusal::ProviderMissing {
                provider: "infrastructure-docker".into(),
            },
            Refusal::Permission {
                in_source: true,
                verb: "delete",
                group: String::new(),
                resource: "configmaps".into(),
                namespace: "ns1".into(),
            },
        ]
        .map(|r| r.to_string());
        assert_eq!(
            rendered,
            [
                "cannot start operation while the following ClusterClasses are paused: ns1/a, ns1/b",
                "failed to check providers in target cluster: provider infrastructure-docker not found in the target cluster",
                "missing permission in the source cluster: delete configmaps in namespace ns1",
            ]
        );
    }
}
