//! A move continued or undone from its journal alone: finished once it already deletes from the
//! source, or rolled back before that — deleting only what the journal proves is its own copy.

use std::collections::BTreeMap;
use std::time::Instant;

use futures::{StreamExt, TryStreamExt, stream};

use super::records::object_by_name;
use crate::error::{Error, Result};
use crate::kube::Cluster;
use crate::kube::Stop;
use crate::mover::addressing::api;
use crate::mover::journal::{Entry, Journal, JournalFile, Stage, entry_resource};
use crate::mover::progress::Progress;
use crate::mover::report::Summary;
use crate::mover::write::delete::{Deleted, delete_entries};
use crate::mover::write::mark::same_content;
use crate::mover::write::pause::{PausedWhere, patch_paused, paused_entries};
use kube::api::DynamicObject;

/// What finishing or rolling back a move from its journal works with.
pub struct Replay<'a> {
    pub source: &'a Cluster,
    pub target: &'a Cluster,
    pub journal: JournalFile,
    pub concurrency: usize,
    pub progress: &'a dyn Progress,
    /// Ctrl-C, or the loss of the lease: no new write starts.
    pub stop: Stop,
}

/// Resumes a move whose objects all exist in the target (stage Deleting or Unpausing) from its
/// journal alone: the source may be half deleted, so it cannot be planned again.
pub async fn finish_from_journal(replay: Replay<'_>) -> Result<Summary> {
    let Replay {
        source,
        target,
        mut journal,
        concurrency,
        progress,
        stop,
    } = replay;
    let started = Instant::now();
    let mut skipped = Vec::new();
    if journal.journal.stage == Stage::Deleting {
        refuse_unproven_entries((source, target), &journal.journal, Undoing::Resume).await?;
        skipped = delete_entries(
            source,
            &mut journal,
            |e| (!e.kept_in_source && !e.deleted).then(|| e.uid.clone()),
            |e| e.deleted = true,
            ("source", Some(target)),
            (concurrency, &stop),
            progress,
        )
        .await?
        .skipped;
        journal.stage(Stage::Unpausing).await?;
    }
    patch_paused(
        target,
        &paused_entries(&journal.journal, PausedWhere::All),
        false,
        concurrency,
        progress,
    )
    .await?;
    // What stays in the source (a shared ClusterClass) ends there as it began.
    patch_paused(
        source,
        &paused_entries(&journal.journal, PausedWhere::KeptInSource),
        false,
        concurrency,
        progress,
    )
    .await?;
    let mut not_recorded =
        crate::mover::write::record::leave_in_target(target, &journal, concurrency).await;
    not_recorded
        .extend(crate::mover::write::record::remove_from_source(source, &journal.journal).await);
    journal.stage(Stage::Done).await?;
    Ok(Summary::of_journal(
        &journal.journal,
        skipped,
        not_recorded,
        started.elapsed().as_secs_f64(),
    ))
}

/// `--rollback`: before deletion started, removes from the target every object this move put
/// there — each after what it owns, marked `delete-for-move` with its finalizers dropped while the
/// target's Clusters are still paused, so no target controller tears down infrastructure the
/// source still owns — and only those: each by the UID its create answered with, never one that
/// was there before or that someone has put in its place since; then unpauses the source.
pub async fn rollback_from_journal(replay: Replay<'_>) -> Result<Deleted> {
    let Replay {
        source,
        target,
        mut journal,
        concurrency,
        progress,
        stop,
    } = replay;
    claim_unanswered_creates((source, target), &mut journal, concurrency).await?;
    refuse_unproven_entries((source, target), &journal.journal, Undoing::Rollback).await?;
    let removed = delete_entries(
        target,
        &mut journal,
        |e| {
            (e.created && !e.preexisting && !e.removed)
                .then(|| e.target_uid.clone())
                .flatten()
        },
        |e| e.removed = true,
        ("target", None),
        (concurrency, &stop),
        progress,
    )
    .await?;
    crate::mover::write::namespaces::remove_if_empty(target, &journal.journal).await?;
    patch_paused(
        source,
        &paused_entries(&journal.journal, PausedWhere::All),
        false,
        concurrency,
        progress,
    )
    .await?;
    journal.stage(Stage::RolledBack).await?;
    Ok(removed)
}

/// A create whose answer was lost (the move was killed while it was in flight) left no target UID
/// in the journal. The journal says which creates may have been sent; an object of that name in
/// the target is this move's copy only if it carries this move's mark on the content of its
/// original in the source — one without them appeared by other hands (a mark alone can be
/// copied) and is never touched. Its UID is recorded, so what follows deletes exactly it.
pub(super) async fn claim_unanswered_creates(
    (source, target): (&Cluster, &Cluster),
    journal: &mut JournalFile,
    concurrency: usize,
) -> Result<()> {
    let mark = journal.journal.move_id.clone();
    let unanswered: Vec<Entry> = journal
        .journal
        .entries
        .iter()
        .filter(|e| e.sent && !e.preexisting && !e.removed && e.target_uid.is_none())
        .cloned()
        .collect();
    if unanswered.is_empty() || mark.is_empty() {
        return Ok(());
    }
    let found: Vec<(String, Option<String>)> = stream::iter(unanswered.iter().map(|entry| async {
        let copy = object_by_name(target, entry, "target").await?.filter(|o| {
            crate::model::annotation(o, crate::names::MOVED_BY_ANNOTATION) == Some(mark.as_str())
        });
        let copy = match copy {
            Some(copy) => {
                let original = object_by_name(source, entry, "source")
                    .await?
                    .filter(|o| o.metadata.uid.as_deref() == Some(entry.uid.as_str()));
                original
                    .is_some_and(|original| is_copy_of(&original, &copy))
                    .then_some(copy)
            }
            None => None,
        };
        Ok::<_, Error>((entry.uid.clone(), copy.and_then(|o| o.metadata.uid)))
    }))
    .buffer_unordered(concurrency.max(1))
    .try_collect()
    .await?;
    for (uid, target_uid) in found {
        if let (Some(entry), Some(target_uid)) = (journal.journal.entry_mut(&uid), target_uid) {
            entry.target_uid = Some(target_uid);
            entry.created = true;
        }
    }
    journal.save().await
}
/// Whether `copy` carries the content of `original` (see [`same_content`]).
fn is_copy_of(original: &DynamicObject, copy: &DynamicObject) -> bool {
    match (serde_json::to_value(original), serde_json::to_value(copy)) {
        (Ok(original), Ok(copy)) => same_content(&original, &copy),
        _ => false,
    }
}

/// What a recovery is about to delete: copies from the target, or originals from the source.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Undoing {
    /// `--rollback`: the copies this move created.
    Rollback,
    /// `--resume` past creating: the originals whose copies are in the target.
    Resume,
}

/// A journal read from a cluster can be written by anyone who can write ConfigMaps in its
/// namespace: before a recovery deletes by it, every entry it would delete by must pair an
/// original in the source with a copy in the target that carries its content, each with the
/// UID the entry records. An entry that does not — a forged one naming an unrelated object, or
/// one whose objects changed since — refuses the whole recovery before any delete, named.
pub(super) async fn refuse_unproven_entries(
    (source, target): (&Cluster, &Cluster),
    journal: &Journal,
    undoing: Undoing,
) -> Result<()> {
    let acting: Vec<&Entry> = journal
        .entries
        .iter()
        .filter(|e| match undoing {
            Undoing::Rollback => {
                e.created && !e.preexisting && !e.removed && e.target_uid.is_some()
            }
            Undoing::Resume => !e.kept_in_source && !e.deleted && e.target_uid.is_some(),
        })
        .collect();
    let originals = objects_of(source, &acting, "source").await?;
    let copies = objects_of(target, &acting, "target").await?;
    let unproven: Vec<String> = acting
        .iter()
        .filter(|entry| {
            let key = entry_key(entry);
            let original = originals
                .get(&key)
                .filter(|o| o.metadata.uid.as_deref() == Some(entry.uid.as_str()));
            let copy = copies
                .get(&key)
                .filter(|o| o.metadata.uid == entry.target_uid);
            match (original, copy) {
                (Some(original), Some(copy)) => !is_copy_of(original, copy),
                // Gone on either side: nothing of it is deleted (a delete names its UID).
                _ => false,
            }
        })
        .map(|entry| {
            format!(
                "the journal pairs {} (UID {}) in the source with UID {} in the target, but that object does not carry the original's content: it is not a copy this move made, so nothing was deleted — a journal entry this move did not write (anyone who can write ConfigMaps of namespace {} in the source can), or objects changed since; check who changed it before you continue",
                entry.object.kind_and_place(),
                entry.uid,
                entry.target_uid.as_deref().unwrap_or_default(),
                journal.namespace.as_deref().unwrap_or("default"),
            )
        })
        .collect();
    if unproven.is_empty() {
        Ok(())
    } else {
        Err(Error::Refused(unproven))
    }
}

/// `(resource, namespace, name)` of an entry.
fn entry_key(entry: &Entry) -> (String, String, String) {
    (
        entry.resource.clone(),
        entry.namespace().to_string(),
        entry.object.name.clone(),
    )
}

/// The objects `entries` name in `cluster`, by [`entry_key`]: one LIST per kind and namespace.
async fn objects_of(
    cluster: &Cluster,
    entries: &[&Entry],
    which: &str,
) -> Result<BTreeMap<(String, String, String), DynamicObject>> {
    let mut places: BTreeMap<(String, String), &Entry> = BTreeMap::new();
    for entry in entries {
        places
            .entry((entry.resource.clone(), entry.namespace().to_string()))
            .or_insert(entry);
    }
    let mut found = BTreeMap::new();
    for ((resource, namespace), entry) in places {
        let listed = api(cluster, &entry_resource(entry), &namespace)
            .list(&kube::api::ListParams::default())
            .await
            .map_err(|e| cluster.api_error(e, &format!("listing {resource} in the {which}")))?;
        for object in listed.items {
            let name = object.metadata.name.clone().unwrap_or_default();
            found.insert((resource.clone(), namespace.clone(), name), object);
        }
    }
    Ok(found)
}
