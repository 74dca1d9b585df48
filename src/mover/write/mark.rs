//! This move's mark on its copies: every object a move creates in the target carries the
//! move's ID ([`MOVED_BY_ANNOTATION`]) until the journal holds the copy's UID. An object of a
//! planned name found in the target is this move's own only with that proof — the mark, or the
//! UID its create was answered with — never because a create met 409 AlreadyExists.

use futures::StreamExt;
use kube::api::{DynamicObject, PatchParams};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::error::Result;
use crate::kube::Cluster;
use crate::kube::Stop;
use crate::model::ObjectRef;
use crate::mover::addressing::Writes;
use crate::mover::graph::discover::ManagedFields;
use crate::names::MOVED_BY_ANNOTATION;

/// The refusal for an object of a planned name that appeared in the target during the move
/// without this move's mark: it is not this move's copy, whatever its name says.
pub fn appeared(reference: &ObjectRef) -> String {
    format!(
        "{} appeared in the target while this move ran, and not by this move (it carries no mark of it and its UID is not the one this move's create was answered with); the move stopped before deleting anything from the source, which keeps every original — check what made it, remove or rename it in the target, then continue the move with --resume or undo it with --rollback",
        reference.kind_and_place()
    )
}

/// How this move recognises its own copy: the UID an earlier create of this move was answered
/// with; or, where that answer was lost, the mark it sets at create (its ID) on content equal to
/// what it sent. The mark alone proves nothing: anyone who can read the journal's copy, or a
/// copy in flight, can write it on an object of their own.
#[derive(Debug, Clone, Default)]
pub struct Proof {
    pub mark: String,
    pub recorded: Option<String>,
}

impl Proof {
    /// Whether `existing` is this move's copy of `sent` (the body its create sent), and whether
    /// it carries the mark.
    pub(in crate::mover) fn proves(&self, existing: &DynamicObject, sent: &Value) -> (bool, bool) {
        let marked = !self.mark.is_empty()
            && crate::model::annotation(existing, MOVED_BY_ANNOTATION) == Some(self.mark.as_str());
        let recorded = self.recorded.is_some() && existing.metadata.uid == self.recorded;
        let same = marked
            && serde_json::to_value(existing).is_ok_and(|existing| same_content(sent, &existing));
        (recorded || same, marked)
    }
}

/// Annotations the move itself sets on originals or copies while it runs: not content.
const MOVE_ANNOTATIONS: [&str; 2] = [
    MOVED_BY_ANNOTATION,
    crate::names::DELETE_FOR_MOVE_ANNOTATION,
];

/// Whether `copy` carries `original`'s content: every field but the metadata and the status
/// (a server may add defaults to a copy, never take a field away or change one; a Secret's or a
/// ConfigMap's data is equal key for key), and the same labels and annotations (but those the
/// move sets itself). Owner references are left out: the move points a copy's at the target's
/// owners.
pub fn same_content(original: &Value, copy: &Value) -> bool {
    let (Some(fields), Some(copied)) = (original.as_object(), copy.as_object()) else {
        return false;
    };
    let not_content = |key: &str| ["apiVersion", "kind", "metadata", "status"].contains(&key);
    // Data, key for key (none and empty alike): a copy with data its original lacks is none.
    let empty = |value: Option<&Value>| value.is_none_or(|v| v.is_null() || v == &json!({}));
    let same_data = ["data", "binaryData", "stringData"].iter().all(|key| {
        let (a, b) = (original.get(*key), copy.get(*key));
        a == b || (empty(a) && empty(b))
    });
    // A field the original lacks: only a Secret's type, which a server defaults.
    let nothing_added = copied
        .keys()
        .all(|key| not_content(key) || fields.contains_key(key) || key == "type");
    let content = same_data
        && nothing_added
        && fields
            .iter()
            .filter(|(key, _)| !not_content(key))
            .filter(|(key, _)| !["data", "binaryData", "stringData"].contains(&key.as_str()))
            .all(|(key, value)| copy.get(key).is_some_and(|other| holds(value, other)));
    let annotations = |object: &Value| -> serde_json::Map<String, Value> {
        object["metadata"]["annotations"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(key, _)| !MOVE_ANNOTATIONS.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect()
    };
    let labels = |object: &Value| object["metadata"]["labels"].clone();
    let no_labels = |labels: &Value| labels.as_object().is_none_or(|m| m.is_empty());
    let same_labels = labels(original) == labels(copy)
        || (no_labels(&labels(original)) && no_labels(&labels(copy)));
    content && same_labels && annotations(original) == annotations(copy)
}

/// Whether `copy` holds every field of `original` with the same value (objects field by field,
/// lists and values as they are).
fn holds(original: &Value, copy: &Value) -> bool {
    match (original, copy) {
        (Value::Object(fields), Value::Object(other)) => fields
            .iter()
            .all(|(key, value)| other.get(key).is_some_and(|o| holds(value, o))),
        _ => original == copy,
    }
}

/// A copy that carries this move's mark, to be finished once its UID is recorded. One is held
/// per created object until the last create is answered, so it borrows what the plan holds.
pub struct Marked<'a> {
    pub source_uid: String,
    pub target_uid: String,
    pub reference: &'a ObjectRef,
    pub resource: &'a kube::core::ApiResource,
    pub namespace: String,
    /// Its managedFields when they came inline (a backup); else they are in [`Fresh`].
    pub inline_managed: Option<Box<RawValue>>,
}

/// Finishes every marked copy once the journal holds its UID: one patch, conditional on that UID,
/// that restores its managedFields (a create ignores them) and removes the mark.
pub(in crate::mover) async fn finish_copies(
    target: &Cluster,
    marked: &[Marked<'_>],
    managed_fields: &ManagedFields,
    (concurrency, stop): (usize, &Stop),
) -> Result<()> {
    let patches = marked.iter().map(|m| async move {
        stop.check()?;
        let managed = managed_fields
            .get(&m.source_uid)
            .map(|raw| &**raw)
            .or(m.inline_managed.as_deref());
        // None in the source: none in the copy either (`[{}]` strips what the mark's
        // removal would record, as a real server documents).
        let none = RawValue::from_string("[{}]".into()).expect("valid JSON");
        let patch = FinishPatch {
            metadata: FinishMeta {
                uid: &m.target_uid,
                // A Cluster keeps it until it is unpaused: it names the move that holds it.
                annotations: if m.reference.is_core_cluster() {
                    json!({})
                } else {
                    json!({MOVED_BY_ANNOTATION: null})
                },
                managed_fields: managed.unwrap_or(&none),
            },
        };
        Writes::new(target, m.resource, &m.namespace)
            .merge_patch(&m.reference.name, &patch, &PatchParams::default())
            .await
            .map_err(|e| {
                target.api_error(
                    e,
                    &format!("finishing {} in the target", m.reference.kubectl_name()),
                )
            })
    });
    futures::stream::iter(patches)
        .buffer_unordered(concurrency.max(1))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>>>()?;
    Ok(())
}

/// The finishing patch's body, `{"metadata":{"uid":…,"annotations":{mark: null},"managedFields":…}}`,
/// with the source's managedFields text as it was (never parsed again).
#[derive(serde::Serialize)]
struct FinishPatch<'a> {
    metadata: FinishMeta<'a>,
}

#[derive(serde::Serialize)]
struct FinishMeta<'a> {
    uid: &'a str,
    annotations: Value,
    #[serde(rename = "managedFields")]
    managed_fields: &'a RawValue,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_carries_its_originals_content_and_nothing_of_its_own() {
        let original = json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "ca", "labels": {"a": "1"}, "annotations": {"n": "x"}},
            "type": "cluster.x-k8s.io/secret", "data": {"tls.crt": "UkVBTA=="}});
        let mut copy = original.clone();
        copy["metadata"]["annotations"][MOVED_BY_ANNOTATION] = json!("m1");
        copy["metadata"]["uid"] = json!("other");
        assert!(
            same_content(&original, &copy),
            "the mark and the UID are not content"
        );
        let mut forged = copy.clone();
        forged["data"]["tls.crt"] = json!("Rk9SRUlHTg==");
        assert!(!same_content(&original, &forged), "other data");
        let bare = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
        let mut added = bare.clone();
        added["data"] = json!({"tls.crt": "Rk9SRUlHTg=="});
        assert!(!same_content(&bare, &added), "data its original lacks");
        let mut typed = bare.clone();
        typed["type"] = json!("Opaque");
        assert!(same_content(&bare, &typed), "a defaulted type");
        let mut labelled = copy.clone();
        labelled["metadata"]["labels"]["b"] = json!("2");
        assert!(!same_content(&original, &labelled), "other labels");
        let spec = json!({"kind": "Widget", "spec": {"a": 1}});
        let defaulted = json!({"kind": "Widget", "spec": {"a": 1, "b": 2}});
        assert!(
            same_content(&spec, &defaulted),
            "a field a server defaulted"
        );
        assert!(!same_content(&defaulted, &spec), "a field taken away");
    }
}
