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

/// How this move recognises its own copy: the mark it sets at create (its ID), and the UID an
/// earlier create of this move was answered with.
#[derive(Debug, Clone, Default)]
pub struct Proof {
    pub mark: String,
    pub recorded: Option<String>,
}

impl Proof {
    /// Whether `existing` is this move's copy.
    pub(in crate::mover) fn proves(&self, existing: &DynamicObject) -> (bool, bool) {
        let marked = !self.mark.is_empty()
            && crate::model::annotation(existing, MOVED_BY_ANNOTATION) == Some(self.mark.as_str());
        let recorded = self.recorded.is_some() && existing.metadata.uid == self.recorded;
        (marked || recorded, marked)
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
