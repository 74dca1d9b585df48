//! The end of objects: finalizers, namespaces terminating, and the garbage collector.

use super::context::*;
use crate::apiserver::resources::{Flavor, ResKey, ResourceDef};
use crate::apiserver::status::{ApiError, ApiResult, Names};
use crate::apiserver::store::{ObjKey, State, owner_uids, uid_of};
use serde_json::{Value, json};
use std::sync::Arc;

/// The last step of a deletion: the object leaves storage; a CRD takes its objects with it.
pub(super) fn finish_removal(
    state: &mut State,
    def: &ResourceDef,
    key: &ObjKey,
    last: Option<Value>,
) -> Option<Arc<Value>> {
    if def.flavor == Flavor::CustomResourceDefinition
        && let Some(crd) = state.get(&def.key(), key)
        && let (Some(group), Some(plural)) = (
            crd["spec"]["group"].as_str(),
            crd["spec"]["names"]["plural"].as_str(),
        )
    {
        state.drop_resource(&(group.to_string(), plural.to_string()));
    }
    state.remove_as(&def.key(), key, last)
}

/// The namespace controller: delete everything in a terminating namespace, then the namespace.
pub fn terminate_namespace(state: &mut State, namespace: &str, time: &str) {
    let ns_res: ResKey = (String::new(), "namespaces".to_string());
    let ns_key = (String::new(), namespace.to_string());
    let Some(ns) = state.get(&ns_res, &ns_key) else {
        return;
    };
    if ns["metadata"].get("deletionTimestamp").is_none() {
        return;
    }
    for (res, key) in state.namespace_contents(namespace) {
        if let Some(def) = state.resource(&res).cloned() {
            let _ = delete(state, &def, &key, &DeleteOptions::default(), false, time);
        }
    }
    if state.namespace_contents(namespace).is_empty() {
        state.remove(&ns_res, &ns_key);
    }
}

/// One pass of kube-controller-manager's garbage collector (background propagation, orphaning,
/// foreground deletion) and namespace controller over the objects that changed.
pub fn collect_garbage(state: &mut State, time: &str) {
    while let Some((res, key)) = state.gc_candidates.pop() {
        let Some(object) = state.get(&res, &key) else {
            continue;
        };
        let Some(def) = state.resource(&res).cloned() else {
            continue;
        };
        let deleting = object["metadata"].get("deletionTimestamp").is_some();
        let finalizers: Vec<String> = object["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect();
        let uid = uid_of(&object).to_string();
        if deleting && finalizers.iter().any(|f| f == "orphan") {
            for (dep_res, dep_key) in state.dependents_of(&uid) {
                if let Some(dep) = state.get(&dep_res, &dep_key) {
                    let mut freed = (*dep).clone();
                    if let Some(refs) = freed["metadata"]["ownerReferences"].as_array_mut() {
                        refs.retain(|r| r["uid"] != uid.as_str());
                    }
                    state.put(&dep_res, freed);
                }
            }
            remove_finalizer(state, &def, &res, &key, "orphan");
            continue;
        }
        if deleting && finalizers.iter().any(|f| f == "foregroundDeletion") {
            let dependents = state.dependents_of(&uid);
            if dependents.is_empty() {
                remove_finalizer(state, &def, &res, &key, "foregroundDeletion");
            } else {
                for (dep_res, dep_key) in dependents {
                    if let Some(dep_def) = state.resource(&dep_res).cloned() {
                        let _ = delete(
                            state,
                            &dep_def,
                            &dep_key,
                            &DeleteOptions::default(),
                            false,
                            time,
                        );
                    }
                }
            }
            continue;
        }
        let owners = owner_uids(&object);
        if owners.is_empty() || deleting {
            continue;
        }
        let any_owner_present = object["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| owner_present(state, r, &key.0));
        if !any_owner_present {
            let _ = delete(state, &def, &key, &DeleteOptions::default(), false, time);
        }
    }
    // Namespaces whose last object just went.
    let ns_res: ResKey = (String::new(), "namespaces".to_string());
    let terminating: Vec<String> = state
        .list(&ns_res, None)
        .iter()
        .filter(|ns| ns["metadata"].get("deletionTimestamp").is_some())
        .map(|ns| {
            ns["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    for ns in terminating {
        terminate_namespace(state, &ns, time);
    }
}

pub(super) fn owner_present(state: &State, reference: &Value, namespace: &str) -> bool {
    let Some(uid) = reference["uid"].as_str() else {
        return false;
    };
    let Some((res, key)) = state.by_uid(uid) else {
        return false;
    };
    let kind_matches = state
        .resource(&res)
        .is_some_and(|d| Some(d.kind.as_str()) == reference["kind"].as_str());
    kind_matches
        && Some(key.1.as_str()) == reference["name"].as_str()
        && (key.0.is_empty() || key.0 == namespace)
}

pub(super) fn remove_finalizer(
    state: &mut State,
    def: &ResourceDef,
    res: &ResKey,
    key: &ObjKey,
    finalizer: &str,
) {
    let Some(object) = state.get(res, key) else {
        return;
    };
    let mut next = (*object).clone();
    if let Some(list) = next["metadata"]["finalizers"].as_array_mut() {
        list.retain(|f| f != finalizer);
        if list.is_empty() {
            if let Some(meta) = next["metadata"].as_object_mut() {
                meta.remove("finalizers");
            }
            finish_removal(state, def, key, Some(next));
            return;
        }
    }
    state.put(res, next);
}

/// A DELETE's preconditions (UID, resourceVersion) against the object as stored, answered as
/// kube-apiserver answers a mismatch (409, with its words).
fn check_preconditions(
    names: &Names,
    name: &str,
    old: &Value,
    options: &DeleteOptions,
) -> ApiResult<()> {
    if let Some(uid) = &options.precondition_uid
        && uid != uid_of(old)
    {
        return Err(ApiError::precondition_failed(
            names,
            name,
            &format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                uid_of(old)
            ),
        ));
    }
    if let Some(rv) = &options.precondition_rv
        && Some(rv.as_str()) != old["metadata"]["resourceVersion"].as_str()
    {
        return Err(ApiError::precondition_failed(
            names,
            name,
            &format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                old["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or_default()
            ),
        ));
    }
    Ok(())
}

pub fn delete(
    state: &mut State,
    def: &ResourceDef,
    key: &ObjKey,
    options: &DeleteOptions,
    dry_run: bool,
    time: &str,
) -> ApiResult<Deleted> {
    let names = def.names();
    let old = state
        .get(&def.key(), key)
        .ok_or_else(|| ApiError::not_found(&names, &key.1))?;
    check_preconditions(&names, &key.1, &old, options)?;
    if old["metadata"].get("deletionTimestamp").is_some() {
        return Ok(Deleted::Pending(old));
    }
    let mut finalizers: Vec<Value> = old["metadata"]["finalizers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let policy_finalizer = match options.propagation.as_deref() {
        Some("Orphan") => Some("orphan"),
        Some("Foreground") => Some("foregroundDeletion"),
        _ => None,
    };
    if let Some(f) = policy_finalizer
        && !finalizers.contains(&json!(f))
    {
        finalizers.push(json!(f));
    }
    if def.flavor == Flavor::Namespace || !finalizers.is_empty() {
        let mut pending = (*old).clone();
        pending["metadata"]["deletionTimestamp"] = json!(time);
        // Namespaces are finalized through spec.finalizers and carry no grace period.
        if def.flavor != Flavor::Namespace {
            pending["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        }
        if !finalizers.is_empty() {
            pending["metadata"]["finalizers"] = Value::Array(finalizers);
        }
        if def.has_generation() {
            pending["metadata"]["generation"] =
                json!(old["metadata"]["generation"].as_i64().unwrap_or(1) + 1);
        }
        if def.flavor == Flavor::Namespace {
            pending["status"]["phase"] = json!("Terminating");
        }
        if dry_run {
            return Ok(Deleted::Pending(Arc::new(pending)));
        }
        let stored = state.put(&def.key(), pending);
        if def.flavor == Flavor::Namespace {
            terminate_namespace(state, &key.1, time);
        }
        return Ok(Deleted::Pending(stored));
    }
    if dry_run {
        return Ok(Deleted::Removed(old));
    }
    Ok(Deleted::Removed(
        finish_removal(state, def, key, None).unwrap_or(old),
    ))
}
