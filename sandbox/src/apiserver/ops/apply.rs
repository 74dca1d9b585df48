//! The scale subresource and server-side apply.

use super::admission::*;
use super::context::*;
use super::shape::uid_is_immutable;
use super::writes::*;
use crate::apiserver::fields::{self};
use crate::apiserver::resources::ResourceDef;
use crate::apiserver::status::{ApiError, ApiResult};
use crate::apiserver::store::{ObjKey, State};
use serde_json::{Value, json};
use std::sync::Arc;

/// The autoscaling/v1 Scale view of an object with a scale subresource.
pub fn scale_of(def: &ResourceDef, version: &str, object: &Value) -> Option<Value> {
    let scale = def.version(version)?.scale.clone()?;
    let read = |path: &str| pointer_of(path).and_then(|p| object.pointer(&p).cloned());
    let mut status = json!({"replicas": read(&scale.status_replicas_path).unwrap_or(json!(0))});
    if let Some(selector) = scale.label_selector_path.as_deref().and_then(read) {
        status["selector"] = selector;
    }
    Some(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            "name": object["metadata"]["name"],
            "namespace": object["metadata"]["namespace"],
            "uid": object["metadata"]["uid"],
            "resourceVersion": object["metadata"]["resourceVersion"],
            "creationTimestamp": object["metadata"]["creationTimestamp"],
        },
        "spec": {"replicas": read(&scale.spec_replicas_path).unwrap_or(json!(0))},
        "status": status,
    }))
}

/// Writes a Scale's `spec.replicas` back into the object at the CRD's spec path.
pub fn apply_scale(
    def: &ResourceDef,
    version: &str,
    object: &Value,
    scale: &Value,
) -> Option<Value> {
    let path = pointer_of(&def.version(version)?.scale.as_ref()?.spec_replicas_path)?;
    let mut out = object.clone();
    let replicas = scale["spec"]["replicas"].clone();
    set_pointer(&mut out, &path, replicas);
    if let Some(rv) = scale["metadata"]["resourceVersion"].as_str() {
        out["metadata"]["resourceVersion"] = json!(rv);
    }
    Some(out)
}

pub(super) fn pointer_of(json_path: &str) -> Option<String> {
    let trimmed = json_path.strip_prefix('.')?;
    Some(format!("/{}", trimmed.replace('.', "/")))
}

pub(super) fn set_pointer(target: &mut Value, pointer: &str, value: Value) {
    let mut current = target;
    let parts: Vec<&str> = pointer.trim_start_matches('/').split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        if i == parts.len() - 1 {
            current[*part] = value;
            return;
        }
        if current.get(*part).is_none() {
            current[*part] = json!({});
        }
        current = current.get_mut(*part).expect("just inserted");
    }
}

/// Server-side apply (PATCH with application/apply-patch+yaml).
/// An apply refused for the fields other managers own, as kube-apiserver words it (409).
fn apply_conflict(def: &ResourceDef, name: &str, conflicts: &[fields::ApplyConflict]) -> ApiError {
    let message = format!(
        "Apply failed with {} conflict{}: {}",
        conflicts.len(),
        if conflicts.len() == 1 { "" } else { "s" },
        conflicts
            .iter()
            .map(|c| format!(
                "conflict with \"{}\" using {}: {}",
                c.manager, c.api_version, c.field
            ))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let mut err = ApiError::conflict_with(&def.names(), name, "");
    err.message = message;
    err.details = Some(json!({"causes": conflicts.iter().map(|c| json!({
    "reason": "FieldManagerConflict",
    "message": format!("conflict with \"{}\" using {}", c.manager, c.api_version),
    "field": c.field})).collect::<Vec<_>>()}));
    err
}

/// An object an apply created: create() recorded an Update entry; an apply records Apply.
fn as_applied(created: &Value) -> Value {
    let mut fixed = created.clone();
    for entry in fixed["metadata"]["managedFields"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        entry["operation"] = json!("Apply");
    }
    fixed
}

pub fn server_side_apply(
    state: &mut State,
    at: At,
    key: &ObjKey,
    applied: Value,
    force: bool,
    ctx: &WriteCtx,
) -> ApiResult<(Arc<Value>, bool)> {
    let At {
        def,
        version,
        subresource,
    } = at;
    let (namespace, name) = (
        Some(key.0.as_str()).filter(|ns| !ns.is_empty()),
        key.1.as_str(),
    );
    check_kind(def, version, &applied)?;
    if applied["metadata"]["name"]
        .as_str()
        .is_some_and(|n| n != name)
    {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            applied["metadata"]["name"].as_str().unwrap_or_default()
        )));
    }
    let scope = scope_for(def, version, subresource);
    let writer = ctx.writer(subresource.filter(|s| *s == "status"));
    match state.get(&def.key(), key) {
        None => {
            if subresource.is_some() {
                return Err(ApiError::not_found(&def.names(), name));
            }
            let mut entries = Vec::new();
            let merged = fields::apply(&json!({}), &applied, &mut entries, &writer, scope, true)
                .expect("nothing to conflict with");
            let mut object = merged;
            object["metadata"]["name"] = json!(name);
            let created = create(state, def, version, namespace, object, ctx, false)?;
            let fixed = as_applied(&created);
            if ctx.dry_run {
                return Ok((Arc::new(fixed), true));
            }
            let stored = state.put(&def.key(), fixed);
            Ok((stored, true))
        }
        Some(live) => {
            // A resourceVersion in the applied configuration is a precondition, as a real
            // server takes it.
            if let Some(rv) = applied["metadata"]["resourceVersion"].as_str()
                && Some(rv) != live["metadata"]["resourceVersion"].as_str()
            {
                return Err(ApiError::conflict(&def.names(), name));
            }
            if let Some(uid) = applied["metadata"]["uid"].as_str()
                && Some(uid) != live["metadata"]["uid"].as_str()
            {
                return Err(uid_is_immutable(def, name, uid));
            }
            let mut entries = fields::read_entries(&live);
            let merged = fields::apply(&live, &applied, &mut entries, &writer, scope, force)
                .map_err(|conflicts| apply_conflict(def, name, &conflicts))?;
            let mut merged = merged;
            fields::write_entries(&mut merged, &entries);
            let updated = update(state, at, &live, merged, UpdateKind::Patch, ctx)?;
            Ok((updated, false))
        }
    }
}
