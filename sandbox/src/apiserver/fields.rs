//! `metadata.managedFields`: which field manager set which fields.
//!
//! Field paths use the `fieldsV1` element syntax (`f:name`, `k:{"uid":..}`, `v:"x"`). Lists are
//! atomic except `metadata.ownerReferences` (keyed by uid) and `metadata.finalizers` (a set), as in
//! the built-in schemas; that is all the exactness the plugin's uses need.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

pub type FieldPath = Vec<String>;
pub type FieldSet = BTreeSet<FieldPath>;

/// Metadata the server owns: never part of any manager's field set.
pub const SYSTEM_METADATA: &[&str] = &[
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
];

/// Which part of an object a write may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Everything (no status subresource: status is part of the main resource).
    Whole,
    /// Everything but `.status` (main resource of a kind with a status subresource).
    NoStatus,
    /// Only `.status` (the status subresource).
    StatusOnly,
}

/// Where the walk of an object is, and what it collects.
struct Walk {
    /// The maps and list items that hold fields, besides the fields themselves: an update owns the
    /// maps it adds (written `.` in `fieldsV1`); an apply owns only what it sets.
    containers: bool,
    /// A CustomResourceDefinition's `status.conditions`, a list keyed by `type` (in a custom
    /// resource every list is atomic).
    keyed_conditions: bool,
}

impl Walk {
    fn collect(&self, value: &Value, path: &mut FieldPath, out: &mut FieldSet, in_metadata: bool) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                if self.containers && !(path.len() == 1 && path[0] == "f:metadata") {
                    out.insert(path.clone());
                }
                for (key, child) in map {
                    path.push(format!("f:{key}"));
                    self.collect_child(key, child, path, out, in_metadata);
                    path.pop();
                }
            }
            _ => {
                out.insert(path.clone());
            }
        }
    }

    fn collect_child(
        &self,
        key: &str,
        child: &Value,
        path: &mut FieldPath,
        out: &mut FieldSet,
        in_metadata: bool,
    ) {
        let items = child.as_array().filter(|items| !items.is_empty());
        // A CRD's conditions list is never absent from its status (no omitempty), so only
        // its items are added.
        let keyed = |element: fn(&Value) -> String, whole: bool, out: &mut FieldSet| {
            let path = &mut path.clone();
            if self.containers && !whole {
                out.insert(path.clone());
            }
            for item in items.into_iter().flatten() {
                path.push(element(item));
                out.insert(path.clone());
                if whole {
                    for (field, value) in item.as_object().into_iter().flatten() {
                        path.push(format!("f:{field}"));
                        self.collect(value, path, out, false);
                        path.pop();
                    }
                }
                path.pop();
            }
        };
        match key {
            "ownerReferences" if in_metadata && path.len() == 2 && items.is_some() => keyed(
                |item| format!("k:{}", json!({"uid": item["uid"]})),
                false,
                out,
            ),
            "finalizers" if in_metadata && path.len() == 2 && items.is_some() => {
                keyed(|item| format!("v:{item}"), false, out)
            }
            "conditions"
                if self.keyed_conditions
                    && path.len() == 2
                    && path[0] == "f:status"
                    && items.is_some() =>
            {
                keyed(
                    |item| format!("k:{}", json!({"type": item["type"]})),
                    true,
                    out,
                )
            }
            _ => self.collect(child, path, out, in_metadata),
        }
    }

    fn object(&self, object: &Value, scope: Scope) -> FieldSet {
        let mut out = FieldSet::new();
        let Some(map) = object.as_object() else {
            return out;
        };
        for (key, child) in map {
            if key == "apiVersion" || key == "kind" {
                continue;
            }
            let is_status = key == "status";
            match scope {
                Scope::NoStatus if is_status => continue,
                Scope::StatusOnly if !is_status => continue,
                _ => {}
            }
            let mut path = vec![format!("f:{key}")];
            if key == "metadata" {
                let metadata: Map<String, Value> = child
                    .as_object()
                    .into_iter()
                    .flatten()
                    .filter(|(key, _)| !SYSTEM_METADATA.contains(&key.as_str()))
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect();
                if metadata.is_empty() {
                    continue;
                }
                self.collect(&Value::Object(metadata), &mut path, &mut out, true);
            } else {
                self.collect(child, &mut path, &mut out, false);
            }
        }
        out
    }
}

fn is_crd(object: &Value) -> bool {
    object["kind"] == "CustomResourceDefinition"
        && object["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
}

/// The fields an object sets (and the list items that hold them), restricted to `scope`: what an
/// apply owns.
pub fn fields_of(object: &Value, scope: Scope) -> FieldSet {
    Walk {
        containers: false,
        keyed_conditions: is_crd(object),
    }
    .object(object, scope)
}

/// [`fields_of`] and the maps that hold them: what an update may own.
pub fn members_of(object: &Value, scope: Scope) -> FieldSet {
    Walk {
        containers: true,
        keyed_conditions: is_crd(object),
    }
    .object(object, scope)
}

/// The value an object holds at a field path, if any.
pub fn value_at<'a>(object: &'a Value, path: &[String]) -> Option<&'a Value> {
    let mut current = object;
    for element in path {
        if let Some(field) = element.strip_prefix("f:") {
            current = current.get(field)?;
        } else if let Some(key) = element.strip_prefix("k:") {
            let key: Value = serde_json::from_str(key).ok()?;
            let key = key.as_object()?;
            current = current
                .as_array()?
                .iter()
                .find(|item| key.iter().all(|(k, v)| item.get(k) == Some(v)))?;
        } else if let Some(item) = element.strip_prefix("v:") {
            let item: Value = serde_json::from_str(item).ok()?;
            current = current.as_array()?.iter().find(|x| **x == item)?;
        } else {
            return None;
        }
    }
    Some(current)
}

/// What a write changed: fields it set (added or modified) and fields it removed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Change {
    pub set: FieldSet,
    pub removed: FieldSet,
}

impl Change {
    /// Every field of a new object counts as set by its creator.
    pub fn all(fields: FieldSet) -> Change {
        Change {
            set: fields,
            removed: FieldSet::new(),
        }
    }
}

/// What an update from `old` to `new` changed: the fields it set to another value, the maps and
/// list items it added (a create's `old` is the kind's empty object), and what it removed.
pub fn changed_fields(old: &Value, new: &Value, scope: Scope) -> Change {
    let old_fields = members_of(old, scope);
    let new_fields = members_of(new, scope);
    let set: FieldSet = new_fields
        .iter()
        .filter(|p| match value_at(old, p) {
            None => true,
            Some(Value::Object(_)) => false,
            Some(before) => Some(before) != value_at(new, p) || !old_fields.contains(*p),
        })
        .cloned()
        .collect();
    Change {
        set,
        removed: old_fields.difference(&new_fields).cloned().collect(),
    }
}

/// Renders a field set as `fieldsV1`: a member that also holds members is marked `.`.
pub fn to_fields_v1(set: &FieldSet) -> Value {
    fn node<'a>(root: &'a mut Map<String, Value>, path: &[String]) -> &'a mut Map<String, Value> {
        path.iter().fold(root, |node, element| {
            node.entry(element.clone())
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .expect("fieldsV1 nodes are objects")
        })
    }
    let mut root = Map::new();
    for path in set {
        node(&mut root, path);
    }
    for path in set {
        let member = node(&mut root, path);
        if !member.is_empty() {
            member.insert(".".into(), json!({}));
        }
    }
    Value::Object(root)
}

/// Reads `fieldsV1` back into leaf paths.
pub fn from_fields_v1(value: &Value) -> FieldSet {
    fn walk(value: &Value, path: &mut FieldPath, out: &mut FieldSet) {
        let children: Vec<(&String, &Value)> = value
            .as_object()
            .map(|m| m.iter().filter(|(k, _)| k.as_str() != ".").collect())
            .unwrap_or_default();
        let marked = value.get(".").is_some();
        if (children.is_empty() || marked) && !path.is_empty() {
            out.insert(path.clone());
        }
        for (key, child) in children {
            path.push(key.clone());
            walk(child, path, out);
            path.pop();
        }
    }
    let mut out = FieldSet::new();
    walk(value, &mut Vec::new(), &mut out);
    out
}

/// One `managedFields` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub manager: String,
    pub operation: String,
    pub api_version: String,
    pub time: String,
    pub subresource: Option<String>,
    pub fields: FieldSet,
}

impl Entry {
    fn same_owner(&self, manager: &str, operation: &str, subresource: Option<&str>) -> bool {
        self.manager == manager
            && self.operation == operation
            && self.subresource.as_deref() == subresource
    }
}

pub fn read_entries(object: &Value) -> Vec<Entry> {
    object["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| Entry {
            manager: e["manager"].as_str().unwrap_or_default().to_string(),
            operation: e["operation"].as_str().unwrap_or_default().to_string(),
            api_version: e["apiVersion"].as_str().unwrap_or_default().to_string(),
            time: e["time"].as_str().unwrap_or_default().to_string(),
            subresource: e["subresource"].as_str().map(str::to_string),
            fields: from_fields_v1(&e["fieldsV1"]),
        })
        .collect()
}

pub fn write_entries(object: &mut Value, entries: &[Entry]) {
    // In kube-apiserver's order: by operation, then time, manager and apiVersion.
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by(|a, b| {
        (&a.operation, &a.time, &a.manager, &a.api_version).cmp(&(
            &b.operation,
            &b.time,
            &b.manager,
            &b.api_version,
        ))
    });
    let rendered: Vec<Value> = sorted
        .into_iter()
        .map(|e| {
            let mut v = json!({
                "manager": e.manager,
                "operation": e.operation,
                "apiVersion": e.api_version,
                "time": e.time,
                "fieldsType": "FieldsV1",
                "fieldsV1": to_fields_v1(&e.fields),
            });
            if let Some(sub) = &e.subresource {
                v["subresource"] = json!(sub);
            }
            v
        })
        .collect();
    if rendered.is_empty() {
        if let Some(meta) = object["metadata"].as_object_mut() {
            meta.remove("managedFields");
        }
    } else {
        object["metadata"]["managedFields"] = Value::Array(rendered);
    }
}

/// Who is writing, as recorded in managedFields.
#[derive(Clone, Debug)]
pub struct Writer<'a> {
    pub manager: &'a str,
    pub api_version: &'a str,
    pub subresource: Option<&'a str>,
    pub time: &'a str,
}

/// Records an `Update` (create, update, non-apply patch) by `writer`: it takes ownership of what it
/// changed, and other managers lose those fields.
pub fn record_update(entries: &mut Vec<Entry>, writer: &Writer, change: &Change) {
    // A removed field is owned by nobody, the writer included.
    for entry in entries.iter_mut() {
        entry.fields.retain(|p| !change.removed.contains(p));
    }
    let changed = &change.set;
    if changed.is_empty() {
        entries.retain(|e| !e.fields.is_empty());
        return;
    }
    for entry in entries.iter_mut() {
        if !entry.same_owner(writer.manager, "Update", writer.subresource) {
            entry.fields.retain(|p| !changed.contains(p));
        }
    }
    entries.retain(|e| {
        !e.fields.is_empty() || e.same_owner(writer.manager, "Update", writer.subresource)
    });
    match entries
        .iter_mut()
        .find(|e| e.same_owner(writer.manager, "Update", writer.subresource))
    {
        Some(entry) => {
            entry.fields.extend(changed.iter().cloned());
            entry.time = writer.time.to_string();
            entry.api_version = writer.api_version.to_string();
        }
        None => entries.push(Entry {
            manager: writer.manager.to_string(),
            operation: "Update".to_string(),
            api_version: writer.api_version.to_string(),
            time: writer.time.to_string(),
            subresource: writer.subresource.map(str::to_string),
            fields: changed.clone(),
        }),
    }
    entries.retain(|e| !e.fields.is_empty());
}

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

#[cfg(test)]
mod tests {
    #[test]
    fn entries_are_written_in_the_apiservers_order() {
        let entry = |manager: &str, operation: &str, time: &str| Entry {
            manager: manager.into(),
            operation: operation.into(),
            api_version: "v1".into(),
            time: time.into(),
            subresource: None,
            fields: FieldSet::from([vec!["f:spec".to_string()]]),
        };
        let mut object = json!({"metadata": {}});
        write_entries(
            &mut object,
            &[
                entry("unknown", "Update", "2026-01-01T00:00:01Z"),
                entry("kube-apiserver", "Update", "2026-01-01T00:00:01Z"),
                entry("later", "Update", "2026-01-01T00:00:00Z"),
                entry("applier", "Apply", "2026-01-01T00:00:09Z"),
            ],
        );
        let managers: Vec<&str> = object["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(managers, ["applier", "later", "kube-apiserver", "unknown"]);
    }

    use super::*;

    #[test]
    fn fields_of_spec_and_labels() {
        let obj = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a", "labels": {"tier": "a"},
            "ownerReferences": [{"uid": "u1"}], "finalizers": ["f"]}, "spec": {"replicas": 1}, "status": {"x": 1}});
        let members = members_of(&obj, Scope::NoStatus);
        let rendered = to_fields_v1(&members);
        assert_eq!(
            rendered,
            json!({"f:metadata": {"f:labels": {".": {}, "f:tier": {}}, "f:finalizers": {".": {}, "v:\"f\"": {}},
                "f:ownerReferences": {".": {}, "k:{\"uid\":\"u1\"}": {}}},
                "f:spec": {".": {}, "f:replicas": {}}}),
            "an update owns the maps it adds, marked `.`"
        );
        assert_eq!(from_fields_v1(&rendered), members);
        let applied = to_fields_v1(&fields_of(&obj, Scope::NoStatus));
        assert_eq!(
            applied,
            json!({"f:metadata": {"f:labels": {"f:tier": {}}, "f:finalizers": {"v:\"f\"": {}},
                "f:ownerReferences": {"k:{\"uid\":\"u1\"}": {}}},
                "f:spec": {"f:replicas": {}}}),
            "an apply owns only what it sets"
        );
        assert_eq!(fields_of(&obj, Scope::StatusOnly).len(), 1);
    }

    #[test]
    fn update_takes_ownership_from_other_managers() {
        let time = "2026-01-01T00:00:00Z";
        let v1 = json!({"spec": {"a": 1, "b": 1}});
        let v2 = json!({"spec": {"a": 2, "b": 1}});
        let mut entries = Vec::new();
        let first = Writer {
            manager: "one",
            api_version: "v1",
            subresource: None,
            time,
        };
        record_update(
            &mut entries,
            &first,
            &changed_fields(&json!({}), &v1, Scope::Whole),
        );
        let second = Writer {
            manager: "two",
            ..first.clone()
        };
        record_update(
            &mut entries,
            &second,
            &changed_fields(&v1, &v2, Scope::Whole),
        );
        assert_eq!(entries.len(), 2);
        let kept: Vec<String> = entries[0].fields.iter().map(dotted).collect();
        assert_eq!(
            kept,
            [".spec", ".spec.b"],
            "one keeps the map it added and spec.b"
        );
        assert_eq!(dotted(entries[1].fields.iter().next().unwrap()), ".spec.a");
        let v3 = json!({"spec": {"b": 1}});
        record_update(
            &mut entries,
            &second,
            &changed_fields(&v2, &v3, Scope::Whole),
        );
        assert_eq!(
            entries.len(),
            1,
            "removing spec.a leaves \"two\" owning nothing"
        );
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "status": {"conditions": [{"type": "Established", "status": "True"}]}});
        let conditions: Vec<String> = members_of(&crd, Scope::Whole).iter().map(dotted).collect();
        assert_eq!(
            conditions,
            [
                ".status",
                ".status.conditions[{\"type\":\"Established\"}]",
                ".status.conditions[{\"type\":\"Established\"}].status",
                ".status.conditions[{\"type\":\"Established\"}].type"
            ],
            "a CRD's conditions are keyed by type"
        );
        assert_eq!(entries[0].manager, "one");
    }

    #[test]
    fn apply_conflicts_and_removes_dropped_fields() {
        let time = "2026-01-01T00:00:00Z";
        let mut entries = Vec::new();
        let applier = Writer {
            manager: "applier",
            api_version: "v1",
            subresource: None,
            time,
        };
        let live = apply(
            &json!({}),
            &json!({"spec": {"a": 1, "b": 2}}),
            &mut entries,
            &applier,
            Scope::NoStatus,
            false,
        )
        .unwrap();
        assert_eq!(live, json!({"spec": {"a": 1, "b": 2}}));
        let live2 = apply(
            &live,
            &json!({"spec": {"a": 1}}),
            &mut entries,
            &applier,
            Scope::NoStatus,
            false,
        )
        .unwrap();
        assert_eq!(
            live2,
            json!({"spec": {"a": 1}}),
            "a field no longer applied is removed"
        );

        let other = Writer {
            manager: "other",
            ..applier.clone()
        };
        let conflicts = apply(
            &live2,
            &json!({"spec": {"a": 5}}),
            &mut entries,
            &other,
            Scope::NoStatus,
            false,
        )
        .unwrap_err();
        assert_eq!(conflicts[0].manager, "applier");
        assert_eq!(conflicts[0].field, ".spec.a");
        let forced = apply(
            &live2,
            &json!({"spec": {"a": 5}}),
            &mut entries,
            &other,
            Scope::NoStatus,
            true,
        )
        .unwrap();
        assert_eq!(forced["spec"]["a"], 5);
        assert!(
            entries.iter().all(|e| e.manager != "applier"),
            "force takes ownership"
        );
    }
}
