//! The body a move creates in the target: server-owned fields cleared, owners rebuilt with the
//! target's UIDs, managedFields apart.

use std::collections::HashMap;

use kube::api::DynamicObject;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::mover::graph::plan::MovePlan;

/// The body to create in the target: server-owned fields cleared, owners rebuilt with the
/// target's UIDs, managedFields returned separately (a create ignores them; a patch restores them).
pub fn target_body(
    plan: &MovePlan,
    (object, content): (&DynamicObject, Option<&RawValue>),
    target_uids: &HashMap<String, String>,
) -> (Value, Option<Value>) {
    let mut body = match content {
        None => serde_json::to_value(object).expect("object serialises"),
        // Read as text: its content, with the type and metadata read apart.
        Some(content) => {
            let mut body: Value =
                serde_json::from_str(content.get()).expect("a listed object's content is JSON");
            if let Some(types) = &object.types {
                body["apiVersion"] = json!(types.api_version);
                body["kind"] = json!(types.kind);
            }
            body["metadata"] = serde_json::to_value(&object.metadata).expect("metadata serialises");
            body
        }
    };
    let meta = body["metadata"].as_object_mut().expect("metadata");
    let managed = meta.remove("managedFields");
    for key in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "selfLink",
    ] {
        meta.remove(key);
    }
    if meta.get("name").is_some() {
        meta.remove("generateName");
    }
    // The source's references, each keeping its own fields (controller, blockOwnerDeletion,
    // even when explicitly false) with the owner's UID in the target. A reference to a real owner
    // that is not part of this move (a Cluster that stays, in a named move) is dropped: it would
    // dangle in the target, and moving that owner later adds it back by update.
    let refs: Vec<Value> = object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter_map(|source_ref| {
            let owner = plan.graph.nodes.get(&source_ref.uid)?;
            let new_uid = match target_uids.get(&source_ref.uid) {
                Some(uid) => uid.clone(),
                None if owner.is_virtual() || plan.scheduled.contains(&source_ref.uid) => {
                    source_ref.uid.clone()
                }
                None => return None,
            };
            let mut r = serde_json::to_value(source_ref).expect("owner reference serialises");
            r["uid"] = json!(new_uid);
            Some(r)
        })
        .collect();
    if refs.is_empty() {
        meta.remove("ownerReferences");
    } else {
        meta.insert("ownerReferences".into(), Value::Array(refs));
    }
    (
        body,
        managed.filter(|m| m.as_array().is_some_and(|a| !a.is_empty())),
    )
}
