//! What the server makes of a write's body: the name a create gets and the fields the server sets, what an update must agree with, and what it keeps of the stored object.

use super::admission::*;
use super::context::*;
use crate::apiserver::fields::Scope;
use crate::apiserver::resources::{Flavor, ResourceDef};
use crate::apiserver::status::{ApiError, ApiResult, Cause};
use crate::apiserver::store::uid_of;
use serde_json::{Value, json};

/// The name a create gives the object (its own, or one generated from `generateName`), once the
/// namespace of the URL is set in it (cleared for cluster-scoped kinds) and no resourceVersion
/// is given.
pub(super) fn create_name(
    def: &ResourceDef,
    namespace: Option<&str>,
    object: &mut Value,
) -> ApiResult<String> {
    // Namespace: from the URL for namespaced kinds, cleared for cluster-scoped ones.
    if def.namespaced {
        let url_ns = namespace.ok_or_else(|| ApiError::method_not_allowed("create"))?;
        match meta_str(object, "namespace") {
            Some(ns) if ns != url_ns => {
                return Err(ApiError::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
            _ => object["metadata"]["namespace"] = json!(url_ns),
        }
    } else if let Some(meta) = object["metadata"].as_object_mut() {
        meta.remove("namespace");
    }
    if meta_str(object, "resourceVersion").is_some() {
        return Err(ApiError::internal(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let name = match (meta_str(object, "name"), meta_str(object, "generateName")) {
        (Some(name), _) => name.to_string(),
        (None, Some(prefix)) => generated_name(prefix),
        (None, None) => {
            return Err(ApiError::invalid_kind(
                &def.names(),
                "",
                vec![Cause::required(
                    "metadata.name",
                    "name or generateName is required",
                )],
            ));
        }
    };
    Ok(name)
}

/// What the server sets on a created object: the kind's own defaults (a namespace's finalizer
/// and phase, a CRD's stored versions), the apiVersion and kind, a UID, the creation time and
/// the first generation; what the body said of them is dropped.
pub(super) fn server_fields(def: &ResourceDef, object: &mut Value, name: &str, ctx: &WriteCtx) {
    match def.flavor {
        Flavor::Namespace => {
            object["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!(name);
        }
        Flavor::CustomResourceDefinition => {
            object["status"] = json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""},
                "storedVersions": [storage_version_of_crd(object)]});
        }
        _ => {}
    }
    {
        let meta = object["metadata"]
            .as_object_mut()
            .expect("metadata is an object");
        for system in [
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
            "selfLink",
        ] {
            meta.remove(system);
        }
    }
    object["apiVersion"] = json!(def.api_version(def.storage_version()));
    object["kind"] = json!(def.kind);
    object["metadata"]["uid"] = json!(uuid::Uuid::new_v4().to_string());
    object["metadata"]["creationTimestamp"] = json!(ctx.time);
    if def.has_generation() {
        object["metadata"]["generation"] = json!(1);
    }
}

/// What the kind's create strategy sets after the field manager has recorded the request (so
/// no manager owns it): a namespace's finalizer and phase.
pub(super) fn prepare_for_create(def: &ResourceDef, object: &mut Value) {
    if def.flavor == Flavor::Namespace {
        object["spec"] = json!({"finalizers": ["kubernetes"]});
        object["status"] = json!({"phase": "Active"});
    }
}

/// The kind's empty object, as the field manager compares a create against it: a built-in
/// kind's `spec` and `status` are structs that are always there (and a CRD's names with
/// them), so a create does not own them as maps; a custom resource starts from nothing.
pub(super) fn empty_object(def: &ResourceDef) -> Value {
    match def.flavor {
        _ if def.is_custom() => json!({}),
        Flavor::CustomResourceDefinition => {
            json!({"spec": {"names": {}}, "status": {"acceptedNames": {}}})
        }
        _ => json!({"spec": {}, "status": {}}),
    }
}

/// What an update must agree with before anything of it is applied: a body of the kind, the
/// name and namespace of the URL, the UID and resourceVersion preconditions (a PUT of a custom
/// resource must carry a resourceVersion).
pub(super) fn check_update(
    def: &ResourceDef,
    version: &str,
    old: &Value,
    new: &mut Value,
    kind: UpdateKind,
) -> ApiResult<()> {
    let names = def.names();
    let name = old["metadata"]["name"].as_str().unwrap_or_default();
    if !new.is_object() {
        return Err(ApiError::bad_request(
            "Object 'Kind' is missing in request body",
        ));
    }
    check_kind(def, version, new)?;
    if new.get("metadata").is_none_or(|m| !m.is_object()) {
        new["metadata"] = json!({});
    }
    if let Some(body_name) = meta_str(new, "name")
        && body_name != name
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    if def.namespaced
        && let Some(ns) = meta_str(new, "namespace")
        && Some(ns) != old["metadata"]["namespace"].as_str()
    {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    if let Some(uid) = meta_str(new, "uid")
        && uid != uid_of(old)
    {
        return Err(match kind {
            // A PUT's UID is a precondition of the storage layer, worded as etcd3's store does.
            UpdateKind::Put => ApiError::conflict_with(
                &names,
                name,
                &format!(
                    "StorageError: invalid object, Code: 4, Key: {}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    storage_key(def, old),
                    uid_of(old)
                ),
            ),
            UpdateKind::Patch => uid_is_immutable(def, name, uid),
        });
    }
    match meta_str(new, "resourceVersion") {
        Some(rv) if Some(rv) != old["metadata"]["resourceVersion"].as_str() => {
            return Err(ApiError::conflict(&names, name));
        }
        None if kind == UpdateKind::Put && !def.allows_unconditional_update() => {
            return Err(ApiError::invalid(
                &names.qualified_resource(),
                &def.plural,
                &def.group,
                name,
                vec![Cause::invalid(
                    "metadata.resourceVersion",
                    "0",
                    "must be specified for an update",
                )],
            ));
        }
        _ => {}
    }

    Ok(())
}

/// A patch or apply that names another UID: ObjectMeta's update validation, which runs twice.
pub(super) fn uid_is_immutable(def: &ResourceDef, name: &str, uid: &str) -> ApiError {
    let cause = Cause::invalid("metadata.uid", &format!("\"{uid}\""), "field is immutable");
    ApiError::invalid_kind(&def.names(), name, vec![cause.clone(), cause])
}

/// Where etcd keeps the object: `/registry/[group/]plural/[namespace/]name`.
fn storage_key(def: &ResourceDef, object: &Value) -> String {
    let mut key = String::from("/registry/");
    if def.is_custom() {
        key.push_str(&format!("{}/", def.group));
    }
    key.push_str(&def.plural);
    for part in [meta_str(object, "namespace"), meta_str(object, "name")]
        .into_iter()
        .flatten()
    {
        key.push_str(&format!("/{part}"));
    }
    key
}

/// The stored object as an update at `scope` leaves it: the status alone, everything but the
/// status, or the whole body.
pub(super) fn merged(scope: Scope, old: &Value, new: Value) -> Value {
    match scope {
        Scope::StatusOnly => {
            let mut result = old.clone();
            match new.get("status") {
                Some(status) => result["status"] = status.clone(),
                None => {
                    result.as_object_mut().map(|m| m.remove("status"));
                }
            }
            result
        }
        Scope::NoStatus => {
            let mut result = new;
            match old.get("status") {
                Some(status) => result["status"] = status.clone(),
                None => {
                    result.as_object_mut().map(|m| m.remove("status"));
                }
            }
            result
        }
        Scope::Whole => new,
    }
}

/// kube-apiserver refuses finalizers added to an object being deleted.
pub(super) fn no_finalizers_added_while_deleting(
    old: &Value,
    result: &Value,
    names: &super::super::status::Names,
    name: &str,
) -> ApiResult<()> {
    if old["metadata"].get("deletionTimestamp").is_some() {
        let before: Vec<Value> = old["metadata"]["finalizers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let added: Vec<String> = result["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| !before.contains(f))
            .map(|f| format!("{f}"))
            .collect();
        if !added.is_empty() {
            let detail = format!(
                "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                added.join(", ")
            );
            return Err(ApiError::invalid_kind(
                names,
                name,
                vec![
                    Cause::forbidden("metadata.finalizers", &detail),
                    Cause::forbidden("metadata.finalizers", &detail),
                ],
            ));
        }
    }
    Ok(())
}
