//! What every Cluster API object has, whatever its kind: the dialect it was read in, its
//! reference, its owner, labels and annotations, and reading them by name.

use kube::api::DynamicObject;
use serde::Serialize;
use serde_json::Value;

use crate::names::{CLUSTER_NAME_LABEL, PAUSED_ANNOTATION};

/// The API dialect an object was read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Dialect {
    V1beta1,
    V1beta2,
}

impl Dialect {
    /// From the object's apiVersion: v1beta2 (and later) reads the v1beta2 shape.
    pub fn of(object: &DynamicObject) -> Dialect {
        let version = object
            .types
            .as_ref()
            .map(|t| crate::names::group_and_version(&t.api_version).1)
            .unwrap_or_default();
        if version == crate::names::V1BETA1 || version.starts_with("v1alpha") {
            Dialect::V1beta1
        } else {
            Dialect::V1beta2
        }
    }
}

/// The object reference every command's JSON uses.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ObjectRef {
    /// Whether this is Cluster API's Cluster.
    pub fn is_core_cluster(&self) -> bool {
        crate::names::is_core_cluster(self.group(), &self.kind)
    }

    pub fn of(object: &DynamicObject) -> ObjectRef {
        let types = object.types.clone().unwrap_or_default();
        ObjectRef {
            api_version: types.api_version,
            kind: types.kind,
            namespace: object.metadata.namespace.clone().unwrap_or_default(),
            name: object.metadata.name.clone().unwrap_or_default(),
        }
    }

    pub fn group(&self) -> &str {
        crate::names::group_of(&self.api_version)
    }

    /// clusterctl renders a GroupVersionKind as `"group/version, Kind=Kind"`.
    pub fn gvk_string(&self) -> String {
        format!("{}, Kind={}", self.api_version, self.kind)
    }

    /// `Kind namespace/name`, or `Kind name` for a cluster-scoped object: how messages name it.
    pub fn kind_and_place(&self) -> String {
        if self.namespace.is_empty() {
            format!("{} {}", self.kind, self.name)
        } else {
            format!("{} {}/{}", self.kind, self.namespace, self.name)
        }
    }

    /// kubectl's `kind.group/name`.
    pub fn kubectl_name(&self) -> String {
        let group = self.group();
        if group.is_empty() {
            format!("{}/{}", self.kind.to_lowercase(), self.name)
        } else {
            format!("{}.{}/{}", self.kind.to_lowercase(), group, self.name)
        }
    }
}

/// A reference from `spec` to another object: v1beta2 names `apiGroup`, v1beta1 `apiVersion`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TypedRef {
    pub api_group: String,
    /// Only v1beta1 references carry a version.
    pub api_version: Option<String>,
    pub kind: String,
    pub name: String,
    pub namespace: Option<String>,
}

impl TypedRef {
    pub fn read(value: &Value) -> Option<TypedRef> {
        let kind = value["kind"].as_str()?.to_string();
        let name = value["name"].as_str()?.to_string();
        let api_version = value["apiVersion"].as_str().map(str::to_string);
        let api_group = value["apiGroup"].as_str().map(str::to_string).or_else(|| {
            api_version
                .as_deref()
                .map(|v| crate::names::group_of(v).to_string())
        })?;
        Some(TypedRef {
            api_group,
            api_version,
            kind,
            name,
            namespace: value["namespace"].as_str().map(str::to_string),
        })
    }
}

/// The owner reference marked `controller: true`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Controller {
    pub kind: String,
    pub name: String,
    pub uid: String,
}

pub fn controller_of(object: &DynamicObject) -> Option<Controller> {
    object
        .metadata
        .owner_references
        .as_ref()?
        .iter()
        .find(|r| r.controller == Some(true))
        .map(|r| Controller {
            kind: r.kind.clone(),
            name: r.name.clone(),
            uid: r.uid.clone(),
        })
}

pub fn has_annotation(object: &DynamicObject, key: &str) -> bool {
    object
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(key))
}

pub fn annotation<'a>(object: &'a DynamicObject, key: &str) -> Option<&'a str> {
    object
        .metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

pub fn label<'a>(object: &'a DynamicObject, key: &str) -> Option<&'a str> {
    object
        .metadata
        .labels
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

pub fn is_paused_by_annotation(object: &DynamicObject) -> bool {
    has_annotation(object, PAUSED_ANNOTATION)
}

pub fn is_deleting(object: &DynamicObject) -> bool {
    object.metadata.deletion_timestamp.is_some()
}

/// The Cluster an object belongs to: `spec.clusterName`, else the cluster-name label.
pub fn cluster_name_of(object: &DynamicObject) -> Option<String> {
    object.data["spec"]["clusterName"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| label(object, CLUSTER_NAME_LABEL).map(str::to_string))
}

pub fn int(value: &Value) -> Option<i64> {
    value.as_i64()
}

#[cfg(test)]
pub(crate) mod fixtures {
    use kube::api::DynamicObject;

    /// A DynamicObject from YAML written for the tests.
    pub fn object(yaml: &str) -> DynamicObject {
        serde_saphyr::from_str(yaml).expect("fixture parses")
    }
}

/// An object's namespace and name.
pub fn namespaced_name(object: &DynamicObject) -> (String, String) {
    (
        object.metadata.namespace.clone().unwrap_or_default(),
        object.metadata.name.clone().unwrap_or_default(),
    )
}

/// Clusters chosen by name, as every command chooses them: the ones `names` pick out of
/// `clusters` (all of them when no name is given), and the names that matched none.
pub fn select_by_name<'a, T>(
    clusters: impl IntoIterator<Item = &'a T>,
    names: &[String],
    name_of: impl Fn(&T) -> &str,
) -> (Vec<&'a T>, Vec<String>) {
    let clusters: Vec<&T> = clusters.into_iter().collect();
    if names.is_empty() {
        return (clusters, Vec::new());
    }
    let selected = clusters
        .iter()
        .copied()
        .filter(|c| names.iter().any(|n| n == name_of(c)))
        .collect();
    let missing = names
        .iter()
        .filter(|n| !clusters.iter().any(|c| name_of(c) == n.as_str()))
        .cloned()
        .collect();
    (selected, missing)
}

#[cfg(test)]
mod selection_tests {
    #[test]
    fn names_pick_clusters_and_report_what_matched_none() {
        let clusters = ["a", "b", "b"];
        let pick = |names: &[&str]| {
            let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            super::select_by_name(&clusters, &names, |c| c)
        };
        assert_eq!(pick(&[]).0.len(), 3, "no names: every Cluster");
        let (selected, missing) = pick(&["b", "x", "y"]);
        assert_eq!(
            (selected.len(), missing),
            (2, vec!["x".to_string(), "y".to_string()])
        );
    }
}
