//! The field sets and managedFields entries, checked against what kube-apiserver records.

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
use serde_json::json;

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
