//! Conditions of either shape: metav1.Condition (v1beta2 `status.conditions`, v1beta1
//! `status.v1beta2.conditions`) and the older Cluster API conditions (with `severity`).

use serde::Serialize;
use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Condition {
    pub fn is_true(&self) -> bool {
        self.status == "True"
    }
}

pub fn read(list: &Value) -> Vec<Condition> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| {
            Some(Condition {
                type_: c["type"].as_str()?.to_string(),
                status: c["status"].as_str().unwrap_or("Unknown").to_string(),
                reason: c["reason"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
                message: c["message"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            })
        })
        .collect()
}

pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// The new-style (metav1) conditions of an object's status, wherever its dialect keeps them.
pub fn current(status: &Value, v1beta2: bool) -> Vec<Condition> {
    if v1beta2 {
        read(&status["conditions"])
    } else {
        read(&status[crate::names::V1BETA2_STATUS]["conditions"])
    }
}
