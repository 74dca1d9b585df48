//! Which record of a move a rerun, `--resume` or `--rollback` trusts. A move keeps two: the local
//! journal and its copy in the source cluster (for a resume from another machine). Either can be
//! stale — the move may have been continued, finished or rolled back elsewhere — so before
//! anything acts on one, the two are reconciled with each other and with the source.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Instant;

use futures::{StreamExt, TryStreamExt, stream};

use crate::error::{Error, Result};
use crate::kube::Cluster;
use crate::kube::Stop;
use crate::model::ClusterView;
use crate::mover::addressing::{DEFAULT_CONCURRENCY, api};
use crate::mover::journal::{self, Entry, Journal, JournalFile, Stage, entry_resource};
use crate::mover::progress::Progress;
use crate::mover::report::Summary;
use crate::mover::write::delete::{Deleted, delete_entries};
use crate::mover::write::mark::same_content;
use crate::mover::write::pause::{PausedWhere, patch_paused, paused_entries};
use crate::ready::evaluate::UnfinishedMove;
use crate::snapshot::Snapshot;
use kube::api::DynamicObject;

/// What the records of a move say.
#[derive(Debug)]
pub enum Recorded {
    /// No record: a fresh move.
    Nothing,
    /// The move finished here; its short record.
    Finished(Journal),
    /// An interrupted move, from the record that is furthest along.
    Interrupted { journal: Journal, from_copy: bool },
    /// The local journal of an interrupted move, but its copy is gone and so are its objects
    /// from the source: it was finished from elsewhere.
    FinishedElsewhere(Journal),
    /// The records disagree in a way no command should act on; why, and what to do.
    Untrusted(String),
}

/// Where a move's records are.
pub struct Records<'a> {
    pub path: &'a Path,
    pub source: &'a Cluster,
    pub copy_namespace: &'a str,
    pub key: &'a str,
}

/// Reads both records and reconciles them. `rollback`: the caller will delete from the target on
/// the strength of the result, so a copy that is further along than the local journal (the move
/// went on elsewhere) is not followed but refused.
pub async fn recorded(records: &Records<'_>, rollback: bool) -> Result<Recorded> {
    let shown = records.path.display();
    let local = if records.path.exists() {
        Some(Journal::load(records.path)?)
    } else {
        None
    };
    let copy = journal::copy::load(records.source, records.copy_namespace, records.key)
        .await?
        .filter(|j| !j.stage.finished());
    Ok(match (local, copy) {
        (None, None) => Recorded::Nothing,
        (None, Some(copy)) => Recorded::Interrupted {
            journal: copy,
            from_copy: true,
        },
        (Some(local), None) if local.stage.finished() => Recorded::Finished(local),
        // Finished here, then started again from elsewhere and interrupted there.
        (Some(local), Some(copy))
            if local.stage.finished() || copy.progress() > local.progress() =>
        {
            if rollback {
                Recorded::Untrusted(format!(
                    "the move was continued elsewhere: its copy in the source cluster is further along (stage: {:?}) than {shown} (stage: {:?}); if that run has stopped, remove {shown} and run the rollback again to use the copy",
                    copy.stage, local.stage
                ))
            } else {
                Recorded::Interrupted {
                    journal: copy,
                    from_copy: true,
                }
            }
        }
        (Some(local), Some(_)) => Recorded::Interrupted {
            journal: local,
            from_copy: false,
        },
        // The copy goes only when a move finishes or is rolled back; only reality can tell
        // which, or whether the copy was never written (the first save stopped halfway, so
        // nothing was done).
        (Some(local), None) => {
            let moved: Vec<&Entry> = local.entries.iter().filter(|e| !e.kept_in_source).collect();
            let gone = originals_gone(records.source, &moved).await?;
            if !moved.is_empty() && gone == moved.len() {
                Recorded::FinishedElsewhere(local)
            } else if gone == 0 && local.stage == Stage::Pausing && !rollback {
                Recorded::Nothing
            } else {
                Recorded::Untrusted(format!(
                    "{shown} records an interrupted move (stage: {:?}), but the source cluster holds no copy of it and {gone} of its {} objects have left the source: the move was continued elsewhere and finished or rolled back there, or its copy was deleted; check both clusters, then remove {shown} to start afresh",
                    local.stage,
                    moved.len()
                ))
            }
        }
    })
}

/// Where to look for records of this move written for other clusters at the same addresses.
pub struct Elsewhere<'a> {
    pub id: journal::MoveId<'a>,
    /// The journal file this move uses.
    pub path: &'a Path,
    /// `--journal`: only that file is looked at, and one without identities (an older
    /// version's) is taken as the user's choice.
    pub chosen: bool,
    pub source: &'a Cluster,
    pub copy_namespace: &'a str,
}

/// Sets aside every record of this move that was written for other clusters at the same
/// addresses (a cluster recreated there), or by an older version that recorded no identities:
/// local journals are renamed (see [`journal::set_aside`]), copies in the source removed. Returns
/// what was set aside and why, one line each; no command acts on those records.
pub async fn set_aside_foreign(at: &Elsewhere<'_>) -> Result<Vec<String>> {
    let mut notes = Vec::new();
    let mut files = vec![at.path.to_path_buf()];
    if !at.chosen
        && let Some(dir) = at.path.parent()
        && let Ok(entries) = std::fs::read_dir(dir)
    {
        let prefixes = at.id.file_prefixes();
        files.extend(entries.flatten().map(|e| e.path()).filter(|p| {
            p.as_path() != at.path
                && p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                    prefixes.iter().any(|prefix| n.starts_with(prefix.as_str()))
                        && n.ends_with(".json")
                })
        }));
    }
    for file in files.iter().filter(|f| f.exists()) {
        let Ok(recorded) = Journal::load(file) else {
            continue;
        };
        let unidentified = recorded.source.identity.is_none();
        let Some(reason) = recorded.foreign_to(&at.id) else {
            continue;
        };
        if !unidentified && !at.same_addresses(&recorded) {
            // The same selection between other clusters: a move of its own.
            continue;
        }
        if at.chosen && unidentified {
            continue;
        }
        let aside = journal::set_aside(file)?;
        notes.push(format!(
            "the journal {} was not acted on: {reason}; it was set aside as {}",
            file.display(),
            aside.display()
        ));
    }
    let keys = journal::copy::keys(at.source, at.copy_namespace).await?;
    for key in keys.iter().filter(|k| at.id.same_selection(k)) {
        let Some(recorded) = journal::copy::load(at.source, at.copy_namespace, key).await? else {
            continue;
        };
        let Some(reason) = recorded.foreign_to(&at.id) else {
            continue;
        };
        if recorded.source.identity.is_some() && !at.same_addresses(&recorded) {
            continue;
        }
        journal::copy::remove(at.source, at.copy_namespace, key).await?;
        notes.push(format!(
            "the journal's copy {key} in namespace {} of the source was not acted on: {reason}; it was removed",
            at.copy_namespace
        ));
    }
    Ok(notes)
}

impl Elsewhere<'_> {
    /// Whether `recorded` names the clusters at the addresses this move reaches them through.
    fn same_addresses(&self, recorded: &Journal) -> bool {
        recorded.source.server == self.id.source && recorded.target.server == self.id.target
    }
}

/// How many of `entries` no longer exist in the source with their recorded UID.
pub async fn originals_gone(source: &Cluster, entries: &[&Entry]) -> Result<usize> {
    let present: Vec<bool> = stream::iter(entries.iter().map(|entry| async move {
        let found = uid_by_name(source, entry, "source").await?;
        Ok::<_, Error>(found.as_deref() == Some(entry.uid.as_str()))
    }))
    .buffered(DEFAULT_CONCURRENCY)
    .try_collect()
    .await?;
    Ok(present.iter().filter(|p| !**p).count())
}

/// The UID of the object that now has a journal entry's name in `cluster` (the `source` or
/// `target`, for the message); `None` when there is none.
async fn uid_by_name(cluster: &Cluster, entry: &Entry, which: &str) -> Result<Option<String>> {
    Ok(object_by_name(cluster, entry, which)
        .await?
        .and_then(|o| o.metadata.uid))
}

/// The object that now has a journal entry's name in `cluster`, if any.
async fn object_by_name(
    cluster: &Cluster,
    entry: &Entry,
    which: &str,
) -> Result<Option<kube::api::DynamicObject>> {
    api(cluster, &entry_resource(entry), entry.namespace())
        .get_opt(&entry.object.name)
        .await
        .map_err(|e| {
            cluster.api_error(
                e,
                &format!("reading {} in the {which}", entry.object.kubectl_name()),
            )
        })
}

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

/// The kubectl-capi moves that paused Clusters of the snapshot and did not finish, from their
/// journal copies (in the Clusters' namespaces and `default`), with the commands that finish
/// and undo them — repeating the user's connection flags, so that they work when pasted.
pub async fn unfinished_moves(
    cluster: &Cluster,
    snapshot: &Snapshot,
    flags: &str,
) -> Result<Vec<UnfinishedMove>> {
    let paused: Vec<ClusterView> = snapshot
        .clusters()
        .iter()
        .map(|c| ClusterView::read(c))
        .filter(ClusterView::is_paused)
        .collect();
    if paused.is_empty() {
        return Ok(Vec::new());
    }
    let mut namespaces: BTreeSet<String> = paused
        .iter()
        .map(|c| c.reference.namespace.clone())
        .collect();
    namespaces.insert("default".into());
    let namespaces: Vec<String> = namespaces.into_iter().collect();
    Ok(
        crate::mover::journal::copy::unfinished(cluster, &namespaces)
            .await?
            .into_iter()
            .map(|journal| {
                let word = crate::settings::shell_word;
                let mut command = String::from("kubectl capi move");
                for name in &journal.clusters {
                    command.push_str(&format!(" {}", word(name)));
                }
                command.push_str(flags);
                match &journal.namespace {
                    Some(namespace) => command.push_str(&format!(" -n {}", word(namespace))),
                    None => command.push_str(" -A"),
                }
                if let Some(selector) = &journal.selector {
                    command.push_str(&format!(" -l {}", word(selector)));
                }
                if let Some(kubeconfig) = &journal.target.kubeconfig {
                    command.push_str(&format!(" --to-kubeconfig {}", word(kubeconfig)));
                }
                if let Some(context) = &journal.target.context {
                    command.push_str(&format!(" --to-context {}", word(context)));
                }
                if let Some(cluster) = &journal.target.cluster {
                    command.push_str(&format!(" --to-cluster {}", word(cluster)));
                }
                UnfinishedMove {
                    clusters: journal
                        .paused
                        .iter()
                        .filter(|r| r.is_core_cluster())
                        .map(|r| (r.namespace.clone(), r.name.clone()))
                        .collect(),
                    resume: format!("{command} --resume"),
                    rollback: format!("{command} --rollback"),
                }
            })
            .collect(),
    )
}
