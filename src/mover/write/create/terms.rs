//! How the creates are made (`Creating`) and what they give back: one `CreateAnswer` each,
//! `Created` in all.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::one::Outcome;
use crate::error::Result;
use crate::kube::Stop;
use crate::model::ObjectRef;
use crate::mover::graph::discover::MoveType;
use crate::mover::write::mark::Marked;

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
#[derive(Default)]
pub struct Created {
    pub uids: HashMap<String, String>,
    pub per_kind: BTreeMap<String, usize>,
    pub frozen: Vec<ObjectRef>,
}
