//! The state one reconcile pass works with: the snapshot, the clock, timers, holds, and the
//! writes it decides on. Reconcilers are functions of this; only the loop does I/O.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::time::Duration;

use rand::{Rng, SeedableRng, rngs::StdRng};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::cloud::Cloud;
use super::config::Config;
use super::holds::{Holds, Step};
use super::pause::{is_paused, paused_condition};
use super::shape::{Shape, changes};
use super::world::{World, Write, has_finalizer, name, namespace};

/// What the controllers remember between passes (as real controllers keep requeue timers).
pub struct Memory {
    due: HashMap<(String, &'static str), Instant>,
    rng: StdRng,
}

impl Memory {
    pub fn new(seed: u64) -> Memory {
        Memory {
            due: HashMap::new(),
            rng: StdRng::seed_from_u64(seed),
        }
    }
}

pub struct Ctx<'a> {
    pub world: &'a World,
    pub shape: Shape,
    pub config: &'a Config,
    pub cloud: &'a Cloud,
    pub holds: &'a Holds,
    pub memory: &'a mut Memory,
    pub now: Instant,
    /// RFC 3339 time of the pass, for conditions and timestamps.
    pub time: String,
    pub writes: Vec<Write>,
    /// The earliest timer this pass is waiting for.
    pub wake: Option<Instant>,
}

fn jitter(seed: u64, key: &str, step: &str) -> f64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (seed, key, step).hash(&mut hasher);
    0.8 + (hasher.finish() % 1000) as f64 / 2500.0
}

impl<'a> Ctx<'a> {
    /// True once `step` of `key` has waited its (deterministically jittered) delay; otherwise
    /// registers the wake-up and returns false.
    pub fn waited(&mut self, key: &str, step: &'static str, base: Duration) -> bool {
        let seed = self.config.seed;
        let now = self.now;
        let due = *self
            .memory
            .due
            .entry((key.to_string(), step))
            .or_insert_with(|| now + base.mul_f64(jitter(seed, key, step)));
        if self.now >= due {
            true
        } else {
            self.wake = Some(self.wake.map_or(due, |w| w.min(due)));
            false
        }
    }

    /// Forgets a timer (the condition it waited for went away).
    pub fn reset(&mut self, key: &str, step: &'static str) {
        self.memory.due.remove(&(key.to_string(), step));
    }

    /// Is provisioning of `machine` held at `step` by a test or the demo?
    pub fn held(&self, machine: &str, step: Step) -> bool {
        self.holds.check(machine, step)
    }

    pub fn new_name(&mut self, prefix: &str) -> String {
        const CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        let suffix: String = (0..5)
            .map(|_| CHARS[self.memory.rng.random_range(0..CHARS.len())] as char)
            .collect();
        format!("{prefix}-{suffix}")
    }

    /// Patches the main resource, only if it changes anything.
    pub fn patch(&mut self, kind: &str, object: &Value, patch: Value) {
        if changes(object, &patch) {
            self.writes.push(Write::patch(kind, object, patch));
        }
    }

    /// Patches the status subresource, only if it changes anything.
    pub fn status(&mut self, kind: &str, object: &Value, patch: Value) {
        if changes(&object["status"], &patch) {
            self.writes
                .push(Write::status(kind, object, json!({"status": patch})));
        }
    }

    pub fn create(&mut self, kind: &str, object: Value) {
        self.writes.push(Write::create(kind, object));
    }

    pub fn delete(&mut self, kind: &str, object: &Value) {
        if !super::world::deleting(object) {
            self.writes.push(Write::delete(kind, object));
        }
    }

    /// Adds `owner` to the object's ownerReferences (as Cluster API's controllers link the
    /// objects they reconcile to their Cluster, and templates to the Cluster using them).
    pub fn ensure_owner(&mut self, kind: &str, object: &Value, owner: &Value, controller: bool) {
        let owner_uid = owner["metadata"]["uid"].as_str().unwrap_or_default();
        let mut refs = object["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if refs.iter().any(|r| r["uid"] == owner_uid) || super::world::deleting(object) {
            return;
        }
        let mut reference = super::world::controller_ref(owner);
        if !controller {
            reference["controller"] = json!(false);
        }
        refs.push(reference);
        self.writes.push(Write::patch(
            kind,
            object,
            json!({"metadata": {"ownerReferences": refs}}),
        ));
    }

    pub fn ensure_finalizer(&mut self, kind: &str, object: &Value, finalizer: &str) {
        if !has_finalizer(object, finalizer) && !super::world::deleting(object) {
            let mut list = object["metadata"]["finalizers"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            list.push(json!(finalizer));
            self.writes.push(Write::patch(
                kind,
                object,
                json!({"metadata": {"finalizers": list}}),
            ));
        }
    }

    pub fn remove_finalizer(&mut self, kind: &str, object: &Value, finalizer: &str) {
        if has_finalizer(object, finalizer) {
            let list: Vec<Value> = object["metadata"]["finalizers"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| *f != finalizer)
                .cloned()
                .collect();
            self.writes.push(Write::patch(
                kind,
                object,
                json!({"metadata": {"finalizers": list}}),
            ));
        }
    }

    /// Sets the `Paused` condition and says whether the object is paused (then the caller does
    /// nothing else, as every Cluster API controller).
    pub fn ensure_paused(&mut self, kind: &str, object: &Value, cluster: Option<&Value>) -> bool {
        let cond = paused_condition(cluster, object);
        let status = Shape::status_of(object);
        let patch =
            self.shape
                .with_conditions(&status, std::slice::from_ref(&cond), &self.time.clone());
        self.status(kind, object, patch);
        is_paused(cluster, object)
    }

    pub fn key(object: &Value) -> String {
        format!("{}/{}", namespace(object), name(object))
    }
}
