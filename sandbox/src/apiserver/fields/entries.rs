//! The managedFields entries: read from an object, written back, and updated for a write.

use serde_json::{Value, json};

use super::paths::{Change, FieldSet, from_fields_v1, to_fields_v1};

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
    pub(super) fn same_owner(
        &self,
        manager: &str,
        operation: &str,
        subresource: Option<&str>,
    ) -> bool {
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
