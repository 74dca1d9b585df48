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

use super::create::already_exists;
use super::discover::MoveType;
use super::graph::TypeInfo;
use super::journal::Journal;
use super::namespaces::MadeNamespace;
use super::plan::MovePlan;
use super::requests::{DEFAULT_CONCURRENCY, type_of};
use crate::kube::Connected;

mod access;
mod dry_runs;
mod providers;

pub(super) use access::check_permissions;
pub use dry_runs::dry_run_creates;
pub(crate) use dry_runs::existing_in_target;
use dry_runs::judge_existing;
pub(crate) use providers::check_providers;
pub use providers::provider_refusals;

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
const WAITING_CANNOT_CLEAR: [CheckId; 3] = [
    CheckId::ClusterPaused,
    CheckId::ClusterclassPaused,
    CheckId::DanglingOwner,
];

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
        .filter(|c| !(c.check == CheckId::ClusterPaused && paused_by_this_move.contains(&c.object)))
        // Paused ClusterClasses are checked over the whole plan below, used or not.
        .filter(|c| c.check != CheckId::ClusterclassPaused)
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
