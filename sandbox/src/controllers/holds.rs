//! Hold mode: provisioning of chosen Machines (or all new ones) stops at a named step until
//! released, so tests on two cores can make "pause while Machine 2 is provisioning" a fact.

use std::collections::BTreeSet;

use parking_lot::Mutex;
use tokio::sync::Notify;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// Before the bootstrap data Secret is created.
    Bootstrap,
    /// Before the cloud machine is created.
    Infrastructure,
    /// Before the Machine gets its nodeRef.
    Node,
}

#[derive(Default)]
pub struct Holds {
    /// (machine name, or None for every machine; step)
    rules: Mutex<Vec<(Option<String>, Step)>>,
    /// Machines that reached a held step and wait there.
    waiting: Mutex<BTreeSet<(String, Step)>>,
    pub(crate) changed: Notify,
}

impl Holds {
    /// Holds `machine` (or every Machine) before `step`.
    pub fn hold(&self, machine: Option<&str>, step: Step) {
        self.rules.lock().push((machine.map(str::to_string), step));
    }

    /// Lifts every hold on `step` (machine-specific ones too) and wakes the controllers.
    pub fn release(&self, step: Step) {
        self.rules.lock().retain(|(_, s)| *s != step);
        self.waiting.lock().retain(|(_, s)| *s != step);
        self.changed.notify_one();
    }

    pub fn release_all(&self) {
        self.rules.lock().clear();
        self.waiting.lock().clear();
        self.changed.notify_one();
    }

    /// Machines waiting at a held step.
    pub fn waiting(&self) -> Vec<(String, Step)> {
        self.waiting.lock().iter().cloned().collect()
    }

    pub(crate) fn check(&self, machine: &str, step: Step) -> bool {
        let held = self
            .rules
            .lock()
            .iter()
            .any(|(m, s)| *s == step && m.as_deref().is_none_or(|m| m == machine));
        if held {
            self.waiting.lock().insert((machine.to_string(), step));
        }
        held
    }
}
