//! A Lease as found in a cluster: who holds it, for how long, and the refusal that names them.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::Api;

use crate::error::{Error, Result};
use crate::kube::connect::Cluster;
use crate::kube::holder::Holder;
use crate::kube::lease_timing::duration;
use crate::names::{LEASE_GROUP, LEASE_HOLDER_ANNOTATION, LEASE_NAME, LEASE_NAMESPACE};

pub(super) fn holder_of(lease: &Lease) -> Option<Holder> {
    lease
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(LEASE_HOLDER_ANNOTATION))
        .and_then(|text| serde_json::from_str::<Holder>(text).ok())
}

pub(super) fn identity_of(lease: &Lease) -> Option<&str> {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.as_deref())
        .filter(|h| !h.is_empty())
}

/// The duration its holder gave the Lease (this process's own when it gave none).
pub(super) fn duration_of(lease: &Lease) -> Duration {
    lease
        .spec
        .as_ref()
        .and_then(|s| s.lease_duration_seconds)
        .and_then(|s| u64::try_from(s).ok())
        .filter(|s| *s > 0)
        .map_or_else(duration, Duration::from_secs)
}

/// The refusal for a command that finds the Lease held by a live holder.
pub fn refusal(url: &str, holder: Option<&Holder>, duration: Duration) -> String {
    let who = holder.map_or_else(
        || "another command (its holder annotation is missing)".to_string(),
        |h| format!("another kubectl-capi command, {}", h.describe()),
    );
    format!(
        "{who} holds the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {url} and is renewing it: only one command at a time may write for a move there; wait until it ends and run this command again (should that process be gone, a command that finds its lease unrenewed for {}s takes it over)",
        duration.as_secs()
    )
}

/// The refusal for a command that finds `lease` of `cluster` held by a live holder.
pub(super) fn refused_by(cluster: &Cluster, lease: &Lease) -> Error {
    Error::Refused(vec![refusal(
        &cluster.url,
        holder_of(lease).as_ref(),
        duration_of(lease),
    )])
}

pub(super) fn leases(cluster: &Cluster) -> Api<Lease> {
    Api::namespaced(cluster.client.clone(), LEASE_NAMESPACE)
}

pub(super) fn micro_now() -> MicroTime {
    MicroTime(jiff::Timestamp::now())
}

/// An error about the lease that says what it is for and which permissions it needs.
pub(super) fn forbidden_hint(cluster: &Cluster, e: kube::Error, doing: &str) -> Error {
    let context = format!(
        "{doing} the lease {LEASE_NAMESPACE}/{LEASE_NAME} (one command at a time writes for a move; it needs get, create, patch and delete on leases.{LEASE_GROUP} in {LEASE_NAMESPACE})"
    );
    match e {
        kube::Error::Api(status) if status.code == 403 => Error::Forbidden {
            message: format!("{context}: {}", status.message),
        },
        other => cluster.api_error(other, &context),
    }
}

pub(super) async fn read(cluster: &Cluster) -> Result<Option<Lease>> {
    leases(cluster)
        .get_opt(LEASE_NAME)
        .await
        .map_err(|e| forbidden_hint(cluster, e, "reading"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_refusal_names_the_holder_and_how_a_gone_one_is_taken_over() {
        let holder = Holder {
            host: "ops-1".into(),
            pid: 4242,
            command: "kubectl capi move -n ns1 --to-context b".into(),
            since: "2026-12-04T10:00:00Z".into(),
            boot_id: None,
            pid_namespace: None,
            start_time: None,
        };
        let text = refusal("https://a", Some(&holder), Duration::from_secs(60));
        for part in [
            "`kubectl capi move -n ns1 --to-context b`",
            "process 4242 on ops-1",
            "since 2026-12-04T10:00:00Z",
            "kube-system/kubectl-capi",
            "https://a",
            "unrenewed for 60s takes it over",
        ] {
            assert!(text.contains(part), "{part}: {text}");
        }
    }

    #[test]
    fn micro_times_serialise_as_a_real_server_expects() {
        let text = serde_json::to_value(MicroTime(
            "2026-12-04T10:00:00.5Z".parse::<jiff::Timestamp>().unwrap(),
        ))
        .unwrap();
        assert_eq!(text, "2026-12-04T10:00:00.500000Z");
    }
}
