//! The resource types a server serves: a few built-in kinds and every established CRD.
//! Everything else (discovery, routing, validation) is driven by these definitions.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::status::Names;

/// A custom resource's verbs, in the order the apiextensions server lists them.
pub const CUSTOM_RESOURCE_VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

pub const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// Where `kubectl scale` and the autoscaler read and write replicas.
#[derive(Clone, Debug, PartialEq)]
pub struct ScaleDef {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    pub label_selector_path: Option<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VersionDef {
    pub name: String,
    pub storage: bool,
    pub status: bool,
    pub scale: Option<ScaleDef>,
    pub deprecated: bool,
    pub deprecation_warning: Option<String>,
}

/// What kind of storage semantics a resource has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    Namespace,
    Secret,
    ConfigMap,
    CustomResourceDefinition,
    /// A create-only review (access, rules, who am I): answered, never stored.
    Review,
    /// Any other built-in kind: stored as given (see `builtin_kinds`).
    Generic,
    Custom,
}

#[derive(Clone, Debug)]
pub struct ResourceDef {
    pub group: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Served versions, in the order the definition lists them.
    pub versions: Vec<VersionDef>,
    pub flavor: Flavor,
    pub verbs: Vec<&'static str>,
    /// Labels of the CRD, used by the openapi documents and by nothing else here.
    pub labels: BTreeMap<String, String>,
}

/// `(group, plural)`: a resource independent of its version.
pub type ResKey = (String, String);

impl ResourceDef {
    pub fn key(&self) -> ResKey {
        (self.group.clone(), self.plural.clone())
    }

    pub fn names(&self) -> Names {
        Names {
            group: self.group.clone(),
            plural: self.plural.clone(),
            kind: self.kind.clone(),
        }
    }

    pub fn storage_version(&self) -> &str {
        self.versions
            .iter()
            .find(|v| v.storage)
            .map(|v| v.name.as_str())
            .unwrap_or_else(|| self.versions[0].name.as_str())
    }

    pub fn version(&self, name: &str) -> Option<&VersionDef> {
        self.versions.iter().find(|v| v.name == name)
    }

    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group, version)
        }
    }

    /// Custom resources and CRDs count `metadata.generation`; Secrets, ConfigMaps and Namespaces do not.
    pub fn has_generation(&self) -> bool {
        matches!(
            self.flavor,
            Flavor::Custom | Flavor::CustomResourceDefinition
        )
    }

    pub fn is_custom(&self) -> bool {
        self.flavor == Flavor::Custom
    }

    pub fn has_status_subresource(&self, version: &str) -> bool {
        self.version(version).is_some_and(|v| v.status)
    }

    /// Whether a PUT without a resourceVersion is taken (the kind's strategy allows an
    /// unconditional update): not for custom resources, nor for Leases.
    pub fn allows_unconditional_update(&self) -> bool {
        !self.is_custom() && self.group != "coordination.k8s.io"
    }

    pub fn accepts_strategic_merge(&self) -> bool {
        !self.is_custom() && self.flavor != Flavor::CustomResourceDefinition
    }
}

// A row of the built-in kinds table; named arguments would not read better here.
#[allow(clippy::too_many_arguments)]
pub(super) fn builtin(
    group: &str,
    version: &str,
    plural: &str,
    kind: &str,
    namespaced: bool,
    short_names: &[&str],
    status: bool,
    flavor: Flavor,
) -> ResourceDef {
    ResourceDef {
        group: group.to_string(),
        plural: plural.to_string(),
        singular: kind.to_lowercase(),
        kind: kind.to_string(),
        list_kind: format!("{kind}List"),
        namespaced,
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        categories: Vec::new(),
        versions: vec![VersionDef {
            name: version.to_string(),
            storage: true,
            status,
            scale: None,
            deprecated: false,
            deprecation_warning: None,
        }],
        flavor,
        verbs: ALL_VERBS.to_vec(),
        labels: BTreeMap::new(),
    }
}

/// The built-in kinds with behaviour of their own (the generic rest: `builtin_kinds::all`).
/// The reviews a server answers at once and never stores: (group, plural, kind, namespaced).
const REVIEWS: [(&str, &str, &str, bool); 5] = [
    (
        "authentication.k8s.io",
        "selfsubjectreviews",
        "SelfSubjectReview",
        false,
    ),
    (
        "authorization.k8s.io",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        false,
    ),
    (
        "authorization.k8s.io",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        false,
    ),
    (
        "authorization.k8s.io",
        "subjectaccessreviews",
        "SubjectAccessReview",
        false,
    ),
    (
        "authorization.k8s.io",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        true,
    ),
];

pub fn builtins() -> Vec<Arc<ResourceDef>> {
    let mut crds = builtin(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
        true,
        Flavor::CustomResourceDefinition,
    );
    crds.categories = vec!["api-extensions".to_string()];
    vec![
        Arc::new(builtin(
            "",
            "v1",
            "namespaces",
            "Namespace",
            false,
            &["ns"],
            true,
            Flavor::Namespace,
        )),
        Arc::new(builtin(
            "",
            "v1",
            "secrets",
            "Secret",
            true,
            &[],
            false,
            Flavor::Secret,
        )),
        Arc::new(builtin(
            "",
            "v1",
            "configmaps",
            "ConfigMap",
            true,
            &["cm"],
            false,
            Flavor::ConfigMap,
        )),
        Arc::new(crds),
    ]
    .into_iter()
    .chain(REVIEWS.iter().map(|&(group, plural, kind, namespaced)| {
        let mut def = builtin(
            group,
            "v1",
            plural,
            kind,
            namespaced,
            &[],
            false,
            Flavor::Review,
        );
        def.verbs = vec!["create"];
        Arc::new(def)
    }))
    .collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The served resource a CRD describes, or `None` when it serves no version.
pub fn from_crd(crd: &Value) -> Option<ResourceDef> {
    let spec = &crd["spec"];
    let names = &spec["names"];
    let kind = names["kind"].as_str()?.to_string();
    let versions: Vec<VersionDef> = spec["versions"]
        .as_array()?
        .iter()
        .filter(|v| v["served"].as_bool().unwrap_or(false))
        .map(|v| {
            let scale = &v["subresources"]["scale"];
            VersionDef {
                name: v["name"].as_str().unwrap_or_default().to_string(),
                storage: v["storage"].as_bool().unwrap_or(false),
                status: v["subresources"].get("status").is_some(),
                scale: scale.is_object().then(|| ScaleDef {
                    spec_replicas_path: scale["specReplicasPath"]
                        .as_str()
                        .unwrap_or(".spec.replicas")
                        .to_string(),
                    status_replicas_path: scale["statusReplicasPath"]
                        .as_str()
                        .unwrap_or(".status.replicas")
                        .to_string(),
                    label_selector_path: scale["labelSelectorPath"].as_str().map(str::to_string),
                }),
                deprecated: v["deprecated"].as_bool().unwrap_or(false),
                deprecation_warning: v["deprecationWarning"].as_str().map(str::to_string),
            }
        })
        .collect();
    if versions.is_empty() {
        return None;
    }
    let labels = crd["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    Some(ResourceDef {
        group: spec["group"].as_str()?.to_string(),
        plural: names["plural"].as_str()?.to_string(),
        singular: names["singular"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| kind.to_lowercase()),
        list_kind: names["listKind"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("{kind}List")),
        kind,
        namespaced: spec["scope"].as_str() != Some("Cluster"),
        short_names: strings(&names["shortNames"]),
        categories: strings(&names["categories"]),
        versions,
        flavor: Flavor::Custom,
        verbs: CUSTOM_RESOURCE_VERBS.to_vec(),
        labels,
    })
}

/// Kubernetes version priority: GA > beta > alpha, higher numbers first, then others by name.
pub fn version_priority(version: &str) -> (u8, u32, u32, String) {
    let parse = |s: &str| -> Option<(u32, u8, u32)> {
        let rest = s.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let major: u32 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((major, 3, 0));
        }
        let (level, num) = if let Some(n) = tail.strip_prefix("beta") {
            (2, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (1, n)
        } else {
            return None;
        };
        Some((major, level, num.parse().ok()?))
    };
    match parse(version) {
        // Sort key: smaller sorts first, so invert the numbers.
        Some((major, level, minor)) => {
            (3 - level, u32::MAX - major, u32::MAX - minor, String::new())
        }
        None => (4, 0, 0, version.to_string()),
    }
}

/// The CRD's spec as the server normalises it on write (defaults the real server fills in).
pub fn default_crd(crd: &mut Value) {
    let spec = &mut crd["spec"];
    if let Some(names) = spec.get_mut("names")
        && let Some(kind) = names
            .get("kind")
            .and_then(|k| k.as_str())
            .map(str::to_string)
    {
        if names.get("listKind").is_none() {
            names["listKind"] = json!(format!("{kind}List"));
        }
        if names.get("singular").is_none() {
            names["singular"] = json!(kind.to_lowercase());
        }
    }
    if spec.get("conversion").is_none() {
        spec["conversion"] = json!({"strategy": "None"});
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut versions = vec![
            "v1alpha1", "v1beta1", "v1", "v2beta2", "v1beta2", "v2", "foo",
        ];
        versions.sort_by_key(|v| version_priority(v));
        assert_eq!(
            versions,
            vec![
                "v2", "v1", "v2beta2", "v1beta2", "v1beta1", "v1alpha1", "foo"
            ]
        );
    }

    #[test]
    fn crd_becomes_resource() {
        let crd = json!({"spec": {"group": "g.io", "scope": "Cluster",
            "names": {"plural": "things", "kind": "Thing", "shortNames": ["th"]},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
                {"name": "v0", "served": false, "storage": false}]}});
        let def = from_crd(&crd).unwrap();
        assert!(!def.namespaced);
        assert_eq!(def.versions.len(), 1);
        assert_eq!(def.singular, "thing");
        assert_eq!(def.list_kind, "ThingList");
        assert!(def.has_status_subresource("v1"));
        assert_eq!(def.short_names, vec!["th"]);
    }
}
