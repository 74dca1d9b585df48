//! The order of a move's writes, object by object: an object is created once every owner and
//! soft owner it has in the plan is created (its owners' target UIDs are known then), and deleted
//! once every object that it owns in the plan is deleted. No group barrier: each object is ready
//! the moment its last dependency is done. Pure; the create and delete steps drive it.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{Error, Result};
use crate::mover::graph::plan::MovePlan;

/// Which objects are ready, and which wait for how many others.
#[derive(Debug, Default)]
pub struct Schedule {
    /// UID → how many of its dependencies are not done yet.
    waiting: BTreeMap<String, usize>,
    /// UID → the objects that wait for it.
    unblocks: BTreeMap<String, Vec<String>>,
    /// Ready and not yet handed out, in the order given.
    ready: Vec<String>,
}

impl Schedule {
    /// Creates: owners before what they own, in plan order.
    pub fn creates(plan: &MovePlan) -> Schedule {
        Schedule::new(
            plan.groups
                .iter()
                .flatten()
                .map(|uid| (uid.clone(), owners_in_plan(plan, uid))),
        )
    }

    /// Deletes: what is owned before its owners. `objects`: each object to delete with its
    /// owners (owners not among `objects` are not waited for), in the order preferred.
    pub fn deletes(objects: impl IntoIterator<Item = (String, Vec<String>)>) -> Schedule {
        let objects: Vec<(String, Vec<String>)> = objects.into_iter().collect();
        let mut owned: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (uid, owners) in &objects {
            for owner in owners {
                owned.entry(owner.as_str()).or_default().push(uid.clone());
            }
        }
        let dependents: Vec<Vec<String>> = objects
            .iter()
            .map(|(uid, _)| owned.remove(uid.as_str()).unwrap_or_default())
            .collect();
        Schedule::new(objects.into_iter().map(|(uid, _)| uid).zip(dependents))
    }

    /// `objects`: each UID with the UIDs that must be done before it; a dependency that is not
    /// itself among `objects` (or the object itself) is not waited for.
    fn new(objects: impl IntoIterator<Item = (String, Vec<String>)>) -> Schedule {
        let objects: Vec<(String, Vec<String>)> = objects.into_iter().collect();
        let known: BTreeSet<&str> = objects.iter().map(|(uid, _)| uid.as_str()).collect();
        let mut schedule = Schedule::default();
        for (uid, depends_on) in &objects {
            let dependencies: BTreeSet<&str> = depends_on
                .iter()
                .map(String::as_str)
                .filter(|d| *d != uid && known.contains(d))
                .collect();
            for dependency in &dependencies {
                schedule
                    .unblocks
                    .entry(dependency.to_string())
                    .or_default()
                    .push(uid.clone());
            }
            match dependencies.len() {
                0 => schedule.ready.push(uid.clone()),
                n => {
                    schedule.waiting.insert(uid.clone(), n);
                }
            }
        }
        schedule
    }

    /// What is ready now (each UID is handed out once).
    pub fn take_ready(&mut self) -> Vec<String> {
        std::mem::take(&mut self.ready)
    }

    /// `uid` is done: what waited only for it becomes ready.
    pub fn done(&mut self, uid: &str) {
        for next in self.unblocks.remove(uid).unwrap_or_default() {
            if let Some(remaining) = self.waiting.get_mut(&next) {
                *remaining -= 1;
                if *remaining == 0 {
                    self.waiting.remove(&next);
                    self.ready.push(next);
                }
            }
        }
    }

    /// After every ready object is done: only an ownership cycle leaves objects waiting, and
    /// they are never skipped silently.
    pub fn check_finished(&self, doing: &str) -> Result<()> {
        match self.waiting.len() {
            0 => Ok(()),
            n => Err(Error::Api {
                context: doing.to_string(),
                message: format!(
                    "{n} object(s) own each other in a cycle and cannot be written in order; fix their ownerReferences and run the move again"
                ),
            }),
        }
    }
}

/// The owners and soft owners of `uid` that the plan moves too.
pub fn owners_in_plan(plan: &MovePlan, uid: &str) -> Vec<String> {
    let node = plan.node(uid);
    node.owners
        .iter()
        .map(|o| o.uid.as_str())
        .chain(node.soft_owners.iter().map(String::as_str))
        .filter(|owner| *owner != uid && plan.scheduled.contains(*owner))
        .map(str::to_string)
        .collect()
}
