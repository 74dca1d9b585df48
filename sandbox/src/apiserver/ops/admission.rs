//! What a write must pass before it is stored: metadata, names, sizes, CRD validity, unknown fields, the namespace it goes into and its kind.

use super::context::*;
use crate::apiserver::fields::SYSTEM_METADATA;
use crate::apiserver::resources::{Flavor, ResourceDef, default_crd};
use crate::apiserver::status::{ApiError, ApiResult, Cause};
use crate::apiserver::store::State;
use crate::apiserver::validation::{self, DNS1123_LABEL_MSG, DNS1123_SUBDOMAIN_MSG};
use base64::Engine;
use serde_json::{Value, json};

/// Checks every write makes of metadata: name format, owner references.
pub(super) fn validate_metadata(def: &ResourceDef, object: &Value, name: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name_ok = match def.flavor {
        Flavor::Namespace => validation::is_dns_label(name),
        _ => validation::is_dns_subdomain(name),
    };
    if !name_ok {
        let msg = if def.flavor == Flavor::Namespace {
            DNS1123_LABEL_MSG
        } else {
            DNS1123_SUBDOMAIN_MSG
        };
        causes.push(Cause::invalid("metadata.name", &format!("\"{name}\""), msg));
    }
    let refs = object["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for (i, owner) in refs.iter().enumerate() {
        for field in ["apiVersion", "kind", "name", "uid"] {
            if owner[field].as_str().is_none_or(str::is_empty) {
                causes.push(Cause::required(
                    &format!("metadata.ownerReferences[{i}].{field}"),
                    &format!("{field} must not be empty"),
                ));
            }
        }
    }
    let controllers: Vec<String> = refs
        .iter()
        .filter(|r| r["controller"].as_bool() == Some(true))
        .map(|r| {
            format!(
                "{}/{}",
                r["kind"].as_str().unwrap_or(""),
                r["name"].as_str().unwrap_or("")
            )
        })
        .collect();
    if controllers.len() > 1 {
        causes.push(Cause::invalid(
            "metadata.ownerReferences",
            "[...]",
            &format!("Only one reference can have Controller set to true. Found \"true\" in references for {}", controllers.join(" and ")),
        ));
    }
    for map in ["labels", "annotations"] {
        if let Some(m) = object["metadata"][map].as_object() {
            for (k, v) in m {
                if !v.is_string() {
                    causes.push(Cause::invalid(
                        &format!("metadata.{map}.{k}"),
                        &v.to_string(),
                        "must be a string",
                    ));
                }
            }
        }
    }
    if let Some(labels) = object["metadata"]["labels"].as_object() {
        for (k, v) in labels {
            if let Some(v) = v.as_str()
                && !validation::is_label_value(v)
            {
                causes.push(Cause::invalid(
                    &format!("metadata.labels.{k}"),
                    &format!("\"{v}\""),
                    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character",
                ));
            }
        }
    }
    causes
}

/// Flavor-specific normalisation and validation (Secret stringData, size limits, CRD spec).
pub(super) fn prepare(def: &ResourceDef, object: &mut Value, name: &str) -> ApiResult<()> {
    match def.flavor {
        Flavor::Secret => {
            if let Some(Value::Object(string_data)) =
                object.as_object_mut().and_then(|o| o.remove("stringData"))
            {
                let data = object["data"].as_object().cloned().unwrap_or_default();
                let mut data = data;
                for (k, v) in string_data {
                    let text = v.as_str().unwrap_or_default();
                    data.insert(
                        k,
                        json!(base64::engine::general_purpose::STANDARD.encode(text)),
                    );
                }
                object["data"] = Value::Object(data);
            }
            if object.get("type").is_none() {
                object["type"] = json!("Opaque");
            }
            let size = data_size(&object["data"], true);
            if size > MAX_DATA_BYTES {
                return Err(ApiError::invalid(
                    "Secret",
                    "Secret",
                    "",
                    name,
                    vec![Cause {
                        reason: "FieldValueTooLong",
                        message: format!("Too long: may not be more than {MAX_DATA_BYTES} bytes"),
                        field: "data".into(),
                    }],
                ));
            }
        }
        Flavor::ConfigMap => {
            let size = data_size(&object["data"], false) + data_size(&object["binaryData"], true);
            if size > MAX_DATA_BYTES {
                return Err(ApiError::invalid(
                    "ConfigMap",
                    "ConfigMap",
                    "",
                    name,
                    vec![Cause::too_long("[]", MAX_DATA_BYTES)],
                ));
            }
        }
        Flavor::CustomResourceDefinition => {
            default_crd(object);
            let causes = validate_crd(object, name);
            if !causes.is_empty() {
                return Err(ApiError::invalid_kind(&def.names(), name, causes));
            }
        }
        _ => {}
    }
    Ok(())
}

pub(super) fn data_size(data: &Value, base64: bool) -> usize {
    data.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let s = v.as_str().unwrap_or_default();
                    k.len()
                        + if base64 {
                            base64::engine::general_purpose::STANDARD
                                .decode(s)
                                .map(|b| b.len())
                                .unwrap_or(s.len())
                        } else {
                            s.len()
                        }
                })
                .sum()
        })
        .unwrap_or(0)
}

pub(super) fn validate_crd(crd: &Value, name: &str) -> Vec<Cause> {
    let spec = &crd["spec"];
    let mut causes = Vec::new();
    let group = spec["group"].as_str().unwrap_or_default();
    let plural = spec["names"]["plural"].as_str().unwrap_or_default();
    if group.is_empty() {
        causes.push(Cause::required("spec.group", ""));
    }
    if plural.is_empty() {
        causes.push(Cause::required("spec.names.plural", ""));
    }
    if spec["names"]["kind"].as_str().is_none_or(str::is_empty) {
        causes.push(Cause::required("spec.names.kind", ""));
    }
    if !matches!(spec["scope"].as_str(), Some("Namespaced") | Some("Cluster")) {
        causes.push(Cause {
            reason: "FieldValueNotSupported",
            message: format!(
                "Unsupported value: {}: supported values: \"Cluster\", \"Namespaced\"",
                spec["scope"]
            ),
            field: "spec.scope".into(),
        });
    }
    if name != format!("{plural}.{group}") {
        causes.push(Cause::invalid(
            "metadata.name",
            &format!("\"{name}\""),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    if versions.is_empty() {
        causes.push(Cause::invalid(
            "spec.versions",
            "null",
            "must have exactly one version marked as storage version",
        ));
    } else if versions
        .iter()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .count()
        != 1
    {
        causes.push(Cause::invalid(
            "spec.versions",
            "[...]",
            "must have exactly one version marked as storage version",
        ));
    }
    causes
}

pub(super) fn check_stored_size(object: &Value) -> ApiResult<()> {
    let size = serde_json::to_vec(object).map(|b| b.len()).unwrap_or(0);
    if size > GRPC_SEND_LIMIT {
        return Err(ApiError::internal(format!(
            "rpc error: code = ResourceExhausted desc = trying to send message larger than max ({size} vs. {GRPC_SEND_LIMIT})"
        )));
    }
    if size > MAX_STORED_BYTES {
        return Err(ApiError::internal("etcdserver: request is too large"));
    }
    Ok(())
}

/// Metadata a client may set; with the server's own ([`SYSTEM_METADATA`]) all that is known.
pub(super) const CLIENT_METADATA: &[&str] = &[
    "generateName",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
];

/// Fields the server's schema does not know. Metadata is always checked; the top level only for
/// kinds with a closed schema (custom resources here keep unknown fields).
pub fn unknown_fields(def: &ResourceDef, object: &Value) -> Vec<String> {
    let mut unknown: Vec<String> = object["metadata"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| {
            ![SYSTEM_METADATA, CLIENT_METADATA]
                .concat()
                .contains(&k.as_str())
        })
        .map(|(k, _)| format!("metadata.{k}"))
        .collect();
    let top: &[&str] = match def.flavor {
        // No schema: what is not metadata is kept as sent.
        Flavor::Custom | Flavor::Generic => return unknown,
        Flavor::Secret => &[
            "apiVersion",
            "kind",
            "metadata",
            "data",
            "stringData",
            "type",
            "immutable",
        ],
        Flavor::ConfigMap => &[
            "apiVersion",
            "kind",
            "metadata",
            "data",
            "binaryData",
            "immutable",
        ],
        Flavor::Namespace | Flavor::CustomResourceDefinition => {
            &["apiVersion", "kind", "metadata", "spec", "status"]
        }
        Flavor::Review => &["apiVersion", "kind", "metadata", "spec", "status"],
    };
    unknown.extend(
        object
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !top.contains(&k.as_str()))
            .map(|(k, _)| k.clone()),
    );
    unknown
}

/// Removes fields named as `unknown_fields` reports them.
pub fn drop_fields(object: &mut Value, fields: &[String]) {
    for field in fields {
        match field.strip_prefix("metadata.") {
            Some(meta) => {
                object["metadata"].as_object_mut().map(|m| m.remove(meta));
            }
            None => {
                object.as_object_mut().map(|m| m.remove(field));
            }
        }
    }
}

/// Namespace admission: the namespace must exist and not be terminating.
pub(super) fn admit_namespace(
    state: &State,
    def: &ResourceDef,
    namespace: &str,
    name: &str,
) -> ApiResult<()> {
    let ns_key = (String::new(), "namespaces".to_string());
    match state.get(&ns_key, &(String::new(), namespace.to_string())) {
        None => Err(ApiError::namespace_not_found(namespace)),
        Some(ns) if ns["metadata"].get("deletionTimestamp").is_some() => {
            let mut details = json!({"name": name, "kind": def.plural,
                "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {namespace} is being terminated"), "field": "metadata.namespace"}]});
            if !def.group.is_empty() {
                details["group"] = json!(def.group);
            }
            Err(ApiError::forbidden(
                format!(
                    "{} \"{name}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                    def.names().qualified_resource()
                ),
                details,
            ))
        }
        Some(_) => Ok(()),
    }
}

pub(super) fn check_kind(def: &ResourceDef, version: &str, object: &Value) -> ApiResult<()> {
    if let Some(kind) = object["kind"].as_str()
        && !kind.is_empty()
        && kind != def.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind of the provided object ({kind}) does not match the kind of the resource ({})",
            def.kind
        )));
    }
    if let Some(api_version) = object["apiVersion"].as_str()
        && !api_version.is_empty()
        && api_version != def.api_version(version)
        && def
            .version(api_version.rsplit('/').next().unwrap_or_default())
            .is_none()
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            def.api_version(version)
        )));
    }
    Ok(())
}
