//! Server-side apply: the applied configuration merged into the live object, fields another
//! manager owns refused unless forced, and the entries updated.

use serde_json::{Value, json};

use super::entries::{Entry, Writer};
use super::paths::{FieldPath, FieldSet, SYSTEM_METADATA, Scope, fields_of, value_at};

/// A field manager's conflict with a server-side apply.
#[derive(Clone, Debug)]
pub struct ApplyConflict {
    pub manager: String,
    pub api_version: String,
    pub field: String,
}

/// `.spec.replicas` style rendering of a field path for conflict messages.
pub fn dotted(path: &FieldPath) -> String {
    path.iter()
        .map(|e| match e.strip_prefix("f:") {
            Some(f) => format!(".{f}"),
            None => format!("[{}]", &e[2..]),
        })
        .collect()
}

/// Server-side apply of `applied` onto `live` by `writer`. Returns the merged object or the
/// conflicts with other managers (when not forced).
pub fn apply(
    live: &Value,
    applied: &Value,
    entries: &mut Vec<Entry>,
    writer: &Writer,
    scope: Scope,
    force: bool,
) -> Result<Value, Vec<ApplyConflict>> {
    let new_fields = fields_of(applied, scope);
    let mut conflicts = Vec::new();
    for entry in entries.iter() {
        if entry.same_owner(writer.manager, "Apply", writer.subresource) {
            continue;
        }
        for path in entry.fields.intersection(&new_fields) {
            if value_at(live, path) != value_at(applied, path) {
                conflicts.push(ApplyConflict {
                    manager: entry.manager.clone(),
                    api_version: entry.api_version.clone(),
                    field: dotted(path),
                });
            }
        }
    }
    if !conflicts.is_empty() && !force {
        return Err(conflicts);
    }
    let previous: FieldSet = entries
        .iter()
        .find(|e| e.same_owner(writer.manager, "Apply", writer.subresource))
        .map(|e| e.fields.clone())
        .unwrap_or_default();
    let owned_by_others: FieldSet = entries
        .iter()
        .filter(|e| !e.same_owner(writer.manager, "Apply", writer.subresource))
        .flat_map(|e| e.fields.iter().cloned())
        .collect();

    let mut merged = live.clone();
    for path in previous.difference(&new_fields) {
        if !owned_by_others.contains(path) {
            remove_at(&mut merged, path);
        }
    }
    deep_merge(&mut merged, applied, scope);

    for entry in entries.iter_mut() {
        if !entry.same_owner(writer.manager, "Apply", writer.subresource) {
            // Same value: ownership is shared. Different value (only when forced): it moves.
            entry
                .fields
                .retain(|p| !(new_fields.contains(p) && value_at(live, p) != value_at(applied, p)));
        }
    }
    entries.retain(|e| !e.fields.is_empty());
    match entries
        .iter_mut()
        .find(|e| e.same_owner(writer.manager, "Apply", writer.subresource))
    {
        Some(entry) => {
            entry.fields = new_fields;
            entry.time = writer.time.to_string();
            entry.api_version = writer.api_version.to_string();
        }
        None => entries.push(Entry {
            manager: writer.manager.to_string(),
            operation: "Apply".to_string(),
            api_version: writer.api_version.to_string(),
            time: writer.time.to_string(),
            subresource: writer.subresource.map(str::to_string),
            fields: new_fields,
        }),
    }
    Ok(merged)
}

fn remove_at(object: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut current = object;
    for element in parents {
        let Some(field) = element.strip_prefix("f:") else {
            return;
        };
        match current.get_mut(field) {
            Some(next) => current = next,
            None => return,
        }
    }
    if let Some(field) = last.strip_prefix("f:") {
        if let Some(map) = current.as_object_mut() {
            map.remove(field);
        }
    } else if let Some(key) = last.strip_prefix("k:") {
        if let (Ok(Value::Object(key)), Some(items)) =
            (serde_json::from_str::<Value>(key), current.as_array_mut())
        {
            items.retain(|item| !key.iter().all(|(k, v)| item.get(k) == Some(v)));
        }
    } else if let Some(item) = last.strip_prefix("v:")
        && let (Ok(item), Some(items)) =
            (serde_json::from_str::<Value>(item), current.as_array_mut())
    {
        items.retain(|x| *x != item);
    }
}

/// Merges `patch` into `target`: maps recursively, everything else replaced; keyed metadata lists merged by key.
fn deep_merge(target: &mut Value, patch: &Value, scope: Scope) {
    fn merge(target: &mut Value, patch: &Value, depth: usize, key: &str) {
        match (target, patch) {
            (Value::Object(t), Value::Object(p)) => {
                for (k, v) in p {
                    match t.get_mut(k) {
                        Some(existing) => merge(existing, v, depth + 1, k),
                        None => {
                            t.insert(k.clone(), v.clone());
                        }
                    }
                }
            }
            (Value::Array(t), Value::Array(p)) if depth == 2 && key == "ownerReferences" => {
                for item in p {
                    match t.iter_mut().find(|x| x["uid"] == item["uid"]) {
                        Some(existing) => *existing = item.clone(),
                        None => t.push(item.clone()),
                    }
                }
            }
            (Value::Array(t), Value::Array(p)) if depth == 2 && key == "finalizers" => {
                for item in p {
                    if !t.contains(item) {
                        t.push(item.clone());
                    }
                }
            }
            (t, p) => *t = p.clone(),
        }
    }
    let Some(map) = patch.as_object() else {
        return;
    };
    for (key, value) in map {
        let allowed = match scope {
            Scope::Whole => true,
            Scope::NoStatus => key != "status",
            Scope::StatusOnly => {
                key == "status" || key == "apiVersion" || key == "kind" || key == "metadata"
            }
        };
        if !allowed {
            continue;
        }
        if key == "metadata" {
            let mut meta = value.clone();
            if let Some(m) = meta.as_object_mut() {
                for system in SYSTEM_METADATA {
                    m.remove(*system);
                }
            }
            if target.get("metadata").is_none() {
                target["metadata"] = json!({});
            }
            merge(&mut target["metadata"], &meta, 1, "metadata");
        } else {
            match target.get_mut(key) {
                Some(existing) => merge(existing, value, 1, key),
                None => {
                    target[key] = value.clone();
                }
            }
        }
    }
}
