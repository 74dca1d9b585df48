//! Cluster API's pause semantics, exactly: an object is paused when its Cluster has
//! `spec.paused: true` or the object itself carries `cluster.x-k8s.io/paused`. Only the object's
//! own annotation counts. Every controller reports it with the `Paused` condition and, when
//! paused, does nothing else.

use serde_json::Value;

use super::shape::Cond;
use super::world::annotated;

pub const PAUSED_ANNOTATION: &str = "cluster.x-k8s.io/paused";

pub fn is_paused(cluster: Option<&Value>, object: &Value) -> bool {
    cluster.is_some_and(|c| c["spec"]["paused"] == true) || annotated(object, PAUSED_ANNOTATION)
}

/// The `Paused` condition as `paused.EnsurePausedCondition` computes it.
pub fn paused_condition(cluster: Option<&Value>, object: &Value) -> Cond {
    let mut reasons = Vec::new();
    if cluster.is_some_and(|c| c["spec"]["paused"] == true) {
        reasons.push("Cluster spec.paused is set to true".to_string());
    }
    if annotated(object, PAUSED_ANNOTATION) {
        reasons.push(format!(
            "{} has the cluster.x-k8s.io/paused annotation",
            object["kind"].as_str().unwrap_or("Object")
        ));
    }
    if reasons.is_empty() {
        Cond::new("Paused", false, "NotPaused", "")
    } else {
        Cond::new("Paused", true, "Paused", reasons.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_cluster_or_the_object_itself_pauses() {
        let cluster = json!({"spec": {"paused": false}});
        let paused_cluster = json!({"spec": {"paused": true}});
        let annotated = json!({"kind": "MachineSet", "metadata": {"annotations": {"cluster.x-k8s.io/paused": "x"}}});
        let plain = json!({"kind": "Machine", "metadata": {}});
        assert!(!is_paused(Some(&cluster), &plain));
        assert!(is_paused(Some(&paused_cluster), &plain));
        assert!(is_paused(Some(&cluster), &annotated));
        let cond = paused_condition(Some(&paused_cluster), &annotated);
        assert!(cond.status);
        assert_eq!(
            cond.message,
            "Cluster spec.paused is set to true, MachineSet has the cluster.x-k8s.io/paused annotation"
        );
        assert_eq!(paused_condition(Some(&cluster), &plain).reason, "NotPaused");
    }
}
