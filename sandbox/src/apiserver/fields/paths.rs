//! Which fields an object sets, as `fieldsV1` paths: read from an object in a scope (the whole
//! object, or its status), compared between two versions, and written as managedFields hold them.

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
