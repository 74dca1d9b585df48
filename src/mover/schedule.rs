//! The order of a move's writes, object by object: an object is created once every owner and
//! soft owner it has in the plan is created (its owners' target UIDs are known then), and deleted
//! once every object that it owns in the plan is deleted. No group barrier: each object is ready
//! the moment its last dependency is done. Pure; the create and delete steps drive it.

use std::collections::{BTreeMap, BTreeSet};

use super::plan::MovePlan;

/// Which objects are ready, and which wait for how many others.
#[derive(Debug, Default)]
pub struct Schedule {
    /// UID → how many of its dependencies are not done yet.
    waiting: BTreeMap<String, usize>,
    /// UID → the objects that wait for it.
    unblocks: BTreeMap<String, Vec<String>>,
    /// Ready and not yet handed out, in plan order.
    ready: Vec<String>,
}

impl Schedule {
    /// Creates: owners before what they own.
    pub fn creates(plan: &MovePlan) -> Schedule {
        Schedule::new(plan, |uid| owners_in_plan(plan, uid))
    }

    /// Deletes: what is owned before its owners.
    pub fn deletes(plan: &MovePlan) -> Schedule {
        let mut owned: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for uid in plan.groups.iter().flatten() {
            for owner in owners_in_plan(plan, uid) {
                owned.entry(owner).or_default().push(uid);
            }
        }
        Schedule::new(plan, |uid| owned.get(uid).cloned().unwrap_or_default())
    }

    /// `depends_on(uid)`: the UIDs (in the plan) that must be done before `uid`.
    fn new<'a>(plan: &'a MovePlan, depends_on: impl Fn(&str) -> Vec<&'a str>) -> Schedule {
        let mut schedule = Schedule::default();
        for uid in plan.groups.iter().flatten() {
            let dependencies: BTreeSet<&str> = depends_on(uid).into_iter().collect();
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

    /// Objects still waiting for others (none once everything is done).
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }
}

/// The owners and soft owners of `uid` that the plan moves too.
fn owners_in_plan<'a>(plan: &'a MovePlan, uid: &str) -> Vec<&'a str> {
    let node = plan.node(uid);
    node.owners
        .iter()
        .map(|o| o.uid.as_str())
        .chain(node.soft_owners.iter().map(String::as_str))
        .filter(|owner| *owner != uid && plan.scheduled.contains(*owner))
        .collect()
}
