//! Deleting a move's objects — from the source after creating, or from the target in a
//! rollback — each exactly by its UID, journalling every completed delete.

use std::collections::VecDeque;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use kube::core::ApiResource;
use serde_json::json;

use crate::error::{Error, Result};
use crate::kube::Cluster;
use crate::model::ObjectRef;
use crate::mover::report::Skipped;
use crate::names::DELETE_FOR_MOVE_ANNOTATION;

use crate::kube::Stop;
use crate::mover::addressing::{Writes, api, only_uid, params};
use crate::mover::graph::schedule::Schedule;
use crate::mover::journal::{Entry, Journal, JournalFile, entry_resource};
use crate::mover::progress::{Phase, Progress};

/// What deleting one object came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Deletion {
    Deleted,
    /// Nothing had that name any more.
    AlreadyGone,
    /// An object of that name with another UID is there now: someone replaced the one this move
    /// meant. It is left alone.
    Replaced {
        found_uid: String,
    },
}

/// The object that replaced the one `uid` named, left alone.
fn replaced(object: &ObjectRef, uid: &str, found_uid: &str, which: &str) -> Skipped {
    Skipped {
        object: object.clone(),
        reason: format!(
            "not deleted: the {which} holds another object of that name (UID {found_uid}, not {uid}); left as is"
        ),
    }
}

/// Deletes exactly the object with `uid` (every write carries it as a precondition) in two
/// writes: one patch that marks it `delete-for-move` and drops its finalizers (its Cluster is
/// paused, so no controller acts on either), then the DELETE, which removes it at once.
/// clusterctl strips finalizers after the DELETE instead; the end state is the same, without the
/// object lingering as Terminating in between. Should something re-add a finalizer before the
/// DELETE, the answer still carries the object and the finalizers are stripped again (a
/// finalizer cannot be added once deletion started). A failed precondition is never repeated:
/// the object is read again, and one with another UID is reported, not touched.
pub async fn delete_one(
    cluster: &Cluster,
    resource: &ApiResource,
    reference: &ObjectRef,
    uid: &str,
) -> Result<Deletion> {
    let writes = Writes::new(cluster, resource, &reference.namespace);
    let named = reference.kubectl_name();
    let not_found = |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 404);
    // A real server answers a patch whose UID differs with 422 (immutable field), a DELETE with
    // 409; either way the object is read again.
    let precondition_failed =
        |e: &kube::Error| matches!(e, kube::Error::Api(s) if s.code == 409 || s.code == 422);
    let mut step = DeleteStep::Mark;
    let mut conflicts = 0;
    loop {
        let failure = match delete_step(&writes, &reference.name, uid, step).await {
            Ok(Some(next)) => {
                step = next;
                continue;
            }
            Ok(None) => return Ok(Deletion::Deleted),
            Err(e) if not_found(&e) => return Ok(Deletion::AlreadyGone),
            Err(e) if precondition_failed(&e) => e,
            Err(e) => {
                return Err(cluster.api_error(e, &format!("{} {named}", step.describe())));
            }
        };
        let current = api(cluster, resource, &reference.namespace)
            .get_opt(&reference.name)
            .await
            .map_err(|e| cluster.api_error(e, &format!("reading {named}")))?;
        match current.and_then(|o| o.metadata.uid) {
            None => return Ok(Deletion::AlreadyGone),
            Some(found_uid) if found_uid != uid => return Ok(Deletion::Replaced { found_uid }),
            // The same object: the conflict was passing (a concurrent writer). The same step
            // again, a few times.
            Some(_) if conflicts < 3 => conflicts += 1,
            Some(_) => {
                return Err(cluster.api_error(failure, &format!("{} {named}", step.describe())));
            }
        }
    }
}

/// The writes of [`delete_one`], in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::mover) enum DeleteStep {
    /// Mark `delete-for-move` and drop the finalizers.
    Mark,
    Delete,
    /// Drop finalizers re-added before the DELETE.
    Strip,
}

impl DeleteStep {
    fn describe(self) -> &'static str {
        match self {
            DeleteStep::Mark => "marking for move",
            DeleteStep::Delete => "deleting",
            DeleteStep::Strip => "removing finalizers of",
        }
    }
}

/// One write of [`delete_one`], each conditional on `uid`; returns the step that follows, if any.
pub(in crate::mover) async fn delete_step(
    writes: &Writes,
    name: &str,
    uid: &str,
    step: DeleteStep,
) -> std::result::Result<Option<DeleteStep>, kube::Error> {
    match step {
        DeleteStep::Mark => {
            let mark = json!({"metadata": {"uid": uid, "finalizers": null,
                "annotations": {DELETE_FOR_MOVE_ANNOTATION: ""}}});
            writes.merge_patch(name, &mark, &params(false)).await?;
            Ok(Some(DeleteStep::Delete))
        }
        DeleteStep::Delete => {
            // The object itself in the answer means it is still there (Terminating).
            let lingering = writes
                .delete(name, &only_uid(uid))
                .await?
                .metadata
                .finalizers
                .is_some_and(|f| !f.is_empty());
            Ok(lingering.then_some(DeleteStep::Strip))
        }
        DeleteStep::Strip => {
            let strip = json!({"metadata": {"uid": uid, "finalizers": null}});
            writes.merge_patch(name, &strip, &params(false)).await?;
            Ok(None)
        }
    }
}

/// What [`delete_entries`] did.
#[derive(Default)]
pub struct Deleted {
    pub count: usize,
    pub skipped: Vec<Skipped>,
}

/// Deletes from `cluster` (the `which` of the move) the journal entries that `pending` gives a
/// UID for — exactly that object, see [`delete_one`] — each once every entry it owns is deleted
/// (see [`Schedule::deletes`]), with at most `--concurrency` writes in flight. `record` marks each
/// done entry. The journal is saved alongside the deletes about once per plan group's worth of
/// them, and at the end, also when one failed: a delete done but not yet saved is found gone by
/// a rerun (UID-preconditioned), never repeated on another object.
///
/// `copies_in`: deleting originals from the source, the target that holds their copies. Before
/// the first delete of each plan group, the copies of that group's objects are checked there
/// (one LIST per kind and namespace): each must exist with the UID its create answered with.
/// Even a command that does not take the lease (an older version's rollback) then cannot make
/// both copies vanish.
pub(in crate::mover) async fn delete_entries(
    cluster: &Cluster,
    journal: &mut JournalFile,
    pending: impl Fn(&Entry) -> Option<String>,
    record: impl Fn(&mut Entry),
    (which, copies_in): (&str, Option<&Cluster>),
    (concurrency, stop): (usize, &Stop),
    progress: &dyn Progress,
) -> Result<Deleted> {
    let concurrency = concurrency.max(1);
    let mut deleted = Deleted::default();
    let (batches, total, save_every) = batches_to_delete(&journal.journal, &pending, concurrency);
    progress.begin(Phase::Delete, total);
    let mut gate = CopiesGate {
        target: copies_in,
        checked: std::collections::BTreeSet::new(),
        checking: None,
        waiting: Vec::new(),
    };
    for batch in batches {
        let mut deletes = Deletes::of(batch);
        let mut in_flight = FuturesUnordered::new();
        let mut answers = Vec::new();
        loop {
            for answer in answers.drain(..) {
                deletes.take(answer, journal, &record, which, &mut deleted);
            }
            if deletes.failure.is_none() && deletes.unsaved >= save_every {
                deletes.unsaved = 0;
                if let Err(e) = journal
                    .save_alongside(concurrency, &mut in_flight, &mut answers)
                    .await
                {
                    deletes.failure.get_or_insert(e);
                }
                continue;
            }
            while deletes.failure.is_none() && in_flight.len() < concurrency {
                let Some((entry, meant)) = deletes.next(&journal.journal, &pending, &mut gate)
                else {
                    break;
                };
                in_flight.push(delete_entry(cluster, entry, meant, stop, progress));
            }
            // Answers are taken in at the top of the loop, so none wait here: nothing in flight
            // and no check under way means nothing left that can start.
            tokio::select! {
                Some(answer) = in_flight.next(), if !in_flight.is_empty() => answers.push(answer),
                released = gate.checked(), if gate.under_way() => match released {
                    // Back in front, in the order they were taken.
                    Ok(uids) => uids.into_iter().rev().for_each(|uid| deletes.queue.push_front(uid)),
                    Err(e) => {
                        deletes.failure.get_or_insert(e);
                    }
                },
                else => break,
            }
        }
        journal.save().await?;
        if let Some(e) = deletes.failure {
            return Err(e);
        }
        deletes
            .schedule
            .check_finished(&format!("deleting from the {which}"))?;
    }
    progress.end(Phase::Delete);
    Ok(deleted)
}

/// One batch's deletes while they run: what is ready, how many are done but not saved yet, and
/// the first failure.
struct Deletes {
    schedule: Schedule,
    queue: VecDeque<String>,
    unsaved: usize,
    failure: Option<Error>,
}

impl Deletes {
    fn of(batch: Vec<(usize, String, Vec<String>)>) -> Deletes {
        let mut schedule =
            Schedule::deletes(batch.into_iter().map(|(_, uid, owners)| (uid, owners)));
        Deletes {
            queue: schedule.take_ready().into(),
            schedule,
            unsaved: 0,
            failure: None,
        }
    }

    /// The next queued entry still pending (with the UID to delete) whose copies are checked.
    fn next(
        &mut self,
        journal: &Journal,
        pending: &impl Fn(&Entry) -> Option<String>,
        gate: &mut CopiesGate,
    ) -> Option<(Entry, String)> {
        while let Some(uid) = self.queue.pop_front() {
            // Not recorded yet, so still pending: the UID to delete is there.
            let Some((entry, meant)) = journal
                .entry(&uid)
                .and_then(|e| Some((e.clone(), pending(e)?)))
            else {
                continue;
            };
            if gate.admits(journal, &entry, pending) {
                return Some((entry, meant));
            }
        }
        None
    }

    /// Takes in one delete's answer: counted (or skipped, when another object had taken the
    /// name), recorded, and what it unblocks queued; the first failure is kept.
    fn take(
        &mut self,
        answer: Result<(Entry, String, Deletion)>,
        journal: &mut JournalFile,
        record: &impl Fn(&mut Entry),
        which: &str,
        deleted: &mut Deleted,
    ) {
        let (entry, meant, outcome) = match answer {
            Ok(answer) => answer,
            Err(e) => {
                self.failure.get_or_insert(e);
                return;
            }
        };
        if let Deletion::Replaced { found_uid } = outcome {
            let skipped = replaced(&entry.object, &meant, &found_uid, which);
            deleted.skipped.push(skipped);
        } else {
            deleted.count += 1;
        }
        // Replaced is recorded too: the object this move meant is gone, and a rerun must not try
        // the one that took its name.
        if let Some(entry) = journal.journal.entry_mut(&entry.uid) {
            record(entry);
        }
        self.unsaved += 1;
        self.schedule.done(&entry.uid);
        self.queue.extend(self.schedule.take_ready());
    }
}

/// Deletes the object of one journal entry (the UID `meant`), unless the move was stopped.
async fn delete_entry(
    cluster: &Cluster,
    entry: Entry,
    meant: String,
    stop: &Stop,
    progress: &dyn Progress,
) -> Result<(Entry, String, Deletion)> {
    stop.check()?;
    let reference = ObjectRef {
        namespace: entry.namespace().to_string(),
        ..entry.object.clone()
    };
    let outcome = delete_one(cluster, &entry_resource(&entry), &reference, &meant).await?;
    progress.done(Phase::Delete, &entry.object);
    Ok((entry, meant, outcome))
}

/// Deletes to do together: (group, source UID, owners) each.
type Batches = Vec<Vec<(usize, String, Vec<String>)>>;

/// What is left to delete — descending groups: leaves first — in batches (one, or per group for
/// a journal from before entries carried their owners), how many in all, and how many deletes
/// between two saves of the journal (about a plan group's worth).
fn batches_to_delete(
    journal: &crate::mover::journal::Journal,
    pending: &impl Fn(&Entry) -> Option<String>,
    concurrency: usize,
) -> (Batches, usize, usize) {
    let mut work: Vec<(usize, String, Vec<String>)> = journal
        .entries
        .iter()
        .filter(|e| pending(e).is_some())
        .map(|e| (e.group, e.uid.clone(), e.owners.clone()))
        .collect();
    work.sort_by_key(|w| std::cmp::Reverse(w.0));
    let groups = work
        .iter()
        .map(|w| w.0)
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let total = work.len();
    let save_every = (total / groups.max(1)).max(concurrency);
    let batches = if journal.owners_recorded {
        vec![work]
    } else {
        work.chunk_by(|a, b| a.0 == b.0)
            .map(<[_]>::to_vec)
            .collect()
    };
    (batches, total, save_every)
}

/// Deletes of a plan group's originals wait until the copies of that group are found in the
/// target (see [`copies_present`]); deletes of groups already checked go on meanwhile.
struct CopiesGate<'a> {
    /// `None`: deleting from the target (a rollback), where nothing is checked.
    target: Option<&'a Cluster>,
    checked: std::collections::BTreeSet<usize>,
    /// The group being checked, and its check.
    checking: Option<(usize, CopiesCheck<'a>)>,
    /// Deletes that wait for a check.
    waiting: Vec<String>,
}

impl<'a> CopiesGate<'a> {
    /// Whether `entry` may be deleted now; if not, it waits, and its group's check starts
    /// unless another is under way.
    fn admits(
        &mut self,
        journal: &Journal,
        entry: &Entry,
        pending: &impl Fn(&Entry) -> Option<String>,
    ) -> bool {
        let Some(target) = self.target else {
            return true;
        };
        if self.checked.contains(&entry.group) {
            return true;
        }
        if self.checking.is_none() {
            let copies = copies_of_group(journal, entry.group, pending);
            self.checking = Some((entry.group, Box::pin(copies_present(target, copies))));
        }
        self.waiting.push(entry.uid.clone());
        false
    }

    fn under_way(&self) -> bool {
        self.checking.is_some()
    }

    /// The check under way, once done: the deletes that waited for it. Dropped before it is
    /// done (another answer came first), it goes on when called again.
    async fn checked(&mut self) -> Result<Vec<String>> {
        let (group, check) = self.checking.as_mut().expect("a check is under way");
        let group = *group;
        let result = check.await;
        self.checking = None;
        result?;
        self.checked.insert(group);
        Ok(std::mem::take(&mut self.waiting))
    }
}

/// A check of copies under way (see [`copies_present`]).
type CopiesCheck<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<()>> + Send + 'a>>;

/// Copies to look for, per kind and namespace: each one's kind and place, name, and the UID its
/// create answered with (none: an object updated with `--overwrite-existing`).
type Copies = Vec<(ApiResource, String, Vec<(String, String, Option<String>)>)>;

/// The copies in the target of the originals of plan group `group` still about to be deleted
/// (`pending`), by kind and namespace.
fn copies_of_group(
    journal: &crate::mover::journal::Journal,
    group: usize,
    pending: &impl Fn(&Entry) -> Option<String>,
) -> Copies {
    let mut lists: std::collections::BTreeMap<(String, String, String), Vec<&Entry>> =
        std::collections::BTreeMap::new();
    for entry in journal
        .entries
        .iter()
        .filter(|e| e.group == group && pending(e).is_some())
    {
        lists
            .entry((
                entry.object.api_version.clone(),
                entry.resource.clone(),
                entry.namespace().to_string(),
            ))
            .or_default()
            .push(entry);
    }
    lists
        .into_iter()
        .map(|((_, _, namespace), entries)| {
            let copies = entries
                .iter()
                .map(|e| {
                    let place = e.object.kind_and_place();
                    (place, e.object.name.clone(), e.target_uid.clone())
                })
                .collect();
            (entry_resource(entries[0]), namespace, copies)
        })
        .collect()
}

/// Checks that the `copies` (of one plan group's originals) are in `target` with the UIDs the
/// journal recorded (by name where it recorded none). One LIST per kind and namespace.
async fn copies_present(target: &Cluster, copies: Copies) -> Result<()> {
    let mut gone = Vec::new();
    for (resource, namespace, copies) in copies {
        let uids =
            crate::mover::addressing::uids_by_name(target, &resource, &namespace, "target").await?;
        for (place, name, recorded) in copies {
            let present = match (uids.get(&name), &recorded) {
                (Some(found), Some(recorded)) => found == recorded,
                (found, None) => found.is_some(),
                (None, Some(_)) => false,
            };
            if !present {
                gone.push(place);
            }
        }
    }
    if gone.is_empty() {
        return Ok(());
    }
    Err(Error::Api {
        context: "checking the copies in the target before deleting their originals".into(),
        message: format!(
            "{} {} no longer in the target as this move created {}; another command removed {} (a rollback by a version of kubectl-capi that takes no lease?), so their originals stay in the source and nothing more is deleted there — check both clusters before going on",
            gone.join(", "),
            if gone.len() == 1 { "is" } else { "are" },
            if gone.len() == 1 { "it" } else { "them" },
            if gone.len() == 1 { "it" } else { "them" },
        ),
    })
}
