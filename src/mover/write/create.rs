//! Creating a move's objects in the target, each once its owners exist there: the body (owners rebuilt with the
//! target's UIDs), what to do with an object already there, managedFields and status restored.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::error::{Error, Result};
use crate::kube::Cluster;
use crate::model::ObjectRef;
use crate::names::MOVED_BY_ANNOTATION;

use crate::mover::write::mark::finish_copies;
pub use crate::mover::write::mark::{Marked, Proof, appeared};

use crate::kube::Connected;
use crate::kube::Stop;
use crate::kube::retry::retry_conflicts;
use crate::mover::addressing::{Writes, api, kind_key, params, type_of};
use crate::mover::graph::discover::{ManagedFields, MoveType};
use crate::mover::graph::plan::MovePlan;
use crate::mover::graph::schedule::Schedule;
use crate::mover::journal::JournalFile;
use crate::mover::progress::{Phase, Progress};
use crate::mover::write::namespaces::ensure_namespace;
use crate::snapshot::Contents;

/// The body to create in the target: server-owned fields cleared, owners rebuilt with the
/// target's UIDs, managedFields returned separately (a create ignores them; a patch restores them).
pub fn target_body(
    plan: &MovePlan,
    (object, content): (&DynamicObject, Option<&RawValue>),
    target_uids: &HashMap<String, String>,
) -> (Value, Option<Value>) {
    let mut body = match content {
        None => serde_json::to_value(object).expect("object serialises"),
        // Read as text: its content, with the type and metadata read apart.
        Some(content) => {
            let mut body: Value =
                serde_json::from_str(content.get()).expect("a listed object's content is JSON");
            if let Some(types) = &object.types {
                body["apiVersion"] = json!(types.api_version);
                body["kind"] = json!(types.kind);
            }
            body["metadata"] = serde_json::to_value(&object.metadata).expect("metadata serialises");
            body
        }
    };
    let meta = body["metadata"].as_object_mut().expect("metadata");
    let managed = meta.remove("managedFields");
    for key in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "selfLink",
    ] {
        meta.remove(key);
    }
    if meta.get("name").is_some() {
        meta.remove("generateName");
    }
    // The source's references, each keeping its own fields (controller, blockOwnerDeletion,
    // even when explicitly false) with the owner's UID in the target. A reference to a real owner
    // that is not part of this move (a Cluster that stays, in a named move) is dropped: it would
    // dangle in the target, and moving that owner later adds it back by update.
    let refs: Vec<Value> = object
        .metadata
        .owner_references
        .iter()
        .flatten()
        .filter_map(|source_ref| {
            let owner = plan.graph.nodes.get(&source_ref.uid)?;
            let new_uid = match target_uids.get(&source_ref.uid) {
                Some(uid) => uid.clone(),
                None if owner.is_virtual() || plan.scheduled.contains(&source_ref.uid) => {
                    source_ref.uid.clone()
                }
                None => return None,
            };
            let mut r = serde_json::to_value(source_ref).expect("owner reference serialises");
            r["uid"] = json!(new_uid);
            Some(r)
        })
        .collect();
    if refs.is_empty() {
        meta.remove("ownerReferences");
    } else {
        meta.insert("ownerReferences".into(), Value::Array(refs));
    }
    (
        body,
        managed.filter(|m| m.as_array().is_some_and(|a| !a.is_empty())),
    )
}

/// What a create does when the target already has an object of that name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenExisting {
    /// Keep it as is and use its UID: a global object (shared by design), a restored one.
    Reuse,
    /// It is this move's own copy (made by an earlier attempt, or by this create whose answer
    /// was lost): use its UID and finish it (managedFields).
    Adopt,
    /// `--overwrite-existing`: clusterctl's update (the target's UID and resourceVersion, then a
    /// full replace).
    Overwrite,
    /// It was there before this move: never touch it.
    Refuse,
}

/// clusterctl's update of an object already in the target: its UID and resourceVersion, then a
/// full replace; a conflict (a controller wrote meanwhile) reads it again, a few times.
pub(in crate::mover) async fn overwrite(
    target: &Cluster,
    api: &Api<DynamicObject>,
    object: DynamicObject,
    mut existing: DynamicObject,
    reference: &ObjectRef,
) -> Result<()> {
    let write = PostParams {
        field_manager: Some(crate::names::FIELD_MANAGER.into()),
        ..Default::default()
    };
    let failed = |e| {
        target.api_error(
            e,
            &format!("updating {} in the target", reference.kubectl_name()),
        )
    };
    retry_conflicts(async |attempt| {
        if attempt > 0 {
            existing = api.get(&reference.name).await?;
        }
        let mut replacement = object.clone();
        replacement.metadata.uid = existing.metadata.uid.clone();
        replacement.metadata.resource_version = existing.metadata.resource_version.clone();
        api.replace(&reference.name, &write, &replacement).await
    })
    .await
    .map(|_| ())
    .map_err(failed)
}

/// The refusal for an object that is in the target but not because of this move.
pub fn already_exists(reference: &ObjectRef) -> String {
    format!(
        "{} already exists in the target and was not created by this move; delete it there or pass --overwrite-existing",
        reference.kind_and_place()
    )
}

/// How one create came out: the copy's UID, whether this move made it, whether it carries the
/// move's mark (to be removed once its UID is recorded).
pub(in crate::mover) struct Outcome {
    pub uid: String,
    pub made: bool,
    pub marked: bool,
}

/// Creates one object in the target with this move's mark (an existing one as `when_existing`
/// says: one of that name is taken for this move's own only with proof).
pub(in crate::mover) async fn create_one(
    target: &Cluster,
    t: &MoveType,
    when_existing: WhenExisting,
    mut body: Value,
    proof: &Proof,
    reference: &ObjectRef,
) -> Result<Outcome> {
    let name = &reference.name;
    let namespace = if t.info.namespaced {
        reference.namespace.as_str()
    } else {
        ""
    };
    if !proof.mark.is_empty() {
        let meta = &mut body["metadata"];
        if !meta["annotations"].is_object() {
            meta["annotations"] = json!({});
        }
        meta["annotations"][MOVED_BY_ANNOTATION] = json!(proof.mark);
    }
    let writes = Writes::new(target, &t.resource, namespace);
    let write = PostParams {
        field_manager: Some(crate::names::FIELD_MANAGER.into()),
        ..Default::default()
    };
    match writes.create(&body, &write).await {
        Ok(created) => Ok(Outcome {
            uid: created.metadata.uid.unwrap_or_default(),
            made: true,
            marked: !proof.mark.is_empty(),
        }),
        Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => {
            let target_api = api(target, &t.resource, namespace);
            let existing = target_api.get(name).await.map_err(|e| {
                target.api_error(
                    e,
                    &format!("reading {} in the target", reference.kubectl_name()),
                )
            })?;
            let uid = existing.metadata.uid.clone().unwrap_or_default();
            match when_existing {
                WhenExisting::Reuse => Ok(Outcome {
                    uid,
                    made: false,
                    marked: false,
                }),
                WhenExisting::Refuse => Err(Error::Refused(vec![already_exists(reference)])),
                WhenExisting::Adopt => match proof.proves(&existing, &body) {
                    (true, marked) => Ok(Outcome {
                        uid,
                        made: true,
                        marked,
                    }),
                    (false, _) => Err(Error::Refused(vec![appeared(reference)])),
                },
                WhenExisting::Overwrite => {
                    let object: DynamicObject = serde_json::from_value(body).expect("valid body");
                    overwrite(target, &target_api, object, existing, reference).await?;
                    Ok(Outcome {
                        uid,
                        made: false,
                        marked: !proof.mark.is_empty(),
                    })
                }
            }
        }
        Err(e) => Err(target.api_error(
            e,
            &format!("creating {} in the target", reference.kubectl_name()),
        )),
    }
}

/// The objects a move creates, as read from the source after pausing it: without managedFields,
/// which are kept apart as the server's JSON text (by UID) and written back after each create;
/// the content of those read as text apart too (then the object holds the metadata).
#[derive(Default)]
pub struct Fresh {
    pub objects: HashMap<String, Arc<DynamicObject>>,
    pub managed_fields: ManagedFields,
    pub contents: Contents,
}

impl Fresh {
    /// What was read once paused, by UID, of the objects `keep` holds.
    pub fn of(read: crate::mover::graph::discover::Read, keep: impl Fn(&str) -> bool) -> Fresh {
        let objects: HashMap<String, Arc<DynamicObject>> = read
            .objects
            .into_iter()
            .map(|(o, _)| (o.metadata.uid.clone().unwrap_or_default(), o))
            .filter(|(uid, _)| keep(uid))
            .collect();
        let (mut managed_fields, mut contents) = (read.managed_fields, read.contents);
        managed_fields.retain(|uid, _| objects.contains_key(uid));
        contents.retain(|uid, _| objects.contains_key(uid));
        Fresh {
            objects,
            managed_fields,
            contents,
        }
    }

    /// The object with this UID as read (its metadata and, where read as text, its content).
    pub fn get(&self, uid: &str) -> Option<(&Arc<DynamicObject>, Option<&RawValue>)> {
        let object = self.objects.get(uid)?;
        Some((object, self.contents.get(uid).map(|c| &**c)))
    }

    /// [`get`](Self::get), taking the object out: what was sent need not be held.
    fn take(&mut self, uid: &str) -> Option<(Arc<DynamicObject>, Option<Box<RawValue>>)> {
        let object = self.objects.remove(uid)?;
        Some((object, self.contents.remove(uid)))
    }
}

/// A create's answer: the source UID, how it came out, its type, and (when it carries the mark)
/// what finishing it needs.
pub(in crate::mover) type CreateAnswer<'a> =
    Result<(String, Outcome, &'a MoveType, Option<Marked<'a>>)>;

/// How objects are created in the target.
#[derive(Debug, Clone)]
pub struct Creating {
    /// Without a journal (a restore): the objects (source UIDs) the preflight found in the
    /// target.
    pub preexisting: BTreeSet<String>,
    /// `--overwrite-existing`: objects that were in the target before the move are updated.
    pub overwrite_existing: bool,
    pub restore_status: bool,
    /// Creates in flight at once.
    pub concurrency: usize,
    pub stop: Stop,
    /// The mark this move leaves on its copies until their UIDs are recorded (its ID).
    pub mark: String,
}

/// What creating the groups in the target did.
pub struct Created {
    pub uids: HashMap<String, String>,
    pub per_kind: BTreeMap<String, usize>,
    pub frozen: Vec<ObjectRef>,
}

/// Creates every planned object, each as soon as its owners exist in the target (see
/// [`Schedule`]), with at most `concurrency` creates in flight. An object already in the target
/// is this move's own copy (adopted), a global or restored one (reused), or one that was there
/// before the move (updated with `--overwrite-existing`, else refused: the preflight has refused
/// it already, so only an object that appeared since gets here).
///
/// The journal marks objects as sent, and is saved, before their creates go out, so that a create
/// whose answer is lost is still recognised; creates already in flight go on while it is saved.
///
/// Each object read is dropped once its create's body is made: a move holds no more of what it
/// read than what it has still to create (and the managedFields it writes back at the end).
pub async fn create_groups(
    plan: &MovePlan,
    types: &[MoveType],
    target: &Connected,
    mut objects: Fresh,
    how: Creating,
    progress: &dyn Progress,
    mut journal: Option<&mut JournalFile>,
) -> Result<Created> {
    // Borrowed by the creates in flight while objects are taken out of `objects`.
    let managed_fields = std::mem::take(&mut objects.managed_fields);
    let mut created = Created {
        uids: HashMap::new(),
        per_kind: BTreeMap::new(),
        frozen: Vec::new(),
    };
    // Copies that carry the move's mark until [`finish_copies`].
    let mut marked: Vec<Marked> = Vec::new();
    progress.begin(Phase::Create, plan.groups.iter().map(Vec::len).sum());
    make_namespaces(plan, types, target, journal.as_deref_mut()).await?;
    let mut schedule = Schedule::creates(plan);
    // Group 0 is marked as sent before this step (with the stage that starts it).
    let group_of = plan.group_by_uid();
    let mut marked_through = 0usize;
    let mut to_mark: Vec<String> = schedule.take_ready();
    let mut queue: VecDeque<String> = VecDeque::new();
    let mut in_flight = FuturesUnordered::new();
    let mut failure: Option<Error> = None;
    let mut answers: Vec<CreateAnswer> = Vec::new();
    let concurrency = how.concurrency.max(1);
    loop {
        for answer in answers.drain(..) {
            take_answer(
                answer,
                &mut schedule,
                (&mut created, &mut marked),
                journal.as_deref_mut(),
                &mut failure,
                &mut to_mark,
            );
        }
        // What became ready is marked as sent and saved before any of it is sent — a plan group
        // at a time, so that there are no more saves than groups; creates in flight go on
        // meanwhile, and their answers are taken in after the save.
        if failure.is_none() && !to_mark.is_empty() {
            let batch = std::mem::take(&mut to_mark);
            let needed = batch
                .iter()
                .filter_map(|uid| group_of.get(uid.as_str()))
                .max();
            queue.extend(batch);
            if let (Some(file), Some(&needed)) = (journal.as_deref_mut(), needed)
                && needed > marked_through
            {
                for group in marked_through + 1..=needed {
                    file.journal.sending_group(group);
                }
                marked_through = needed;
                // The save takes a free slot of --concurrency: at most that many writes in all.
                let saved = file
                    .save_alongside(concurrency, &mut in_flight, &mut answers)
                    .await;
                if let Err(e) = saved {
                    failure.get_or_insert(e);
                }
                // The answers that came in meanwhile first.
                continue;
            }
        }
        while failure.is_none() && in_flight.len() < concurrency {
            let Some(uid) = queue.pop_front() else { break };
            let Some(job) = job(
                plan,
                types,
                (&mut objects, &managed_fields),
                &how,
                journal.as_deref(),
                &created,
                &uid,
            ) else {
                // Nothing to create for it (a virtual node): it is done as it is.
                schedule.done(&uid);
                to_mark.extend(schedule.take_ready());
                continue;
            };
            if let Some(frozen) = &job.frozen {
                created.frozen.push(frozen.clone());
            }
            in_flight.push(send_job(job, target, &how, progress));
        }
        if failure.is_none() && !to_mark.is_empty() && in_flight.len() < concurrency {
            continue;
        }
        match in_flight.next().await {
            Some(answer) => answers.push(answer),
            None if failure.is_some() || (queue.is_empty() && to_mark.is_empty()) => break,
            None => {}
        }
    }
    // Every started create finished and is journalled, even after a failure or a stop.
    if let Some(file) = journal {
        file.save().await?;
    }
    if let Some(e) = failure {
        return Err(e);
    }
    schedule.check_finished("creating in the target")?;
    // Only now that the journal holds every copy's UID does the mark go.
    finish_copies(
        &target.cluster,
        &marked,
        &managed_fields,
        (how.concurrency, &how.stop),
    )
    .await?;
    progress.end(Phase::Create);
    Ok(created)
}

/// The namespaces the objects go into, made in the target where missing, and journalled: a
/// rollback removes them again.
async fn make_namespaces(
    plan: &MovePlan,
    types: &[MoveType],
    target: &Connected,
    journal: Option<&mut JournalFile>,
) -> Result<()> {
    let made = ensure_namespaces(plan, types, target).await?;
    if let Some(journal) = journal
        && !made.is_empty()
    {
        let records = made
            .into_iter()
            .map(|m| crate::mover::journal::MadeNamespaceRecord {
                name: m.name,
                uid: m.uid,
            });
        journal.journal.made_namespaces.extend(records);
        journal.save().await?;
    }
    Ok(())
}

/// One create to send: its body (its owners' target UIDs filled in), and how to treat an
/// object of its name already there.
struct Job<'a> {
    uid: String,
    reference: &'a ObjectRef,
    t: &'a MoveType,
    body: Value,
    /// The source's managedFields as text: borrowed from the re-read, or made from a body's own.
    managed: Option<Cow<'a, RawValue>>,
    status: Option<Value>,
    namespace: String,
    when_existing: WhenExisting,
    frozen: Option<ObjectRef>,
    proof: Proof,
}

fn job<'a>(
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
async fn send_job<'a>(
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

/// Takes in one create's answer: records it, and what it unblocks becomes ready; the first
/// failure is kept (later ones only reported by their absence).
fn take_answer<'a>(
    answer: CreateAnswer<'a>,
    schedule: &mut Schedule,
    (created, marked_copies): (&mut Created, &mut Vec<Marked<'a>>),
    journal: Option<&mut JournalFile>,
    failure: &mut Option<Error>,
    ready: &mut Vec<String>,
) {
    let (uid, outcome, t, marked) = match answer {
        Ok(answer) => answer,
        Err(e) => {
            failure.get_or_insert(e);
            return;
        }
    };
    let (new_uid, made) = (outcome.uid, outcome.made);
    if let Some(entry) = journal.and_then(|j| j.journal.entry_mut(&uid)) {
        entry.target_uid = Some(new_uid.clone());
        // Made by this move, now or by an earlier attempt of it.
        entry.created |= made;
    }
    marked_copies.extend(marked);
    created.uids.insert(uid.clone(), new_uid);
    *created
        .per_kind
        .entry(kind_key(&t.info.kind, &t.info.group))
        .or_default() += 1;
    schedule.done(&uid);
    ready.extend(schedule.take_ready());
}

/// The namespaces of the planned objects, made in the target first (each once).
async fn ensure_namespaces(
    plan: &MovePlan,
    types: &[MoveType],
    target: &Connected,
) -> Result<Vec<crate::mover::write::namespaces::MadeNamespace>> {
    let namespaces: BTreeSet<&str> = plan
        .groups
        .iter()
        .flatten()
        .map(|uid| &plan.node(uid).reference)
        .filter(|r| type_of(types, r).is_some_and(|t| t.info.namespaced))
        .map(|r| r.namespace.as_str())
        .filter(|ns| !ns.is_empty())
        .collect();
    let mut made = Vec::new();
    for namespace in namespaces {
        made.extend(ensure_namespace(&target.cluster, namespace).await?);
    }
    Ok(made)
}

/// `--restore-status`: replays an object's `.status` through the status subresource.
pub(in crate::mover) async fn restore_status(
    target: &Cluster,
    t: &MoveType,
    reference: &ObjectRef,
    namespace: &str,
    status: Value,
) -> Result<()> {
    Writes::new(target, &t.resource, namespace)
        .merge_patch_status(&reference.name, &json!({"status": status}), &params(false))
        .await
        .map_err(|e| {
            target.api_error(
                e,
                &format!("restoring the status of {}", reference.kubectl_name()),
            )
        })?;
    Ok(())
}
