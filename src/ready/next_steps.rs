//! What a readiness check suggests as its next step for one Cluster — the command that waits,
//! freezes or inspects — in the user's own connection flags, so that it works when pasted; and
//! what it suggests instead when the command already waits or the Cluster is mid-move.

use crate::settings::shell_word;

/// What a blocker of a Cluster that an unfinished move paused says instead of waiting or
/// freezing.
const MID_MOVE: &str = "finish or undo the kubectl-capi move that paused its Cluster first (its cluster-paused check says how)";

/// Commands that a blocker's message suggests as its next step, for one Cluster and with the
/// user's connection flags, so that they work when pasted.
pub(super) struct NextSteps {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) flags: String,
    /// The command already waits: a blocker says what it waits for, not how to wait.
    pub(super) waiting: bool,
    /// The Cluster is paused by a kubectl-capi move that did not finish (its original or its
    /// copy): waiting cannot end its blockers and freezing would freeze the move's objects, so
    /// neither is suggested; its paused check says how to finish or undo the move.
    pub(super) mid_move: bool,
}

impl NextSteps {
    /// `` `kubectl capi <verb> <cluster> -n <ns><extra><flags>` ``
    pub(super) fn capi(&self, verb: &str, extra: &str) -> String {
        format!(
            "`kubectl capi {verb} {} -n {}{extra}{}`",
            shell_word(&self.name),
            shell_word(&self.namespace),
            self.flags
        )
    }

    pub(super) fn wait(&self) -> String {
        self.capi("ready", " --wait")
    }

    /// `message`, and the command that waits until it is over unless this one already waits.
    pub(super) fn until_over(&self, message: String) -> String {
        match (self.waiting, self.mid_move) {
            (_, true) => format!("{message}; {MID_MOVE}"),
            (true, false) => message,
            (false, false) => format!("{message}; wait for it with {}", self.wait()),
        }
    }

    /// `message`, and the freeze that stops it, unless the Cluster is mid-move.
    pub(super) fn or_freeze(&self, message: String, how: &str) -> String {
        match self.mid_move {
            true => format!("{message}; {MID_MOVE}"),
            false => format!("{message}; {how} {}", self.pause()),
        }
    }

    pub(super) fn pause(&self) -> String {
        self.capi("pause", "")
    }

    /// `` `kubectl <args> -n <namespace><flags>` `` for an object in `namespace`.
    pub(super) fn kubectl(&self, args: &str, namespace: &str) -> String {
        format!(
            "`kubectl {args} -n {}{}`",
            shell_word(namespace),
            self.flags
        )
    }
}
