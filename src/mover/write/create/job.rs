//! One create to send: its body made from what was read (owners' target UIDs filled in), how
//! to treat an object of its name already there, and its sending.

use std::borrow::Cow;

use serde_json::Value;
use serde_json::value::RawValue;

use super::body::target_body;
use super::fresh::Fresh;
use super::one::{WhenExisting, create_one, restore_status};
use super::terms::{CreateAnswer, Created, Creating};
use crate::kube::Connected;
use crate::model::ObjectRef;
use crate::mover::addressing::type_of;
use crate::mover::graph::discover::{ManagedFields, MoveType};
use crate::mover::graph::plan::MovePlan;
use crate::mover::journal::JournalFile;
use crate::mover::progress::{Phase, Progress};
use crate::mover::write::mark::{Marked, Proof};

/// One create to send: its body (its owners' target UIDs filled in), and how to treat an
/// object of its name already there.
pub(super) struct Job<'a> {
    uid: String,
    reference: &'a ObjectRef,
    t: &'a MoveType,
    body: Value,
    /// The source's managedFields as text: borrowed from the re-read, or made from a body's own.
    managed: Option<Cow<'a, RawValue>>,
    status: Option<Value>,
    namespace: String,
    when_existing: WhenExisting,
    pub(super) frozen: Option<ObjectRef>,
    proof: Proof,
}

pub(super) fn job<'a>(
    plan: &'a MovePlan,
    types: &'a [MoveType],
    (unsent, managed_fields): (&mut Fresh, &'a ManagedFields),
    how: &Creating,
    journal: Option<&JournalFile>,
    created: &Created,
    uid: &str,
) -> Option<Job<'a>> {
    let node = plan.node(uid);
    let t = type_of(types, &node.reference)?;
    // Taken out of what was read: dropped once the body is made.
    let read = unsent.take(uid);
    let (object, content) = match &read {
        Some((object, content)) => (object, content.as_deref()),
        None => (node.object.as_ref()?, node.content.as_deref()),
    };
    let namespace = if t.info.namespaced {
        node.reference.namespace.clone()
    } else {
        String::new()
    };
    let was_there = match journal {
        Some(j) => j.journal.entry(uid).is_some_and(|e| e.preexisting),
        None => how.preexisting.contains(uid),
    };
    let reused = journal.is_some_and(|j| j.journal.entry(uid).is_some_and(|e| e.reused));
    let when_existing = if node.is_global || node.global_hierarchy || reused {
        WhenExisting::Reuse
    } else if was_there {
        if how.overwrite_existing {
            WhenExisting::Overwrite
        } else {
            WhenExisting::Refuse
        }
    } else {
        WhenExisting::Adopt
    };
    let (body, inline) = target_body(plan, (object, content), &created.uids);
    // Listed objects' managedFields were kept apart; a backup's or a whole read's are inline.
    let managed = match managed_fields.get(uid) {
        Some(raw) => Some(Cow::Borrowed(&**raw)),
        None => inline
            .and_then(|m| serde_json::value::to_raw_value(&m).ok())
            .map(Cow::Owned),
    };
    let proof = Proof {
        mark: how.mark.clone(),
        recorded: journal
            .and_then(|j| j.journal.entry(uid))
            .and_then(|e| e.target_uid.clone()),
    };
    let status = body
        .get("status")
        .filter(|s| how.restore_status && t.status && !s.is_null())
        .cloned();
    let frozen = crate::model::has_annotation(object, crate::names::FROZEN_BY_ANNOTATION)
        .then(|| node.reference.clone());
    Some(Job {
        uid: uid.to_string(),
        reference: &node.reference,
        t,
        body,
        managed,
        status,
        namespace,
        when_existing,
        frozen,
        proof,
    })
}

/// Sends one create (and its status, with `--restore-status`).
pub(super) async fn send_job<'a>(
    job: Job<'a>,
    target: &'a Connected,
    how: &'a Creating,
    progress: &'a dyn Progress,
) -> CreateAnswer<'a> {
    how.stop.check()?;
    let outcome = create_one(
        &target.cluster,
        job.t,
        job.when_existing,
        job.body,
        &job.proof,
        job.reference,
    )
    .await?;
    if let Some(status) = job.status {
        restore_status(
            &target.cluster,
            job.t,
            job.reference,
            &job.namespace,
            status,
        )
        .await?;
    }
    progress.done(Phase::Create, job.reference);
    let marked = outcome.marked.then(|| Marked {
        source_uid: job.uid.clone(),
        target_uid: outcome.uid.clone(),
        reference: job.reference,
        resource: &job.t.resource,
        namespace: job.namespace.clone(),
        // Listed objects' managedFields stay in `Fresh`; only inline ones are kept here.
        inline_managed: match job.managed {
            Some(Cow::Owned(managed)) => Some(managed),
            _ => None,
        },
    });
    Ok((job.uid, outcome, job.t, marked))
}
