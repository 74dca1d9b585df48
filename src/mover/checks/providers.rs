//! The providers of both ends: the target must run every provider the source does, at its
//! version or newer (clusterctl's Provider inventory).

use kube::api::{Api, DynamicObject, ListParams};

use crate::error::Result;
use crate::kube::Cluster;
use crate::mover::checks::findings::Refusal;

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
            resource: crate::names::PROVIDER_PLURAL.into(),
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
pub(crate) async fn check_providers(source: &Cluster, target: &Cluster) -> Result<Vec<Refusal>> {
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
