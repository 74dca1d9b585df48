//! Creating every planned object in the target, each once its owners exist there, with the
//! journal saved before each plan group's creates go out.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ops::RangeInclusive;

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use super::fresh::Fresh;
use super::job::{Job, job, send_job};
use super::terms::{CreateAnswer, Created, Creating};
use crate::error::{Error, Result};
use crate::kube::Connected;
use crate::mover::addressing::{kind_key, type_of};
use crate::mover::graph::discover::{ManagedFields, MoveType};
use crate::mover::graph::plan::MovePlan;
use crate::mover::graph::schedule::Schedule;
use crate::mover::journal::JournalFile;
use crate::mover::progress::{Phase, Progress};
use crate::mover::write::mark::{Marked, finish_copies};
use crate::mover::write::namespaces::{MadeNamespace, ensure_namespace};

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
    progress.begin(Phase::Create, plan.groups.iter().map(Vec::len).sum());
    make_namespaces(plan, types, target, journal.as_deref_mut()).await?;
    let mut creates = Creates::new(plan, types, &how, &managed_fields, objects);
    let mut in_flight = FuturesUnordered::new();
    let mut answers: Vec<CreateAnswer> = Vec::new();
    let concurrency = how.concurrency.max(1);
    loop {
        for answer in answers.drain(..) {
            creates.take_answer(answer, journal.as_deref_mut());
        }
        // What became ready is marked as sent and saved before any of it is sent — a plan group
        // at a time, so that there are no more saves than groups; creates in flight go on
        // meanwhile, and their answers are taken in after the save.
        if creates.failure.is_none() && !creates.to_mark.is_empty() {
            let groups = creates.queue_ready();
            if let (Some(file), Some(groups)) = (journal.as_deref_mut(), groups) {
                for group in groups {
                    file.journal.sending_group(group);
                }
                // The save takes a free slot of --concurrency: at most that many writes in all.
                let saved = file
                    .save_alongside(concurrency, &mut in_flight, &mut answers)
                    .await;
                if let Err(e) = saved {
                    creates.failure.get_or_insert(e);
                }
                // The answers that came in meanwhile first.
                continue;
            }
        }
        while creates.failure.is_none() && in_flight.len() < concurrency {
            let Some(job) = creates.next_job(journal.as_deref()) else {
                break;
            };
            in_flight.push(send_job(job, target, &how, progress));
        }
        if creates.failure.is_none() && !creates.to_mark.is_empty() && in_flight.len() < concurrency
        {
            continue;
        }
        match in_flight.next().await {
            Some(answer) => answers.push(answer),
            None if creates.failure.is_some() || creates.all_sent() => break,
            None => {}
        }
    }
    creates.finish(target, journal, progress).await
}

/// The creates while they run: what is ready, queued and done, and the first failure.
struct Creates<'a> {
    plan: &'a MovePlan,
    types: &'a [MoveType],
    how: &'a Creating,
    managed_fields: &'a ManagedFields,
    /// What was read and is not sent yet.
    objects: Fresh,
    schedule: Schedule,
    group_of: HashMap<&'a str, usize>,
    /// The last plan group the journal marks as sent (group 0 is marked before this step, with
    /// the stage that starts it).
    marked_through: usize,
    /// Ready, not yet marked as sent.
    to_mark: Vec<String>,
    /// Marked as sent, not yet sent.
    queue: VecDeque<String>,
    created: Created,
    /// Copies that carry the move's mark until [`finish_copies`].
    marked: Vec<Marked<'a>>,
    failure: Option<Error>,
}

impl<'a> Creates<'a> {
    fn new(
        plan: &'a MovePlan,
        types: &'a [MoveType],
        how: &'a Creating,
        managed_fields: &'a ManagedFields,
        objects: Fresh,
    ) -> Creates<'a> {
        let mut schedule = Schedule::creates(plan);
        Creates {
            plan,
            types,
            how,
            managed_fields,
            objects,
            to_mark: schedule.take_ready(),
            schedule,
            group_of: plan.group_by_uid(),
            marked_through: 0,
            queue: VecDeque::new(),
            created: Created::default(),
            marked: Vec::new(),
            failure: None,
        }
    }

    /// Whether every object that became ready has been sent.
    fn all_sent(&self) -> bool {
        self.queue.is_empty() && self.to_mark.is_empty()
    }

    /// Queues what became ready; the plan groups it reaches that are not marked as sent yet.
    fn queue_ready(&mut self) -> Option<RangeInclusive<usize>> {
        let batch = std::mem::take(&mut self.to_mark);
        let needed = batch
            .iter()
            .filter_map(|uid| self.group_of.get(uid.as_str()).copied())
            .max();
        self.queue.extend(batch);
        let needed = needed.filter(|needed| *needed > self.marked_through)?;
        let groups = self.marked_through + 1..=needed;
        self.marked_through = needed;
        Some(groups)
    }

    /// The next queued object with something to create (one without, a virtual node, is done as
    /// it is).
    fn next_job(&mut self, journal: Option<&JournalFile>) -> Option<Job<'a>> {
        while let Some(uid) = self.queue.pop_front() {
            let unsent = (&mut self.objects, self.managed_fields);
            let Some(job) = job(
                self.plan,
                self.types,
                unsent,
                self.how,
                journal,
                &self.created,
                &uid,
            ) else {
                self.schedule.done(&uid);
                self.to_mark.extend(self.schedule.take_ready());
                continue;
            };
            if let Some(frozen) = &job.frozen {
                self.created.frozen.push(frozen.clone());
            }
            return Some(job);
        }
        None
    }

    /// Takes in one create's answer: records it, and what it unblocks becomes ready; the first
    /// failure is kept (later ones only reported by their absence).
    fn take_answer(&mut self, answer: CreateAnswer<'a>, journal: Option<&mut JournalFile>) {
        let (uid, outcome, t, marked) = match answer {
            Ok(answer) => answer,
            Err(e) => {
                self.failure.get_or_insert(e);
                return;
            }
        };
        let (new_uid, made) = (outcome.uid, outcome.made);
        if let Some(entry) = journal.and_then(|j| j.journal.entry_mut(&uid)) {
            entry.target_uid = Some(new_uid.clone());
            // Made by this move, now or by an earlier attempt of it.
            entry.created |= made;
        }
        self.marked.extend(marked);
        self.created.uids.insert(uid.clone(), new_uid);
        *self
            .created
            .per_kind
            .entry(kind_key(&t.info.kind, &t.info.group))
            .or_default() += 1;
        self.schedule.done(&uid);
        self.to_mark.extend(self.schedule.take_ready());
    }

    /// Once every started create finished: the journal saved (even after a failure or a stop),
    /// then the marks removed.
    async fn finish(
        self,
        target: &Connected,
        journal: Option<&mut JournalFile>,
        progress: &dyn Progress,
    ) -> Result<Created> {
        if let Some(file) = journal {
            file.save().await?;
        }
        if let Some(e) = self.failure {
            return Err(e);
        }
        self.schedule.check_finished("creating in the target")?;
        // Only now that the journal holds every copy's UID does the mark go.
        let how = self.how;
        finish_copies(
            &target.cluster,
            &self.marked,
            self.managed_fields,
            (how.concurrency, &how.stop),
        )
        .await?;
        progress.end(Phase::Create);
        Ok(self.created)
    }
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

/// The namespaces of the planned objects, made in the target first (each once).
async fn ensure_namespaces(
    plan: &MovePlan,
    types: &[MoveType],
    target: &Connected,
) -> Result<Vec<MadeNamespace>> {
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
