//! How far a move got, reported by the executor; the command decides how it is shown (a bar per
//! phase on a TTY, one line per object with `-v`, nothing otherwise). A trait rather than a
//! callback because phases have totals and objects have names, and writes may run in parallel.

use crate::model::ObjectRef;

/// The phases of a move, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Pause,
    Create,
    Delete,
    Unpause,
}

impl Phase {
    /// The label of the phase's bar.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Pause => "pausing source",
            Phase::Create => "creating in target",
            Phase::Delete => "deleting from source",
            Phase::Unpause => "unpausing target",
        }
    }

    /// The verb of a confirmation line (`cluster.cluster.x-k8s.io/a created`).
    pub fn verb(self) -> &'static str {
        match self {
            Phase::Pause => "paused",
            Phase::Create => "created",
            Phase::Delete => "deleted",
            Phase::Unpause => "unpaused",
        }
    }
}

pub trait Progress: Send + Sync {
    /// A phase starts with `total` objects to handle.
    fn begin(&self, phase: Phase, total: usize);
    /// One object of the phase is done.
    fn done(&self, phase: Phase, object: &ObjectRef);
    /// The phase ended (every object done, or nothing to do).
    fn end(&self, phase: Phase);
    /// A note for the user, shown where it does not break the progress drawn.
    fn note(&self, _text: &str) {}
    /// The move stopped: what was drawn stays as it got.
    fn stopped(&self) {}
}

/// Reports nothing: tests and structured output.
pub struct Silent;

impl Progress for Silent {
    fn begin(&self, _: Phase, _: usize) {}
    fn done(&self, _: Phase, _: &ObjectRef) {}
    fn end(&self, _: Phase) {}
}
