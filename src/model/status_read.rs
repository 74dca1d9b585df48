//! The part of an object's `.status` the views read. Evaluations hold every Cluster, Machine and
//! scaler of a scope; a real controller's status (addresses, node info, each condition's times
//! and generations, the v1beta1 copy) weighs several times what they look at.

use serde_json::{Map, Value};

/// The status fields some view reads (of either dialect; a v1beta1 object keeps its v1beta2
/// fields under `status.v1beta2`, trimmed the same way). A view that reads another status field
/// must add it here; the test below compares every view over whole and trimmed objects.
const READ: [&str; 13] = [
    "conditions",
    crate::names::V1BETA2_STATUS,
    "nodeRef",
    "initialization",
    "infrastructureReady",
    "controlPlaneReady",
    "replicas",
    "readyReplicas",
    "availableReplicas",
    "upToDateReplicas",
    "expectedMachines",
    "currentHealthy",
    "remediationsAllowed",
];

/// What a view reads of a condition.
const CONDITION_READ: [&str; 4] = ["type", "status", "reason", "message"];

/// Whether some view reads this field of a status.
pub fn reads(field: &str) -> bool {
    READ.contains(&field)
}

/// `status` with only what the views read.
pub fn trimmed(status: Map<String, Value>) -> Map<String, Value> {
    status
        .into_iter()
        .filter(|(key, _)| reads(key))
        .map(|(key, value)| {
            let value = match (key.as_str(), value) {
                ("conditions", Value::Array(conditions)) => Value::Array(
                    conditions
                        .into_iter()
                        .map(|condition| match condition {
                            Value::Object(fields) => Value::Object(
                                fields
                                    .into_iter()
                                    .filter(|(k, _)| CONDITION_READ.contains(&k.as_str()))
                                    .collect(),
                            ),
                            other => other,
                        })
                        .collect(),
                ),
                (crate::names::V1BETA2_STATUS, Value::Object(nested)) => {
                    Value::Object(trimmed(nested))
                }
                (_, value) => value,
            };
            (key, value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use kube::api::DynamicObject;
    use serde_json::json;

    use super::*;
    use crate::model::{ClusterView, HealthCheckView, MachineView, ScalerKind, ScalerView};

    /// Conditions as a real controller writes them: times, generations, every reason.
    fn conditions(types: &[&str]) -> Value {
        Value::Array(
            types
                .iter()
                .map(|t| {
                    json!({"type": t, "status": "True", "reason": "Fine", "message": "all good",
                        "lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 3,
                        "severity": ""})
                })
                .collect(),
        )
    }

    fn object(api_version: &str, kind: &str, spec: Value, status: Value) -> DynamicObject {
        serde_json::from_value(json!({"apiVersion": api_version, "kind": kind,
            "metadata": {"name": "x", "namespace": "ns", "uid": "u",
                "labels": {"cluster.x-k8s.io/cluster-name": "c"}},
            "spec": spec, "status": status}))
        .unwrap()
    }

    fn with_status_trimmed(object: &DynamicObject) -> DynamicObject {
        let mut trimmed_object = object.clone();
        let status = object.data["status"].as_object().unwrap().clone();
        trimmed_object.data["status"] = Value::Object(trimmed(status));
        trimmed_object
    }

    /// Statuses of both dialects with every field the real controllers write.
    fn statuses() -> Vec<(String, Value)> {
        let counters = json!({"replicas": 3, "readyReplicas": 2, "availableReplicas": 2,
            "upToDateReplicas": 1, "unavailableReplicas": 1, "selector": "a=b",
            "observedGeneration": 4, "version": "v1.33.0"});
        let mut out = Vec::new();
        for (version, v2) in [("v1beta2", true), ("v1beta1", false)] {
            let mut status = counters.clone();
            let current = conditions(&["Available", "Paused", "NodeHealthy", "Ready"]);
            if v2 {
                status["conditions"] = current;
                status["deprecated"] = json!({"v1beta1": {"conditions": conditions(&["Ready"]),
                    "readyReplicas": 7, "failureReason": "x"}});
                status["initialization"] =
                    json!({"infrastructureProvisioned": true, "controlPlaneInitialized": true});
            } else {
                status["conditions"] = conditions(&["Ready", "ControlPlaneInitialized"]);
                status["v1beta2"] = json!({"conditions": current, "readyReplicas": 1,
                    "availableReplicas": 1, "upToDateReplicas": 1});
                status["infrastructureReady"] = json!(true);
                status["controlPlaneReady"] = json!(true);
            }
            status["nodeRef"] = json!({"kind": "Node", "name": "node-1", "uid": "n"});
            status["addresses"] = json!([{"type": "InternalIP", "address": "10.0.0.1"}]);
            status["nodeInfo"] = json!({"kernelVersion": "6.1", "osImage": "Ubuntu"});
            status["expectedMachines"] = json!(3);
            status["currentHealthy"] = json!(2);
            status["remediationsAllowed"] = json!(1);
            status["phase"] = json!("Running");
            out.push((format!("cluster.x-k8s.io/{version}"), status));
        }
        out
    }

    #[test]
    fn every_view_reads_the_same_of_a_trimmed_status_as_of_the_whole() {
        let spec = json!({"clusterName": "c", "replicas": 3,
            "template": {"spec": {"infrastructureRef": {"kind": "K", "name": "n"}}},
            "bootstrap": {"configRef": {"kind": "B", "name": "b"}},
            "infrastructureRef": {"kind": "I", "name": "i"},
            "topology": {"classRef": {"name": "class"}}});
        for (api_version, status) in statuses() {
            let cp_version =
                api_version.replace("cluster.x-k8s.io", "controlplane.cluster.x-k8s.io");
            let whole =
                |kind: &str, version: &str| object(version, kind, spec.clone(), status.clone());
            let same = |whole: &DynamicObject, read: &dyn Fn(&DynamicObject) -> String| {
                let trimmed_object = with_status_trimmed(whole);
                assert_ne!(trimmed_object.data, whole.data, "something was trimmed");
                assert_eq!(read(&trimmed_object), read(whole), "{api_version}");
            };
            same(&whole("Cluster", &api_version), &|o| {
                format!("{:?}", ClusterView::read(o))
            });
            same(&whole("Machine", &api_version), &|o| {
                format!("{:?}", MachineView::read(o))
            });
            same(&whole("MachineHealthCheck", &api_version), &|o| {
                format!("{:?}", HealthCheckView::read(o))
            });
            for (kind, scaler, version) in [
                (
                    "MachineDeployment",
                    ScalerKind::MachineDeployment,
                    &api_version,
                ),
                ("MachineSet", ScalerKind::MachineSet, &api_version),
                ("MachinePool", ScalerKind::MachinePool, &api_version),
                ("KubeadmControlPlane", ScalerKind::ControlPlane, &cp_version),
            ] {
                same(&whole(kind, version), &|o| {
                    format!("{:?}", ScalerView::read(o, scaler))
                });
            }
        }
    }

    #[test]
    fn what_no_view_reads_is_dropped_and_conditions_keep_four_fields() {
        let (_, status) = statuses().remove(1);
        let kept = Value::Object(trimmed(status.as_object().unwrap().clone()));
        assert!(kept.get("addresses").is_none() && kept.get("nodeInfo").is_none());
        assert!(kept.get("selector").is_none() && kept.get("observedGeneration").is_none());
        assert!(kept.get("phase").is_none());
        assert_eq!(
            kept["v1beta2"]["conditions"][0],
            json!({"type": "Available", "status": "True", "reason": "Fine", "message": "all good"})
        );
        assert_eq!(kept["v1beta2"]["readyReplicas"], 1);
        assert_eq!(kept["nodeRef"]["name"], "node-1");
    }
}
