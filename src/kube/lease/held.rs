//! Taking a Lease (created when free, taken over when its holder is gone, conditional on the
//! resourceVersion read), holding it with renewals, and giving it back.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use serde_json::json;

use super::found::{Judged, Tell, judge};
use super::record::{forbidden_hint, holder_of, identity_of, leases, micro_now, read, refused_by};
use crate::error::{Error, Result};
use crate::kube::connect::Cluster;
use crate::kube::gate::{self, Guard, Stamp};
use crate::kube::holder::Holder;
use crate::kube::lease_timing::{duration, renew_deadline, renew_interval};
use crate::kube::stop::Stop;
use crate::names::{
    FIELD_MANAGER, LEASE_HOLDER_ANNOTATION, LEASE_NAME, LEASE_NAMESPACE, LEASE_RENEWED_ANNOTATION,
    MANAGED_BY_LABEL,
};

/// A Lease this process holds; renewed in the background until [`Held::release`].
pub struct Held {
    cluster: Cluster,
    uid: String,
    identity: String,
    /// The resourceVersion of the last write of the Lease by this process.
    version: Arc<Mutex<String>>,
    renewer: tokio::task::JoinHandle<()>,
    pub(super) guard: Arc<Guard>,
    /// Set when the Lease was taken over from a gone holder: what to tell the user.
    pub took_over: Option<String>,
}

/// What this process writes into a Lease it takes.
struct Claim {
    identity: String,
    holder_text: String,
    seconds: i32,
}

impl Claim {
    fn new(command: &str, duration: Duration) -> Claim {
        let holder = Holder::this_process(command);
        Claim {
            identity: format!(
                "{}/{}/{:x}",
                holder.host,
                holder.pid,
                jiff::Timestamp::now().as_nanosecond()
            ),
            holder_text: serde_json::to_string(&holder).expect("a holder serialises"),
            seconds: i32::try_from(duration.as_secs()).unwrap_or(i32::MAX),
        }
    }

    fn fresh(&self, sent: Stamp) -> Lease {
        Lease {
            metadata: ObjectMeta {
                name: Some(LEASE_NAME.into()),
                namespace: Some(LEASE_NAMESPACE.into()),
                labels: Some([(MANAGED_BY_LABEL.into(), FIELD_MANAGER.into())].into()),
                annotations: Some(
                    [
                        (LEASE_HOLDER_ANNOTATION.into(), self.holder_text.clone()),
                        (LEASE_RENEWED_ANNOTATION.into(), sent.millis().to_string()),
                    ]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.identity.clone()),
                lease_duration_seconds: Some(self.seconds),
                acquire_time: Some(micro_now()),
                renew_time: Some(micro_now()),
                lease_transitions: Some(0),
                ..LeaseSpec::default()
            }),
        }
    }
}

/// Takes the Lease of `cluster` for `command`, before this command's first write there; `stop`
/// hears of its loss. A live holder refuses it (`Err(Refused)`, naming the holder).
pub async fn take(cluster: &Cluster, command: &str, stop: &Stop, tell: Tell<'_>) -> Result<Held> {
    let duration = duration();
    let claim = Claim::new(command, duration);
    let api = leases(cluster);
    for _ in 0..4 {
        let sent = Stamp::now();
        let found = match read(cluster).await? {
            None => match api.create(&PostParams::default(), &claim.fresh(sent)).await {
                Ok(lease) => return Ok(hold(cluster, lease, (sent, duration), stop, None)),
                // Someone created it between the read and the create: judge theirs.
                Err(kube::Error::Api(s)) if s.code == 409 => continue,
                Err(e) => return Err(forbidden_hint(cluster, e, "taking")),
            },
            Some(found) => found,
        };
        if identity_of(&found) == Some(claim.identity.as_str()) {
            // A create retried after its answer was lost.
            return Ok(hold(cluster, found, (sent, duration), stop, None));
        }
        let (found, note) = match judge(cluster, found, tell).await? {
            Judged::Live(lease) => {
                return Err(refused_by(cluster, &lease));
            }
            Judged::Free(None) => continue,
            Judged::Free(Some(lease)) => (lease, None),
            Judged::Abandoned(lease, why) => (lease, Some(why)),
        };
        let sent = Stamp::now();
        let lease = take_over(cluster, &found, &claim, sent).await?;
        let note = note.map(|why| {
            format!(
                "took over the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {}: {why}",
                cluster.url
            )
        });
        return Ok(hold(cluster, lease, (sent, duration), stop, note));
    }
    Err(Error::Refused(vec![format!(
        "the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} kept changing hands while this command took it; run it again",
        cluster.url
    )]))
}

/// Takes a free or abandoned Lease with a resourceVersion-conditioned patch: of two commands
/// doing so at once, one gets it.
async fn take_over(cluster: &Cluster, found: &Lease, claim: &Claim, sent: Stamp) -> Result<Lease> {
    let transitions = found
        .spec
        .as_ref()
        .and_then(|s| s.lease_transitions)
        .unwrap_or(0);
    let takeover = json!({
        "metadata": {
            "resourceVersion": found.metadata.resource_version,
            "annotations": {
                LEASE_HOLDER_ANNOTATION: claim.holder_text,
                LEASE_RENEWED_ANNOTATION: sent.millis().to_string(),
            },
        },
        "spec": {
            "holderIdentity": claim.identity,
            "leaseDurationSeconds": claim.seconds,
            "acquireTime": micro_now(),
            "renewTime": micro_now(),
            "leaseTransitions": transitions + 1,
        },
    });
    let sent = leases(cluster)
        .patch(
            LEASE_NAME,
            &PatchParams::default(),
            &Patch::Merge(&takeover),
        )
        .await;
    let error = match sent {
        Ok(lease) => return Ok(lease),
        Err(kube::Error::Api(s)) if s.code == 403 => {
            return Err(forbidden_hint(cluster, kube::Error::Api(s), "taking over"));
        }
        Err(e) => e,
    };
    // A conflict, or no answer: the takeover may have been applied and its answer lost (a
    // retry then conflicts with it). The Lease read again tells whose it is.
    match read(cluster).await? {
        Some(lease) if identity_of(&lease) == Some(claim.identity.as_str()) => Ok(lease),
        Some(lease) if matches!(&error, kube::Error::Api(s) if s.code == 409) => {
            Err(refused_by(cluster, &lease))
        }
        None if matches!(&error, kube::Error::Api(s) if s.code == 404) => {
            Err(Error::Refused(vec![format!(
                "the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} was removed while this command took it over; run this command again",
                cluster.url
            )]))
        }
        _ => Err(forbidden_hint(cluster, error, "taking over")),
    }
}

/// The Lease as taken (its request sent at `sent`): guarded writes open, renewed from now on.
fn hold(
    cluster: &Cluster,
    lease: Lease,
    (sent, duration): (Stamp, Duration),
    stop: &Stop,
    took_over: Option<String>,
) -> Held {
    let identity = identity_of(&lease).unwrap_or_default().to_string();
    let guard = Guard::new(
        (&cluster.url, &identity),
        sent,
        renew_deadline(duration),
        stop,
    );
    cluster.gate.hold(guard.clone());
    let version = Arc::new(Mutex::new(
        lease.metadata.resource_version.clone().unwrap_or_default(),
    ));
    let renewer = tokio::spawn(renew(
        cluster.clone(),
        identity.clone(),
        version.clone(),
        duration,
        guard.clone(),
    ));
    Held {
        cluster: cluster.clone(),
        uid: lease.metadata.uid.clone().unwrap_or_default(),
        identity,
        version,
        renewer,
        guard,
        took_over,
    }
}

/// Renews the Lease every [`renew_interval`], each renewal conditional on the resourceVersion of
/// the last; the guard counts from when the last successful one was sent. A renewal that finds
/// the Lease changed (taken over, or removed) loses it at once, naming who has it; past the
/// renew deadline without a successful renewal it is lost, and never renewed again.
async fn renew(
    cluster: Cluster,
    identity: String,
    version: Arc<Mutex<String>>,
    duration: Duration,
    guard: Arc<Guard>,
) {
    let api = leases(&cluster);
    loop {
        tokio::time::sleep(renew_interval(duration)).await;
        if guard.check().is_err() {
            return;
        }
        let current = version.lock().expect("not poisoned").clone();
        let sent = Stamp::now();
        let patch = json!({
            "metadata": {"resourceVersion": current,
                "annotations": {LEASE_RENEWED_ANNOTATION: sent.millis().to_string()}},
            "spec": {"holderIdentity": identity, "renewTime": micro_now()},
        });
        let left = guard.deadline().saturating_sub(guard.age());
        let attempt = tokio::time::timeout(
            left,
            api.patch(LEASE_NAME, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await;
        match attempt {
            Ok(Ok(lease)) => {
                *version.lock().expect("not poisoned") =
                    lease.metadata.resource_version.unwrap_or_default();
                guard.renewed(sent);
            }
            Ok(Err(kube::Error::Api(s))) if s.code == 409 || s.code == 404 => {
                // A renewal applied whose answer was lost is resent with the old
                // resourceVersion and conflicts: the Lease read again tells whether it is still
                // this process's.
                let now = match api.get_opt(LEASE_NAME).await {
                    Ok(now) => now,
                    Err(e) => {
                        // Not known to be lost, but no longer provable: stop all the same.
                        guard.lose(format!(
                            "lost the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} at {}: a renewal conflicted and reading the lease back failed ({}), so this command cannot prove it still holds it; this command stopped writing",
                            cluster.url,
                            gate::now(),
                            Error::from_kube(e, &cluster.server(), "reading the lease")
                        ));
                        return;
                    }
                };
                match &now {
                    Some(lease) if identity_of(lease) == Some(identity.as_str()) => {
                        *version.lock().expect("not poisoned") =
                            lease.metadata.resource_version.clone().unwrap_or_default();
                    }
                    _ => {
                        guard.lose(lost_to(&cluster, now.as_ref()));
                        return;
                    }
                }
            }
            // Not answered: tried again until the deadline, which the guard watches.
            _ => {}
        }
    }
}

/// Why a holder lost its Lease to whoever has it now (`None`: someone removed it).
fn lost_to(cluster: &Cluster, now: Option<&Lease>) -> String {
    let to = match now {
        Some(lease) => holder_of(lease).map_or_else(
            || "another command (its holder annotation is missing)".to_string(),
            |h| h.describe(),
        ),
        None => "nobody: someone removed it".to_string(),
    };
    format!(
        "lost the lease {LEASE_NAMESPACE}/{LEASE_NAME} of the cluster at {} to {to} at {}; this command stopped writing",
        cluster.url,
        gate::now()
    )
}

impl Held {
    /// Gives the Lease up: stops renewing and deletes it — only as this process last wrote it
    /// (UID and resourceVersion as preconditions), never one another command took over. A
    /// release that fails leaves a Lease that others take over once it stays unrenewed.
    pub async fn release(self) {
        self.renewer.abort();
        let _ = self.renewer.await;
        self.cluster.gate.release();
        if self.guard.check().is_err() {
            return;
        }
        let api = leases(&self.cluster);
        for _ in 0..2 {
            let version = self.version.lock().expect("not poisoned").clone();
            let params = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: Some(self.uid.clone()),
                    resource_version: Some(version),
                }),
                ..DeleteParams::default()
            };
            match api.delete(LEASE_NAME, &params).await {
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    // A renewal aborted after the server applied it: read the Lease again and
                    // delete it if it is still ours.
                    let Ok(Some(lease)) = api.get_opt(LEASE_NAME).await else {
                        return;
                    };
                    if identity_of(&lease) != Some(self.identity.as_str()) {
                        return;
                    }
                    *self.version.lock().expect("not poisoned") =
                        lease.metadata.resource_version.unwrap_or_default();
                }
                _ => return,
            }
        }
    }
}
