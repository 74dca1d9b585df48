//! The patch types a PATCH request may carry.

use serde_json::{Map, Value};

use super::status::{ApiError, ApiResult};

pub const JSON_PATCH: &str = "application/json-patch+json";
pub const MERGE_PATCH: &str = "application/merge-patch+json";
pub const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
pub const APPLY_PATCH: &str = "application/apply-patch+yaml";
pub const APPLY_PATCH_CBOR: &str = "application/apply-patch+cbor";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchKind {
    Json,
    Merge,
    Strategic,
    Apply,
}

impl PatchKind {
    pub fn from_content_type(content_type: &str, accepts_strategic: bool) -> ApiResult<PatchKind> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        let accepted: &[&str] = if accepts_strategic {
            &[JSON_PATCH, MERGE_PATCH, APPLY_PATCH, STRATEGIC_MERGE_PATCH]
        } else {
            &[JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
        };
        match media {
            JSON_PATCH => Ok(PatchKind::Json),
            MERGE_PATCH => Ok(PatchKind::Merge),
            APPLY_PATCH => Ok(PatchKind::Apply),
            STRATEGIC_MERGE_PATCH if accepts_strategic => Ok(PatchKind::Strategic),
            _ => Err(ApiError::unsupported_media_type(accepted)),
        }
    }
}

/// RFC 7386 JSON merge patch.
pub fn merge(target: &mut Value, patch: &Value) {
    json_patch::merge(target, patch);
}

/// RFC 6902 JSON patch; any failure to apply answers 422 as the apiserver does.
pub fn json(target: &mut Value, body: &[u8]) -> ApiResult<()> {
    let operations: json_patch::Patch = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    json_patch::patch(target, &operations.0).map_err(|_| ApiError::unprocessable_patch())
}

/// Lists that merge by key in the built-in schemas the sandbox serves (all under metadata).
fn merge_key(path: &[&str]) -> Option<&'static str> {
    match path {
        ["metadata", "ownerReferences"] => Some("uid"),
        _ => None,
    }
}

fn is_set_list(path: &[&str]) -> bool {
    matches!(path, ["metadata", "finalizers"])
}

/// Strategic merge patch for the built-in kinds (Namespace, Secret, ConfigMap): maps merge,
/// `ownerReferences` merge by uid, `finalizers` merge as a set, other lists are replaced; the
/// `$patch`, `$retainKeys`, `$deleteFromPrimitiveList/` and `$setElementOrder/` directives apply.
pub fn strategic(target: &mut Value, patch: &Value) -> ApiResult<()> {
    strategic_at(target, patch, &mut Vec::new())
}

fn strategic_at<'a>(
    target: &mut Value,
    patch: &'a Value,
    path: &mut Vec<&'a str>,
) -> ApiResult<()> {
    let Some(patch_map) = patch.as_object() else {
        *target = patch.clone();
        return Ok(());
    };
    match patch_map.get("$patch").and_then(|v| v.as_str()) {
        Some("replace") => {
            let mut replaced = patch_map.clone();
            replaced.remove("$patch");
            *target = Value::Object(replaced);
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Null;
            return Ok(());
        }
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "Unknown patch type: {other}"
            )));
        }
        None => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    for (key, value) in patch_map {
        if key == "$retainKeys" || key.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = key.strip_prefix("$deleteFromPrimitiveList/") {
            if let Some(items) = target.get_mut(field).and_then(|v| v.as_array_mut()) {
                let remove: Vec<Value> = value.as_array().cloned().unwrap_or_default();
                items.retain(|x| !remove.contains(x));
            }
            continue;
        }
        path.push(key.as_str());
        let map = target.as_object_mut().expect("made an object above");
        if value.is_null() {
            map.remove(key);
        } else if let Value::Array(items) = value {
            if let Some(merge_key) = merge_key(path) {
                let existing = map
                    .entry(key.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                merge_keyed_list(existing, items, merge_key)?;
            } else if is_set_list(path) {
                let existing = map
                    .entry(key.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                union_into(existing, items);
            } else {
                map.insert(key.clone(), value.clone());
            }
        } else if value.is_object() {
            let child = map.entry(key.clone()).or_insert(Value::Null);
            strategic_at(child, value, path)?;
            if child.is_null() {
                map.remove(key);
            }
        } else {
            map.insert(key.clone(), value.clone());
        }
        path.pop();
    }
    if let Some(retain) = patch_map.get("$retainKeys").and_then(|v| v.as_array())
        && let Some(map) = target.as_object_mut()
    {
        map.retain(|k, _| retain.iter().any(|r| r.as_str() == Some(k)));
    }
    Ok(())
}

/// A set list (finalizers) patched: the items it lacks added, in the patch's order.
fn union_into(existing: &mut Value, items: &[Value]) {
    if let Some(list) = existing.as_array_mut() {
        for item in items {
            if !list.contains(item) {
                list.push(item.clone());
            }
        }
    }
}

fn merge_keyed_list(existing: &mut Value, items: &[Value], key: &str) -> ApiResult<()> {
    let list = match existing.as_array_mut() {
        Some(list) => list,
        None => {
            *existing = Value::Array(Vec::new());
            existing.as_array_mut().expect("just set")
        }
    };
    for item in items {
        let id = item.get(key).cloned();
        let position = list.iter().position(|x| x.get(key) == id.as_ref());
        let delete = item.get("$patch").and_then(|v| v.as_str()) == Some("delete");
        match (position, delete) {
            (Some(i), true) => {
                list.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => strategic_at(&mut list[i], item, &mut Vec::new())?,
            (None, false) => list.push(item.clone()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strategic_merges_maps_and_keyed_lists() {
        let mut obj = json!({"metadata": {"labels": {"a": "1", "b": "2"}, "finalizers": ["x"],
            "ownerReferences": [{"uid": "1", "name": "one"}]}, "data": {"k": "v"}});
        strategic(
            &mut obj,
            &json!({"metadata": {"labels": {"b": null, "c": "3"}, "finalizers": ["y"],
                "ownerReferences": [{"uid": "2", "name": "two"}, {"uid": "1", "$patch": "delete"}]},
                "data": {"$patch": "replace", "n": "m"}}),
        )
        .unwrap();
        assert_eq!(
            obj,
            json!({"metadata": {"labels": {"a": "1", "c": "3"}, "finalizers": ["x", "y"],
                "ownerReferences": [{"uid": "2", "name": "two"}]}, "data": {"n": "m"}})
        );
    }

    #[test]
    fn strategic_is_refused_for_custom_resources() {
        let err = PatchKind::from_content_type(STRATEGIC_MERGE_PATCH, false).unwrap_err();
        assert_eq!(err.code, 415);
        assert_eq!(
            err.message,
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
    }

    #[test]
    fn failed_json_patch_test_is_422() {
        let mut obj = json!({"spec": {"replicas": 3}});
        let err = json(
            &mut obj,
            br#"[{"op":"test","path":"/spec/replicas","value":99}]"#,
        )
        .unwrap_err();
        assert_eq!(err.code, 422);
    }
}
