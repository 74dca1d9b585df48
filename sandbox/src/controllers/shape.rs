//! Where each API dialect keeps things. v1beta2 (CAPI ≥ 1.11) and v1beta1 (≤ 1.10) differ in
//! status fields, condition lists and reference shapes; controllers write whichever the sandbox
//! serves as storage.

use serde_json::{Map, Value, json};

use crate::crds::Dialect;

#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub dialect: Dialect,
}

/// A condition to set (metav1 shape; v1beta1 legacy conditions add a severity).
#[derive(Debug, Clone, PartialEq)]
pub struct Cond {
    pub type_: &'static str,
    pub status: bool,
    pub reason: &'static str,
    pub message: String,
}

impl Cond {
    pub fn new(
        type_: &'static str,
        status: bool,
        reason: &'static str,
        message: impl Into<String>,
    ) -> Cond {
        Cond {
            type_,
            status,
            reason,
            message: message.into(),
        }
    }
}

fn status_word(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

impl Shape {
    pub fn v2(self) -> bool {
        self.dialect != Dialect::V1beta1
    }

    pub fn version(self) -> &'static str {
        if self.v2() { "v1beta2" } else { "v1beta1" }
    }

    pub fn api_version(self, group: &str) -> String {
        format!("{group}/{}", self.version())
    }

    /// A spec reference to another object.
    pub fn reference(self, group: &str, kind: &str, name: &str, namespace: &str) -> Value {
        if self.v2() {
            json!({"apiGroup": group, "kind": kind, "name": name})
        } else {
            json!({"apiVersion": self.api_version(group), "kind": kind, "name": name, "namespace": namespace})
        }
    }

    /// (kind, name) of a reference in either shape.
    pub fn read_ref(value: &Value) -> Option<(String, String)> {
        Some((
            value["kind"].as_str()?.to_string(),
            value["name"].as_str()?.to_string(),
        ))
    }

    /// The metav1 conditions list of a status.
    pub fn conditions(self, status: &Value) -> Vec<Value> {
        let list = if self.v2() {
            &status["conditions"]
        } else {
            &status["v1beta2"]["conditions"]
        };
        list.as_array().cloned().unwrap_or_default()
    }

    pub fn condition_true(self, status: &Value, type_: &str) -> Option<bool> {
        self.conditions(status)
            .iter()
            .find(|c| c["type"] == type_)
            .map(|c| c["status"] == "True")
    }

    /// Merges `conds` into the existing conditions, keeping lastTransitionTime when the status
    /// did not change. Returns the status patch fragment (`conditions` or `v1beta2.conditions`).
    pub fn with_conditions(self, status: &Value, conds: &[Cond], now: &str) -> Value {
        let mut list = self.conditions(status);
        merge_conditions(&mut list, conds, now, |cond, transition| {
            json!({"type": cond.type_, "status": status_word(cond.status), "reason": cond.reason,
                "message": cond.message, "lastTransitionTime": transition})
        });
        if self.v2() {
            json!({"conditions": list})
        } else {
            json!({"v1beta2": {"conditions": list}})
        }
    }

    /// The older Cluster API conditions (v1beta1 `status.conditions` with severity, v1beta2
    /// `status.deprecated.v1beta1.conditions`) — clusterctl ≤ 1.10 reads ControlPlaneInitialized here.
    pub fn with_legacy_conditions(self, status: &Value, conds: &[Cond], now: &str) -> Value {
        let path = if self.v2() {
            &status["deprecated"]["v1beta1"]["conditions"]
        } else {
            &status["conditions"]
        };
        let mut list = path.as_array().cloned().unwrap_or_default();
        merge_conditions(&mut list, conds, now, |cond, transition| {
            let mut rendered = json!({"type": cond.type_, "status": status_word(cond.status), "lastTransitionTime": transition});
            if !cond.status {
                rendered["severity"] = json!("Info");
                rendered["reason"] = json!(cond.reason);
                rendered["message"] = json!(cond.message);
            }
            rendered
        });
        if self.v2() {
            json!({"deprecated": {"v1beta1": {"conditions": list}}})
        } else {
            json!({"conditions": list})
        }
    }

    /// An object's `status` as a mutable map, created when absent.
    pub fn status_of(object: &Value) -> Value {
        object
            .get("status")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new()))
    }
}

/// Deep-merges `patch` into `base` (maps recursively, everything else replaced).
pub fn merge(base: &mut Value, patch: &Value) {
    match (base, patch) {
        (Value::Object(b), Value::Object(p)) => {
            for (k, v) in p {
                merge(b.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (b, p) => *b = p.clone(),
    }
}

/// Would merging `patch` change `base`?
pub fn changes(base: &Value, patch: &Value) -> bool {
    let mut merged = base.clone();
    merge(&mut merged, patch);
    merged != *base
}

/// Puts each condition into `list` (replacing one of its type), keeping lastTransitionTime when
/// the status did not change; `render` writes a condition with its transition time.
fn merge_conditions(
    list: &mut Vec<Value>,
    conds: &[Cond],
    now: &str,
    render: impl Fn(&Cond, Value) -> Value,
) {
    for cond in conds {
        let existing = list.iter().position(|c| c["type"] == cond.type_);
        let transition = existing
            .filter(|i| list[*i]["status"] == status_word(cond.status))
            .map(|i| list[i]["lastTransitionTime"].clone())
            .unwrap_or(json!(now));
        let rendered = render(cond, transition);
        match existing {
            Some(i) => list[i] = rendered,
            None => list.push(rendered),
        }
    }
}
/// A condition whose reason says which way it is.
pub fn flag(kind: &'static str, status: bool, yes: &'static str, no: &'static str) -> Cond {
    Cond::new(kind, status, if status { yes } else { no }, "")
}
