//! Discovery documents (legacy and aggregated) and the OpenAPI v3 documents kubectl reads
//! to decide on server-side field validation and patch types.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde_json::{Value, json};

use super::resources::{ResourceDef, version_priority};

pub const AGGREGATED_CONTENT_TYPE: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Does the Accept header ask for aggregated discovery (v2)?
pub fn wants_aggregated(accept: &str) -> bool {
    accept.split(',').next().is_some_and(|first| {
        first.contains("g=apidiscovery.k8s.io")
            && first.contains("v=v2")
            && !first.contains("v=v2beta1")
    }) || accept.split(',').any(|part| {
        part.contains("g=apidiscovery.k8s.io")
            && part.contains(";v=v2;")
            && part.contains("as=APIGroupDiscoveryList")
    })
}

/// Served versions of a group, highest priority first (the first is preferred).
fn group_versions(defs: &[Arc<ResourceDef>], group: &str) -> Vec<String> {
    let mut versions: Vec<String> = defs
        .iter()
        .filter(|d| d.group == group)
        .flat_map(|d| d.versions.iter().map(|v| v.name.clone()))
        .collect();
    versions.sort_by_key(|v| version_priority(v));
    versions.dedup();
    versions
}

fn groups(defs: &[Arc<ResourceDef>]) -> Vec<String> {
    // Built-in groups first, by kube-aggregator's priority, then CRD groups in name order, as
    // the real server lists them.
    let mut builtin: Vec<String> = Vec::new();
    let mut custom: Vec<String> = Vec::new();
    for def in defs.iter().filter(|d| !d.group.is_empty()) {
        let list = if def.is_custom() {
            &mut custom
        } else {
            &mut builtin
        };
        if !list.contains(&def.group) {
            list.push(def.group.clone());
        }
    }
    builtin.sort_by_key(|group| {
        super::builtin_kinds::GROUP_PRIORITY
            .iter()
            .position(|g| g == group)
            .unwrap_or(usize::MAX)
    });
    custom.sort();
    custom.retain(|g| !builtin.contains(g));
    builtin.extend(custom);
    builtin
}

pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]
    })
}

fn group_doc(group: &str, versions: &[String]) -> Value {
    let entries: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": entries,
        "preferredVersion": entries.first().cloned().unwrap_or(json!({})),
    })
}

pub fn api_group_list(defs: &[Arc<ResourceDef>]) -> Value {
    let items: Vec<Value> = groups(defs)
        .iter()
        .map(|g| group_doc(g, &group_versions(defs, g)))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": items})
}

pub fn api_group(defs: &[Arc<ResourceDef>], group: &str) -> Option<Value> {
    let versions = group_versions(defs, group);
    if versions.is_empty() {
        return None;
    }
    let mut doc = group_doc(group, &versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

/// As apiserver's `discovery.StorageVersionHash`: the first 8 bytes of the SHA-256 of
/// `group/storageVersion/kind`, in base64.
fn storage_hash(def: &ResourceDef) -> String {
    use base64::Engine;
    use sha2::Digest;
    let id = format!("{}/{}/{}", def.group, def.storage_version(), def.kind);
    let digest = sha2::Sha256::digest(id.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

pub fn api_resource_list(defs: &[Arc<ResourceDef>], group: &str, version: &str) -> Option<Value> {
    let mut resources = Vec::new();
    let mut found = false;
    // Built-in kinds in name order, as kube-apiserver registers them; CRDs as they were defined.
    let mut in_group: Vec<&Arc<ResourceDef>> = defs.iter().filter(|d| d.group == group).collect();
    in_group.sort_by(|a, b| match (a.is_custom(), b.is_custom()) {
        (false, false) => a.plural.cmp(&b.plural),
        _ => std::cmp::Ordering::Equal,
    });
    for def in in_group {
        let Some(v) = def.version(version) else {
            continue;
        };
        found = true;
        let mut entry = json!({
            "name": def.plural,
            "singularName": def.singular,
            "namespaced": def.namespaced,
            "kind": def.kind,
            "verbs": def.verbs,
        });
        if !def.short_names.is_empty() {
            entry["shortNames"] = json!(def.short_names);
        }
        if !def.categories.is_empty() {
            entry["categories"] = json!(def.categories);
        }
        if def.verbs.contains(&"list") {
            entry["storageVersionHash"] = json!(storage_hash(def));
        }
        resources.push(entry);
        if v.status {
            resources.push(json!({"name": format!("{}/status", def.plural), "singularName": "",
                "namespaced": def.namespaced, "kind": def.kind, "verbs": ["get", "patch", "update"]}));
        }
        if v.scale.is_some() {
            resources.push(json!({"name": format!("{}/scale", def.plural), "singularName": "",
                "namespaced": def.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale",
                "verbs": ["get", "patch", "update"]}));
        }
    }
    if !found {
        return None;
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
    )
}

fn aggregated_resource(def: &ResourceDef, version: &str) -> Option<Value> {
    let v = def.version(version)?;
    let mut entry = json!({
        "resource": def.plural,
        "responseKind": {"group": "", "version": "", "kind": def.kind},
        "scope": if def.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": def.singular,
        "verbs": def.verbs,
    });
    if !def.short_names.is_empty() {
        entry["shortNames"] = json!(def.short_names);
    }
    if !def.categories.is_empty() {
        entry["categories"] = json!(def.categories);
    }
    let mut subresources = Vec::new();
    if v.scale.is_some() {
        subresources.push(json!({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "verbs": ["get", "patch", "update"]}));
    }
    if v.status {
        subresources.push(json!({"subresource": "status", "responseKind": {"group": "", "version": "", "kind": def.kind}, "verbs": ["get", "patch", "update"]}));
    }
    if !subresources.is_empty() {
        entry["subresources"] = Value::Array(subresources);
    }
    Some(entry)
}

fn aggregated_group(defs: &[Arc<ResourceDef>], group: &str) -> Value {
    let versions: Vec<Value> = group_versions(defs, group)
        .iter()
        .map(|version| {
            let mut resources: Vec<Value> = defs
                .iter()
                .filter(|d| d.group == group)
                .filter_map(|d| aggregated_resource(d, version))
                .collect();
            resources.sort_by(|a, b| a["resource"].as_str().cmp(&b["resource"].as_str()));
            json!({"version": version, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let metadata = if group.is_empty() {
        json!({})
    } else {
        json!({"name": group})
    };
    json!({"metadata": metadata, "versions": versions})
}

/// `/api` (core) or `/apis` (every named group) as an APIGroupDiscoveryList.
pub fn aggregated(defs: &[Arc<ResourceDef>], core: bool) -> Value {
    let items: Vec<Value> = if core {
        vec![aggregated_group(defs, "")]
    } else {
        groups(defs)
            .iter()
            .map(|g| aggregated_group(defs, g))
            .collect()
    };
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn hash_hex(value: &Value) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.to_string().hash(&mut hasher);
    format!("{:016X}", hasher.finish())
}

/// Every group-version's OpenAPI v3 document.
pub fn openapi_documents(defs: &[Arc<ResourceDef>]) -> BTreeMap<String, Value> {
    let mut docs: BTreeMap<String, Value> = BTreeMap::new();
    let mut gvs: Vec<(String, String)> = defs
        .iter()
        .flat_map(|d| d.versions.iter().map(|v| (d.group.clone(), v.name.clone())))
        .collect();
    gvs.sort();
    gvs.dedup();
    for (group, version) in gvs {
        let mut paths = serde_json::Map::new();
        let mut schemas = serde_json::Map::new();
        for def in defs
            .iter()
            .filter(|d| d.group == group && d.version(&version).is_some())
        {
            openapi_paths(def, &version, &mut paths);
            if def.is_custom() {
                let schema_name = format!("{}.{}.{}", reverse_domain(&group), version, def.kind);
                schemas.insert(schema_name, json!({
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": true,
                    "x-kubernetes-group-version-kind": [{"group": group, "version": version, "kind": def.kind}],
                }));
            }
        }
        let doc = json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.36.2"},
            "paths": paths,
            "components": {"schemas": schemas},
        });
        docs.insert(gv_path(&group, &version), doc);
    }
    // The index also lists the discovery endpoints' own documents and OIDC discovery.
    let mut others = vec![
        ".well-known/openid-configuration".to_string(),
        "api".to_string(),
        "apis".to_string(),
    ];
    others.extend(groups(defs).iter().map(|group| format!("apis/{group}")));
    for path in others {
        docs.insert(
            path,
            json!({"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": "v1.36.2"},
                "paths": {}, "components": {}}),
        );
    }
    docs
}

fn reverse_domain(group: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').collect();
    parts.reverse();
    parts.join(".")
}

/// The `/openapi/v3` index: each document's URL carries a hash of its content, so clients'
/// caches notice when a CRD changes.
pub fn openapi_index(docs: &BTreeMap<String, Value>) -> Value {
    let paths: serde_json::Map<String, Value> = docs
        .iter()
        .map(|(path, doc)| {
            (
                path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", hash_hex(doc))}),
            )
        })
        .collect();
    json!({"paths": paths})
}

fn openapi_paths(def: &ResourceDef, version: &str, paths: &mut serde_json::Map<String, Value>) {
    let gvk = json!({"group": def.group, "version": version, "kind": def.kind});
    let prefix = if def.group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{}/{version}", def.group)
    };
    let collection = if def.namespaced {
        format!("{prefix}/namespaces/{{namespace}}/{}", def.plural)
    } else {
        format!("{prefix}/{}", def.plural)
    };
    let mut patch_types = vec![
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ];
    if def.accepts_strategic_merge() {
        patch_types.push("application/strategic-merge-patch+json");
    }
    let schema_ref = json!({"type": "object"});
    let content = |types: &[&str]| -> Value {
        Value::Object(
            types
                .iter()
                .map(|t| (t.to_string(), json!({"schema": schema_ref})))
                .collect(),
        )
    };
    let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
    let op = |action: &str, extra: Vec<Value>, body: Option<Value>| -> Value {
        let mut o = json!({
            "operationId": format!("{action}{}", def.kind),
            "parameters": extra,
            "responses": {"200": {"description": "OK"}},
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        });
        if let Some(body) = body {
            o["requestBody"] = json!({"content": body, "required": true});
        }
        o
    };
    let write_params = || {
        vec![
            query("dryRun"),
            query("fieldManager"),
            query("fieldValidation"),
        ]
    };
    if def.verbs.contains(&"list") {
        paths.insert(collection.clone(), json!({
            "get": op("list", vec![query("labelSelector"), query("fieldSelector"), query("limit"), query("continue"), query("watch")], None),
            "post": op("post", write_params(), Some(content(&["application/json", "application/yaml"]))),
            "delete": op("deletecollection", vec![query("dryRun")], None),
        }));
        let mut patch_params = write_params();
        patch_params.push(query("force"));
        paths.insert(format!("{collection}/{{name}}"), json!({
            "get": op("get", vec![], None),
            "put": op("put", write_params(), Some(content(&["application/json", "application/yaml"]))),
            "patch": op("patch", patch_params, Some(content(&patch_types))),
            "delete": op("delete", vec![query("dryRun")], None),
        }));
    } else {
        paths.insert(
            collection,
            json!({"post": op("post", write_params(), Some(content(&["application/json"])))}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiserver::builtin_kinds::all as builtins;

    #[test]
    fn aggregated_accept_header_of_kube_and_kubectl() {
        assert!(wants_aggregated(
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
        ));
        assert!(!wants_aggregated("application/json, */*"));
    }

    #[test]
    fn core_group_serves_namespaces_and_status() {
        let defs = builtins();
        let list = api_resource_list(&defs, "", "v1").unwrap();
        let names: Vec<&str> = list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        for (name, at) in [("bindings", 0), ("componentstatuses", 1), ("configmaps", 2)] {
            assert_eq!(names[at], name, "in name order: {names:?}");
        }
        let namespaces = names.iter().position(|n| *n == "namespaces").unwrap();
        assert_eq!(names[namespaces + 1], "namespaces/status");
        assert!(names.contains(&"pods") && names.contains(&"services/status"));
        assert!(api_resource_list(&defs, "nope", "v1").is_none());
    }

    #[test]
    fn openapi_patch_operations_carry_field_validation() {
        let docs = openapi_documents(&builtins());
        let core = &docs["api/v1"];
        let patch = &core["paths"]["/api/v1/namespaces/{namespace}/secrets/{name}"]["patch"];
        assert_eq!(patch["x-kubernetes-group-version-kind"]["kind"], "Secret");
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(
            patch["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_some()
        );
    }
}
